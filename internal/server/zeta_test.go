package server

import (
	"bytes"
	"encoding/hex"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/zeta"
)

// zetaOf builds in process the ZetaSketch HLL++ the server must hold.
func zetaOf(tb testing.TB, p zeta.Params, ints []int64, strs ...string) *zeta.Sketch {
	tb.Helper()
	s, err := zeta.New(p)
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

type zetaAnswer struct {
	registersAnswer
	Precision       *int   `json:"precision"`
	SparsePrecision *int   `json:"sparse_precision"`
	ValueType       string `json:"value_type"`
	NumValues       *int64 `json:"num_values"`
}

// TestZetaHLLOverHTTP: a zeta_hll sketch takes every body format and
// events, hashing ids as BigQuery does (its bytes are ZetaSketch's for
// the same values), counts one type of id, unions at the smallest
// precision, downloads, uploads (kept as uploaded) and merges, and
// exports its estimate.
func TestZetaHLLOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/sketches/z", "application/json", `{"type":"zeta_hll","precision":12,"metric":true}`), http.StatusCreated, "create")
	e.addIDs(t, "z", idsJSON(idRange(0, 3000)...), 3000)
	must(t, e.send(t, http.MethodPost, "/v1/sketches/z/add", "application/octet-stream", octetIDs(idRange(3000, 4000)...)), http.StatusOK, "octets")
	must(t, e.send(t, http.MethodPost, "/v1/sketches/z/add?id_type=int", "text/plain", "4000\n4001\n4001\n"), http.StatusOK, "text")
	must(t, e.postJSON(t, "/v1/events", `{"events":[{"id":5000,"sketches":["z"]}]}`), http.StatusOK, "events")
	want := zetaOf(t, zeta.ParamsFor(12), append(idRange(0, 4002), 4001, 5000))
	wantBytes := want.AppendBinary(nil)
	if got := e.raw(t, "z"); !bytes.Equal(got, wantBytes) {
		t.Fatalf("stored zeta_hll differs from ZetaSketch's for the same values:\n got %.60x\nwant %.60x", got, wantBytes)
	}
	var d zetaAnswer
	decode(t, must(t, e.get(t, "/v1/sketches/z"), http.StatusOK, "describe").Body, &d)
	if d.Type != "zeta_hll" || *d.Precision != 12 || *d.SparsePrecision != 17 || d.ValueType != "int64" || *d.NumValues != 4004 ||
		d.Representation != "NORMAL" || d.Cardinality != float64(want.Estimate()) || d.StdError <= 0 || d.Lower > d.Cardinality || d.Upper < d.Cardinality || d.SizeBytes != len(wantBytes) {
		t.Errorf("describe = %+v %v %v %v %v, want estimate %v", d, *d.Precision, *d.SparsePrecision, d.ValueType, *d.NumValues, want.Estimate())
	}
	found := false
	for _, m := range e.scrape(t)["sketchd_sketch_estimate"].GetMetric() {
		if labels(m)["name"] == "z" {
			found = m.GetGauge().GetValue() == float64(want.Estimate())
		}
	}
	if !found {
		t.Error("sketchd_sketch_estimate{name=\"z\"} missing or not the estimate")
	}
	// One type of id per sketch, as one BigQuery column.
	checkProblem(t, e.postJSON(t, "/v1/sketches/z/add", `{"ids":["alice"]}`), http.StatusConflict)
	e.create(t, "z2", `{"type":"zeta_hll"}`)
	checkProblem(t, e.postJSON(t, "/v1/sketches/z2/add", `{"ids":[1,"alice"]}`), http.StatusBadRequest)
	must(t, e.send(t, http.MethodPut, "/v1/sketches/s", "application/json", `{"type":"zeta_hll"}`), http.StatusCreated, "create s")
	must(t, e.send(t, http.MethodPost, "/v1/sketches/s/add?id_type=text", "application/x-ndjson", "\"alice\"\n\"bob\"\n"), http.StatusOK, "strings")
	if got, w := e.raw(t, "s"), zetaOf(t, zeta.DefaultParams(), nil, "alice", "bob").AppendBinary(nil); !bytes.Equal(got, w) {
		t.Errorf("string sketch %x, want %x", got, w)
	}
	checkProblem(t, e.postJSON(t, "/v1/union", `{"sketches":["z","s"]}`), http.StatusConflict)
	// Upload (kept as uploaded), unions at the smallest precision, merge.
	other := zetaOf(t, zeta.ParamsFor(11), idRange(2000, 8000))
	ob := other.AppendBinary(nil)
	must(t, e.send(t, http.MethodPut, "/v1/sketches/o/raw", "application/octet-stream", string(ob)), http.StatusCreated, "upload")
	if got := e.raw(t, "o"); !bytes.Equal(got, ob) {
		t.Error("the upload is not served as uploaded")
	}
	var u zetaAnswer
	decode(t, must(t, e.postJSON(t, "/v1/union", `{"sketches":["z","o"],"into":"u"}`), http.StatusOK, "union").Body, &u)
	wu, err := zeta.Union(want, other)
	if err != nil {
		t.Fatal(err)
	}
	if u.Type != "zeta_hll" || *u.Precision != 11 || *u.NumValues != 10004 || u.Cardinality != float64(wu.Estimate()) || math.Abs(u.Cardinality-8001) > 0.1*8001 {
		t.Errorf("union = %+v, want %v at precision 11", u, wu.Estimate())
	}
	if got := e.raw(t, "u"); !bytes.Equal(got, wu.AppendBinary(nil)) {
		t.Error("the stored union differs from ZetaSketch's")
	}
	p409 := checkProblem(t, e.send(t, http.MethodPost, "/v1/sketches/z/raw", "application/octet-stream", string(ob)), http.StatusConflict)
	if !strings.Contains(p409.Detail, "precision 11") {
		t.Errorf("merge conflict detail %q", p409.Detail)
	}
	must(t, e.send(t, http.MethodPost, "/v1/sketches/o/raw", "application/octet-stream", string(wantBytes)), http.StatusOK, "merge into o")
	for _, body := range []string{`{"type":"zeta_hll","precision":9}`, `{"type":"zeta_hll","precision":25}`, `{"type":"zeta_hll","sparse_precision":26}`,
		`{"type":"zeta_hll","precision":16,"sparse_precision":15}`, `{"type":"zeta_hll","lg_k":12}`, `{"precision":12}`} {
		checkProblem(t, e.send(t, http.MethodPut, "/v1/sketches/x", "application/json", body), http.StatusBadRequest)
	}
	// Intersections by inclusion-exclusion of the kind's own unions: o
	// took z in, so z ∩ o is z's 4003 ids.
	var x struct {
		Method       string
		Lower, Upper float64
		Terms        []struct{ Cardinality float64 }
	}
	decode(t, must(t, e.postJSON(t, "/v1/intersection", `{"sketches":["z","o"]}`), http.StatusOK, "intersection").Body, &x)
	if x.Method != "inclusion_exclusion" || x.Lower > 4003 || x.Upper < 4003 || len(x.Terms) != 3 {
		t.Errorf("z ∩ o = %+v, want bounds around 4,003", x)
	}
}

