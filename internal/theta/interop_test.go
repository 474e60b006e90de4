package theta

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"testing"
)

// These tests check sketchd's theta sketches against Apache DataSketches'
// Python library (testdata/ds_interop.py). Without python3 and the
// datasketches package they skip, unless SKETCHD_REQUIRE_DATASKETCHES=1
// (set in CI) turns the skip into a failure.

// pyResult is what the script reports about a sketch.
type pyResult struct {
	Bytes      string    `json:"bytes"`
	Compressed string    `json:"compressed"`
	Estimate   float64   `json:"estimate"`
	Theta64    uint64    `json:"theta64"`
	Retained   int       `json:"retained"`
	Empty      bool      `json:"empty"`
	Lower      []float64 `json:"lower"`
	Upper      []float64 `json:"upper"`
}

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

// runPython sends ops to testdata/ds_interop.py and decodes one result
// per op into out (a pointer to a slice).
func runPython(tb testing.TB, ops []map[string]any, out any) {
	tb.Helper()
	requireDataSketches(tb)
	in, err := json.Marshal(ops)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command("python3", "testdata/ds_interop.py")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	res, err := cmd.Output()
	if err != nil {
		tb.Fatalf("ds_interop.py: %v\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(res, out); err != nil {
		tb.Fatalf("ds_interop.py output: %v", err)
	}
}

func hexOf(tb testing.TB, s *Sketch) string {
	tb.Helper()
	b, err := s.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// boundTol is the relative difference allowed between sketchd's bounds and
// the library's. Every bound path but one computes the same formula with
// the same constants and agrees to the last bit or two; the exception (at
// most 120 retained hashes sampled at a rate below count/360, which small
// intersections reach) uses a table of equivalent deviations that sketchd
// derives instead of copying, and that agrees to about 1e-7.
const boundTol = 1e-6

// sameSketch compares a sketch with the library's description of the same
// contents: equal bytes, estimate, theta and count, and bounds within
// boundTol. It returns the largest relative bound difference.
func sameSketch(tb testing.TB, what string, s *Sketch, want pyResult) float64 {
	tb.Helper()
	if got := hexOf(tb, s); got != want.Bytes {
		tb.Errorf("%s: bytes\n got %s\nwant %s", what, got, want.Bytes)
	}
	if got := hex.EncodeToString(s.AppendCompressed(nil)); got != want.Compressed {
		tb.Errorf("%s: compressed bytes\n got %s\nwant %s", what, got, want.Compressed)
	}
	if s.Estimate() != want.Estimate || s.Theta64() != want.Theta64 || s.Retained() != want.Retained || s.IsEmpty() != want.Empty {
		tb.Errorf("%s: estimate %v theta %d retained %d empty %t, want %v %d %d %t",
			what, s.Estimate(), s.Theta64(), s.Retained(), s.IsEmpty(), want.Estimate, want.Theta64, want.Retained, want.Empty)
	}
	worst := 0.0
	for sd := 1; sd <= 3; sd++ {
		lb, err := s.LowerBound(sd)
		if err != nil {
			tb.Fatal(err)
		}
		ub, err := s.UpperBound(sd)
		if err != nil {
			tb.Fatal(err)
		}
		for _, c := range []struct {
			name      string
			got, want float64
		}{{"lower", lb, want.Lower[sd-1]}, {"upper", ub, want.Upper[sd-1]}} {
			d := relDiff(c.got, c.want)
			worst = max(worst, d)
			if d > boundTol {
				tb.Errorf("%s: %s bound at %d sd = %v, want %v", what, c.name, sd, c.got, c.want)
			}
		}
	}
	return worst
}

func relDiff(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
}

type build struct {
	name   string
	lgK    int
	lo, hi int64    // ints lo..hi-1
	strs   []string // added after the ints
}

func (b build) sketch(tb testing.TB) *Sketch {
	s, err := New(Params{LgK: b.lgK})
	if err != nil {
		tb.Fatal(err)
	}
	for v := b.lo; v < b.hi; v++ {
		s.AddInt(v)
	}
	for _, v := range b.strs {
		s.AddString(v)
	}
	return s
}

func (b build) op() map[string]any {
	ints := make([]int64, 0, b.hi-b.lo)
	for v := b.lo; v < b.hi; v++ {
		ints = append(ints, v)
	}
	return map[string]any{"op": "build", "lg_k": b.lgK, "ints": ints, "strs": b.strs}
}

var builds = []build{
	{name: "empty", lgK: 12},
	{name: "empty string only", lgK: 12, strs: []string{""}},
	{name: "one int", lgK: 12, lo: 7, hi: 8},
	{name: "one string", lgK: 12, strs: []string{"user-1"}},
	{name: "negative and unicode", lgK: 12, lo: -50, hi: 50, strs: []string{"é", "日本語", "user-1", "user-1"}},
	{name: "exact 3000", lgK: 12, lo: 0, hi: 3000},
	{name: "just past rebuild", lgK: 5, lo: 0, hi: 61},
	{name: "lg_k 5 estimating", lgK: 5, lo: 0, hi: 1000},
	{name: "lg_k 9", lgK: 9, lo: 1000, hi: 21000},
	{name: "lg_k 12 100k", lgK: 12, lo: 0, hi: 100000},
	{name: "lg_k 12 small overlap", lgK: 12, lo: 99000, hi: 300000},
	{name: "lg_k 14", lgK: 14, lo: 50000, hi: 150000},
}

// TestInteropBuild: sketches built here and by the library from the same
// ids have the same bytes, estimate and bounds; each side decodes the
// other's bytes to the same sketch.
func TestInteropBuild(t *testing.T) {
	ops := make([]map[string]any, 0, 3*len(builds))
	for _, b := range builds {
		stored := hex.EncodeToString(b.sketch(t).AppendStored(nil))
		compressed := hex.EncodeToString(b.sketch(t).AppendCompressed(nil))
		ops = append(ops, b.op(), map[string]any{"op": "read", "sketch": stored}, map[string]any{"op": "read", "sketch": compressed})
	}
	var res []pyResult
	runPython(t, ops, &res)
	worst := 0.0
	for i, b := range builds {
		ours := b.sketch(t)
		built, read := res[3*i], res[3*i+1]
		// The library reads the compressed bytes written here as the same
		// sketch (serial version 4 wherever it writes version 4 itself).
		worst = max(worst, sameSketch(t, b.name+": compressed form read by the library", ours, res[3*i+2]))
		packed, err := hex.DecodeString(built.Compressed)
		if err != nil {
			t.Fatal(err)
		}
		if dec, err := Decode(packed); err != nil {
			t.Errorf("%s: Decode(library compressed bytes %.40s...): %v", b.name, built.Compressed, err)
		} else {
			worst = max(worst, sameSketch(t, b.name+": library compressed bytes decoded here", dec, built))
		}
		worst = max(worst, sameSketch(t, b.name+": built here vs built by the library", ours, built))
		// The library reads the stored form (lg_k in byte 3) as the same
		// sketch and writes it back with byte 3 zero: our MarshalBinary.
		worst = max(worst, sameSketch(t, b.name+": stored form read by the library", ours, read))
		raw, err := hex.DecodeString(built.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := Decode(raw)
		if err != nil {
			t.Fatalf("%s: Decode(library bytes): %v", b.name, err)
		}
		worst = max(worst, sameSketch(t, b.name+": library bytes decoded here", dec, built))
	}
	t.Logf("largest relative bound difference: %.3g", worst)
}

// TestInteropSetOperations: unions, intersections of 2..8, A-not-B and
// Jaccard computed here and by the library on the same sketches agree.
func TestInteropSetOperations(t *testing.T) {
	inputs := []build{
		{lgK: 12, lo: 0, hi: 100000},
		{lgK: 12, lo: 99900, hi: 200000}, // 100 in common with the first
		{lgK: 10, lo: 50000, hi: 60000},
		{lgK: 12, lo: 0, hi: 2000}, // exact
		{lgK: 11, lo: -500000, hi: 500000},
		{lgK: 12},
		{lgK: 12, lo: 1999, hi: 2001},
		{lgK: 9, lo: 0, hi: 1000000},
	}
	sk := make([]*Sketch, len(inputs))
	hx := make([]string, len(inputs))
	for i, b := range inputs {
		sk[i] = b.sketch(t)
		hx[i] = hexOf(t, sk[i])
	}
	type setop struct {
		name string
		op   string
		idx  []int
		lgK  int
	}
	ops := []setop{
		{"union big+big", "union", []int{0, 1}, 12},
		{"union into lg_k 10", "union", []int{0, 1, 4}, 10},
		{"union of all", "union", []int{0, 1, 2, 3, 4, 5, 6, 7}, 12},
		{"union with exact and empty", "union", []int{3, 5, 6}, 12},
		{"intersect small overlap", "intersect", []int{0, 1}, 0},
		{"intersect nested", "intersect", []int{4, 0, 2}, 0},
		{"intersect exact", "intersect", []int{3, 6}, 0},
		{"intersect with empty", "intersect", []int{0, 5}, 0},
		{"intersect 8", "intersect", []int{0, 1, 2, 3, 4, 6, 7, 4}, 0},
		{"intersect disjoint exact", "intersect", []int{3, 2}, 0},
		{"a not b", "anotb", []int{0, 1}, 0},
		{"a not b exact", "anotb", []int{3, 6}, 0},
		{"a not b empty b", "anotb", []int{2, 5}, 0},
		{"a not b nested", "anotb", []int{4, 0}, 0},
	}
	var py []map[string]any
	for _, o := range ops {
		in := make([]string, len(o.idx))
		for j, i := range o.idx {
			in[j] = hx[i]
		}
		py = append(py, map[string]any{"op": o.op, "lg_k": o.lgK, "sketches": in})
	}
	var res []pyResult
	runPython(t, py, &res)
	worst := 0.0
	for i, o := range ops {
		in := make([]*Sketch, len(o.idx))
		for j, k := range o.idx {
			in[j] = sk[k]
		}
		var got *Sketch
		switch o.op {
		case "union":
			u, err := NewUnion(Params{LgK: o.lgK})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range in {
				u.Add(s)
			}
			got = u.Result()
			all, err := UnionAll(Params{LgK: o.lgK}, in...)
			if err != nil {
				t.Fatal(err)
			}
			sameSketch(t, o.name+" (UnionAll)", all, res[i])
		case "intersect":
			var err error
			if got, err = Intersect(in...); err != nil {
				t.Fatal(err)
			}
		case "anotb":
			got = AnotB(in[0], in[1])
		}
		worst = max(worst, sameSketch(t, o.name, got, res[i]))
	}
	t.Logf("largest relative bound difference: %.3g", worst)

	pairs := [][2]int{{0, 1}, {0, 4}, {2, 4}, {3, 6}, {0, 0}, {0, 5}, {5, 5}, {7, 4}, {3, 3}}
	py = py[:0]
	for _, p := range pairs {
		py = append(py, map[string]any{"op": "jaccard", "sketches": []string{hx[p[0]], hx[p[1]]}})
	}
	var jac [][3]float64
	runPython(t, py, &jac)
	for i, p := range pairs {
		a, b := sk[p[0]], sk[p[1]]
		if p[0] == p[1] {
			b = a.Clone() // the library gets two copies, never the same object
		}
		got := Jaccard(a, b)
		for j, g := range []float64{got.Lower, got.Estimate, got.Upper} {
			if relDiff(g, jac[i][j]) > 1e-12 {
				t.Errorf("Jaccard(%d, %d) = %+v, want %v", p[0], p[1], got, jac[i])
				break
			}
		}
	}
}
