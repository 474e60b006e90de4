package server

import (
	"bytes"
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

// Answers of a sketch of longs decoded into int64s: a value the server
// wrote rounded (9223372036854776000) does not decode, and one rounded
// within range (9007199254740992 for …993) compares unequal.
type longQuantiles struct {
	N         uint64
	RankError float64 `json:"rank_error"`
	Quantiles []struct {
		Q                   float64
		Value, Lower, Upper *int64
	}
}

type longRanks struct {
	N         uint64
	RankError float64 `json:"rank_error"`
	Ranks     []struct {
		Value              int64
		Rank, Lower, Upper float64
	}
}

type longDistribution struct {
	N           uint64
	SplitPoints []int64 `json:"split_points"`
	Values      []float64
}

type longDescribe struct {
	Items    string
	N        int64
	Min, Max *int64
}

const (
	two53p1 int64 = 1<<53 + 1 // 9007199254740993: the first integer a float64 cannot hold
	minLong int64 = math.MinInt64
	maxLong int64 = math.MaxInt64
)

func joinLongs(vs ...int64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.FormatInt(v, 10)
	}
	return strings.Join(parts, ",")
}

func longsJSON(vs ...int64) string { return `{"values":[` + joinLongs(vs...) + `]}` }

// getLongs GETs path (200) and decodes it into v, failing on a body that
// writes a number with an exponent (a long rounded through a float64).
func getLongs(tb testing.TB, e *env, path string, v any) {
	tb.Helper()
	r := must(tb, e.get(tb, path), http.StatusOK, path)
	if bytes.Contains(r.Body, []byte("e+")) {
		tb.Errorf("%s answers a number with an exponent: %s", path, clipBody(r.Body))
	}
	decode(tb, r.Body, v)
}

