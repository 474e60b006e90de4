package server

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/kll"
)

type kllAnswer struct {
	Type         string
	K            int
	Items        string
	N            int64
	Min, Max     *float64
	Retained     int
	RankError    float64 `json:"rank_error"`
	RankErrorPMF float64 `json:"rank_error_pmf"`
	SizeBytes    int     `json:"size_bytes"`
}

type distributionAnswer struct {
	Type                 string
	N                    uint64
	RankError            float64   `json:"rank_error"`
	SplitPoints          []float64 `json:"split_points"`
	Values, Lower, Upper []float64
}

func floatsJSON(vs []float64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprint(v)
	}
	return `{"values":[` + strings.Join(parts, ",") + "]}"
}

// TestKLLOverHTTP: values added in every body format land in the sketch
// as the engine adds them; quantiles, ranks, CDF and PMF answer as the
// engine does and within the stated error of the truth; bad input
// changes nothing.
func TestKLLOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var d kllAnswer
	decode(t, must(t, e.send(t, http.MethodPut, "/v1/sketches/lat", "application/json", `{"type":"kll","k":100}`), http.StatusCreated, "create").Body, &d)
	if d.Type != "kll" || d.K != 100 || d.Items != "double" || d.N != 0 || d.Min != nil || d.RankError != kll.NormalizedRankError(100, false) {
		t.Fatalf("create = %+v", d)
	}
	r := rand.New(rand.NewPCG(3, 4))
	vals := make([]float64, 40_000)
	for i := range vals {
		vals[i] = math.Round(math.Exp(3+r.NormFloat64())*1000) / 1000
	}
	// The same values through every body format, in order.
	var nd, text, le, be strings.Builder
	for _, v := range vals[10_000:15_000] {
		fmt.Fprintln(&nd, v)
	}
	for _, v := range vals[15_000:20_000] {
		fmt.Fprintln(&text, v)
	}
	for _, v := range vals[20_000:30_000] {
		le.Write(binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)))
	}
	for _, v := range vals[30_000:] {
		be.Write(binary.BigEndian.AppendUint64(nil, math.Float64bits(v)))
	}
	must(t, e.postJSON(t, "/v1/sketches/lat/add", floatsJSON(vals[:10_000])), http.StatusOK, "json")
	must(t, e.send(t, http.MethodPost, "/v1/sketches/lat/add", "application/x-ndjson", nd.String()), http.StatusOK, "ndjson")
	must(t, e.send(t, http.MethodPost, "/v1/sketches/lat/add", "text/plain", text.String()), http.StatusOK, "text")
	must(t, e.send(t, http.MethodPost, "/v1/sketches/lat/add?byte_order=little", "application/octet-stream", le.String()), http.StatusOK, "octet little")
	must(t, e.send(t, http.MethodPost, "/v1/sketches/lat/add", "application/octet-stream", be.String()), http.StatusOK, "octet big")
	want, _ := kll.New[float64](100)
	for _, v := range vals {
		want.Update(v)
	}
	if got := e.raw(t, "lat"); !slices.Equal(got, want.AppendBinary(nil)) {
		t.Fatal("stored sketch differs from the engine's for the same values")
	}
	decode(t, must(t, e.get(t, "/v1/sketches/lat"), http.StatusOK, "describe").Body, &d)
	sorted := slices.Clone(vals)
	slices.Sort(sorted)
	if d.N != 40_000 || *d.Min != sorted[0] || *d.Max != sorted[len(sorted)-1] || d.Retained != want.Retained() || d.SizeBytes != len(want.AppendBinary(nil)) {
		t.Errorf("describe = %+v", d)
	}
	view := want.View()
	rankOf := func(x float64) float64 {
		return float64(sort.Search(len(sorted), func(i int) bool { return sorted[i] > x })) / float64(len(sorted))
	}
	var qa quantileAnswer
	decode(t, must(t, e.get(t, "/v1/sketches/lat/quantile?q=0,0.5,0.9,0.99,1"), http.StatusOK, "quantile").Body, &qa)
	if qa.Type != "kll" || qa.N != 40_000 || qa.RankError != d.RankError || qa.Confidence != 0.99 {
		t.Fatalf("quantile = %+v", qa)
	}
	for _, qv := range qa.Quantiles {
		x, _ := view.Quantile(qv.Q, true)
		lo, hi, _ := view.QuantileBounds(qv.Q, qa.RankError)
		if *qv.Value != x || *qv.Lower != lo || *qv.Upper != hi || math.Abs(rankOf(x)-qv.Q) > qa.RankError {
			t.Errorf("q=%v: %v [%v, %v], engine %v [%v, %v], true rank %v", qv.Q, *qv.Value, *qv.Lower, *qv.Upper, x, lo, hi, rankOf(x))
		}
	}
	decode(t, must(t, e.get(t, "/v1/sketches/lat/quantile?q=0.5&inclusive=false"), http.StatusOK, "exclusive").Body, &qa)
	if x, _ := view.Quantile(0.5, false); *qa.Quantiles[0].Value != x {
		t.Errorf("exclusive median %v, engine %v", *qa.Quantiles[0].Value, x)
	}
	var ra struct {
		RankError float64 `json:"rank_error"`
		Ranks     []struct{ Value, Rank, Lower, Upper float64 }
	}
	decode(t, must(t, e.get(t, "/v1/sketches/lat/rank?value=10,20.5,100"), http.StatusOK, "rank").Body, &ra)
	for _, rv := range ra.Ranks {
		x, _ := view.Rank(rv.Value, true)
		if rv.Rank != x || math.Abs(rv.Rank-rankOf(rv.Value)) > ra.RankError || rv.Lower != math.Max(0, x-ra.RankError) {
			t.Errorf("rank of %v = %+v, engine %v, truth %v", rv.Value, rv, x, rankOf(rv.Value))
		}
	}
	var cdf, pmf distributionAnswer
	decode(t, must(t, e.get(t, "/v1/sketches/lat/cdf?split=5,10,20,40,80"), http.StatusOK, "cdf").Body, &cdf)
	decode(t, must(t, e.get(t, "/v1/sketches/lat/pmf?split=5,10,20,40,80"), http.StatusOK, "pmf").Body, &pmf)
	wantCDF, _ := view.CDF([]float64{5, 10, 20, 40, 80}, true)
	wantPMF, _ := view.PMF([]float64{5, 10, 20, 40, 80}, true)
	if !slices.Equal(cdf.Values, wantCDF) || !slices.Equal(pmf.Values, wantPMF) || len(cdf.Lower) != 6 || pmf.RankError != d.RankErrorPMF {
		t.Errorf("cdf %+v pmf %+v; engine %v %v", cdf, pmf, wantCDF, wantPMF)
	}
	for i, x := range []float64{5, 10, 20, 40, 80} {
		if math.Abs(cdf.Values[i]-rankOf(x)) > cdf.RankError || cdf.Lower[i] > cdf.Values[i] || cdf.Upper[i] < cdf.Values[i] {
			t.Errorf("cdf at %v = %v [%v, %v], truth %v", x, cdf.Values[i], cdf.Lower[i], cdf.Upper[i], rankOf(x))
		}
	}
	// The CDF's last value counts every value: it is 1 with no band.
	if cdf.Values[5] != 1 || cdf.Lower[5] != 1 || cdf.Upper[5] != 1 {
		t.Errorf("cdf past the last split = %v [%v, %v], want 1 [1, 1]", cdf.Values[5], cdf.Lower[5], cdf.Upper[5])
	}

	// Longs: integers only; octets are int64s.
	e.create(t, "sizes", `{"type":"kll","items":"long"}`)
	must(t, e.postJSON(t, "/v1/sketches/sizes/add", `{"values":[5,-3,9223372036854775807]}`), http.StatusOK, "longs")
	must(t, e.send(t, http.MethodPost, "/v1/sketches/sizes/add?byte_order=little", "application/octet-stream", string(binary.LittleEndian.AppendUint64(nil, 42))), http.StatusOK, "long octets")
	decode(t, must(t, e.get(t, "/v1/sketches/sizes"), http.StatusOK, "describe longs").Body, &d)
	if d.Items != "long" || d.N != 4 || *d.Min != -3 {
		t.Errorf("longs = %+v", d)
	}
	before := e.snapshot(t)
	for _, c := range []struct {
		name, path, ctype, body, detail string
		status                          int
	}{
		{"a float into longs", "/v1/sketches/sizes/add", "application/json", `{"values":[1.5]}`, "values[0] at offset 11: 1.5 is not an integer", 400},
		{"ids into kll", "/v1/sketches/lat/add", "application/json", `{"ids":[1]}`, `unknown field "ids", want {"values":[…]}`, 400},
		{"a string value", "/v1/sketches/lat/add", "application/json", `{"values":["1"]}`, "a string is not a number", 400},
		{"beyond float64", "/v1/sketches/lat/add", "application/json", `{"values":[1e999]}`, "out of the float64 range", 400},
		{"NaN octets", "/v1/sketches/lat/add", "application/octet-stream", string(binary.BigEndian.AppendUint64(nil, math.Float64bits(math.NaN()))), "NaN is not a finite number", 400},
		{"byte order on JSON", "/v1/sketches/lat/add?byte_order=little", "application/json", `{"values":[1]}`, "byte_order applies to application/octet-stream", 400},
		{"bad byte order", "/v1/sketches/lat/add?byte_order=middle", "application/octet-stream", "", "must be big or little", 400},
		{"values into an hll", "/v1/sketches/h/add", "application/json", `{"values":[1]}`, "", 404},
	} {
		p := checkProblem(t, e.send(t, http.MethodPost, c.path, c.ctype, c.body), c.status)
		if !strings.Contains(p.Detail, c.detail) {
			t.Errorf("%s: %q, want %q", c.name, p.Detail, c.detail)
		}
	}
	for path, status := range map[string]int{
		"/v1/sketches/sizes/rank?value=1.5":  400,
		"/v1/sketches/lat/cdf?split=5,5":     400,
		"/v1/sketches/lat/cdf?split=":        400,
		"/v1/sketches/lat/quantile?q=-0.1":   400,
		"/v1/sketches/lat/rank?value=x":      400,
		"/v1/sketches/lat/pmf?split=1&x=1":   400,
		"/v1/sketches/sizes/range?lo=0&hi=1": 409,
	} {
		checkProblem(t, e.get(t, path), status)
	}
	// A query lists at most 1000 numbers (maxSplitPoints).
	many := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = strconv.FormatFloat(float64(i)/float64(n), 'g', -1, 64)
		}
		return strings.Join(parts, ",")
	}
	must(t, e.get(t, "/v1/sketches/lat/quantile?q="+many(1000)), http.StatusOK, "1000 quantiles")
	if p := checkProblem(t, e.get(t, "/v1/sketches/lat/quantile?q="+many(1001)), http.StatusBadRequest); !strings.Contains(p.Detail, "lists 1001 numbers; at most 1000") {
		t.Errorf("1001 quantiles: %q", p.Detail)
	}
	for body, detail := range map[string]string{
		`{"type":"kll","k":7}`:            "k 7 not in 8..65535",
		`{"type":"kll","items":"int"}`:    `items="int": a kll sketch keeps double or long values`,
		`{"type":"kll","lg_k":10}`:        "lg_k is a parameter of theta sketches",
		`{"type":"theta","items":"long"}`: "items is a parameter of kll sketches",
	} {
		p := checkProblem(t, e.send(t, http.MethodPut, "/v1/sketches/bad", "application/json", body), http.StatusBadRequest)
		if !strings.Contains(p.Detail, detail) {
			t.Errorf("create %s: %q, want %q", body, p.Detail, detail)
		}
	}
	if diff := before.diff(e.snapshot(t)); len(diff) > 0 {
		t.Errorf("refused requests changed %v", diff)
	}
}

