package kll

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"testing"
)

// These tests check sketchd's KLL sketches against Apache DataSketches'
// Python library (testdata/kll_interop.py): bytes both ways, and the
// answers to the same questions from the same bytes. Without python3 and
// the datasketches package they skip, unless SKETCHD_REQUIRE_DATASKETCHES=1
// (set in CI) turns the skip into a failure.
//
// The Python (C++) library's sorted view holds only the retained items;
// sketchd's, like the Java library's, also holds the min and max (view.go).
// So in estimation mode their answers are compared only away from the
// ends: ranks whose weight is neither 1 nor n, values between the smallest
// and largest retained items. The Java test compares everything.

func requireDataSketches(tb testing.TB) {
	tb.Helper()
	missing := func(why string) {
		if os.Getenv("SKETCHD_REQUIRE_DATASKETCHES") == "1" {
			tb.Fatalf("DataSketches' Python library is required (SKETCHD_REQUIRE_DATASKETCHES=1): %s", why)
		}
		tb.Skipf("skipping: %s (install the datasketches Python package to run the interoperability tests)", why)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		missing("python3 not found")
	}
	if out, err := exec.Command("python3", "-c", "import datasketches").CombinedOutput(); err != nil {
		missing("python3 cannot import datasketches: " + string(out))
	}
}

// pyResult is what the script says about a sketch of T; a long travels
// as a JSON integer, exactly.
type pyResult[T Item] struct {
	Bytes      string
	N          uint64
	K          int
	Retained   int
	Estimation bool
	Eps        float64
	EpsPMF     float64 `json:"eps_pmf"`
	Min, Max   T
	QIncl      []T       `json:"quantiles_incl"`
	QExcl      []T       `json:"quantiles_excl"`
	RIncl      []float64 `json:"ranks_incl"`
	RExcl      []float64 `json:"ranks_excl"`
	CDFIncl    []float64 `json:"cdf_incl"`
	CDFExcl    []float64 `json:"cdf_excl"`
	PMFIncl    []float64 `json:"pmf_incl"`
	PMFExcl    []float64 `json:"pmf_excl"`
}

// runPython runs the operations and returns each result undecoded: the
// caller decodes it as a result of its item type (pyDecode).
func runPython(tb testing.TB, ops []map[string]any) []json.RawMessage {
	tb.Helper()
	requireDataSketches(tb)
	in, err := json.Marshal(ops)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command("python3", "testdata/kll_interop.py")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("kll_interop.py: %v\n%s", err, stderr.String())
	}
	var res []json.RawMessage
	if err := json.Unmarshal(out, &res); err != nil {
		tb.Fatalf("kll_interop.py output: %v", err)
	}
	return res
}

func pyDecode[T Item](tb testing.TB, raw json.RawMessage) pyResult[T] {
	tb.Helper()
	var r pyResult[T]
	if err := json.Unmarshal(raw, &r); err != nil {
		tb.Fatalf("kll_interop.py result %.200s: %v", raw, err)
	}
	return r
}

// questions are the ranks, values and split points asked of a sketch of
// values vals: random ranks (a grid would hit products like 0.07·100 that
// the libraries round differently), some of the values and some beyond;
// for longs also 2^53 and its neighbours and both ends of the int64 range,
// where a value read through a float64 would go wrong.
type questions[T Item] struct {
	ranks  []float64
	values []T
	splits []T
}

