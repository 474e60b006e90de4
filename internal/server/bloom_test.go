package server

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/bloom"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/pgtest"
)

type bloomAnswer struct {
	Type              string
	Bits, Hashes      int
	ExpectedItems     *int64   `json:"expected_items"`
	FPP               *float64 `json:"fpp"`
	BitsSet           int      `json:"bits_set"`
	EstimatedItems    float64  `json:"estimated_items"`
	FalsePositiveRate float64  `json:"false_positive_rate"`
	SizeBytes         int      `json:"size_bytes"`
}

type checkAnswer struct {
	Present           int
	FalsePositiveRate float64 `json:"false_positive_rate"`
	Results           []struct {
		ID      any
		Present bool
	}
}

type freshAnswer struct {
	Accepted int
	NewCount int `json:"new_count"`
	New      []any
}

// TestBloomCreate: a filter is made from the items and rate it is for or
// from its shape; the parameters are checked, the size limit named.
func TestBloomCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var d bloomAnswer
	decode(t, must(t, e.send(t, http.MethodPut, "/v1/sketches/a", "application/json", `{"type":"bloom","expected_items":100000,"fpp":0.001}`), http.StatusCreated, "create").Body, &d)
	want, _ := bloom.ParamsFor(100000, 0.001)
	if d.Type != "bloom" || d.Bits != want.Bits || d.Hashes != want.Hashes || d.ExpectedItems == nil || *d.ExpectedItems != 100000 || *d.FPP != 0.001 || d.BitsSet != 0 || d.SizeBytes != 36+want.Bits/8 {
		t.Errorf("create = %+v, want %+v", d, want)
	}
	must(t, e.send(t, http.MethodPut, "/v1/sketches/a", "application/json", `{"type":"bloom","expected_items":100000,"fpp":0.001}`), http.StatusOK, "again")
	checkProblem(t, e.send(t, http.MethodPut, "/v1/sketches/a", "application/json", `{"type":"bloom","expected_items":100000,"fpp":0.01}`), http.StatusConflict)
	d = bloomAnswer{}
	decode(t, must(t, e.send(t, http.MethodPut, "/v1/sketches/s", "application/json", `{"type":"bloom","bits":4096,"hashes":5}`), http.StatusCreated, "create by shape").Body, &d)
	if d.Bits != 4096 || d.Hashes != 5 || d.ExpectedItems != nil || d.FPP != nil {
		t.Errorf("create by shape = %+v", d)
	}
	decode(t, must(t, e.send(t, http.MethodPut, "/v1/sketches/dflt", "application/json", `{"type":"bloom"}`), http.StatusCreated, "default").Body, &d)
	if def := bloom.DefaultParams(); d.Bits != def.Bits || *d.ExpectedItems != 1_000_000 {
		t.Errorf("default = %+v", d)
	}
	for body, detail := range map[string]string{
		`{"type":"bloom","expected_items":100,"fpp":0.01,"bits":64,"hashes":1}`: "either expected_items and fpp or bits and hashes",
		`{"type":"bloom","bits":640}`:                                           "bits and hashes go together",
		`{"type":"bloom","fpp":0.01}`:                                           "expected_items and fpp go together",
		`{"type":"bloom","expected_items":100000000,"fpp":0.01}`:                "more than the limit of 134217728 bits (16 MiB)",
		`{"type":"bloom","bits":268435456,"hashes":3}`:                          "the limit is a 16 MiB filter",
		`{"type":"bloom","bits":1000,"hashes":3}`:                               "not a multiple of 64",
		`{"type":"bloom","expected_items":10,"fpp":0.9}`:                        "false-positive rate 0.9 not in",
		`{"type":"bloom","log2m":12}`:                                           "log2m is a parameter of hll sketches",
		`{"type":"hll","fpp":0.01}`:                                             "fpp is a parameter of bloom sketches",
	} {
		p := checkProblem(t, e.send(t, http.MethodPut, "/v1/sketches/bad", "application/json", body), http.StatusBadRequest)
		if !strings.Contains(p.Detail, detail) {
			t.Errorf("%s: detail %q, want %q", body, p.Detail, detail)
		}
	}
	checkProblem(t, e.get(t, "/v1/sketches/bad"), http.StatusNotFound)
}

