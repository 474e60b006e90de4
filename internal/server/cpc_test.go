package server

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/sketchd/sketchd/internal/cpc"
)

func cpcOf(tb testing.TB, lgK int, ints []int64, strs ...string) *cpc.Sketch {
	tb.Helper()
	s, err := cpc.New(cpc.Params{LgK: lgK})
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

// TestCPCOverHTTP: a cpc sketch's bytes are the library's for the same
// ids; it is described with its flavor and bounds, unions at the
// smallest lg_k, refuses a merge that would reduce it, and uploads back.
func TestCPCOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "c", `{"type":"cpc","lg_k":10}`)
	e.create(t, "big", `{"type":"cpc","lg_k":12}`)
	e.addIDs(t, "c", idsJSON(idRange(0, 20000)...), 20000)
	must(t, e.send(t, http.MethodPost, "/v1/sketches/c/add?id_type=text", "text/plain", "alice\nbob\n"), http.StatusOK, "text")
	e.addIDs(t, "big", idsJSON(idRange(10000, 30000)...), 20000)
	want := cpcOf(t, 10, idRange(0, 20000), "alice", "bob")
	wb, _ := want.MarshalBinary()
	if got := e.raw(t, "c"); !bytes.Equal(got, wb) {
		t.Fatal("stored cpc differs from the library's for the same ids")
	}
	var d registersAnswer
	decode(t, must(t, e.get(t, "/v1/sketches/c"), http.StatusOK, "describe").Body, &d)
	lo, _ := want.LowerBound(2)
	hi, _ := want.UpperBound(2)
	if d.Type != "cpc" || d.LgK != 10 || d.Representation != "SLIDING" || d.Cardinality != want.Estimate() || d.Lower != lo || d.Upper != hi || d.StdError <= 0 {
		t.Errorf("describe = %+v, want %v [%v, %v]", d, want.Estimate(), lo, hi)
	}
	var u registersAnswer
	decode(t, must(t, e.postJSON(t, "/v1/union", `{"sketches":["c","big"],"into":"u"}`), http.StatusOK, "union").Body, &u)
	wu, err := cpc.Union(cpc.Params{LgK: 10}, want, cpcOf(t, 12, idRange(10000, 30000)))
	if err != nil {
		t.Fatal(err)
	}
	if u.Type != "cpc" || u.LgK != 10 || u.Cardinality != wu.Estimate() {
		t.Errorf("union = %+v, want %v at lg_k 10", u, wu.Estimate())
	}
	checkProblem(t, e.send(t, http.MethodPost, "/v1/sketches/big/raw", "application/octet-stream", string(wb)), http.StatusConflict)
	must(t, e.send(t, http.MethodPut, "/v1/sketches/up/raw", "application/octet-stream", string(wb)), http.StatusCreated, "upload")
	if got := e.raw(t, "up"); !bytes.Equal(got, wb) {
		t.Error("upload does not come back as uploaded")
	}
	for _, body := range []string{`{"type":"cpc","lg_k":27}`, `{"type":"cpc","lg_k":3}`, `{"type":"cpc","tgt_type":"HLL_4"}`} {
		checkProblem(t, e.send(t, http.MethodPut, "/v1/sketches/x", "application/json", body), http.StatusBadRequest)
	}
}
