package server

import (
	"bytes"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/dshll"
)

// dshllOf builds in process the DataSketches HLL the server must hold:
// ints first, then strings, in order.
func dshllOf(tb testing.TB, p dshll.Params, ints []int64, strs ...string) *dshll.Sketch {
	tb.Helper()
	s, err := dshll.New(p)
	if err != nil {
		tb.Fatal(err)
	}
	for _, v := range ints {
		s.AddInt(v)
	}
	for _, v := range strs {
		s.AddString(v)
	}
	return s
}

type registersAnswer struct {
	Name, Type, Representation string
	LgK                        int     `json:"lg_k"`
	TgtType                    string  `json:"tgt_type"`
	Cardinality                float64 `json:"cardinality"`
	StdError                   float64 `json:"std_error"`
	Lower                      float64 `json:"lower_bound"`
	Upper                      float64 `json:"upper_bound"`
	SizeBytes                  int     `json:"size_bytes"`
}

// TestDSHLLOverHTTP: a ds_hll sketch takes every body format, events,
// unions (at the smallest lg_k), raw download, upload and merge, series
// and the /metrics gauge, hashing ids as DataSketches does: its bytes are
// the library's for the same ids in the same order.
func TestDSHLLOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/sketches/d", "application/json", `{"type":"ds_hll","lg_k":11,"tgt_type":"HLL_8","metric":true}`), http.StatusCreated, "create")
	e.addIDs(t, "d", idsJSON(idRange(0, 3000)...), 3000)
	must(t, e.send(t, http.MethodPost, "/v1/sketches/d/add", "application/octet-stream", octetIDs(idRange(3000, 4000)...)), http.StatusOK, "octets")
	must(t, e.send(t, http.MethodPost, "/v1/sketches/d/add?id_type=text", "text/plain", "alice\nbob\n"), http.StatusOK, "text")
	must(t, e.send(t, http.MethodPost, "/v1/sketches/d/add?id_type=text", "application/x-ndjson", "\"carol\"\n"), http.StatusOK, "ndjson")
	must(t, e.postJSON(t, "/v1/events", `{"events":[{"id":"dave","sketches":["d"]},{"id":5000,"sketches":["d"]}]}`), http.StatusOK, "events")
	p := dshll.Params{LgK: 11, Type: dshll.HLL8}
	want := dshllOf(t, p, idRange(0, 4000), "alice", "bob", "carol")
	want.AddString("dave")
	want.AddInt(5000)
	wantBytes, _ := want.MarshalBinary()
	if got := e.raw(t, "d"); !bytes.Equal(got, wantBytes) {
		t.Fatalf("stored ds_hll differs from the library's for the same ids (%d bytes, want %d)", len(got), len(wantBytes))
	}
	var d registersAnswer
	decode(t, must(t, e.get(t, "/v1/sketches/d"), http.StatusOK, "describe").Body, &d)
	lo, _ := want.LowerBound(2)
	if d.Type != "ds_hll" || d.LgK != 11 || d.TgtType != "HLL_8" || d.Representation != "HLL" || d.Cardinality != want.Estimate() || d.Lower != lo || d.StdError <= 0 || d.StdError > 0.03 || d.SizeBytes != len(wantBytes) {
		t.Errorf("describe = %+v, want estimate %v", d, want.Estimate())
	}
	// The metric gauge exports the estimate.
	found := false
	for _, m := range e.scrape(t)["sketchd_sketch_estimate"].GetMetric() {
		if labels(m)["name"] == "d" {
			found = m.GetGauge().GetValue() == want.Estimate()
		}
	}
	if !found {
		t.Error("sketchd_sketch_estimate{name=\"d\"} missing or not the estimate")
	}
	// Upload (created as uploaded), merge, and unions at the smallest lg_k.
	other := dshllOf(t, dshll.Params{LgK: 9, Type: dshll.HLL4}, idRange(2000, 8000))
	ob, _ := other.AppendUpdatable(nil)
	must(t, e.send(t, http.MethodPut, "/v1/sketches/o/raw", "application/octet-stream", string(ob)), http.StatusCreated, "upload")
	if got := e.raw(t, "o"); !bytes.Equal(got, ob) {
		t.Error("the uploaded updatable image is not served as uploaded")
	}
	var u registersAnswer
	decode(t, must(t, e.postJSON(t, "/v1/union", `{"sketches":["d","o"],"into":"u"}`), http.StatusOK, "union").Body, &u)
	wu, err := dshll.Union(dshll.Params{LgK: 9, Type: dshll.HLL8}, want, other)
	if err != nil {
		t.Fatal(err)
	}
	if u.Type != "ds_hll" || u.LgK != 9 || u.TgtType != "HLL_8" || u.Cardinality != wu.Estimate() || math.Abs(u.Cardinality-8004) > 0.1*8004 {
		t.Errorf("union = %+v, want %v at lg_k 9", u, wu.Estimate())
	}
	wub, _ := wu.MarshalBinary()
	if got := e.raw(t, "u"); !bytes.Equal(got, wub) {
		t.Error("the stored union differs from the library's")
	}
	// A merge of fewer registers into more is a conflict; into the
	// smaller one it unions.
	p409 := checkProblem(t, e.send(t, http.MethodPost, "/v1/sketches/d/raw", "application/octet-stream", string(ob)), http.StatusConflict)
	if !strings.Contains(p409.Detail, "lg_k 9") {
		t.Errorf("merge conflict detail %q", p409.Detail)
	}
	must(t, e.send(t, http.MethodPost, "/v1/sketches/o/raw", "application/octet-stream", string(wantBytes)), http.StatusOK, "merge into o")
	// Other kinds' parameters and bad values are refused.
	for _, body := range []string{`{"type":"ds_hll","lg_k":22}`, `{"type":"ds_hll","lg_k":3}`, `{"type":"ds_hll","tgt_type":"HLL_5"}`, `{"type":"ds_hll","log2m":12}`, `{"tgt_type":"HLL_4"}`, `{"type":"theta","tgt_type":"HLL_4"}`} {
		checkProblem(t, e.send(t, http.MethodPut, "/v1/sketches/x", "application/json", body), http.StatusBadRequest)
	}
	// Intersections by inclusion-exclusion of the kind's own unions.
	var x struct {
		Method       string
		Estimate     float64
		Lower, Upper float64
		Terms        []struct{ Cardinality float64 }
	}
	decode(t, must(t, e.postJSON(t, "/v1/intersection", `{"sketches":["d","o"]}`), http.StatusOK, "intersection").Body, &x)
	// o took d in by the merge above: d ∩ o is d's 4005 ids (0..3999,
	// 5000 and four strings).
	if x.Method != "inclusion_exclusion" || x.Lower > 4005 || x.Upper < 4005 || len(x.Terms) != 3 {
		t.Errorf("d ∩ o = %+v, want bounds around 4,005", x)
	}
	checkProblem(t, e.postJSON(t, "/v1/intersection", `{"sketches":["d","o"],"method":"mle"}`), http.StatusBadRequest)
	e.create(t, "h", `{}`)
	checkProblem(t, e.postJSON(t, "/v1/union", `{"sketches":["d","h"]}`), http.StatusConflict)
	checkProblem(t, e.postJSON(t, "/v1/intersection", `{"sketches":["d","h"]}`), http.StatusConflict)
	checkProblem(t, e.get(t, "/v1/sketches/d/raw?log2m=10"), http.StatusConflict)
}

