package cohort_test

import (
	"fmt"
	"testing"

	"github.com/sketchd/sketchd/internal/cohort"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
)

// retentionPeriods is 24 overlapping periods of 100,000 users each at
// the default log2m 14: period p holds ids [20,000p, 20,000p+100,000).
func retentionPeriods(b *testing.B) []cohort.Set {
	b.Helper()
	periods := make([]cohort.Set, 24)
	for p := range periods {
		periods[p] = setOf(b, fmt.Sprintf("p%d", p), int64(20000*p), int64(20000*p+100000))
	}
	return periods
}

// BenchmarkRetention12x12 is a 12 × 12 retention table (144 cells, the
// joint MLE each); its peer BenchmarkRetentionByHand12x12 estimates the
// same cells one sketch.Intersect call each, as a client asking one
// intersection per cell would have the server do. cells/s is reported
// for both.
func BenchmarkRetention12x12(b *testing.B) {
	periods := retentionPeriods(b)
	b.ResetTimer()
	for b.Loop() {
		if _, err := cohort.Retention(periods, 12, 12, ""); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(144*b.N)/b.Elapsed().Seconds(), "cells/s")
}

func BenchmarkRetentionByHand12x12(b *testing.B) {
	periods := retentionPeriods(b)
	hs := make([]*hll.Sketch, len(periods))
	for i, p := range periods {
		hs[i], _ = sketch.HLLOf(p.Sketch)
	}
	b.ResetTimer()
	for b.Loop() {
		for i := range 12 {
			for k := 1; k <= 12; k++ {
				if _, err := sketch.Intersect([]string{periods[i].Label, periods[i+k].Label}, []*hll.Sketch{hs[i], hs[i+k]}, ""); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.ReportMetric(float64(144*b.N)/b.Elapsed().Seconds(), "cells/s")
}
