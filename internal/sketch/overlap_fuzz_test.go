package sketch

import (
	"math/rand/v2"
	"testing"

	"github.com/sketchd/sketchd/internal/hll"
)

// checkOverlap asserts the invariants every overlap answer keeps: finite
// numbers, every estimate within [0, the union] and inside its bounds,
// counts of the right lengths, and exactly-k counts that add up to the
// union.
func checkOverlap(t *testing.T, o Overlap) {
	t.Helper()
	all := append(append(append([]Figure{o.Union}, o.Exactly...), o.AtLeast...), o.OnlyHere...)
	for _, r := range o.Regions {
		all = append(all, r.Figure)
	}
	for _, f := range all {
		if !finite(f.Estimate, f.RawEstimate, f.Error, f.Lower, f.Upper) {
			t.Fatalf("non-finite number in %+v", f)
		}
		if f.Estimate < 0 || f.Estimate > o.Union.Estimate || f.Lower > f.Estimate || f.Estimate > f.Upper || f.Error < 0 || f.Verdict == "" {
			t.Fatalf("count %+v outside [0, %g] or its bounds", f, o.Union.Estimate)
		}
	}
	if len(o.OnlyHere) != o.Sets || len(o.AtLeast) == 0 || o.Warnings == nil {
		t.Fatalf("%d only-here counts for %d sets, %d at-least counts, warnings %v", len(o.OnlyHere), o.Sets, len(o.AtLeast), o.Warnings)
	}
	if o.Complete {
		sum := 0.0
		for _, f := range o.Exactly {
			sum += f.RawEstimate
		}
		if d := sum - o.Union.RawEstimate; d > 1e-6*max(1, o.Union.RawEstimate) || -d > 1e-6*max(1, o.Union.RawEstimate) {
			t.Fatalf("exactly-k counts add up to %g, the union is %g", sum, o.Union.RawEstimate)
		}
	}
}

// FuzzOverlap decodes three sketches from arbitrary bytes and counts their
// overlap, and that of the first two by both methods: no panic, and the
// invariants of checkOverlap.
func FuzzOverlap(f *testing.F) {
	rng := rand.New(rand.NewPCG(29, 31))
	var seeds [][]byte
	for _, n := range []int{0, 3, 200, 5000} {
		for _, lg := range []int{4, 10} {
			s, err := hll.New(hll.Params{Log2m: lg, Regwidth: 5, Expthresh: hll.AutoExpthresh, Sparse: true})
			if err != nil {
				f.Fatal(err)
			}
			fill(s, randomHashes(rng, n))
			b, err := s.MarshalBinary()
			if err != nil {
				f.Fatal(err)
			}
			seeds = append(seeds, b)
		}
	}
	for i, b := range seeds {
		f.Add(b, seeds[(i+1)%len(seeds)], seeds[(i+3)%len(seeds)])
	}
	f.Add(seeds[1], []byte{0x11, 0x8e, 0x7f, 0, 0, 0, 0, 0, 0, 0, 1}, seeds[2])
	f.Fuzz(func(t *testing.T, x, y, z []byte) {
		var sks []Sketch
		for _, b := range [][]byte{x, y, z} {
			h, err := hll.Decode(b)
			if err != nil {
				return
			}
			sks = append(sks, NewHLL(h))
		}
		o, err := EstimateOverlap([]string{"a", "b", "c"}, sks, "")
		if err != nil {
			if KindOf(err) != Invalid {
				t.Fatalf("EstimateOverlap: %v, want only invalid-request errors", err)
			}
			return
		}
		checkOverlap(t, o)
		// Two sets: counted by the intersection's estimators.
		for _, m := range []Method{MethodMLE, MethodInclusionExclusion} {
			o, err := EstimateOverlap([]string{"a", "b"}, sks[:2], m)
			if err != nil {
				t.Fatalf("EstimateOverlap(%s) of two: %v", m, err)
			}
			checkOverlap(t, o)
		}
	})
}