// TestKLLLongsExact: the audit's cases. A sketch of longs answers
// quantiles, ranks, CDF and PMF of int64 values exactly, at 2^53+1 and at
// both ends of the int64 range, and its JSON carries them as the
// integers they are. Truth is the values themselves: a sketch below k
// values keeps them all.
func TestKLLLongsExact(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "one", `{"type":"kll","items":"long"}`)
	must(t, e.postJSON(t, "/v1/sketches/one/add", longsJSON(two53p1)), http.StatusOK, "add 2^53+1")

	var qa longQuantiles
	getLongs(t, e, "/v1/sketches/one/quantile?q=0.5", &qa)
	if v := qa.Quantiles[0].Value; v == nil || *v != two53p1 {
		t.Errorf("median of {2^53+1} = %v, want %d", deref(v), two53p1)
	}
	var ra longRanks
	getLongs(t, e, "/v1/sketches/one/rank?value="+joinLongs(two53p1, two53p1-1, two53p1+1), &ra)
	for i, want := range []struct {
		value int64
		rank  float64
	}{{two53p1, 1}, {two53p1 - 1, 0}, {two53p1 + 1, 1}} {
		if got := ra.Ranks[i]; got.Value != want.value || got.Rank != want.rank {
			t.Errorf("rank of %d = %+v, want %v", want.value, got, want.rank)
		}
	}
	getLongs(t, e, "/v1/sketches/one/rank?value="+joinLongs(two53p1)+"&inclusive=false", &ra)
	if ra.Ranks[0].Rank != 0 {
		t.Errorf("exclusive rank of 2^53+1 in {2^53+1} = %v, want 0", ra.Ranks[0].Rank)
	}

	e.create(t, "ends", `{"type":"kll","items":"long"}`)
	must(t, e.postJSON(t, "/v1/sketches/ends/add", longsJSON(minLong, 0, maxLong)), http.StatusOK, "add the ends")
	checkEnds(t, e, "/v1/sketches/ends", "")

	var d longDescribe
	r := must(t, e.get(t, "/v1/sketches/ends"), http.StatusOK, "describe")
	decode(t, r.Body, &d)
	if d.Items != "long" || d.N != 3 || deref(d.Min) != minLong || deref(d.Max) != maxLong {
		t.Errorf("describe = %+v (min %v max %v)", d, deref(d.Min), deref(d.Max))
	}
	if !bytes.Contains(r.Body, []byte(`"min":-9223372036854775808`)) || !bytes.Contains(r.Body, []byte(`"max":9223372036854775807`)) {
		t.Errorf("describe does not write the ends as integers: %s", r.Body)
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// checkEnds asks a sketch (or series range: path is its prefix, rng its
// query) holding -2^63, 0 and 2^63-1 every question of the audit.
func checkEnds(t *testing.T, e *env, path, rng string) {
	t.Helper()
	var qa longQuantiles
	getLongs(t, e, path+"/quantile?q=0,0.5,1"+rng, &qa)
	for i, want := range []int64{minLong, 0, maxLong} {
		if v := qa.Quantiles[i].Value; v == nil || *v != want {
			t.Errorf("%s: quantile %v = %v, want %d", path, qa.Quantiles[i].Q, deref(v), want)
		}
	}
	var ra longRanks
	getLongs(t, e, path+"/rank?value="+joinLongs(maxLong, minLong, 0, -1, maxLong-1)+rng, &ra)
	for i, want := range []struct {
		value int64
		rank  float64
	}{{maxLong, 1}, {minLong, 1. / 3}, {0, 2. / 3}, {-1, 1. / 3}, {maxLong - 1, 2. / 3}} {
		if got := ra.Ranks[i]; got.Value != want.value || got.Rank != want.rank {
			t.Errorf("%s: rank of %d = %+v, want %v", path, want.value, got, want.rank)
		}
	}
	var cdf, pmf longDistribution
	getLongs(t, e, path+"/cdf?split=0,9223372036854775807"+rng, &cdf)
	if !slices.Equal(cdf.SplitPoints, []int64{0, maxLong}) || !slices.Equal(cdf.Values, []float64{2. / 3, 1, 1}) {
		t.Errorf("%s: cdf at 0, 2^63-1 = %+v, want [2/3 1 1]", path, cdf)
	}
	getLongs(t, e, path+"/pmf?split=-9223372036854775808,0,9223372036854775807"+rng, &pmf)
	if !slices.Equal(pmf.SplitPoints, []int64{minLong, 0, maxLong}) || !equalWithin(pmf.Values, []float64{1. / 3, 1. / 3, 1. / 3, 0}, 1e-15) {
		t.Errorf("%s: pmf at -2^63, 0, 2^63-1 = %+v, want [1/3 1/3 1/3 0]", path, pmf)
	}
	getLongs(t, e, path+"/cdf?split=-9223372036854775808&inclusive=false"+rng, &cdf)
	if !slices.Equal(cdf.Values, []float64{0, 1}) {
		t.Errorf("%s: exclusive cdf at -2^63 = %v, want [0 1]", path, cdf.Values)
	}
}

func equalWithin(a, b []float64, eps float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > eps {
			return false
		}
	}
	return true
}