func ask[T Item](r *rand.Rand, vals []T) questions[T] {
	var q questions[T]
	for range 60 {
		q.ranks = append(q.ranks, r.Float64())
	}
	q.ranks = append(q.ranks, 0, 1)
	if len(vals) == 0 {
		return q
	}
	for range 40 {
		q.values = append(q.values, vals[r.IntN(len(vals))])
	}
	lo, hi := slices.Min(vals), slices.Max(vals)
	if lo-1 < lo { // not past the end of int64
		q.values = append(q.values, lo-1)
	}
	if hi+1 > hi {
		q.values = append(q.values, hi+1)
	}
	q.values = append(q.values, lo, hi)
	if ls, ok := any(&q.values).(*[]int64); ok {
		*ls = append(*ls, 1<<53-1, 1<<53, 1<<53+1, 1<<53+2, math.MinInt64, math.MaxInt64)
	}
	set := map[T]bool{}
	for range 10 {
		set[vals[r.IntN(len(vals))]] = true
	}
	for v := range set {
		q.splits = append(q.splits, v)
	}
	slices.Sort(q.splits)
	return q
}

func (q questions[T]) op(typ string, extra map[string]any) map[string]any {
	op := map[string]any{"type": typ, "ranks": q.ranks, "values_at": q.values, "splits": q.splits}
	for k, v := range extra {
		op[k] = v
	}
	return op
}

// answers is a sketch's own answers to q.
type answers[T Item] struct {
	qIncl, qExcl                                     []T
	rIncl, rExcl, cdfIncl, cdfExcl, pmfIncl, pmfExcl []float64
	lowRetained, highRetained                        T
}

func answer[T Item](tb testing.TB, s *Sketch[T], q questions[T]) answers[T] {
	tb.Helper()
	var a answers[T]
	if s.IsEmpty() {
		return a
	}
	v := s.View()
	ret := slices.Clone(s.items)
	a.lowRetained, a.highRetained = slices.Min(ret), slices.Max(ret)
	for _, r := range q.ranks {
		x, err := v.Quantile(r, true)
		y, err2 := v.Quantile(r, false)
		if err != nil || err2 != nil {
			tb.Fatal(err, err2)
		}
		a.qIncl, a.qExcl = append(a.qIncl, x), append(a.qExcl, y)
	}
	for _, x := range q.values {
		ri, _ := v.Rank(x, true)
		re, _ := v.Rank(x, false)
		a.rIncl, a.rExcl = append(a.rIncl, ri), append(a.rExcl, re)
	}
	if len(q.splits) > 0 {
		var err error
		if a.cdfIncl, err = v.CDF(q.splits, true); err != nil {
			tb.Fatal(err)
		}
		a.cdfExcl, _ = v.CDF(q.splits, false)
		a.pmfIncl, _ = v.PMF(q.splits, true)
		a.pmfExcl, _ = v.PMF(q.splits, false)
	}
	return a
}

// compare checks sketchd's answers against the library's for the same
// bytes: everything in exact mode; away from the ends in estimation mode.
// Items compare exactly (as int64s for longs).
func compare[T Item](tb testing.TB, what string, n uint64, estimation bool, q questions[T], got answers[T], want pyResult[T]) {
	tb.Helper()
	inner := func(w float64) bool { return !estimation || w > 1 && w < float64(n) }
	for i, r := range q.ranks {
		for _, c := range []struct {
			name      string
			incl      bool
			got, want T
		}{{"incl", true, got.qIncl[i], want.QIncl[i]}, {"excl", false, got.qExcl[i], want.QExcl[i]}} {
			w := r * float64(n)
			if c.incl {
				w = math.Ceil(w)
			} else {
				w = math.Floor(w) + 1
			}
			if inner(w) && c.got != c.want {
				tb.Errorf("%s: quantile %s at rank %v = %v, library %v", what, c.name, r, c.got, c.want)
			}
		}
	}
	within := func(x T) bool {
		return !estimation || x >= got.lowRetained && x < got.highRetained
	}
	// Below the smallest retained item is the min alone (weight 1) in
	// sketchd's view and nothing in the library's: an exclusive rank at
	// that item differs by 1/n when the min is not retained.
	withinExcl := func(x T) bool { return within(x) && (!estimation || x > got.lowRetained) }
	for i, x := range q.values {
		if within(x) && got.rIncl[i] != want.RIncl[i] || withinExcl(x) && got.rExcl[i] != want.RExcl[i] {
			tb.Errorf("%s: rank of %v = %v/%v, library %v/%v", what, x, got.rIncl[i], got.rExcl[i], want.RIncl[i], want.RExcl[i])
		}
	}
	for i, x := range q.splits {
		if !within(x) || i > 0 && !within(q.splits[i-1]) {
			continue
		}
		excl := withinExcl(x) && (i == 0 || withinExcl(q.splits[i-1]))
		if math.Abs(got.cdfIncl[i]-want.CDFIncl[i]) > 1e-12 || withinExcl(x) && math.Abs(got.cdfExcl[i]-want.CDFExcl[i]) > 1e-12 {
			tb.Errorf("%s: cdf at %v = %v/%v, library %v/%v", what, x, got.cdfIncl[i], got.cdfExcl[i], want.CDFIncl[i], want.CDFExcl[i])
		}
		if i > 0 && (math.Abs(got.pmfIncl[i]-want.PMFIncl[i]) > 1e-12 || excl && math.Abs(got.pmfExcl[i]-want.PMFExcl[i]) > 1e-12) {
			tb.Errorf("%s: pmf before %v = %v/%v, library %v/%v", what, x, got.pmfIncl[i], got.pmfExcl[i], want.PMFIncl[i], want.PMFExcl[i])
		}
	}
}

