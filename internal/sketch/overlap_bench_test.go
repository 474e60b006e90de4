package sketch

import (
	"fmt"
	"testing"
)

// BenchmarkOverlap measures an overlap of FULL log2m=14 sketches of
// 500,000 hashes sharing 200,000: with 3 and 12 sets every subset's union
// is built (7 and 4,095 unions), with 64 the 2,081 unions that leave out
// at most two sets. The peer is an 8-way intersection
// (BenchmarkIntersect8, 255 unions).
func BenchmarkOverlap(b *testing.B) {
	for _, n := range []int{3, 12, 64} {
		names, hs := fullSketches(b, n)
		sks := asSketches(hs)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			var o Overlap
			for b.Loop() {
				var err error
				if o, err = EstimateOverlap(names, sks, ""); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(o.Unions), "unions")
		})
	}
}
