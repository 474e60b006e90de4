package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// expiryEnv is a server over a store whose clock the test moves.
func expiryEnv(t *testing.T) (*env, *storetest.Clock) {
	t.Helper()
	clk := storetest.NewClock(time.Now().UTC().Truncate(time.Second))
	e := newEnv(t, withClock(clk.Now))
	if _, ok := e.db.Store.(ExpiryStore); !ok {
		t.Skip("this backend does not expire sketches")
	}
	return e, clk
}

type expiryView struct {
	Name        string `json:"name"`
	Cardinality float64
	UpdatedAt   time.Time `json:"updated_at"`
	ExpireAfter string    `json:"expire_after"`
	ExpireAt    string    `json:"expire_at"`
	ExpiresAt   time.Time `json:"expires_at"`
}

func describeExpiry(t *testing.T, e *env, name string) expiryView {
	t.Helper()
	var v expiryView
	decode(t, must(t, e.get(t, "/v1/sketches/"+name), http.StatusOK, "describe "+name).Body, &v)
	return v
}

func listed(t *testing.T, e *env, prefix string) []string {
	t.Helper()
	var page struct {
		Sketches []expiryView `json:"sketches"`
	}
	decode(t, must(t, e.get(t, "/v1/sketches?prefix="+prefix), http.StatusOK, "list").Body, &page)
	var out []string
	for _, s := range page.Sketches {
		out = append(out, s.Name)
	}
	return out
}

// TestExpiryHTTP: a sketch created with expire_after is described with
// it and its deadline, every add moves the deadline, and once it passes
// the sketch is gone from describe, raw, list, unions by name and by
// prefix and intersections (404 as if deleted) before any pass removes
// it; expire_at holds whatever is written; PATCH sets, changes and
// clears the expiry.
func TestExpiryHTTP(t *testing.T) {
	t.Parallel()
	e, clk := expiryEnv(t)
	t0 := clk.Now()
	r := must(t, e.send(t, http.MethodPut, "/v1/sketches/d.1", "application/json", `{"type":"hll","log2m":11,"expire_after":"PT1H"}`), http.StatusCreated, "create")
	var v expiryView
	decode(t, r.Body, &v)
	if v.ExpireAfter != "PT1H" || !v.ExpiresAt.Equal(t0.Add(time.Hour)) || v.ExpireAt != "" {
		t.Errorf("create answered expire_after %q, expires_at %v, expire_at %q; want PT1H, %v", v.ExpireAfter, v.ExpiresAt, v.ExpireAt, t0.Add(time.Hour))
	}
	at := t0.Add(3 * time.Hour)
	e.create(t, "d.2", `{"type":"hll","log2m":11,"expire_at":"`+at.Format(time.RFC3339)+`"}`)
	e.create(t, "d.3", `{"type":"hll","log2m":11}`)
	for _, n := range []string{"d.1", "d.2", "d.3"} {
		e.addIDs(t, n, `{"ids":[1,2,3,4,5]}`, 5)
	}
	if v := describeExpiry(t, e, "d.3"); v.ExpireAfter != "" || v.ExpireAt != "" || !v.ExpiresAt.IsZero() {
		t.Errorf("a sketch without expiry is described with %+v", v)
	}
	clk.Advance(50 * time.Minute)
	e.addIDs(t, "d.1", `{"ids":[1,2,3]}`, 3) // changes nothing, moves the deadline
	if v := describeExpiry(t, e, "d.1"); !v.ExpiresAt.Equal(t0.Add(110 * time.Minute)) {
		t.Errorf("after an add at +50m: expires_at %v, want %v", v.ExpiresAt, t0.Add(110*time.Minute))
	}
	if v := describeExpiry(t, e, "d.2"); v.ExpireAt != at.Format(time.RFC3339) || !v.ExpiresAt.Equal(at) {
		t.Errorf("expire_at sketch: %+v, want expire_at %v", v, at)
	}
	clk.Advance(61 * time.Minute) // +111m
	checkProblem(t, e.get(t, "/v1/sketches/d.1"), http.StatusNotFound)
	checkProblem(t, e.get(t, "/v1/sketches/d.1/raw"), http.StatusNotFound)
	checkProblem(t, e.postJSON(t, "/v1/union", `{"sketches":["d.1","d.3"]}`), http.StatusNotFound)
	checkProblem(t, e.postJSON(t, "/v1/intersection", `{"sketches":["d.1","d.3"]}`), http.StatusNotFound)
	checkProblem(t, e.postJSON(t, "/v1/sketches/d.1/add", `{"ids":[1]}`), http.StatusNotFound)
	checkProblem(t, e.send(t, http.MethodPatch, "/v1/sketches/d.1", "application/json", `{"expire_after":null}`), http.StatusNotFound)
	if got := listed(t, e, "d."); strings.Join(got, " ") != "d.2 d.3" {
		t.Errorf("list past d.1's deadline = %v, want d.2 d.3", got)
	}
	var u struct {
		Matched int `json:"matched"`
	}
	decode(t, must(t, e.postJSON(t, "/v1/union", `{"prefix":"d."}`), http.StatusOK, "union by prefix").Body, &u)
	if u.Matched != 2 {
		t.Errorf("union by prefix matched %d sketches, want 2", u.Matched)
	}
	// PATCH: expire_at on d.3, then clear d.2's, then move d.2's back.
	r = must(t, e.send(t, http.MethodPatch, "/v1/sketches/d.3", "application/json", `{"expire_at":"`+t0.Add(5*time.Hour).Format(time.RFC3339)+`"}`), http.StatusOK, "patch expire_at")
	decode(t, r.Body, &v)
	if !v.ExpiresAt.Equal(t0.Add(5 * time.Hour)) {
		t.Errorf("PATCH expire_at answered expires_at %v", v.ExpiresAt)
	}
	must(t, e.send(t, http.MethodPatch, "/v1/sketches/d.2", "application/json", `{"expire_at":null}`), http.StatusOK, "patch clear")
	clk.Advance(3 * time.Hour) // +291m: past d.2's old instant, before d.3's
	if v := describeExpiry(t, e, "d.2"); !v.ExpiresAt.IsZero() || v.Cardinality != 5 {
		t.Errorf("cleared expiry: %+v", v)
	}
	describeExpiry(t, e, "d.3")
	r = must(t, e.send(t, http.MethodPatch, "/v1/sketches/d.2", "application/json", `{"expire_after":"P1DT2H"}`), http.StatusOK, "patch expire_after")
	decode(t, r.Body, &v)
	if v.ExpireAfter != "PT26H" || !v.ExpiresAt.Equal(clk.Now().Add(26*time.Hour)) {
		t.Errorf("PATCH expire_after answered %+v; want PT26H from now", v)
	}
	clk.Advance(10 * time.Minute)
	checkProblem(t, e.get(t, "/v1/sketches/d.3"), http.StatusNotFound)
	// A create over an expired name makes a new sketch.
	must(t, e.send(t, http.MethodPut, "/v1/sketches/d.3", "application/json", `{"type":"hll","log2m":12}`), http.StatusCreated, "create over an expired sketch")
}