// libraryBytes is sketchd's encoding as the library writes it: byte 7,
// sketchd's item type, is 0.
func libraryBytes(b []byte) string {
	c := slices.Clone(b)
	c[7] = 0
	return hex.EncodeToString(c)
}

// interopCase is a sketch to build: of doubles or longs, with k and n
// values. Longs are drawn from ±500,000 with repeats, or with wide from
// the whole int64 range, -2^63, 2^63-1, 2^53 and 2^53+1 among them; fixed
// lists the values instead (the cases an audit found wrong).
type interopCase struct {
	typ   string
	k     int
	n     int
	wide  bool
	fixed []int64
}

var interopCases = []interopCase{
	{typ: "double", k: 200, n: 0}, {typ: "double", k: 200, n: 1}, {typ: "double", k: 200, n: 2}, {typ: "double", k: 200, n: 150},
	{typ: "double", k: 200, n: 5000}, {typ: "double", k: 200, n: 300_000}, {typ: "double", k: 8, n: 3000}, {typ: "double", k: 1000, n: 50_000},
	{typ: "long", k: 200, n: 0}, {typ: "long", k: 200, n: 1}, {typ: "long", k: 100, n: 90}, {typ: "long", k: 200, n: 20_000}, {typ: "long", k: 8, n: 500},
	{typ: "long", k: 200, n: 1, fixed: []int64{1<<53 + 1}},
	{typ: "long", k: 200, n: 3, fixed: []int64{math.MinInt64, 0, math.MaxInt64}},
	{typ: "long", k: 100, n: 150, wide: true}, {typ: "long", k: 200, n: 20_000, wide: true}, {typ: "long", k: 8, n: 3000, wide: true},
}

func (c interopCase) name() string {
	s := c.typ + " k=" + itoa(c.k) + " n=" + itoa(c.n)
	if c.wide {
		s += " wide"
	}
	if c.fixed != nil {
		s += " " + fmt.Sprint(c.fixed)
	}
	return s
}

// doubles draws n doubles from a log-normal.
func (c interopCase) doubles(seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, uint64(c.n)))
	out := make([]float64, c.n)
	for i := range out {
		out[i] = math.Exp(2 + r.NormFloat64())
	}
	return out
}

// longs draws c's n longs.
func (c interopCase) longs(seed uint64) []int64 {
	if c.fixed != nil {
		return slices.Clone(c.fixed)
	}
	r := rand.New(rand.NewPCG(seed, uint64(c.n)))
	out := make([]int64, c.n)
	for i := range out {
		if c.wide {
			out[i] = int64(r.Uint64())
		} else {
			out[i] = r.Int64N(1_000_000) - 500_000
		}
	}
	if c.wide {
		// The ends and 2^53's neighbours, at random places.
		for _, v := range []int64{math.MinInt64, math.MaxInt64, 1 << 53, 1<<53 + 1, -(1 << 53) - 1} {
			out[r.IntN(len(out))] = v
		}
	}
	return out
}