// TestBloomOverHTTP: ids added in every body format are found by a check
// (no false negatives) and echo back as sent; a check-and-add reports the
// new ones; unions, uploads, downloads and events work as for other
// kinds.
func TestBloomOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "f", `{"type":"bloom","expected_items":10000,"fpp":0.01}`)
	adds := []struct{ ctype, q, body string }{
		{"application/json", "", `{"ids":[1,2,"alice"]}`},
		{"application/json", "", `{"hashes":[-5,77]}`},
		{"application/x-ndjson", "", "3\n\"bob\"\n"},
		{"text/plain", "?id_type=text", "carol\ndave\n"},
		{"text/plain", "", "4\n5\n"},
		{"application/octet-stream", "", octetIDs(6, 7)},
	}
	for _, a := range adds {
		must(t, e.send(t, http.MethodPost, "/v1/sketches/f/add"+a.q, a.ctype, a.body), http.StatusOK, "add "+a.ctype)
	}
	var c checkAnswer
	decode(t, must(t, e.postJSON(t, "/v1/sketches/f/check", `{"ids":[1,2,3,4,5,6,7,"alice","bob","carol","dave",8,"eve"]}`), http.StatusOK, "check").Body, &c)
	present := map[string]bool{}
	for _, r := range c.Results {
		present[fmt.Sprint(r.ID)] = r.Present
	}
	for _, id := range []string{"1", "2", "3", "4", "5", "6", "7", "alice", "bob", "carol", "dave"} {
		if !present[id] {
			t.Errorf("id %s was added but the check says absent", id)
		}
	}
	if present["8"] || present["eve"] || c.Present != 11 || len(c.Results) != 13 || c.FalsePositiveRate <= 0 {
		t.Errorf("check = %+v", c)
	}
	decode(t, must(t, e.postJSON(t, "/v1/sketches/f/check", `{"hashes":[-5,78]}`), http.StatusOK, "check hashes").Body, &c)
	if len(c.Results) != 2 || c.Results[0].ID != float64(-5) || !c.Results[0].Present || c.Results[1].Present {
		t.Errorf("check hashes = %+v", c)
	}
	decode(t, must(t, e.send(t, http.MethodPost, "/v1/sketches/f/check", "application/octet-stream", octetIDs(6, 9)), http.StatusOK, "check octets").Body, &c)
	if c.Results[0].ID != float64(6) || !c.Results[0].Present || c.Results[1].Present {
		t.Errorf("check octets = %+v", c)
	}
	// The stored filter is the engine's for the same hashes.
	p, _ := bloom.ParamsFor(10000, 0.01)
	want, _ := bloom.New(p)
	for _, h := range []uint64{hll.HashInt64(1), hll.HashInt64(2), hll.HashString("alice"), uint64(1<<64 - 5), 77,
		hll.HashInt64(3), hll.HashString("bob"), hll.HashString("carol"), hll.HashString("dave"),
		hll.HashInt64(4), hll.HashInt64(5), hll.HashInt64(6), hll.HashInt64(7)} {
		want.Add(h)
	}
	if got := e.raw(t, "f"); string(got) != string(want.AppendBinary(nil)) {
		t.Fatal("stored filter differs from the engine's for the same ids")
	}

	// Check-and-add: new ids, as sent; again: none.
	var fr freshAnswer
	decode(t, must(t, e.postJSON(t, "/v1/sketches/f/add?report=new", `{"ids":[1,"alice",100,"zed",100]}`), http.StatusOK, "report new").Body, &fr)
	if fr.Accepted != 5 || fr.NewCount != 2 || fmt.Sprint(fr.New) != "[100 zed]" {
		t.Errorf("report new = %+v, want 100 and zed new", fr)
	}
	decode(t, must(t, e.postJSON(t, "/v1/sketches/f/add?report=new", `{"ids":[100,"zed"]}`), http.StatusOK, "report new again").Body, &fr)
	if fr.NewCount != 0 || len(fr.New) != 0 {
		t.Errorf("report new again = %+v", fr)
	}
	decode(t, must(t, e.send(t, http.MethodPost, "/v1/sketches/f/add?report=new&id_type=text", "text/plain", "zed\nyan\n"), http.StatusOK, "report new text").Body, &fr)
	if fmt.Sprint(fr.New) != "[yan]" {
		t.Errorf("report new text = %+v", fr)
	}
	decode(t, must(t, e.postJSON(t, "/v1/sketches/f/add?report=new", `{"hashes":[77,-6]}`), http.StatusOK, "report new hashes").Body, &fr)
	if fmt.Sprint(fr.New) != "[-6]" {
		t.Errorf("report new hashes = %+v", fr)
	}
	// A keyed check-and-add sent again answers what it first answered:
	// the ids new then, though they are not new now.
	first := e.postJSON(t, "/v1/sketches/f/add?report=new", `{"ids":[5000,5001]}`, keyed("fresh"))
	decode(t, must(t, first, http.StatusOK, "keyed report new").Body, &fr)
	if fmt.Sprint(fr.New) != "[5000 5001]" {
		t.Errorf("keyed report new = %+v", fr)
	}
	sameAnswer(t, "keyed report new", first, e.postJSON(t, "/v1/sketches/f/add?report=new", `{"ids":[5000,5001]}`, keyed("fresh")))
	decode(t, must(t, e.postJSON(t, "/v1/sketches/f/add?report=new", `{"ids":[5000,5001]}`), http.StatusOK, "unkeyed").Body, &fr)
	if fr.NewCount != 0 {
		t.Errorf("unkeyed report new after the keyed one = %+v", fr)
	}
	e.create(t, "h", `{}`)
	before := e.snapshot(t)
	pr := checkProblem(t, e.postJSON(t, "/v1/sketches/h/add?report=new", `{"ids":[1]}`), http.StatusConflict)
	if !strings.Contains(pr.Detail, "only bloom sketches say which ids were new") {
		t.Errorf("report new of an hll: %q", pr.Detail)
	}
	checkProblem(t, e.postJSON(t, "/v1/sketches/f/add?report=old", `{"ids":[1]}`), http.StatusBadRequest)
	checkProblem(t, e.postJSON(t, "/v1/sketches/h/check", `{"ids":[1]}`), http.StatusConflict)
	checkProblem(t, e.postJSON(t, "/v1/sketches/nope/check", `{"ids":[1]}`), http.StatusNotFound)
	checkProblem(t, e.postJSON(t, "/v1/sketches/f/check", `{"ids":[1.5]}`), http.StatusBadRequest)
	if d := before.diff(e.snapshot(t)); len(d) > 0 {
		t.Errorf("refused requests changed %v", d)
	}
	// ?create=true with report=new makes the default filter.
	decode(t, must(t, e.postJSON(t, "/v1/sketches/new/add?create=true&report=new", `{"ids":[9,9]}`), http.StatusOK, "create by report").Body, &fr)
	var d bloomAnswer
	decode(t, must(t, e.get(t, "/v1/sketches/new"), http.StatusOK, "describe").Body, &d)
	if fmt.Sprint(fr.New) != "[9]" || d.Type != "bloom" || *d.ExpectedItems != 1_000_000 {
		t.Errorf("created by report: %+v, %+v", fr, d)
	}

	// Events, unions, upload and download.
	e.create(t, "g", `{"type":"bloom","bits":`+fmt.Sprint(p.Bits)+`,"hashes":`+fmt.Sprint(p.Hashes)+`}`)
	must(t, e.postJSON(t, "/v1/events", `{"events":[{"id":500,"sketches":["g","h"]},{"id":"x","sketches":["g"]}]}`), http.StatusOK, "events")
	var u struct {
		Type          string
		BitsSet       int   `json:"bits_set"`
		ExpectedItems int64 `json:"expected_items"`
		Into          string
	}
	decode(t, must(t, e.postJSON(t, "/v1/union", `{"sketches":["f","g"],"into":"fg"}`), http.StatusOK, "union").Body, &u)
	decode(t, must(t, e.postJSON(t, "/v1/sketches/fg/check", `{"ids":[500,"x",1,"yan"]}`), http.StatusOK, "check union").Body, &c)
	if u.Type != "bloom" || u.ExpectedItems != 10000 || u.Into != "fg" || c.Present != 4 {
		t.Errorf("union = %+v, check %+v", u, c)
	}
	e.create(t, "small", `{"type":"bloom","bits":640,"hashes":3}`)
	checkProblem(t, e.postJSON(t, "/v1/union", `{"sketches":["f","small"]}`), http.StatusConflict)
	checkProblem(t, e.postJSON(t, "/v1/intersection", `{"sketches":["f","g"]}`), http.StatusConflict)
	raw := e.raw(t, "fg")
	must(t, e.send(t, http.MethodPut, "/v1/sketches/up/raw", "application/octet-stream", string(raw)), http.StatusCreated, "upload")
	if got := e.raw(t, "up"); string(got) != string(raw) {
		t.Error("uploaded filter downloads differently")
	}
	must(t, e.send(t, http.MethodPost, "/v1/sketches/g/raw", "application/octet-stream", string(e.raw(t, "f"))), http.StatusOK, "union upload")
	if got := e.raw(t, "g"); string(got[36:]) != string(raw[36:]) {
		t.Error("g ∪ f uploaded differs from the union of f and g")
	}
	bad := append([]byte(nil), raw...)
	bad[40] ^= 1
	pr = checkProblem(t, e.send(t, http.MethodPut, "/v1/sketches/up2/raw", "application/octet-stream", string(bad)), http.StatusBadRequest)
	if !strings.Contains(pr.Detail, "not a valid bloom sketch") {
		t.Errorf("damaged upload: %q", pr.Detail)
	}
}

