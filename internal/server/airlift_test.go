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

	"github.com/sketchd/sketchd/internal/airlift"
)

// airliftOf builds in process the airlift HyperLogLog the server must
// hold after one batch of ids, then strings.
func airliftOf(tb testing.TB, p int, ints []int64, strs ...string) *airlift.Sketch {
	tb.Helper()
	s, err := airlift.New(airlift.Params{IndexBits: p})
	if err != nil {
		tb.Fatal(err)
	}
	hs := make([]uint64, 0, len(ints)+len(strs))
	for _, v := range ints {
		hs = append(hs, airlift.HashInt(v))
	}
	for _, v := range strs {
		hs = append(hs, airlift.HashString(v))
	}
	s.AddHashes(hs)
	return s
}

type airliftAnswer struct {
	registersAnswer
	IndexBits *int `json:"index_bits"`
}

// TestAirliftHLLOverHTTP: an airlift_hll sketch takes every body format
// and events, hashing ids as approx_set does (its bytes are airlift's for
// the same batches), unions by airlift's rules, downloads, uploads and
// merges, and exports its estimate.
func TestAirliftHLLOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/sketches/a", "application/json", `{"type":"airlift_hll","index_bits":11,"metric":true}`), http.StatusCreated, "create")
	e.addIDs(t, "a", idsJSON(idRange(0, 3000)...), 3000)
	must(t, e.send(t, http.MethodPost, "/v1/sketches/a/add", "application/octet-stream", octetIDs(idRange(3000, 4000)...)), http.StatusOK, "octets")
	must(t, e.send(t, http.MethodPost, "/v1/sketches/a/add?id_type=text", "text/plain", "alice\nbob\n"), http.StatusOK, "text")
	must(t, e.postJSON(t, "/v1/events", `{"events":[{"id":"carol","sketches":["a"]},{"id":5000,"sketches":["a"]}]}`), http.StatusOK, "events")
	want := airliftOf(t, 11, idRange(0, 3000))
	want.AddHashes(hashesOf(idRange(3000, 4000)))
	want.AddHashes([]uint64{airlift.HashString("alice"), airlift.HashString("bob")})
	want.AddHashes([]uint64{airlift.HashString("carol"), airlift.HashInt(5000)})
	wantBytes := want.AppendBinary(nil)
	if got := e.raw(t, "a"); !bytes.Equal(got, wantBytes) {
		t.Fatalf("stored airlift_hll differs from airlift's for the same batches:\n got %.60x\nwant %.60x", got, wantBytes)
	}
	var d airliftAnswer
	decode(t, must(t, e.get(t, "/v1/sketches/a"), http.StatusOK, "describe").Body, &d)
	if d.Type != "airlift_hll" || *d.IndexBits != 11 || d.Representation != "DENSE" || d.Cardinality != float64(want.Estimate()) ||
		d.StdError <= 0 || d.Lower > d.Cardinality || d.Upper < d.Cardinality || d.SizeBytes != len(wantBytes) {
		t.Errorf("describe = %+v, want estimate %v", d, want.Estimate())
	}
	found := false
	for _, m := range e.scrape(t)["sketchd_sketch_estimate"].GetMetric() {
		if labels(m)["name"] == "a" {
			found = m.GetGauge().GetValue() == float64(want.Estimate())
		}
	}
	if !found {
		t.Error("sketchd_sketch_estimate{name=\"a\"} missing or not the estimate")
	}
	// Upload (served as uploaded), union, merge; sparse sketches merge
	// whatever their index bits, dense ones only at the same.
	other := airliftOf(t, 11, idRange(2000, 8000))
	ob := other.AppendBinary(nil)
	must(t, e.send(t, http.MethodPut, "/v1/sketches/o/raw", "application/octet-stream", string(ob)), http.StatusCreated, "upload")
	if got := e.raw(t, "o"); !bytes.Equal(got, ob) {
		t.Error("the upload is not served as uploaded")
	}
	var u airliftAnswer
	decode(t, must(t, e.postJSON(t, "/v1/union", `{"sketches":["a","o"],"into":"u"}`), http.StatusOK, "union").Body, &u)
	wu, err := airlift.Union(want, other)
	if err != nil {
		t.Fatal(err)
	}
	if u.Type != "airlift_hll" || *u.IndexBits != 11 || u.Cardinality != float64(wu.Estimate()) || math.Abs(u.Cardinality-8004) > 0.1*8004 {
		t.Errorf("union = %+v, want %v", u, wu.Estimate())
	}
	if got := e.raw(t, "u"); !bytes.Equal(got, wu.AppendBinary(nil)) {
		t.Error("the stored union differs from airlift's")
	}
	e.create(t, "d12", `{"type":"airlift_hll"}`)
	e.addIDs(t, "d12", idsJSON(idRange(0, 5000)...), 5000)
	p409 := checkProblem(t, e.postJSON(t, "/v1/union", `{"sketches":["a","d12"]}`), http.StatusConflict)
	if !strings.Contains(p409.Detail, "2048 and 4096 buckets") {
		t.Errorf("union conflict detail %q", p409.Detail)
	}
	checkProblem(t, e.send(t, http.MethodPost, "/v1/sketches/d12/raw", "application/octet-stream", string(ob)), http.StatusConflict)
	e.create(t, "s12", `{"type":"airlift_hll"}`)
	e.addIDs(t, "s12", idsJSON(idRange(0, 10)...), 10)
	small := airliftOf(t, 8, idRange(5, 20)).AppendBinary(nil)
	must(t, e.send(t, http.MethodPost, "/v1/sketches/s12/raw", "application/octet-stream", string(small)), http.StatusOK, "merge sparse of other index bits")
	var s airliftAnswer
	decode(t, must(t, e.get(t, "/v1/sketches/s12"), http.StatusOK, "describe").Body, &s)
	if *s.IndexBits != 12 || s.Cardinality != 20 || s.Representation != "SPARSE" {
		t.Errorf("sparse 12 merged with sparse 8 = %+v, want 20 ids at 12 index bits", s)
	}
	for _, body := range []string{`{"type":"airlift_hll","index_bits":3}`, `{"type":"airlift_hll","index_bits":17}`, `{"type":"airlift_hll","precision":12}`, `{"index_bits":12}`} {
		checkProblem(t, e.send(t, http.MethodPut, "/v1/sketches/x", "application/json", body), http.StatusBadRequest)
	}
	var x struct {
		Method       string
		Lower, Upper float64
		Terms        []struct{ Cardinality float64 }
	}
	decode(t, must(t, e.postJSON(t, "/v1/intersection", `{"sketches":["a","o"]}`), http.StatusOK, "intersection").Body, &x)
	// a ∩ o is ids 2000..3999 and 5000.
	if x.Method != "inclusion_exclusion" || x.Lower > 2001 || x.Upper < 2001 || len(x.Terms) != 3 {
		t.Errorf("a ∩ o = %+v, want bounds around 2,001", x)
	}
}