func build[T Item](tb testing.TB, k int, vals []T) *Sketch[T] {
	tb.Helper()
	s, err := New[T](k)
	if err != nil {
		tb.Fatal(err)
	}
	for _, v := range vals {
		s.Update(v)
	}
	return s
}

// TestPythonReadsOurs: sketches built here decode in the Python library,
// which writes back the same bytes and answers as sketchd does.
func TestPythonReadsOurs(t *testing.T) {
	var ops []map[string]any
	var checks []func(json.RawMessage)
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range interopCases {
		if c.typ == "double" {
			ops, checks = pythonReadsOurs(t, r, c, c.doubles(1), ops, checks)
		} else {
			ops, checks = pythonReadsOurs(t, r, c, c.longs(1), ops, checks)
		}
	}
	for i, res := range runPython(t, ops) {
		checks[i](res)
	}
}

func pythonReadsOurs[T Item](t *testing.T, r *rand.Rand, c interopCase, vals []T, ops []map[string]any, checks []func(json.RawMessage)) ([]map[string]any, []func(json.RawMessage)) {
	q := ask(r, vals)
	s := build(t, c.k, vals)
	enc, a, est := s.AppendBinary(nil), answer(t, s, q), s.IsEstimationMode()
	ops = append(ops, q.op(c.typ, map[string]any{"op": "read", "sketch": hex.EncodeToString(enc)}))
	return ops, append(checks, func(raw json.RawMessage) {
		got := pyDecode[T](t, raw)
		what := c.name()
		if got.Bytes != libraryBytes(enc) {
			t.Errorf("%s: the library writes back\n %s\nnot\n %s", what, got.Bytes, libraryBytes(enc))
		}
		if got.N != uint64(c.n) || got.K != c.k || got.Estimation != est {
			t.Errorf("%s: library reads n %d k %d estimation %t", what, got.N, got.K, got.Estimation)
		}
		if c.n == 0 {
			return
		}
		d, err := Decode[T](enc)
		if err != nil {
			t.Fatal(err)
		}
		if got.Eps != d.NormalizedRankError(false) || got.EpsPMF != d.NormalizedRankError(true) || got.Min != d.Min() || got.Max != d.Max() || got.Retained != d.Retained() {
			t.Errorf("%s: library eps %v/%v min %v max %v retained %d; ours %v", what, got.Eps, got.EpsPMF, got.Min, got.Max, got.Retained, d)
		}
		compare(t, what, uint64(c.n), est, q, a, got)
	})
}

// TestWeReadPython: sketches the Python library builds decode here, encode
// back to its bytes and answer as it does; below k values (no compaction,
// no coins) its bytes are ours for the same values.
func TestWeReadPython(t *testing.T) {
	var ops []map[string]any
	var checks []func(json.RawMessage)
	r := rand.New(rand.NewPCG(13, 14))
	for _, c := range interopCases {
		if c.typ == "double" {
			ops, checks = weReadPython(t, r, c, c.doubles(2), ops, checks)
		} else {
			ops, checks = weReadPython(t, r, c, c.longs(2), ops, checks)
		}
	}
	for i, res := range runPython(t, ops) {
		checks[i](res)
	}
}

