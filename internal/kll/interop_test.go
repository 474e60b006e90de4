package kll

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
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

// pyResult is what the script says about a sketch.
type pyResult struct {
	Bytes      string
	N          uint64
	K          int
	Retained   int
	Estimation bool
	Eps        float64
	EpsPMF     float64 `json:"eps_pmf"`
	Min, Max   float64
	QIncl      []float64 `json:"quantiles_incl"`
	QExcl      []float64 `json:"quantiles_excl"`
	RIncl      []float64 `json:"ranks_incl"`
	RExcl      []float64 `json:"ranks_excl"`
	CDFIncl    []float64 `json:"cdf_incl"`
	CDFExcl    []float64 `json:"cdf_excl"`
	PMFIncl    []float64 `json:"pmf_incl"`
	PMFExcl    []float64 `json:"pmf_excl"`
}

func runPython(tb testing.TB, ops []map[string]any) []pyResult {
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
	var res []pyResult
	if err := json.Unmarshal(out, &res); err != nil {
		tb.Fatalf("kll_interop.py output: %v", err)
	}
	return res
}

// questions are the ranks, values and split points asked of a sketch of
// values vals: random ranks (a grid would hit products like 0.07·100 that
// the libraries round differently), some of the values and some beyond.
type questions struct {
	ranks  []float64
	values []float64
	splits []float64
}

func ask(r *rand.Rand, vals []float64) questions {
	var q questions
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
	q.values = append(q.values, lo-1, hi+1, lo, hi)
	set := map[float64]bool{}
	for range 10 {
		set[vals[r.IntN(len(vals))]] = true
	}
	for v := range set {
		q.splits = append(q.splits, v)
	}
	slices.Sort(q.splits)
	return q
}

func (q questions) op(typ string, extra map[string]any) map[string]any {
	op := map[string]any{"type": typ, "ranks": q.ranks, "values_at": q.values, "splits": q.splits}
	for k, v := range extra {
		op[k] = v
	}
	return op
}

// answers is a sketch's own answers to q, as floats.
type answers struct {
	qIncl, qExcl, rIncl, rExcl, cdfIncl, cdfExcl, pmfIncl, pmfExcl []float64
	lowRetained, highRetained                                      float64
}

func answer[T Item](tb testing.TB, s *Sketch[T], q questions) answers {
	tb.Helper()
	var a answers
	if s.IsEmpty() {
		return a
	}
	v := s.View()
	ret := slices.Clone(s.items)
	a.lowRetained, a.highRetained = float64(slices.Min(ret)), float64(slices.Max(ret))
	for _, r := range q.ranks {
		x, err := v.Quantile(r, true)
		y, err2 := v.Quantile(r, false)
		if err != nil || err2 != nil {
			tb.Fatal(err, err2)
		}
		a.qIncl, a.qExcl = append(a.qIncl, float64(x)), append(a.qExcl, float64(y))
	}
	for _, x := range q.values {
		ri, _ := v.Rank(T(x), true)
		re, _ := v.Rank(T(x), false)
		a.rIncl, a.rExcl = append(a.rIncl, ri), append(a.rExcl, re)
	}
	if len(q.splits) > 0 {
		sp := make([]T, len(q.splits))
		for i, x := range q.splits {
			sp[i] = T(x)
		}
		var err error
		if a.cdfIncl, err = v.CDF(sp, true); err != nil {
			tb.Fatal(err)
		}
		a.cdfExcl, _ = v.CDF(sp, false)
		a.pmfIncl, _ = v.PMF(sp, true)
		a.pmfExcl, _ = v.PMF(sp, false)
	}
	return a
}