func hashesOf(ids []int64) []uint64 {
	hs := make([]uint64, len(ids))
	for i, v := range ids {
		hs[i] = airlift.HashInt(v)
	}
	return hs
}

// TestAirliftHLLSeries: an airlift_hll series counts a range as airlift's
// union of its buckets and downloads it in its format.
func TestAirliftHLLSeries(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", `{"type":"airlift_hll","index_bits":10,"levels":{"day":"P30D"}}`), http.StatusCreated, "create")
	now := time.Now().UTC()
	y := now.AddDate(0, 0, -1)
	must(t, e.postJSON(t, "/v1/series/s/add?ts="+rfc(y), idsJSON(idRange(0, 2000)...)), http.StatusOK, "add yesterday")
	must(t, e.postJSON(t, "/v1/series/s/add?ts="+rfc(now), idsJSON(idRange(1000, 3000)...)), http.StatusOK, "add today")
	from := time.Date(y.Year(), y.Month(), y.Day(), 0, 0, 0, 0, time.UTC)
	q := "?from=" + rfc(from) + "&to=" + rfc(from.AddDate(0, 0, 2))
	var c countAnswer
	decode(t, must(t, e.get(t, "/v1/series/s/count"+q), http.StatusOK, "count").Body, &c)
	wu, _ := airlift.Union(airliftOf(t, 10, idRange(0, 2000)), airliftOf(t, 10, idRange(1000, 3000)))
	if c.Cardinality != float64(wu.Estimate()) {
		t.Errorf("count = %v, want the union's %v", c.Cardinality, wu.Estimate())
	}
	if raw := must(t, e.get(t, "/v1/series/s/raw"+q), http.StatusOK, "raw").Body; !bytes.Equal(raw, wu.AppendBinary(nil)) {
		t.Errorf("series raw %.40x, want airlift's union", raw)
	}
	var sr struct {
		Type   string
		Params map[string]any
	}
	decode(t, must(t, e.get(t, "/v1/series/s"), http.StatusOK, "describe").Body, &sr)
	if sr.Type != "airlift_hll" || sr.Params["index_bits"] != 10.0 {
		t.Errorf("series describe = %+v", sr)
	}
}

// TestAirliftJavaOverHTTP: airlift's library reads sketchd's downloads
// with sketchd's estimate, builds the same bytes from the same ids, and
// sketchd takes airlift's bytes with its estimate, serving them back byte
// for byte.
func TestAirliftJavaOverHTTP(t *testing.T) {
	t.Parallel()
	jvm := java.Get(t)
	e := newEnv(t)
	for _, c := range []struct {
		name, create string
		bits         int
		n            int64
	}{
		{"sparse", `{"type":"airlift_hll"}`, 12, 300},
		{"dense", `{"type":"airlift_hll","index_bits":8}`, 8, 100_000},
	} {
		e.create(t, c.name, c.create)
		e.addIDs(t, c.name, idsJSON(idRange(0, c.n)...), int(c.n))
		var d airliftAnswer
		decode(t, must(t, e.get(t, "/v1/sketches/"+c.name), http.StatusOK, "describe").Body, &d)
		r := jvm.Call(t, "airlift_read", hex.EncodeToString(e.raw(t, c.name)))
		if est, _ := strconv.ParseInt(r[1], 10, 64); float64(est) != d.Cardinality {
			t.Errorf("%s: airlift reads the download as %d, described %v", c.name, est, d.Cardinality)
		}
		j := jvm.Call(t, "airlift_build", strconv.Itoa(c.bits), "0", strconv.FormatInt(c.n, 10), "-")
		b, err := hex.DecodeString(j[0])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, e.raw(t, c.name)) {
			t.Errorf("%s: sketchd's bytes differ from airlift's for the same ids", c.name)
		}
		must(t, e.send(t, http.MethodPut, "/v1/sketches/java-"+c.name+"/raw", "application/octet-stream", string(b)), http.StatusCreated, "upload")
		decode(t, must(t, e.get(t, "/v1/sketches/java-"+c.name), http.StatusOK, "describe").Body, &d)
		if est, _ := strconv.ParseInt(j[1], 10, 64); float64(est) != d.Cardinality {
			t.Errorf("%s: airlift's bytes uploaded with estimate %v, airlift's %d", c.name, d.Cardinality, est)
		}
		if back := e.raw(t, "java-"+c.name); !bytes.Equal(back, b) {
			t.Errorf("%s: airlift's bytes do not come back as uploaded", c.name)
		}
	}
}