// TestZetaHLLSeries: a zeta_hll series counts a range as ZetaSketch's
// union of its buckets and downloads it in its format.
func TestZetaHLLSeries(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", `{"type":"zeta_hll","precision":13,"levels":{"day":"P30D"}}`), http.StatusCreated, "create")
	now := time.Now().UTC()
	y := now.AddDate(0, 0, -1)
	must(t, e.postJSON(t, "/v1/series/s/add?ts="+rfc(y), idsJSON(idRange(0, 2000)...)), http.StatusOK, "add yesterday")
	must(t, e.postJSON(t, "/v1/series/s/add?ts="+rfc(now), idsJSON(idRange(1000, 3000)...)), http.StatusOK, "add today")
	from := time.Date(y.Year(), y.Month(), y.Day(), 0, 0, 0, 0, time.UTC)
	q := "?from=" + rfc(from) + "&to=" + rfc(from.AddDate(0, 0, 2))
	var c countAnswer
	decode(t, must(t, e.get(t, "/v1/series/s/count"+q), http.StatusOK, "count").Body, &c)
	wu, _ := zeta.Union(zetaOf(t, zeta.ParamsFor(13), idRange(0, 2000)), zetaOf(t, zeta.ParamsFor(13), idRange(1000, 3000)))
	if c.Cardinality != float64(wu.Estimate()) {
		t.Errorf("count = %v, want the union's %v", c.Cardinality, wu.Estimate())
	}
	raw := must(t, e.get(t, "/v1/series/s/raw"+q), http.StatusOK, "raw").Body
	if !bytes.Equal(raw, wu.AppendBinary(nil)) {
		t.Errorf("series raw %.40x, want ZetaSketch's union %.40x", raw, wu.AppendBinary(nil))
	}
	var sr struct {
		Type   string
		Params map[string]any
	}
	decode(t, must(t, e.get(t, "/v1/series/s"), http.StatusOK, "describe").Body, &sr)
	if sr.Type != "zeta_hll" || sr.Params["precision"] != 13.0 || sr.Params["sparse_precision"] != 18.0 {
		t.Errorf("series describe = %+v", sr)
	}
}