// TestExpiryBadInput: every bad expiry is a 400 problem naming the
// field, on create and on PATCH, and changes nothing.
func TestExpiryBadInput(t *testing.T) {
	t.Parallel()
	e, clk := expiryEnv(t)
	e.create(t, "k", `{"type":"hll","log2m":11,"expire_after":"P2D"}`)
	e.addIDs(t, "k", `{"ids":[1,2,3]}`, 3)
	before := must(t, e.get(t, "/v1/sketches/k"), http.StatusOK, "describe").Body
	past := clk.Now().Add(-time.Minute).Format(time.RFC3339)
	for _, tc := range []struct{ body, field string }{
		{`{"expire_after":"P0D"}`, "expire_after"},
		{`{"expire_after":"PT0S"}`, "expire_after"},
		{`{"expire_after":"-P1D"}`, "expire_after"},
		{`{"expire_after":"soon"}`, "expire_after"},
		{`{"expire_after":"P1M"}`, "expire_after"},
		{`{"expire_after":"P36501D"}`, "expire_after"},
		{`{"expire_after":5}`, "expire_after"},
		{`{"expire_at":"tomorrow"}`, "expire_at"},
		{`{"expire_at":"` + past + `"}`, "expire_at"},
		{`{"expire_at":"2300-01-01T00:00:00Z"}`, "expire_at"},
		{`{"expire_after":"P1D","expire_at":"2030-01-01T00:00:00Z"}`, "expire_after and expire_at"},
		{`{}`, "expire_after"},
	} {
		p := checkProblem(t, e.send(t, http.MethodPatch, "/v1/sketches/k", "application/json", tc.body), http.StatusBadRequest)
		if !strings.Contains(p.Detail, tc.field) {
			t.Errorf("PATCH %s: detail %q does not name %s", tc.body, p.Detail, tc.field)
		}
		if tc.body == `{}` || strings.Contains(tc.body, ":5}") {
			continue
		}
		create := strings.Replace(tc.body, "{", `{"type":"hll",`, 1)
		p = checkProblem(t, e.send(t, http.MethodPut, "/v1/sketches/new", "application/json", create), http.StatusBadRequest)
		if !strings.Contains(p.Detail, tc.field) {
			t.Errorf("PUT %s: detail %q does not name %s", create, p.Detail, tc.field)
		}
	}
	checkProblem(t, e.get(t, "/v1/sketches/new"), http.StatusNotFound)
	if after := must(t, e.get(t, "/v1/sketches/k"), http.StatusOK, "describe").Body; string(after) != string(before) {
		t.Errorf("refused PATCHes changed the sketch:\n%s\n%s", before, after)
	}
}

