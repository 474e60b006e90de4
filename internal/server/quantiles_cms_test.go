package server

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
)

type rangeAnswer struct {
	Lo, Hi     uint64
	Estimate   uint64
	ErrorBound float64 `json:"error_bound"`
	Confidence float64
	Intervals  int
	Total      uint64
}

type quantileAnswer struct {
	Type       string
	N          uint64
	RankError  float64 `json:"rank_error"`
	Confidence float64
	Quantiles  []struct {
		Q                   float64
		Value, Lower, Upper *float64
	}
}

// TestRangedCMSOverHTTP: a Count-Min over a value domain counts ranges and
// finds quantiles over HTTP as the engine does, never undercounting the
// truth; values out of the domain, texts and bad queries are refused.
func TestRangedCMSOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var d struct {
		Type       string
		DomainBits int `json:"domain_bits"`
		Width      int
	}
	decode(t, must(t, e.send(t, http.MethodPut, "/v1/sketches/lat", "application/json", `{"type":"cms","epsilon":0.005,"delta":0.01,"domain_bits":24}`), http.StatusCreated, "create").Body, &d)
	if d.Type != "cms" || d.DomainBits != 24 {
		t.Fatalf("create = %+v", d)
	}
	r := rand.New(rand.NewPCG(1, 1))
	vals := make([]int64, 20000)
	for i := range vals {
		vals[i] = int64(r.ExpFloat64() * 5000)
	}
	must(t, e.send(t, http.MethodPost, "/v1/sketches/lat/add", "application/octet-stream", octetIDs(vals...)), http.StatusOK, "add")
	want, err := cms.New(cms.Params{Width: d.Width, Depth: 5, DomainBits: 24})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vals {
		_ = want.AddInt(v, 1)
	}
	if got := e.raw(t, "lat"); string(got) != string(mustMarshal(t, want)) {
		t.Fatal("stored sketch differs from the engine's for the same values")
	}
	slices.Sort(vals)
	for _, c := range [][2]uint64{{0, 1000}, {2500, 2600}, {100, 100}, {0, 1<<24 - 1}} {
		var ra rangeAnswer
		decode(t, must(t, e.get(t, fmt.Sprintf("/v1/sketches/lat/range?lo=%d&hi=%d", c[0], c[1])), http.StatusOK, "range").Body, &ra)
		truth := uint64(sort.Search(len(vals), func(i int) bool { return vals[i] > int64(c[1]) }) - sort.Search(len(vals), func(i int) bool { return vals[i] >= int64(c[0]) }))
		we, _ := want.Range(c[0], c[1])
		if ra.Estimate != we.Estimate || ra.ErrorBound != we.ErrorBound || ra.Total != 20000 || ra.Estimate < truth || float64(ra.Estimate-truth) > ra.ErrorBound {
			t.Errorf("range %v = %+v, engine %+v, truth %d", c, ra, we, truth)
		}
	}
	// The raw bytes upload as a ranged Count-Min and answer the same.
	must(t, e.send(t, http.MethodPut, "/v1/sketches/up/raw", "application/octet-stream", string(e.raw(t, "lat"))), http.StatusCreated, "upload")
	if got := e.get(t, "/v1/sketches/up/range?lo=0&hi=1000").Body; string(got) != string(e.get(t, "/v1/sketches/lat/range?lo=0&hi=1000").Body) {
		t.Errorf("uploaded copy answers %s", got)
	}
	var qa quantileAnswer
	decode(t, must(t, e.get(t, "/v1/sketches/lat/quantile?q=0.5,0.99"), http.StatusOK, "quantile").Body, &qa)
	if qa.Type != "cms" || qa.N != 20000 || len(qa.Quantiles) != 2 || qa.RankError <= 0 {
		t.Fatalf("quantile = %+v", qa)
	}
	for _, qv := range qa.Quantiles {
		we, _, _ := want.Quantile(qv.Q)
		rank := float64(sort.Search(len(vals), func(i int) bool { return vals[i] > int64(*qv.Value) })) / 20000
		if *qv.Value != float64(we.Value) || rank < qv.Q-qa.RankError || *qv.Lower > *qv.Value || *qv.Upper < *qv.Value {
			t.Errorf("q=%v: %v [%v, %v], engine %d, true rank %v", qv.Q, *qv.Value, *qv.Lower, *qv.Upper, we.Value, rank)
		}
	}
	e.create(t, "empty", `{"type":"cms","domain_bits":8}`)
	decode(t, must(t, e.get(t, "/v1/sketches/empty/quantile?q=0.5"), http.StatusOK, "empty quantile").Body, &qa)
	if qa.N != 0 || qa.Quantiles[0].Value != nil {
		t.Errorf("empty quantile = %+v", qa)
	}
	e.create(t, "ids", `{"type":"cms"}`)
	e.create(t, "h", `{}`)
	before := e.snapshot(t)
	for path, status := range map[string]int{
		"/v1/sketches/ids/range?lo=1&hi=2":        http.StatusConflict,
		"/v1/sketches/h/quantile?q=0.5":           http.StatusConflict,
		"/v1/sketches/lat/range?lo=5&hi=4":        http.StatusBadRequest,
		"/v1/sketches/lat/range?lo=0&hi=16777216": http.StatusBadRequest,
		"/v1/sketches/lat/range?lo=-1&hi=4":       http.StatusBadRequest,
		"/v1/sketches/lat/range?lo=1":             http.StatusBadRequest,
		"/v1/sketches/lat/quantile?q=1.5":         http.StatusBadRequest,
		"/v1/sketches/lat/quantile?q=0.5,x":       http.StatusBadRequest,
		"/v1/sketches/lat/quantile":               http.StatusBadRequest,
		"/v1/sketches/nope/quantile?q=0.5":        http.StatusNotFound,
	} {
		checkProblem(t, e.get(t, path), status)
	}
	for body, detail := range map[string]string{
		`{"ids":[16777216]}`: "outside the domain [0, 2^24)",
		`{"ids":[-1]}`:       "outside the domain",
		`{"ids":["a"]}`:      "counts integer values, not texts",
	} {
		p := checkProblem(t, e.postJSON(t, "/v1/sketches/lat/add", body), http.StatusBadRequest)
		if !strings.Contains(p.Detail, detail) {
			t.Errorf("add %s: %q, want %q", body, p.Detail, detail)
		}
	}
	for body, detail := range map[string]string{
		`{"type":"cms","domain_bits":64}`:                          "domain bits 64 not in 0..63",
		`{"type":"cms","width":100000,"depth":5,"domain_bits":32}`: "more than 4194304",
		`{"domain_bits":8}`:                                        "domain_bits is a parameter of cms sketches",
	} {
		p := checkProblem(t, e.send(t, http.MethodPut, "/v1/sketches/bad", "application/json", body), http.StatusBadRequest)
		if !strings.Contains(p.Detail, detail) {
			t.Errorf("create %s: %q, want %q", body, p.Detail, detail)
		}
	}
	if d := before.diff(e.snapshot(t)); len(d) > 0 {
		t.Errorf("refused requests changed %v", d)
	}
}