func weReadPython[T Item](t *testing.T, r *rand.Rand, c interopCase, vals []T, ops []map[string]any, checks []func(json.RawMessage)) ([]map[string]any, []func(json.RawMessage)) {
	q := ask(r, vals)
	ops = append(ops, q.op(c.typ, map[string]any{"op": "build", "k": c.k, "values": vals}))
	return ops, append(checks, func(raw json.RawMessage) {
		want := pyDecode[T](t, raw)
		what := c.name()
		lib, err := hex.DecodeString(want.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		in := lib
		if ItemTypeOf[T]() == Longs {
			in = MarkLongs(lib)
		}
		s, err := Decode[T](in)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		enc, a, est := s.AppendBinary(nil), answer(t, s, q), s.IsEstimationMode()
		if !est {
			if own := build(t, c.k, vals).AppendBinary(nil); libraryBytes(own) != want.Bytes {
				t.Errorf("%s: exact-mode bytes differ from the library's for the same values", what)
			}
		}
		if libraryBytes(enc) != want.Bytes {
			t.Errorf("%s: decode then encode differs from the library's bytes", what)
		}
		if est != want.Estimation {
			t.Errorf("%s: estimation mode %t, library %t", what, est, want.Estimation)
		}
		if c.n > 0 {
			compare(t, what, uint64(c.n), est, q, a, want)
		}
	})
}

// TestMergeInterop: the library merges sketchd's sketches and sketchd
// merges the library's; both stay within the rank error of the truth.
func TestMergeInterop(t *testing.T) {
	a := interopCase{typ: "double", k: 200, n: 40_000}
	b := interopCase{typ: "double", k: 200, n: 70_000}
	va, vb := a.doubles(3), b.doubles(4)
	sa, sb := build(t, 200, va), build(t, 200, vb)
	raw := runPython(t, []map[string]any{
		{"op": "merge", "type": "double", "k": 200, "sketches": []string{hex.EncodeToString(sa.AppendBinary(nil)), hex.EncodeToString(sb.AppendBinary(nil))}},
		{"op": "build", "type": "double", "k": 200, "values": va},
		{"op": "build", "type": "double", "k": 150, "values": vb},
	})
	all := slices.Concat(va, vb)
	slices.Sort(all)
	check := func(what string, s *Sketch[float64]) {
		t.Helper()
		if s.N() != uint64(len(all)) || s.Min() != all[0] || s.Max() != all[len(all)-1] {
			t.Errorf("%s: n %d min %v max %v", what, s.N(), s.Min(), s.Max())
		}
		v := s.View()
		for i := 0; i <= 100; i++ {
			q := float64(i) / 100
			x, _ := v.Quantile(q, true)
			if d := rankDistance(all, x, q); d > s.NormalizedRankError(false) {
				t.Errorf("%s: quantile %v off by rank %v", what, q, d)
			}
		}
	}
	res := make([]pyResult[float64], len(raw))
	for i := range raw {
		res[i] = pyDecode[float64](t, raw[i])
	}
	lib, _ := hex.DecodeString(res[0].Bytes)
	merged, err := Decode[float64](lib)
	if err != nil {
		t.Fatalf("the library's merge does not decode: %v", err)
	}
	check("library's merge of ours", merged)
	pa, _ := hex.DecodeString(res[1].Bytes)
	pb, _ := hex.DecodeString(res[2].Bytes)
	da, err := Decode[float64](pa)
	if err != nil {
		t.Fatal(err)
	}
	db, err := Decode[float64](pb)
	if err != nil {
		t.Fatal(err)
	}
	da.Merge(db)
	check("our merge of the library's", da)
	if da.MinK() != 150 || da.K() != 200 {
		t.Errorf("merge keeps k %d, min k %d; want 200 and 150", da.K(), da.MinK())
	}
	// The merge writes what the library reads back as is.
	back := pyDecode[float64](t, runPython(t, []map[string]any{{"op": "read", "type": "double", "sketch": hex.EncodeToString(da.AppendBinary(nil))}})[0])
	if back.Bytes != libraryBytes(da.AppendBinary(nil)) || back.N != da.N() {
		t.Errorf("the library reads our merge as n %d", back.N)
	}
}

func itoa(v int) string {
	b, _ := json.Marshal(v)
	return string(b)
}