// TestBloomRateOverHTTP: ids added over HTTP are never reported absent,
// and absent ones are reported present at a rate within the stated one.
func TestBloomRateOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 50_000
	e.create(t, "f", fmt.Sprintf(`{"type":"bloom","expected_items":%d,"fpp":0.02}`, n))
	r := rand.New(rand.NewPCG(7, 8))
	in, out := make([]int64, n), make([]int64, 100_000)
	for i := range in {
		in[i] = int64(r.Uint64() >> 1)
	}
	for i := range out {
		out[i] = -int64(r.Uint64()>>1) - 1 // negative: never added
	}
	must(t, e.send(t, http.MethodPost, "/v1/sketches/f/add", "application/octet-stream", octetIDs(in...)), http.StatusOK, "add")
	count := func(ids []int64) int {
		var c checkAnswer
		decode(t, must(t, e.send(t, http.MethodPost, "/v1/sketches/f/check", "application/octet-stream", octetIDs(ids...)), http.StatusOK, "check").Body, &c)
		return c.Present
	}
	if got := count(in); got != n {
		t.Errorf("%d of %d added ids found: false negatives", got, n)
	}
	if fp := count(out); float64(fp)/float64(len(out)) > 0.02 {
		t.Errorf("%d of %d absent ids found: rate %v above 0.02", fp, len(out), float64(fp)/float64(len(out)))
	}
}