func mustMarshal(tb testing.TB, c *cms.Sketch) []byte {
	tb.Helper()
	b, err := c.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestRangedCMSSeries: a daily latency series answers range counts and
// quantiles over a range of days.
func TestRangedCMSSeries(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/lat", "application/json", `{"type":"cms","width":500,"depth":4,"domain_bits":16,"tz":"UTC","levels":{"day":"P30D"}}`), http.StatusCreated, "create")
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	// Today's start: a minute ago is yesterday in a day's first minute.
	must(t, e.postJSON(t, "/v1/series/lat/add?ts="+rfc(day), idsJSON(10, 20, 30, 40)), http.StatusOK, "today")
	must(t, e.postJSON(t, "/v1/series/lat/add?ts="+rfc(day.Add(-time.Hour)), idsJSON(1000, 2000)), http.StatusOK, "yesterday")
	var ra struct {
		rangeAnswer
		Buckets []struct{ Level string }
	}
	decode(t, must(t, e.get(t, "/v1/series/lat/range?from="+rfc(day.Add(-24*time.Hour))+"&to="+rfc(day.Add(24*time.Hour))+"&lo=0&hi=1500&buckets=true"), http.StatusOK, "series range").Body, &ra)
	if ra.Estimate < 5 || ra.Total != 6 || len(ra.Buckets) != 2 {
		t.Errorf("series range = %+v", ra)
	}
	var qa quantileAnswer
	decode(t, must(t, e.get(t, "/v1/series/lat/quantile?from="+rfc(day)+"&to="+rfc(day.Add(24*time.Hour))+"&q=1"), http.StatusOK, "series quantile").Body, &qa)
	if qa.N != 4 || qa.Quantiles[0].Value == nil || *qa.Quantiles[0].Value > 40 {
		t.Errorf("series quantile = %+v", qa)
	}
}