// TestKLLLongsRefuseNonIntegers: for a sketch of longs, ?value= and
// ?split= are int64s, parsed as such: a fraction, an exponent or a value
// outside [-2^63, 2^63-1] is a 400 naming it. A sketch of doubles takes
// the same texts as it always did.
func TestKLLLongsRefuseNonIntegers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "l", `{"type":"kll","items":"long"}`)
	e.create(t, "d", `{"type":"kll"}`)
	must(t, e.postJSON(t, "/v1/sketches/l/add", longsJSON(1, 2, 3)), http.StatusOK, "add longs")
	must(t, e.postJSON(t, "/v1/sketches/d/add", `{"values":[1,2,3]}`), http.StatusOK, "add doubles")
	before := e.snapshot(t)
	for _, c := range []struct{ query, detail string }{
		{"rank?value=1.5", `query parameter value: "1.5" is not an integer`},
		{"rank?value=2,5.0", `query parameter value: "5.0" is not an integer`},
		{"rank?value=1e3", `query parameter value: "1e3" is not an integer`},
		{"rank?value=9223372036854775808", `query parameter value: "9223372036854775808" is out of the int64 range [-9223372036854775808, 9223372036854775807]`},
		{"cdf?split=-9223372036854775809,0", `query parameter split: "-9223372036854775809" is out of the int64 range`},
		{"pmf?split=0,18446744073709551616", `query parameter split: "18446744073709551616" is out of the int64 range`},
		{"cdf?split=5,5", "split points must increase strictly; 5 follows 5"},
		{"pmf?split=9223372036854775807,9223372036854775806", "split points must increase strictly; 9223372036854775806 follows 9223372036854775807"},
		{"rank?value=x", `query parameter value: "x" is not a number`},
	} {
		p := checkProblem(t, e.get(t, "/v1/sketches/l/"+c.query), http.StatusBadRequest)
		if !strings.Contains(p.Detail, c.detail) {
			t.Errorf("%s: %q, want %q", c.query, p.Detail, c.detail)
		}
	}
	// Doubles: unchanged. 2^53+1 is read as the double nearest it.
	var ra struct {
		Ranks []struct {
			Value float64
			Rank  float64
		}
	}
	r := must(t, e.get(t, "/v1/sketches/d/rank?value=1.5,9007199254740993,1e3"), http.StatusOK, "doubles rank")
	decode(t, r.Body, &ra)
	if ra.Ranks[0].Value != 1.5 || ra.Ranks[0].Rank != 1./3 || ra.Ranks[1].Value != 1<<53 || ra.Ranks[2].Rank != 1 {
		t.Errorf("doubles' ranks = %+v", ra)
	}
	if !bytes.Contains(r.Body, []byte(`"value":9007199254740992,`)) {
		t.Errorf("a double is written as encoding/json writes a float64: %s", r.Body)
	}
	if diff := before.diff(e.snapshot(t)); len(diff) > 0 {
		t.Errorf("queries changed %v", diff)
	}
}

// TestKLLLongsRandom: random int64s over the whole range, in estimation
// mode. Every answer equals the engine's for the same values (its
// sketch's bytes are the server's) and is within the rank error of the
// truth; every value in the JSON is an int64 literal.
func TestKLLLongsRandom(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "rnd", `{"type":"kll","items":"long","k":100}`)
	r := rand.New(rand.NewPCG(7, 8))
	vals := make([]int64, 30_000)
	for i := range vals {
		vals[i] = int64(r.Uint64())
	}
	vals[0], vals[1] = minLong, maxLong
	want, _ := kll.New[int64](100)
	for i := 0; i < len(vals); i += 10_000 {
		must(t, e.postJSON(t, "/v1/sketches/rnd/add", longsJSON(vals[i:i+10_000]...)), http.StatusOK, "add")
		for _, v := range vals[i : i+10_000] {
			want.Update(v)
		}
	}
	if !bytes.Equal(e.raw(t, "rnd"), want.AppendBinary(nil)) {
		t.Fatal("the stored sketch differs from the engine's for the same values")
	}
	sorted := slices.Clone(vals)
	slices.Sort(sorted)
	trueRank := func(x int64) float64 {
		return float64(sort.Search(len(sorted), func(i int) bool { return sorted[i] > x })) / float64(len(sorted))
	}
	view := want.View()
	var qs []string
	for i := 0; i <= 100; i++ {
		qs = append(qs, strconv.FormatFloat(float64(i)/100, 'g', -1, 64))
	}
	var qa longQuantiles
	getLongs(t, e, "/v1/sketches/rnd/quantile?q="+strings.Join(qs, ","), &qa)
	for _, q := range qa.Quantiles {
		x, _ := view.Quantile(q.Q, true)
		lo, hi, _ := view.QuantileBounds(q.Q, qa.RankError)
		if deref(q.Value) != x || deref(q.Lower) != lo || deref(q.Upper) != hi {
			t.Errorf("q=%v: %v [%v, %v], engine %d [%d, %d]", q.Q, deref(q.Value), deref(q.Lower), deref(q.Upper), x, lo, hi)
		}
		if d := math.Abs(trueRank(x) - q.Q); d > qa.RankError {
			t.Errorf("q=%v: %d has true rank %v", q.Q, x, trueRank(x))
		}
	}
	asked := []int64{minLong, maxLong, 0, -1}
	for range 50 {
		asked = append(asked, vals[r.IntN(len(vals))], int64(r.Uint64()))
	}
	var ra longRanks
	getLongs(t, e, "/v1/sketches/rnd/rank?value="+joinLongs(asked...), &ra)
	for i, x := range asked {
		got := ra.Ranks[i]
		w, _ := view.Rank(x, true)
		if got.Value != x || got.Rank != w || math.Abs(got.Rank-trueRank(x)) > ra.RankError {
			t.Errorf("rank of %d = %+v, engine %v, truth %v", x, got, w, trueRank(x))
		}
	}
	splits := slices.Compact(slices.Sorted(slices.Values(asked)))
	var cdf, pmf longDistribution
	getLongs(t, e, "/v1/sketches/rnd/cdf?split="+joinLongs(splits...), &cdf)
	getLongs(t, e, "/v1/sketches/rnd/pmf?split="+joinLongs(splits...), &pmf)
	wantCDF, _ := view.CDF(splits, true)
	wantPMF, _ := view.PMF(splits, true)
	if !slices.Equal(cdf.SplitPoints, splits) || !slices.Equal(cdf.Values, wantCDF) || !slices.Equal(pmf.Values, wantPMF) {
		t.Errorf("cdf %v pmf %v; engine %v %v", cdf, pmf.Values, wantCDF, wantPMF)
	}
}

