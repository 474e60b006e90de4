package sketch

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sketchd/sketchd/internal/hll"
)

// fullSketches returns k FULL log2m=14 sketches of 500,000 hashes each,
// sharing 200,000.
func fullSketches(b *testing.B, k int) ([]string, []*hll.Sketch) {
	b.Helper()
	rng := rand.New(rand.NewPCG(21, 21))
	common := randomHashes(rng, 200000)
	names := make([]string, k)
	sks := make([]*hll.Sketch, k)
	for i := range k {
		s, err := hll.New(hll.Params{Log2m: 14, Regwidth: 5, Expthresh: 0, Sparse: false})
		if err != nil {
			b.Fatal(err)
		}
		sks[i] = fill(s, common, randomHashes(rng, 300000))
		names[i] = fmt.Sprint("s", i)
		if sks[i].Representation() != hll.Full {
			b.Fatalf("fixture is %v, want FULL", sks[i].Representation())
		}
	}
	return names, sks
}

// BenchmarkIntersect2 measures the intersection of two FULL log2m=14
// sketches with each method (bar: under 1 ms).
func BenchmarkIntersect2(b *testing.B) {
	names, sks := fullSketches(b, 2)
	for _, m := range []Method{MethodInclusionExclusion, MethodMLE} {
		b.Run(string(m), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Intersect(names, sks, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkIntersect8 measures 8-way inclusion–exclusion over FULL
// log2m=14 sketches: 255 union terms (bar: under 50 ms).
func BenchmarkIntersect8(b *testing.B) {
	names, sks := fullSketches(b, 8)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Intersect(names, sks, MethodInclusionExclusion); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJointMLE measures the likelihood search alone on 16384
// register pairs.
func BenchmarkJointMLE(b *testing.B) {
	_, sks := fullSketches(b, 2)
	ra, rb := sks[0].Registers(nil), sks[1].Registers(nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(ra) + len(rb)))
	for b.Loop() {
		if _, err := jointMLE(ra, rb, 14, 5); err != nil {
			b.Fatal(err)
		}
	}
}
