package cpc

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"testing"
)

// These tests check cpc sketches against Apache DataSketches' Python
// library (the C++ one underneath; testdata/ds_interop.py): estimates and
// lower bounds equal to 1e-9 (C++ sums the HIP accumulator in another
// floating-point order than Java, whose values sketchd's are, so the HIP
// formats' bytes differ in those fields; the merged formats' bytes are
// equal), upper bounds as java_interop_test.go explains; each side reads
// the other's bytes; unions agree. Without
// python3 and datasketches they skip, unless
// SKETCHD_REQUIRE_DATASKETCHES=1 (set in CI).

type pyCPC struct {
	Bytes    string    `json:"bytes"`
	Estimate float64   `json:"estimate"`
	Lower    []float64 `json:"lower"`
	Upper    []float64 `json:"upper"`
}

func runPython(tb testing.TB, ops []map[string]any) []pyCPC {
	tb.Helper()
	if out, err := exec.Command("python3", "-c", "import datasketches").CombinedOutput(); err != nil {
		if os.Getenv("SKETCHD_REQUIRE_DATASKETCHES") == "1" {
			tb.Fatalf("DataSketches' Python library is required (SKETCHD_REQUIRE_DATASKETCHES=1): %s", out)
		}
		tb.Skipf("skipping: python3 cannot import datasketches (install the datasketches Python package to run the interoperability tests): %s", out)
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
	var out []pyCPC
	if err := json.Unmarshal(res, &out); err != nil {
		tb.Fatalf("ds_interop.py output: %v", err)
	}
	return out
}

func relDiff(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
}

func sameAsPython(tb testing.TB, what string, s *Sketch, p pyCPC) {
	tb.Helper()
	got, _ := s.MarshalBinary()
	if got[5]&flagHIP == 0 && hex.EncodeToString(got) != p.Bytes {
		tb.Errorf("%s: bytes of a merged sketch\n got %.96x\nwant %.96s", what, got, p.Bytes)
	}
	if relDiff(s.Estimate(), p.Estimate) > 1e-9 {
		tb.Errorf("%s: estimate %v, Python %v", what, s.Estimate(), p.Estimate)
	}
	for sd := 1; sd <= 3; sd++ {
		lb, _ := s.LowerBound(sd)
		ub, _ := s.UpperBound(sd)
		if relDiff(lb, p.Lower[sd-1]) > 1e-9 || !upperAsJava(s.Params().LgK, ub, p.Upper[sd-1]) {
			tb.Errorf("%s: bounds at %d sd [%v, %v], Python [%v, %v]", what, sd, lb, ub, p.Lower[sd-1], p.Upper[sd-1])
		}
	}
}

func TestPythonInterop(t *testing.T) {
	builds := cpcBuilds(t)
	// Python's cpc_sketch.update hashes a negative int as the float it
	// equals (update(-5) is update(-5.0)), not as an int64 as Java's
	// update(long) and sketchd do: the builds here use ids >= 0 only.
	for i := range builds {
		if builds[i].lo < 0 {
			builds[i].lo, builds[i].hi = 0, builds[i].hi-builds[i].lo
		}
	}
	var ops []map[string]any
	var all []string
	var sks []*Sketch
	for i, b := range builds {
		s := b.sketch(t)
		img, _ := s.MarshalBinary()
		ops = append(ops,
			map[string]any{"op": "build", "lg_k": b.lgK, "lo": b.lo, "hi": b.hi, "strs": b.strs},
			map[string]any{"op": "read", "sketch": hex.EncodeToString(img)})
		if i < 9 {
			all = append(all, hex.EncodeToString(img))
			sks = append(sks, s)
		}
	}
	ops = append(ops, map[string]any{"op": "union", "lg_k": 10, "sketches": all})
	res := runPython(t, ops)
	for i, b := range builds {
		ours := b.sketch(t)
		sameAsPython(t, b.name()+": built here vs Python", ours, res[2*i])
		sameAsPython(t, b.name()+": our bytes read by Python", ours, res[2*i+1])
		img, _ := hex.DecodeString(res[2*i].Bytes)
		if d, err := Decode(img); err != nil {
			t.Errorf("%s: Decode(Python's bytes): %v", b.name(), err)
		} else {
			sameAsPython(t, b.name()+": Python's bytes decoded here", d, res[2*i])
		}
	}
	u, err := Union(Params{LgK: 10}, sks...)
	if err != nil {
		t.Fatal(err)
	}
	sameAsPython(t, "union of 9", u, res[len(res)-1])
}
