package sketch

import (
	"fmt"
	"math"
)

// cutoffRow is one row of DESIGN.md's practical cutoff table.
type cutoffRow struct {
	log2m      float64
	minOverlap float64 // smallest trustworthy overlap
	maxRatio   float64 // largest trustworthy cardinality ratio
}

// cutoffTable returns DESIGN.md's table (m = 8192 … 65536).
func cutoffTable() [4]cutoffRow {
	return [4]cutoffRow{
		{13, 0.05, 10},
		{14, 0.05, 20},
		{15, 0.05, 30},
		{16, 0.05, 100},
	}
}

// cutoffs returns the smallest trustworthy overlap and the largest
// trustworthy cardinality ratio for sketches of log2m, and whether they
// were extrapolated below the table. Between rows they are interpolated
// linearly in log2m. Below the table the error grows as 1/√m, so the
// smallest overlap grows as √(8192/m) and the largest ratio shrinks as
// m/8192 (both conservative: at m = 2048 an overlap of 10% and a ratio of
// 2.5). Above it the last row holds: no extrapolation towards leniency.
func cutoffs(log2m int) (minOverlap, maxRatio float64, extrapolated bool) {
	table := cutoffTable()
	first, last := table[0], table[len(table)-1]
	lg := float64(log2m)
	switch {
	case lg < first.log2m:
		return first.minOverlap * math.Sqrt(math.Exp2(first.log2m-lg)), first.maxRatio * math.Exp2(lg-first.log2m), true
	case lg >= last.log2m:
		return last.minOverlap, last.maxRatio, false
	}
	for i := 1; i < len(table); i++ {
		lo, hi := table[i-1], table[i]
		if lg <= hi.log2m {
			f := (lg - lo.log2m) / (hi.log2m - lo.log2m)
			return lo.minOverlap + f*(hi.minOverlap-lo.minOverlap), lo.maxRatio + f*(hi.maxRatio-lo.maxRatio), false
		}
	}
	return last.minOverlap, last.maxRatio, false
}

// judge decides Reliable and writes the warnings, most important first.
// An exact answer is reliable and needs none.
func judge(r Intersection, exact, folded, undetermined bool) (bool, []string) {
	w := []string{}
	if exact {
		return true, w
	}
	m := 1 << r.Log2m
	minOverlap, maxRatio, extrapolated := cutoffs(r.Log2m)
	if undetermined {
		w = append(w, "the registers do not show how the sets overlap (one sketch's registers dominate the other's everywhere); the bounds span every possible size")
	}
	if r.Spurious {
		w = append(w, fmt.Sprintf("the estimate (%.0f) cannot be told from zero with an error of ±%.0f: the sets may not overlap at all", r.Estimate, r.Error))
	}
	if r.Overlap < minOverlap {
		w = append(w, fmt.Sprintf("the intersection is %s of the smallest set; with %d registers an intersection smaller than %s of the smallest set is not trustworthy", percent(r.Overlap), m, percent(minOverlap)))
	}
	if r.CardinalityRatio > maxRatio {
		w = append(w, fmt.Sprintf("the largest set is %.3g times the smallest; with %d registers an intersection is trustworthy only up to a ratio of %.3g", r.CardinalityRatio, m, maxRatio))
	}
	if extrapolated {
		w = append(w, fmt.Sprintf("%d registers are fewer than the 8192 the cutoffs were measured for; the limits were tightened to match", m))
	}
	if r.RawEstimate < 0 || r.RawEstimate > r.Estimate {
		w = append(w, fmt.Sprintf("the raw estimate (%.0f) fell outside zero to the smallest set and was clamped", r.RawEstimate))
	}
	if folded {
		w = append(w, fmt.Sprintf("the sketches were folded to %d registers (log2m %d) to compare them, so the error is that of the smallest sketch", m, r.Log2m))
	}
	reliable := !undetermined && !r.Spurious && r.Overlap >= minOverlap && r.CardinalityRatio <= maxRatio
	return reliable, w
}

// percent formats a share for a warning: 0.0123 → "1.23%".
func percent(f float64) string {
	return fmt.Sprintf("%.3g%%", 100*f)
}