// TestZetaJavaOverHTTP: ZetaSketch's Java library reads sketchd's
// downloads with sketchd's estimate, and sketchd takes ZetaSketch's bytes
// with its estimate, serving them back byte for byte.
func TestZetaJavaOverHTTP(t *testing.T) {
	t.Parallel()
	jvm := java.Get(t)
	e := newEnv(t)
	for _, c := range []struct {
		name, create string
		lo, hi       int64
	}{
		{"sparse", `{"type":"zeta_hll"}`, 0, 5000},
		// Past 5.2·2^p both estimators take the raw estimate.
		{"normal", `{"type":"zeta_hll","precision":10}`, 0, 20000},
	} {
		e.create(t, c.name, c.create)
		e.addIDs(t, c.name, idsJSON(idRange(c.lo, c.hi)...), int(c.hi-c.lo))
		var d zetaAnswer
		decode(t, must(t, e.get(t, "/v1/sketches/"+c.name), http.StatusOK, "describe").Body, &d)
		r := jvm.Call(t, "zeta_read", hex.EncodeToString(e.raw(t, c.name)))
		if est, _ := strconv.ParseInt(r[1], 10, 64); float64(est) != d.Cardinality {
			t.Errorf("%s: ZetaSketch reads the download as %d, described %v", c.name, est, d.Cardinality)
		}
		j := jvm.Call(t, "zeta_build", strconv.Itoa(*d.Precision), strconv.Itoa(*d.SparsePrecision), "longs", strconv.FormatInt(c.lo, 10), strconv.FormatInt(c.hi, 10), "1", "-")
		b, err := hex.DecodeString(j[0])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, e.raw(t, c.name)) {
			t.Errorf("%s: sketchd's bytes differ from ZetaSketch's for the same ids", c.name)
		}
		must(t, e.send(t, http.MethodPut, "/v1/sketches/java-"+c.name+"/raw", "application/octet-stream", string(b)), http.StatusCreated, "upload")
		decode(t, must(t, e.get(t, "/v1/sketches/java-"+c.name), http.StatusOK, "describe").Body, &d)
		if est, _ := strconv.ParseInt(j[1], 10, 64); float64(est) != d.Cardinality {
			t.Errorf("%s: ZetaSketch's bytes uploaded with estimate %v, ZetaSketch's %d", c.name, d.Cardinality, est)
		}
		if back := e.raw(t, "java-"+c.name); !bytes.Equal(back, b) {
			t.Errorf("%s: ZetaSketch's bytes do not come back as uploaded", c.name)
		}
	}
}