// TestKLLUnionsUploadsEvents: unions keep the smallest k and refuse
// doubles with longs; a library's bytes of longs upload with items=long;
// events and ?create=true reach KLL sketches.
func TestKLLUnionsUploadsEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "a", `{"type":"kll","k":200}`)
	e.create(t, "b", `{"type":"kll","k":64}`)
	e.create(t, "l", `{"type":"kll","items":"long"}`)
	must(t, e.postJSON(t, "/v1/sketches/a/add", `{"values":[1,2,3]}`), http.StatusOK, "a")
	must(t, e.postJSON(t, "/v1/sketches/b/add", `{"values":[10,20]}`), http.StatusOK, "b")
	var u struct {
		Type string
		K    int
		N    int64
		Min  float64
		Into string
	}
	decode(t, must(t, e.postJSON(t, "/v1/union", `{"sketches":["a","b"],"into":"ab"}`), http.StatusOK, "union").Body, &u)
	if u.Type != "kll" || u.K != 64 || u.N != 5 || u.Min != 1 || u.Into != "ab" {
		t.Errorf("union = %+v", u)
	}
	p := checkProblem(t, e.postJSON(t, "/v1/union", `{"sketches":["a","l"]}`), http.StatusConflict)
	if !strings.Contains(p.Detail, "kll k=200 items=double sketch \"a\" with kll k=200 items=long sketch \"l\"") {
		t.Errorf("union of doubles and longs: %q", p.Detail)
	}
	checkProblem(t, e.postJSON(t, "/v1/intersection", `{"sketches":["a","b"]}`), http.StatusConflict)

	// A library's sketch of longs: byte 7 is 0.
	lib, _ := kll.New[int64](50)
	for v := range int64(500) {
		lib.Update(v * 7)
	}
	raw := lib.AppendBinary(nil)
	raw[7] = 0
	must(t, e.send(t, http.MethodPut, "/v1/sketches/up/raw?items=long", "application/octet-stream", string(raw)), http.StatusCreated, "upload longs")
	var d kllAnswer
	decode(t, must(t, e.get(t, "/v1/sketches/up"), http.StatusOK, "describe").Body, &d)
	if d.Items != "long" || d.N != 500 || *d.Max != 3493 {
		t.Errorf("uploaded longs = %+v", d)
	}
	if got := e.raw(t, "up"); got[7] != 1 || !slices.Equal(got[8:], raw[8:]) {
		t.Error("the uploaded longs download differently")
	}
	must(t, e.send(t, http.MethodPost, "/v1/sketches/l/raw?items=long", "application/octet-stream", string(raw)), http.StatusOK, "merge longs")
	// Without ?items= the stored sketch of longs says what the bytes keep.
	must(t, e.send(t, http.MethodPost, "/v1/sketches/l/raw", "application/octet-stream", string(raw)), http.StatusOK, "merge longs without items")
	decode(t, must(t, e.get(t, "/v1/sketches/l"), http.StatusOK, "describe l").Body, &d)
	if d.Items != "long" || d.N != 1000 || *d.Max != 3493 {
		t.Errorf("after two merges of longs: %+v", d)
	}
	p = checkProblem(t, e.send(t, http.MethodPost, "/v1/sketches/l/raw?items=double", "application/octet-stream", string(e.raw(t, "a"))), http.StatusConflict)
	if !strings.Contains(p.Detail, "kll") {
		t.Errorf("doubles merged into longs: %q", p.Detail)
	}
	p = checkProblem(t, e.send(t, http.MethodPut, "/v1/sketches/x/raw?items=double", "application/octet-stream", string(e.raw(t, "up"))), http.StatusBadRequest)
	if !strings.Contains(p.Detail, "marked as a kll sketch of longs") {
		t.Errorf("longs uploaded as doubles: %q", p.Detail)
	}
	must(t, e.send(t, http.MethodPut, "/v1/sketches/xd/raw?items=double", "application/octet-stream", string(e.raw(t, "a"))), http.StatusCreated, "upload doubles")
	checkProblem(t, e.send(t, http.MethodPut, "/v1/sketches/x/raw?items=long", "application/octet-stream", string(e.raw(t, "ab")[:0])+"\x14\x01\x00"), http.StatusBadRequest)

	must(t, e.postJSON(t, "/v1/events", `{"events":[{"id":5,"sketches":["a","l"]},{"id":7,"sketches":["a"]}]}`), http.StatusOK, "events")
	decode(t, must(t, e.get(t, "/v1/sketches/a"), http.StatusOK, "describe a").Body, &d)
	if d.N != 5 || *d.Max != 7 {
		t.Errorf("after events: %+v", d)
	}
	checkProblem(t, e.postJSON(t, "/v1/events", `{"events":[{"id":"x","sketches":["a"]}]}`), http.StatusBadRequest)
	must(t, e.postJSON(t, "/v1/sketches/new/add?create=true", `{"values":[0.5]}`), http.StatusOK, "create by values")
	decode(t, must(t, e.get(t, "/v1/sketches/new"), http.StatusOK, "describe new").Body, &d)
	if d.Type != "kll" || d.Items != "double" || d.K != 200 || d.N != 1 {
		t.Errorf("created by values: %+v", d)
	}
}

