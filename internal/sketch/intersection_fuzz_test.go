package sketch

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sketchd/sketchd/internal/hll"
)

// finite reports whether every value is a finite number (JSON has no NaN
// or infinity).
func finite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// checkIntersection asserts the invariants every answer keeps.
func checkIntersection(t *testing.T, r Intersection) {
	t.Helper()
	nums := []float64{r.Estimate, r.RawEstimate, r.Error, r.Lower, r.Upper, r.Overlap, r.CardinalityRatio}
	for _, b := range []*Bounded{r.Jaccard, r.ANotB, r.BNotA} {
		if b != nil {
			nums = append(nums, b.Estimate, b.Error, b.Lower, b.Upper)
			if b.Lower > b.Estimate || b.Estimate > b.Upper || b.Lower < 0 {
				t.Fatalf("%+v: the estimate outside its bounds", *b)
			}
		}
	}
	for _, term := range r.Terms {
		nums = append(nums, term.Cardinality)
	}
	if !finite(nums...) {
		t.Fatalf("non-finite number in %+v", r)
	}
	smallest := math.Inf(1)
	for _, term := range r.Terms {
		if len(term.Sketches) == 1 {
			smallest = min(smallest, term.Cardinality)
		}
	}
	if r.Estimate < 0 || r.Estimate > smallest || r.Lower > r.Estimate || r.Estimate > r.Upper || r.Error < 0 {
		t.Fatalf("estimate %g ± %g outside [0, %g] or [%g, %g]", r.Estimate, r.Error, smallest, r.Lower, r.Upper)
	}
	if r.Warnings == nil {
		t.Fatal("nil warnings, want an empty list")
	}
}

// FuzzIntersect decodes two sketches from arbitrary bytes and intersects
// them with both methods: no panic, finite numbers, the clamped estimate
// within [0, smallest set] and inside its bounds.
func FuzzIntersect(f *testing.F) {
	rng := rand.New(rand.NewPCG(31, 31))
	for _, n := range []int{0, 3, 200, 5000} {
		for _, lg := range []int{4, 9} {
			s, err := hll.New(hll.Params{Log2m: lg, Regwidth: 5, Expthresh: hll.AutoExpthresh, Sparse: true})
			if err != nil {
				f.Fatal(err)
			}
			fill(s, randomHashes(rng, n))
			b, err := s.MarshalBinary()
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b, b[:len(b)/2+1])
			f.Add(b, []byte{0x11, 0x8e, 0x7f, 0, 0, 0, 0, 0, 0, 0, 1})
		}
	}
	f.Fuzz(func(t *testing.T, x, y []byte) {
		a, err := hll.Decode(x)
		if err != nil {
			return
		}
		b, err := hll.Decode(y)
		if err != nil {
			return
		}
		for _, m := range []Method{MethodInclusionExclusion, MethodMLE} {
			r, err := Intersect([]string{"a", "b"}, []*hll.Sketch{a, b}, m)
			if err != nil {
				if KindOf(err) != Invalid {
					t.Fatalf("Intersect: %v, want only invalid-request errors", err)
				}
				continue
			}
			checkIntersection(t, r)
		}
	})
}

// FuzzJointMLE feeds arbitrary register pairs to the likelihood search:
// no panic and finite, non-negative estimates.
func FuzzJointMLE(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, []byte{15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, uint8(5))
	f.Add(make([]byte, 16), make([]byte, 16), uint8(1))
	f.Add([]byte{31, 31, 31, 31, 31, 31, 31, 31, 31, 31, 31, 31, 31, 31, 31, 31}, []byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, uint8(5))
	f.Fuzz(func(t *testing.T, a, b []byte, rw uint8) {
		const log2m = 4
		regwidth := int(rw%7) + 1
		ra, rb := make([]uint8, 1<<log2m), make([]uint8, 1<<log2m)
		copy(ra, a)
		copy(rb, b)
		est, err := jointMLE(ra, rb, log2m, regwidth)
		if err != nil {
			t.Fatal(err)
		}
		if !finite(est.a, est.b, est.x) || est.a < 0 || est.b < 0 || est.x < 0 {
			t.Fatalf("jointMLE = %+v, want finite non-negative rates", est)
		}
	})
}
