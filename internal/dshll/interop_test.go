package dshll

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"testing"
)

// These tests check ds_hll sketches against Apache DataSketches' Python
// library (the C++ one underneath; testdata/ds_interop.py): the same ids
// give the same estimate and bounds, each side reads the other's images
// to the same, unions agree. The C++ library sets the compact flag where
// Java does not, so images are compared by what they hold, not byte for
// byte (java_interop_test.go does that). Without python3 and datasketches
// they skip, unless SKETCHD_REQUIRE_DATASKETCHES=1 (set in CI).

type pyHLL struct {
	Compact   string    `json:"compact"`
	Updatable string    `json:"updatable"`
	Estimate  float64   `json:"estimate"`
	Lower     []float64 `json:"lower"`
	Upper     []float64 `json:"upper"`
	LgK       int       `json:"lg_k"`
}

func runPython(tb testing.TB, ops []map[string]any) []pyHLL {
	tb.Helper()
	missing := func(why string) {
		if os.Getenv("SKETCHD_REQUIRE_DATASKETCHES") == "1" {
			tb.Fatalf("DataSketches' Python library is required (SKETCHD_REQUIRE_DATASKETCHES=1): %s", why)
		}
		tb.Skipf("skipping: %s (install the datasketches Python package to run the interoperability tests)", why)
	}
	if out, err := exec.Command("python3", "-c", "import datasketches").CombinedOutput(); err != nil {
		missing("python3 cannot import datasketches: " + string(out))
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
	var out []pyHLL
	if err := json.Unmarshal(res, &out); err != nil {
		tb.Fatalf("ds_interop.py output: %v", err)
	}
	return out
}

// pyBoundTol is the relative difference allowed between bounds here
// (Java's, bit for bit) and the C++ library's, which computes the bounds
// of large sketches with other floating-point steps (measured up to
// about 3e-11 at lg_k 19).
const pyBoundTol = 1e-9

func relDiff(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
}

func sameAsPython(tb testing.TB, what string, s *Sketch, p pyHLL) {
	tb.Helper()
	if s.Estimate() != p.Estimate || s.Params().LgK != p.LgK {
		tb.Errorf("%s: estimate %v lg_k %d, Python %v %d", what, s.Estimate(), s.Params().LgK, p.Estimate, p.LgK)
	}
	for sd := 1; sd <= 3; sd++ {
		lb, _ := s.LowerBound(sd)
		ub, _ := s.UpperBound(sd)
		if relDiff(lb, p.Lower[sd-1]) > pyBoundTol || relDiff(ub, p.Upper[sd-1]) > pyBoundTol {
			tb.Errorf("%s: bounds at %d sd [%v, %v], Python [%v, %v]", what, sd, lb, ub, p.Lower[sd-1], p.Upper[sd-1])
		}
	}
}

// TestPythonInterop: builds, reads both ways and unions agree with the
// C++ library.
func TestPythonInterop(t *testing.T) {
	builds := hllBuilds(t)
	var ops []map[string]any
	for _, b := range builds {
		img, _ := b.sketch(t).MarshalBinary()
		ops = append(ops,
			map[string]any{"op": "build", "lg_k": b.p.LgK, "type": b.p.Type.String(), "lo": b.lo, "hi": b.hi, "strs": b.strs},
			map[string]any{"op": "read", "sketch": hex.EncodeToString(img)})
	}
	var all []string
	var sks []*Sketch
	for _, b := range builds[:6] {
		s := b.sketch(t)
		img, _ := s.MarshalBinary()
		all = append(all, hex.EncodeToString(img))
		sks = append(sks, s)
	}
	ops = append(ops, map[string]any{"op": "union", "lg_k": 10, "type": "HLL_8", "sketches": all})
	res := runPython(t, ops)
	for i, b := range builds {
		ours := b.sketch(t)
		built, read := res[2*i], res[2*i+1]
		sameAsPython(t, b.name()+": built here vs Python", ours, built)
		sameAsPython(t, b.name()+": our image read by Python", ours, read)
		for _, h := range []string{built.Compact, built.Updatable} {
			img, _ := hex.DecodeString(h)
			d, err := Decode(img)
			if err != nil {
				t.Errorf("%s: Decode(Python's image %.48s): %v", b.name(), h, err)
				continue
			}
			sameAsPython(t, b.name()+": Python's image decoded here", d, built)
		}
	}
	u, err := Union(Params{LgK: 10, Type: HLL8}, sks...)
	if err != nil {
		t.Fatal(err)
	}
	sameAsPython(t, "union of 6", u, res[len(res)-1])
}