// TestBloomSeries: a daily Bloom series answers "seen today?" and "seen
// this week?" for a range, and counts with the filter's state.
func TestBloomSeries(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/seen", "application/json", `{"type":"bloom","expected_items":1000,"fpp":0.01,"tz":"UTC","levels":{"day":"P30D"}}`), http.StatusCreated, "create")
	// Today's bucket is the one the server stamps event 4 in, and the
	// one a minute ago is in.
	now := pgtest.AwayFromMidnight(t, time.Minute)
	today := now.Truncate(24 * time.Hour)
	must(t, e.postJSON(t, "/v1/series/seen/add?ts="+rfc(now.Add(-time.Minute)), `{"ids":[1,2]}`), http.StatusOK, "add today")
	must(t, e.postJSON(t, "/v1/series/seen/add?ts="+rfc(today.Add(-time.Hour)), `{"ids":[3]}`), http.StatusOK, "add yesterday")
	must(t, e.postJSON(t, "/v1/events", `{"events":[{"id":4,"series":["seen"]}]}`), http.StatusOK, "event")
	check := func(from, to time.Time) map[string]bool {
		var c checkAnswer
		decode(t, must(t, e.postJSON(t, "/v1/series/seen/check?from="+rfc(from)+"&to="+rfc(to), `{"ids":[1,2,3,4,5]}`), http.StatusOK, "check").Body, &c)
		out := map[string]bool{}
		for _, r := range c.Results {
			out[fmt.Sprint(r.ID)] = r.Present
		}
		return out
	}
	if got := check(today, today.Add(24*time.Hour)); !got["1"] || !got["2"] || got["3"] || !got["4"] || got["5"] {
		t.Errorf("seen today: %v", got)
	}
	if got := check(today.Add(-6*24*time.Hour), today.Add(24*time.Hour)); !got["1"] || !got["3"] || got["5"] {
		t.Errorf("seen this week: %v", got)
	}
	var cnt struct {
		Cardinality float64
		Bloom       bloomAnswer
	}
	decode(t, must(t, e.get(t, "/v1/series/seen/count?from="+rfc(today)+"&to="+rfc(today.Add(24*time.Hour))), http.StatusOK, "count").Body, &cnt)
	if cnt.Cardinality < 2.9 || cnt.Cardinality > 3.1 || cnt.Bloom.BitsSet == 0 || *cnt.Bloom.ExpectedItems != 1000 {
		t.Errorf("count today = %+v", cnt)
	}
	var ts struct {
		Points []struct {
			Cardinality       float64
			FalsePositiveRate *float64 `json:"false_positive_rate"`
		}
	}
	decode(t, must(t, e.get(t, "/v1/series/seen/timeseries?from="+rfc(today.Add(-24*time.Hour))+"&to="+rfc(today.Add(24*time.Hour))), http.StatusOK, "timeseries").Body, &ts)
	if len(ts.Points) != 2 || ts.Points[0].Cardinality < 0.9 || ts.Points[1].Cardinality < 2.9 || ts.Points[1].FalsePositiveRate == nil {
		t.Errorf("timeseries = %+v", ts)
	}
	must(t, e.send(t, http.MethodPut, "/v1/series/h", "application/json", `{"tz":"UTC","levels":{"day":"P30D"}}`), http.StatusCreated, "create hll series")
	checkProblem(t, e.postJSON(t, "/v1/series/h/check?from="+rfc(today)+"&to="+rfc(today.Add(24*time.Hour)), `{"ids":[1]}`), http.StatusConflict)
}

var _ = binary.BigEndian
