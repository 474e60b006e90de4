package server

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"

	"github.com/sketchd/sketchd/internal/freq"
	"github.com/sketchd/sketchd/internal/theta"
)

// thetaOf builds in process the theta sketch the server must hold.
func thetaOf(tb testing.TB, lgK int, ids ...int64) *theta.Sketch {
	tb.Helper()
	t, err := theta.New(theta.Params{LgK: lgK})
	if err != nil {
		tb.Fatal(err)
	}
	for _, v := range ids {
		t.AddInt(v)
	}
	return t
}

type sampledAnswer struct {
	Type        string
	LgK         int     `json:"lg_k"`
	Cardinality float64 `json:"cardinality"`
	Lower       float64 `json:"lower_bound"`
	Upper       float64 `json:"upper_bound"`
	Retained    int
	Impressions int64
}

// TestThetaOverHTTP: theta sketches are created, added to, described,
// downloaded, uploaded, unioned and intersected through the same routes
// as HLLs, hashing ids as DataSketches does.
func TestThetaOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/sketches/a", "application/json", `{"type":"theta","lg_k":10}`), http.StatusCreated, "create")
	e.create(t, "b", `{"type":"theta","lg_k":10}`)
	e.addIDs(t, "a", idsJSON(idRange(0, 30000)...), 30000)
	e.addIDs(t, "b", idsJSON(idRange(20000, 60000)...), 40000)
	wantA := thetaOf(t, 10, idRange(0, 30000)...)
	if got := e.raw(t, "a"); !bytes.Equal(got, wantA.AppendStored(nil)) {
		t.Fatal("stored theta sketch differs from DataSketches' for the same ids")
	}
	var d sampledAnswer
	decode(t, must(t, e.get(t, "/v1/sketches/a"), http.StatusOK, "describe").Body, &d)
	lo, _ := wantA.LowerBound(2)
	if d.Type != "theta" || d.LgK != 10 || d.Cardinality != wantA.Estimate() || d.Lower != lo || d.Lower > 30000 || d.Upper < 30000 {
		t.Errorf("describe = %+v, want %v with bounds around 30000", d, wantA.Estimate())
	}
	// The library's own bytes (no lg_k stored) upload as a theta sketch.
	lib, _ := wantA.MarshalBinary()
	must(t, e.send(t, http.MethodPut, "/v1/sketches/up/raw", "application/octet-stream", string(lib)), http.StatusCreated, "upload")
	decode(t, must(t, e.get(t, "/v1/sketches/up"), http.StatusOK, "describe upload").Body, &d)
	if d.Type != "theta" || d.Cardinality != wantA.Estimate() {
		t.Errorf("uploaded = %+v", d)
	}
	var u sampledAnswer
	decode(t, must(t, e.postJSON(t, "/v1/union", `{"sketches":["a","b"],"into":"ab"}`), http.StatusOK, "union").Body, &u)
	if u.Lower > 60000 || u.Upper < 60000 {
		t.Errorf("union = %+v, want bounds around 60000", u)
	}
	var x struct {
		Method       string
		Estimate     float64
		Lower, Upper float64
		Spurious     bool
		Reliable     bool
		Jaccard      struct{ Estimate, Lower, Upper float64 }
	}
	decode(t, must(t, e.postJSON(t, "/v1/intersection", `{"sketches":["a","b"]}`), http.StatusOK, "intersection").Body, &x)
	if x.Method != "theta" || x.Lower > 10000 || x.Upper < 10000 || x.Spurious || !x.Reliable || x.Jaccard.Lower > 1.0/6 || x.Jaccard.Upper < 1.0/6 {
		t.Errorf("intersection = %+v, want bounds around 10000 and Jaccard around 1/6", x)
	}
	e.create(t, "h", `{}`)
	checkProblem(t, e.postJSON(t, "/v1/intersection", `{"sketches":["a","h"]}`), http.StatusConflict)
	checkProblem(t, e.postJSON(t, "/v1/union", `{"sketches":["a","h"]}`), http.StatusConflict)
	checkProblem(t, e.send(t, http.MethodPut, "/v1/sketches/x", "application/json", `{"type":"theta","lg_k":30}`), http.StatusBadRequest)
	checkProblem(t, e.send(t, http.MethodPut, "/v1/sketches/x", "application/json", `{"type":"theta","log2m":12}`), http.StatusBadRequest)
	checkProblem(t, e.send(t, http.MethodPut, "/v1/sketches/x", "application/json", `{"lg_k":12}`), http.StatusBadRequest)
	checkProblem(t, e.send(t, http.MethodPut, "/v1/sketches/a", "application/json", `{"type":"theta","lg_k":11}`), http.StatusConflict)
}

// TestFrequencyReportOverHTTP: a freq sketch counts impressions per user
// and answers the frequency report the engine computes.
func TestFrequencyReportOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "f", `{"type":"freq"}`)
	// Users 0..999 seen once, 1000..1199 three times (one body with counts).
	e.addIDs(t, "f", idsJSON(idRange(0, 1200)...), 1200)
	must(t, e.postJSON(t, "/v1/sketches/f/add", `{"items":[`+itemsJSON(idRange(1000, 1200), 2)+`]}`), http.StatusOK, "items")
	want, _ := freq.New(freq.DefaultParams())
	for _, v := range idRange(0, 1200) {
		want.AddInt(v)
	}
	for _, v := range idRange(1000, 1200) {
		want.AddHash(theta.HashInt(v), 2)
	}
	if got := e.raw(t, "f"); !bytes.Equal(got, want.AppendStoredWidth(nil, freq.SummaryJava)) {
		t.Fatal("downloaded freq sketch differs from the engine's (Java layout) for the same adds")
	}
	var rep frequencyReportResponse
	decode(t, must(t, e.get(t, "/v1/sketches/f/frequency_report?max=4"), http.StatusOK, "report").Body, &rep)
	wr, _ := want.FrequencyReport(4, 2)
	if len(rep.Classes) != 4 || rep.Classes[0].Users.Estimate != 1000 || rep.Classes[2].Users.Estimate != 200 || rep.Impressions.Estimate != wr.Impressions.Estimate || rep.Reach.Estimate != 1200 {
		t.Errorf("report = %+v", rep)
	}
	var d sampledAnswer
	decode(t, must(t, e.get(t, "/v1/sketches/f"), http.StatusOK, "describe").Body, &d)
	if d.Type != "freq" || d.Impressions != 1600 || d.Cardinality != 1200 {
		t.Errorf("describe = %+v, want 1200 users and 1600 impressions", d)
	}
	e.create(t, "h", `{}`)
	checkProblem(t, e.get(t, "/v1/sketches/h/frequency_report"), http.StatusConflict)
	checkProblem(t, e.get(t, "/v1/sketches/f/frequency_report?max=1"), http.StatusBadRequest)
	checkProblem(t, e.get(t, "/v1/sketches/f/frequency_report?sd=4"), http.StatusBadRequest)
	checkProblem(t, e.get(t, "/v1/sketches/none/frequency_report"), http.StatusNotFound)
}

// itemsJSON formats ids as items of one count.
func itemsJSON(ids []int64, count int) string {
	var b bytes.Buffer
	for i, v := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"id":`)
		b.WriteString(itoa(v))
		b.WriteString(`,"count":`)
		b.WriteString(itoa(int64(count)))
		b.WriteByte('}')
	}
	return b.String()
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