// TestKLLLongsSeriesExact: the same questions over a range of a series of
// longs (the union of its buckets), and a rolling quantile line.
func TestKLLLongsSeriesExact(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/ends", "application/json", `{"type":"kll","items":"long","tz":"UTC","levels":{"day":"P30D"}}`), http.StatusCreated, "create")
	ts := time.Now().UTC()
	day := ts.Truncate(24 * time.Hour)
	// Two buckets: yesterday's -2^63, today's 0 and 2^63-1.
	must(t, e.postJSON(t, "/v1/series/ends/add?ts="+rfc(day.Add(-time.Hour)), longsJSON(minLong)), http.StatusOK, "add yesterday")
	must(t, e.postJSON(t, "/v1/series/ends/add?ts="+rfc(ts), longsJSON(0, maxLong)), http.StatusOK, "add today")
	rng := "&from=" + rfc(day.Add(-24*time.Hour)) + "&to=" + rfc(day.Add(48*time.Hour))
	checkEnds(t, e, "/v1/series/ends", rng)

	must(t, e.send(t, http.MethodPut, "/v1/series/one", "application/json", `{"type":"kll","items":"long","tz":"UTC","levels":{"day":"P30D"}}`), http.StatusCreated, "create one")
	must(t, e.postJSON(t, "/v1/series/one/add?ts="+rfc(ts), longsJSON(two53p1)), http.StatusOK, "add 2^53+1")
	var qa longQuantiles
	getLongs(t, e, "/v1/series/one/quantile?q=0.5"+rng, &qa)
	if v := qa.Quantiles[0].Value; v == nil || *v != two53p1 {
		t.Errorf("series median of {2^53+1} = %v", deref(v))
	}
	var ra longRanks
	getLongs(t, e, "/v1/series/one/rank?value=9007199254740993"+rng, &ra)
	if ra.Ranks[0].Rank != 1 || ra.Ranks[0].Value != two53p1 {
		t.Errorf("series rank of 2^53+1 = %+v, want 1", ra.Ranks[0])
	}
	p := checkProblem(t, e.get(t, "/v1/series/one/rank?value=0.5"+rng), http.StatusBadRequest)
	if !strings.Contains(p.Detail, `"0.5" is not an integer`) {
		t.Errorf("series rank of 0.5: %q", p.Detail)
	}
	var line struct {
		Points []struct {
			Quantiles []struct{ Value *int64 }
		}
	}
	getLongs(t, e, "/v1/series/ends/timeseries?q=0,1&window=P3D&from="+rfc(day)+"&to="+rfc(day.Add(24*time.Hour)), &line)
	if n := len(line.Points); n != 1 || deref(line.Points[0].Quantiles[0].Value) != minLong || deref(line.Points[0].Quantiles[1].Value) != maxLong {
		t.Errorf("rolling min and max = %s", fmt.Sprint(line))
	}
}
