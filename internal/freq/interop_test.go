package freq

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
)

// These tests check frequency sketches against Apache DataSketches' Python
// library (testdata/ds_interop.py): tuple sketches with an integer count
// summed by AccumulatorPolicy. Without python3 and the datasketches
// package they skip, unless SKETCHD_REQUIRE_DATASKETCHES=1 (set in CI).

type pyResult struct {
	Bytes    string      `json:"bytes"`
	Java     string      `json:"java"`
	Estimate float64     `json:"estimate"`
	Theta64  uint64      `json:"theta64"`
	Retained int         `json:"retained"`
	Empty    bool        `json:"empty"`
	Lower    []float64   `json:"lower"`
	Upper    []float64   `json:"upper"`
	Entries  [][2]uint64 `json:"entries"`
}

func runPython(tb testing.TB, ops []map[string]any, out any) {
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
	if msg, err := exec.Command("python3", "-c", "import datasketches").CombinedOutput(); err != nil {
		missing("python3 cannot import datasketches: " + string(msg))
	}
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

// sameSketch compares s with the library's description: equal bytes in
// both summary widths, entries and counts, estimate and theta, and reach
// bounds within 1e-6 relative (see theta's interop tests for why not
// bit-equal in one rare path).
func sameSketch(tb testing.TB, what string, s *Sketch, want pyResult) {
	tb.Helper()
	if got := hexOf(tb, s); got != want.Bytes {
		tb.Errorf("%s: bytes\n got %s\nwant %s", what, got, want.Bytes)
	}
	if got := hex.EncodeToString(s.AppendJava(nil)); got != want.Java {
		tb.Errorf("%s: Java-form bytes\n got %s\nwant %s", what, got, want.Java)
	}
	if s.Estimate() != want.Estimate || s.Theta64() != want.Theta64 || s.Retained() != want.Retained || s.IsEmpty() != want.Empty {
		tb.Errorf("%s: estimate %v theta %d retained %d empty %t, want %v %d %d %t",
			what, s.Estimate(), s.Theta64(), s.Retained(), s.IsEmpty(), want.Estimate, want.Theta64, want.Retained, want.Empty)
	}
	keys, counts := s.sortedEntries()
	if len(keys) != len(want.Entries) {
		tb.Fatalf("%s: %d entries, want %d", what, len(keys), len(want.Entries))
	}
	for i, e := range want.Entries {
		if keys[i] != e[0] || uint64(counts[i]) != e[1] {
			tb.Fatalf("%s: entry %d = (%#x, %d), want (%#x, %d)", what, i, keys[i], counts[i], e[0], e[1])
		}
	}
	for sd := 1; sd <= 3; sd++ {
		r, err := s.FrequencyReport(10, sd)
		if err != nil {
			tb.Fatal(err)
		}
		for _, c := range [][2]float64{{r.Reach.Lower, want.Lower[sd-1]}, {r.Reach.Upper, want.Upper[sd-1]}} {
			if d := math.Abs(c[0]-c[1]) / math.Max(1, math.Abs(c[1])); d > 1e-6 {
				tb.Errorf("%s: reach bound at %d sd = %v, want %v", what, sd, c[0], c[1])
			}
		}
	}
}

// impressions returns a stream of user ids where user u appears about
// Zipf-many times, shuffled.
func impressions(seed uint64, users int, maxCount uint64) []int64 {
	r := rand.New(rand.NewPCG(seed, 7))
	z := rand.NewZipf(r, 1.3, 1, maxCount-1)
	var out []int64
	for u := range users {
		id := int64(seed)<<32 | int64(u)
		for range z.Uint64() + 1 {
			out = append(out, id)
		}
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

type fbuild struct {
	name string
	lgK  int
	ids  []int64
	strs []string
}

func (b fbuild) sketch(tb testing.TB) *Sketch {
	s, err := New(Params{LgK: b.lgK})
	if err != nil {
		tb.Fatal(err)
	}
	for _, v := range b.ids {
		s.AddInt(v)
	}
	for _, v := range b.strs {
		s.AddString(v)
	}
	return s
}

func (b fbuild) op() map[string]any {
	return map[string]any{"op": "build", "lg_k": b.lgK, "ints": b.ids, "strs": b.strs}
}

func fbuilds() []fbuild {
	return []fbuild{
		{name: "empty", lgK: 12},
		{name: "one user, three impressions", lgK: 12, ids: []int64{5, 5, 5}},
		{name: "strings", lgK: 12, strs: []string{"a", "b", "a", "", "日本"}},
		{name: "exact zipf", lgK: 12, ids: impressions(1, 1000, 50)},
		{name: "lg_k 5 zipf", lgK: 5, ids: impressions(2, 2000, 20)},
		{name: "lg_k 10 zipf", lgK: 10, ids: impressions(3, 20000, 100)},
	}
}

// TestInteropBuild: built here and by the library from the same impression
// stream, the sketches have equal bytes (both summary widths), entries,
// counts, estimates and bounds; the library reads both widths of ours.
func TestInteropBuild(t *testing.T) {
	bs := fbuilds()
	var ops []map[string]any
	for _, b := range bs {
		s := b.sketch(t)
		ops = append(ops, b.op(),
			map[string]any{"op": "read", "sketch": hex.EncodeToString(s.AppendStored(nil)), "width": 4},
			map[string]any{"op": "read", "sketch": hex.EncodeToString(s.AppendJava(nil)), "width": 5})
	}
	var res []pyResult
	runPython(t, ops, &res)
	for i, b := range bs {
		s := b.sketch(t)
		sameSketch(t, b.name+": built by the library", s, res[3*i])
		sameSketch(t, b.name+": stored form (lg_k in byte 4) read by the library", s, res[3*i+1])
		sameSketch(t, b.name+": Java form read by the library", s, res[3*i+2])
		for _, form := range []string{res[3*i].Bytes, res[3*i].Java} {
			raw, _ := hex.DecodeString(form)
			d, err := Decode(raw)
			if err != nil {
				t.Fatalf("%s: Decode(library bytes) = %v", b.name, err)
			}
			sameSketch(t, b.name+": library bytes decoded here", d, res[3*i])
		}
	}
}

// TestInteropUnion: a union with summed counts computed here and by the
// library agree, at the receiver's lg_k.
func TestInteropUnion(t *testing.T) {
	bs := fbuilds()
	sk := make([]*Sketch, len(bs))
	hx := make([]string, len(bs))
	for i, b := range bs {
		sk[i] = b.sketch(t)
		hx[i] = hexOf(t, sk[i])
	}
	cases := [][]int{{3, 4}, {4, 5}, {5, 3, 4, 0}, {1, 2, 1}, {0, 0}}
	var ops []map[string]any
	for _, c := range cases {
		in := make([]string, len(c))
		for j, i := range c {
			in[j] = hx[i]
		}
		ops = append(ops, map[string]any{"op": "union", "lg_k": bs[c[0]].lgK, "sketches": in})
	}
	var res []pyResult
	runPython(t, ops, &res)
	for i, c := range cases {
		u := sk[c[0]].Clone()
		for _, j := range c[1:] {
			u.Union(sk[j])
		}
		sameSketch(t, "union", u, res[i])
	}
}