// compare checks sketchd's answers against the library's for the same
// bytes: everything in exact mode; away from the ends in estimation mode.
func compare(tb testing.TB, what string, n uint64, estimation bool, q questions, got answers, want pyResult) {
	tb.Helper()
	inner := func(w float64) bool { return !estimation || w > 1 && w < float64(n) }
	for i, r := range q.ranks {
		for _, c := range []struct {
			name      string
			incl      bool
			got, want float64
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
	within := func(x float64) bool {
		return !estimation || x >= got.lowRetained && x < got.highRetained
	}
	for i, x := range q.values {
		if within(x) && (got.rIncl[i] != want.RIncl[i] || got.rExcl[i] != want.RExcl[i]) {
			tb.Errorf("%s: rank of %v = %v/%v, library %v/%v", what, x, got.rIncl[i], got.rExcl[i], want.RIncl[i], want.RExcl[i])
		}
	}
	for i, x := range q.splits {
		if !within(x) || i > 0 && !within(q.splits[i-1]) {
			continue
		}
		if math.Abs(got.cdfIncl[i]-want.CDFIncl[i]) > 1e-12 || math.Abs(got.cdfExcl[i]-want.CDFExcl[i]) > 1e-12 {
			tb.Errorf("%s: cdf at %v = %v/%v, library %v/%v", what, x, got.cdfIncl[i], got.cdfExcl[i], want.CDFIncl[i], want.CDFExcl[i])
		}
		if i > 0 && (math.Abs(got.pmfIncl[i]-want.PMFIncl[i]) > 1e-12 || math.Abs(got.pmfExcl[i]-want.PMFExcl[i]) > 1e-12) {
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

type interopCase struct {
	typ string
	k   int
	n   int
}

var interopCases = []interopCase{
	{"double", 200, 0}, {"double", 200, 1}, {"double", 200, 2}, {"double", 200, 150},
	{"double", 200, 5000}, {"double", 200, 300_000}, {"double", 8, 3000}, {"double", 1000, 50_000},
	{"long", 200, 0}, {"long", 200, 1}, {"long", 100, 90}, {"long", 200, 20_000}, {"long", 8, 500},
}

// values draws n values of c's type: doubles from a log-normal, longs
// from a wide range with repeats.
func (c interopCase) values(seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, uint64(c.n)))
	out := make([]float64, c.n)
	for i := range out {
		if c.typ == "double" {
			out[i] = math.Exp(2 + r.NormFloat64())
		} else {
			out[i] = float64(r.Int64N(1_000_000) - 500_000)
		}
	}
	return out
}

func build[T Item](tb testing.TB, k int, vals []float64) *Sketch[T] {
	tb.Helper()
	s, err := New[T](k)
	if err != nil {
		tb.Fatal(err)
	}
	for _, v := range vals {
		s.Update(T(v))
	}
	return s
}

func jsonValues(typ string, vals []float64) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		if typ == "long" {
			out[i] = int64(v)
		} else {
			out[i] = v
		}
	}
	return out
}

// TestPythonReadsOurs: sketches built here decode in the Python library,
// which writes back the same bytes and answers as sketchd does.
func TestPythonReadsOurs(t *testing.T) {
	t.Parallel()
	var ops []map[string]any
	var encs [][]byte
	var qs []questions
	var ans []answers
	var ests []bool
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range interopCases {
		vals := c.values(1)
		q := ask(r, vals)
		var enc []byte
		var a answers
		var est bool
		if c.typ == "double" {
			s := build[float64](t, c.k, vals)
			enc, a, est = s.AppendBinary(nil), answer(t, s, q), s.IsEstimationMode()
		} else {
			s := build[int64](t, c.k, vals)
			enc, a, est = s.AppendBinary(nil), answer(t, s, q), s.IsEstimationMode()
		}
		ops = append(ops, q.op(c.typ, map[string]any{"op": "read", "sketch": hex.EncodeToString(enc)}))
		encs, qs, ans, ests = append(encs, enc), append(qs, q), append(ans, a), append(ests, est)
	}
	res := runPython(t, ops)
	for i, c := range interopCases {
		got := res[i]
		what := c.typ + " k=" + itoa(c.k) + " n=" + itoa(c.n)
		if got.Bytes != libraryBytes(encs[i]) {
			t.Errorf("%s: the library writes back\n %s\nnot\n %s", what, got.Bytes, libraryBytes(encs[i]))
		}
		if got.N != uint64(c.n) || got.K != c.k || got.Estimation != ests[i] {
			t.Errorf("%s: library reads n %d k %d estimation %t", what, got.N, got.K, got.Estimation)
		}
		if c.n > 0 {
			s, err := decodeAny(c.typ, encs[i])
			if err != nil {
				t.Fatal(err)
			}
			if got.Eps != s.eps || got.EpsPMF != s.epsPMF || got.Min != s.min || got.Max != s.max || got.Retained != s.retained {
				t.Errorf("%s: library eps %v/%v min %v max %v retained %d; ours %+v", what, got.Eps, got.EpsPMF, got.Min, got.Max, got.Retained, s)
			}
			compare(t, what, uint64(c.n), ests[i], qs[i], ans[i], got)
		}
	}
}

// summary is what the test compares of a decoded sketch of either type.
type summary struct {
	eps, epsPMF, min, max float64
	retained              int
}

func decodeAny(typ string, b []byte) (summary, error) {
	if typ == "double" {
		s, err := Decode[float64](b)
		if err != nil {
			return summary{}, err
		}
		return summary{s.NormalizedRankError(false), s.NormalizedRankError(true), s.Min(), s.Max(), s.Retained()}, nil
	}
	s, err := Decode[int64](b)
	if err != nil {
		return summary{}, err
	}
	return summary{s.NormalizedRankError(false), s.NormalizedRankError(true), float64(s.Min()), float64(s.Max()), s.Retained()}, nil
}

// TestWeReadPython: sketches the Python library builds decode here, encode
// back to its bytes and answer as it does; below k values (no compaction,
// no coins) its bytes are ours for the same values.
func TestWeReadPython(t *testing.T) {
	t.Parallel()
	var ops []map[string]any
	var qs []questions
	r := rand.New(rand.NewPCG(13, 14))
	for _, c := range interopCases {
		vals := c.values(2)
		q := ask(r, vals)
		ops = append(ops, q.op(c.typ, map[string]any{"op": "build", "k": c.k, "values": jsonValues(c.typ, vals)}))
		qs = append(qs, q)
	}
	res := runPython(t, ops)
	for i, c := range interopCases {
		want := res[i]
		what := c.typ + " k=" + itoa(c.k) + " n=" + itoa(c.n)
		lib, err := hex.DecodeString(want.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		vals := c.values(2)
		var enc []byte
		var a answers
		var est bool
		if c.typ == "double" {
			s, err := Decode[float64](lib)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			enc, a, est = s.AppendBinary(nil), answer(t, s, qs[i]), s.IsEstimationMode()
			if !est {
				if own := build[float64](t, c.k, vals).AppendBinary(nil); !bytes.Equal(own, lib) {
					t.Errorf("%s: exact-mode bytes differ from the library's for the same values", what)
				}
			}
		} else {
			s, err := Decode[int64](MarkLongs(lib))
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			enc, a, est = s.AppendBinary(nil), answer(t, s, qs[i]), s.IsEstimationMode()
			if !est {
				if own := build[int64](t, c.k, vals).AppendBinary(nil); libraryBytes(own) != want.Bytes {
					t.Errorf("%s: exact-mode bytes differ from the library's for the same values", what)
				}
			}
		}
		if libraryBytes(enc) != want.Bytes {
			t.Errorf("%s: decode then encode differs from the library's bytes", what)
		}
		if est != want.Estimation {
			t.Errorf("%s: estimation mode %t, library %t", what, est, want.Estimation)
		}
		if c.n > 0 {
			compare(t, what, uint64(c.n), est, qs[i], a, want)
		}
	}
}

// TestMergeInterop: the library merges sketchd's sketches and sketchd
// merges the library's; both stay within the rank error of the truth.
func TestMergeInterop(t *testing.T) {
	t.Parallel()
	a := interopCase{"double", 200, 40_000}
	b := interopCase{"double", 200, 70_000}
	va, vb := a.values(3), b.values(4)
	sa, sb := build[float64](t, 200, va), build[float64](t, 200, vb)
	res := runPython(t, []map[string]any{
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
	res = runPython(t, []map[string]any{{"op": "read", "type": "double", "sketch": hex.EncodeToString(da.AppendBinary(nil))}})
	if res[0].Bytes != libraryBytes(da.AppendBinary(nil)) || res[0].N != da.N() {
		t.Errorf("the library reads our merge as n %d", res[0].N)
	}
}

func itoa(v int) string {
	b, _ := json.Marshal(v)
	return string(b)
}