// TestDSHLLSeries: a ds_hll series counts a range as the union of its
// buckets, and downloads it in DataSketches' format.
func TestDSHLLSeries(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", `{"type":"ds_hll","lg_k":12,"levels":{"day":"P30D"}}`), http.StatusCreated, "create")
	now := time.Now().UTC()
	y := now.AddDate(0, 0, -1)
	must(t, e.postJSON(t, "/v1/series/s/add?ts="+rfc(y), idsJSON(idRange(0, 2000)...)), http.StatusOK, "add yesterday")
	must(t, e.postJSON(t, "/v1/series/s/add?ts="+rfc(now), idsJSON(idRange(1000, 3000)...)), http.StatusOK, "add today")
	from := time.Date(y.Year(), y.Month(), y.Day(), 0, 0, 0, 0, time.UTC)
	q := "?from=" + rfc(from) + "&to=" + rfc(from.AddDate(0, 0, 2))
	var c countAnswer
	decode(t, must(t, e.get(t, "/v1/series/s/count"+q), http.StatusOK, "count").Body, &c)
	a := dshllOf(t, dshll.Params{LgK: 12}, idRange(0, 2000))
	b := dshllOf(t, dshll.Params{LgK: 12}, idRange(1000, 3000))
	wu, _ := dshll.Union(dshll.Params{LgK: 12}, a, b)
	if c.Cardinality != wu.Estimate() {
		t.Errorf("count = %v, want the union's %v", c.Cardinality, wu.Estimate())
	}
	raw := must(t, e.get(t, "/v1/series/s/raw"+q), http.StatusOK, "raw").Body
	d, err := dshll.Decode(raw)
	if err != nil || d.Estimate() != wu.Estimate() {
		t.Errorf("series raw decodes to %v, %v; want estimate %v", d, err, wu.Estimate())
	}
	var sr struct {
		Type   string
		Params map[string]any
	}
	decode(t, must(t, e.get(t, "/v1/series/s"), http.StatusOK, "describe").Body, &sr)
	if sr.Type != "ds_hll" || sr.Params["tgt_type"] != "HLL_4" || sr.Params["lg_k"] != 12.0 {
		t.Errorf("series describe = %+v", sr)
	}
}