// TestExpiryIdempotent: a PATCH retried with its Idempotency-Key gets the
// first answer again, even after the expiry changed since; the key with
// another body is a 422.
func TestExpiryIdempotent(t *testing.T) {
	t.Parallel()
	e, _ := expiryEnv(t)
	e.create(t, "k", `{"type":"hll"}`)
	first := must(t, e.send(t, http.MethodPatch, "/v1/sketches/k", "application/json", `{"expire_after":"P7D"}`, "Idempotency-Key: a1"), http.StatusOK, "patch")
	must(t, e.send(t, http.MethodPatch, "/v1/sketches/k", "application/json", `{"expire_after":"P1D"}`), http.StatusOK, "another patch")
	again := must(t, e.send(t, http.MethodPatch, "/v1/sketches/k", "application/json", `{"expire_after":"P7D"}`, "Idempotency-Key: a1"), http.StatusOK, "retry")
	if again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
		t.Errorf("retry answered %s (replayed %q), want the first answer %s", again.Body, again.Header.Get("Idempotent-Replayed"), first.Body)
	}
	var v expiryView
	decode(t, must(t, e.get(t, "/v1/sketches/k"), http.StatusOK, "describe").Body, &v)
	if v.ExpireAfter != "P1D" {
		t.Errorf("the retry changed the expiry to %q, want P1D kept", v.ExpireAfter)
	}
	checkProblem(t, e.send(t, http.MethodPatch, "/v1/sketches/k", "application/json", `{"expire_after":"P2D"}`, "Idempotency-Key: a1"), http.StatusUnprocessableEntity)
}

// FuzzExpiryRequest: the PATCH body's expiry never panics, refuses with
// Invalid only, and what it accepts is one expiry at most, positive and
// bounded, and parses back from its own description.
func FuzzExpiryRequest(f *testing.F) {
	for _, s := range []string{
		`{"expire_after":"P7D"}`, `{"expire_after":"PT36H"}`, `{"expire_after":"P1W2DT3H4M5S"}`, `{"expire_after":null}`,
		`{"expire_at":"2030-01-01T00:00:00Z"}`, `{"expire_at":"2030-01-01T00:00:00.5+02:00"}`, `{"expire_at":null}`,
		`{"expire_after":"P0D"}`, `{"expire_after":"-P1D"}`, `{"expire_after":"P1M"}`, `{"expire_after":"P99999999999D"}`,
		`{"expire_after":5}`, `{"expire_at":"0000-01-01T00:00:00Z"}`, `{"expire_after":"P1D","expire_at":"2030-01-01T00:00:00Z"}`,
		`{"expire_after":null,"expire_at":null}`, `{}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var q expiryRequest
		if json.Unmarshal([]byte(body), &q) != nil {
			return
		}
		x, err := q.expiry()
		if err != nil {
			if sketch.KindOf(err) != sketch.Invalid {
				t.Fatalf("%s: error %v is not Invalid", body, err)
			}
			return
		}
		if x.After != 0 && !x.At.IsZero() || x.After < 0 || x.After > sketch.MaxExpireAfter || x.After%time.Second != 0 {
			t.Fatalf("%s: accepted %+v", body, x)
		}
		if x.After > 0 {
			s := formatAfter(x.After)
			y, err := parseExpiry(&s, nil)
			if err != nil || y != x {
				t.Fatalf("%s: %v described as %q parses to %+v, %v", body, x.After, s, y, err)
			}
		}
	})
}

// TestExpiryMetricsHTTP: a sketch created with "metric": true and a
// short expiry (expire_after PT1S, or expire_at a second away) leaves
// /metrics, its estimate and its quantiles, at its deadline, as it
// leaves every other read, without waiting for the retention pass.
func TestExpiryMetricsHTTP(t *testing.T) {
	t.Parallel()
	e, clk := expiryEnv(t)
	at := clk.Now().Add(time.Second).Format(time.RFC3339)
	e.create(t, "after", `{"log2m":11,"metric":true,"expire_after":"PT1S"}`)
	e.create(t, "at", `{"log2m":11,"metric":true,"expire_at":"`+at+`"}`)
	e.create(t, "q", `{"type":"kll","metric":true,"expire_after":"PT1S"}`)
	e.create(t, "keep", `{"log2m":11,"metric":true}`)
	for _, n := range []string{"after", "at", "keep"} {
		e.addIDs(t, n, `{"ids":[1,2,3]}`, 3)
	}
	must(t, e.postJSON(t, "/v1/sketches/q/add", `{"values":[1,2,3]}`), http.StatusOK, "add values")
	gauges := func() (est, q []string) {
		f := e.scrape(t)
		for _, m := range f["sketchd_sketch_estimate"].GetMetric() {
			est = append(est, labels(m)["name"])
		}
		for _, m := range f["sketchd_sketch_quantile"].GetMetric() {
			if n := labels(m)["name"]; !slices.Contains(q, n) {
				q = append(q, n)
			}
		}
		slices.Sort(est)
		return est, q
	}
	if est, q := gauges(); !slices.Equal(est, []string{"after", "at", "keep", "q"}) || !slices.Equal(q, []string{"q"}) {
		t.Fatalf("before the deadline: estimates of %v, quantiles of %v", est, q)
	}
	clk.Advance(time.Second)
	if est, q := gauges(); !slices.Equal(est, []string{"keep"}) || len(q) != 0 {
		t.Errorf("at the deadline: estimates of %v, quantiles of %v; want keep's estimate alone", est, q)
	}
	must(t, e.get(t, "/v1/sketches/after"), http.StatusNotFound, "describe an expired sketch")
}