// TestKLLSeries: a daily latency series answers a range's quantiles,
// ranks and CDF, and rolling p99 lines.
func TestKLLSeries(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/lat", "application/json", `{"type":"kll","k":100,"tz":"UTC","levels":{"day":"P30D"}}`), http.StatusCreated, "create")
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	var all []float64
	for d := range 3 {
		ts := now.Add(-time.Duration(d) * 24 * time.Hour)
		if d > 0 {
			ts = day.Add(-time.Duration(d-1)*24*time.Hour - time.Hour)
		}
		vals := make([]float64, 2000)
		for i := range vals {
			vals[i] = float64(d*1000 + i)
		}
		all = append(all, vals...)
		must(t, e.postJSON(t, "/v1/series/lat/add?ts="+rfc(ts), floatsJSON(vals)), http.StatusOK, "add")
	}
	from, to := day.Add(-2*24*time.Hour), day.Add(24*time.Hour)
	rng := "?from=" + rfc(from) + "&to=" + rfc(to)
	var qa quantileAnswer
	decode(t, must(t, e.get(t, "/v1/series/lat/quantile"+rng+"&q=0.5,1"), http.StatusOK, "quantile").Body, &qa)
	slices.Sort(all)
	if qa.N != 6000 || *qa.Quantiles[1].Value != all[len(all)-1] || math.Abs(*qa.Quantiles[0].Value-all[3000]) > qa.RankError*6000*2 {
		t.Errorf("series quantiles = %+v", qa)
	}
	var cnt struct{ KLL kllAnswer }
	decode(t, must(t, e.get(t, "/v1/series/lat/count"+rng), http.StatusOK, "count").Body, &cnt)
	if cnt.KLL.N != 6000 || cnt.KLL.K != 100 {
		t.Errorf("count = %+v", cnt)
	}
	must(t, e.get(t, "/v1/series/lat/rank"+rng+"&value=1000"), http.StatusOK, "rank")
	must(t, e.get(t, "/v1/series/lat/cdf"+rng+"&split=1000,2000"), http.StatusOK, "cdf")
	must(t, e.get(t, "/v1/series/lat/pmf"+rng+"&split=1000,2000"), http.StatusOK, "pmf")
	var ts struct {
		Points []struct {
			Total     *uint64
			RankError *float64 `json:"rank_error"`
			Quantiles []struct {
				Q     float64
				Value *float64
			}
		}
	}
	decode(t, must(t, e.get(t, "/v1/series/lat/timeseries"+rng+"&q=0.99&window=P2D"), http.StatusOK, "rolling p99").Body, &ts)
	if len(ts.Points) != 3 || ts.Points[2].Quantiles[0].Value == nil || *ts.Points[2].Total != 4000 || ts.Points[2].RankError == nil {
		t.Fatalf("timeseries = %+v", ts)
	}
	// The last point's window is yesterday (1000..2999) and today
	// (0..1999): its p99 is near the top of yesterday's values.
	if p99 := *ts.Points[2].Quantiles[0].Value; p99 < 2900 || p99 > 2999 {
		t.Errorf("rolling p99 of the last two days = %v", p99)
	}
	must(t, e.send(t, http.MethodPut, "/v1/series/h", "application/json", `{"tz":"UTC","levels":{"day":"P30D"}}`), http.StatusCreated, "hll series")
	checkProblem(t, e.get(t, "/v1/series/h/timeseries"+rng+"&q=0.5"), http.StatusConflict)
	checkProblem(t, e.get(t, "/v1/series/h/rank"+rng+"&value=1"), http.StatusConflict)
}
