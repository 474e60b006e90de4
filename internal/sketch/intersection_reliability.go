package sketch

import (
	"fmt"
	"math"
	"strings"
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

// judge decides r's verdict (Verdict, VerdictText, Reliable) and writes
// its warnings, most important first, for an intersection of k sketches.
// An exact answer is reliable and needs none.
//
// The verdict comes from the envelope itself: a reliable answer's bounds
// span at most MaxRelativeWidth of its estimate. For two sketches the
// answer must also lie inside DESIGN.md's practical cutoffs (overlap and
// cardinality ratio for the number of registers), which were measured for
// pairs; for three or more they do not apply (and the width rule is the
// stricter one there: inclusion–exclusion's envelope adds the errors of
// all 2^k−1 unions, so narrow bounds need a large overlap of sets of
// similar size).
func judge(r *Intersection, k int, exact, folded, undetermined bool) {
	r.Warnings = []string{}
	inside := containment(r, k)
	if exact {
		r.Reliable, r.anyWidth = true, true
		r.Verdict = VerdictExact
		r.VerdictText = "Exact. One set is empty or every set is held as an exact list of hashes, so this count has no error."
		if inside != "" {
			r.VerdictText += " " + inside + "."
		}
		return
	}
	w := []string{}
	m := 1 << r.Log2m
	pair := k == 2
	minOverlap, maxRatio, extrapolated := cutoffs(r.Log2m)
	if undetermined {
		w = append(w, "the registers do not show how the sets overlap (one sketch's registers dominate the other's everywhere); the bounds span every possible size")
	}
	if r.Spurious {
		w = append(w, fmt.Sprintf("the estimate (%.0f) cannot be told from zero with an error of ±%.0f: the sets may not overlap at all", r.Estimate, r.Error))
	}
	wide := r.RelativeWidth > MaxRelativeWidth
	if wide && !r.Spurious {
		w = append(w, widthWarning(r.Lower, r.Upper, r.RelativeWidth))
	}
	outside := false
	if pair {
		if r.Overlap < minOverlap {
			outside = true
			w = append(w, fmt.Sprintf("the intersection is %s of the smallest set; with %d registers an intersection smaller than %s of the smallest set is not trustworthy", percent(r.Overlap), m, percent(minOverlap)))
		}
		if r.CardinalityRatio > maxRatio {
			outside = true
			w = append(w, fmt.Sprintf("the largest set is %.3g times the smallest; with %d registers an intersection is trustworthy only up to a ratio of %.3g", r.CardinalityRatio, m, maxRatio))
		}
		if extrapolated {
			w = append(w, fmt.Sprintf("%d registers are fewer than the 8192 the cutoffs were measured for; the limits were tightened to match", m))
		}
	}
	if r.RawEstimate < 0 || r.RawEstimate > r.Estimate {
		w = append(w, fmt.Sprintf("the raw estimate (%.0f) fell outside zero to the smallest set and was clamped", r.RawEstimate))
	}
	if folded {
		w = append(w, fmt.Sprintf("the sketches were folded to %d registers (log2m %d) to compare them, so the error is that of the smallest sketch", m, r.Log2m))
	}
	r.Warnings = w
	r.anyWidth = !undetermined && !r.Spurious && !outside
	r.Reliable = r.anyWidth && !wide
	bounds := fmt.Sprintf("(%s to %s)", countText(r.Lower), countText(r.Upper))
	switch {
	case r.Spurious:
		r.Verdict = VerdictSpurious
		r.VerdictText = fmt.Sprintf("Spurious. The estimate (%s ± %s) cannot be told from zero: its bounds %s reach 0, so the sets may not overlap at all. Do not act on it.",
			countText(r.Estimate), countText(r.Error), bounds)
	case r.Reliable:
		r.Verdict = VerdictReliable
		r.VerdictText = "Reliable. "
		if inside != "" {
			r.VerdictText += inside + ". "
		}
		r.VerdictText += fmt.Sprintf("The bounds %s span %s of the estimate (reliable answers span at most %s)",
			bounds, widthText(r.RelativeWidth), percent(MaxRelativeWidth))
		if pair {
			r.VerdictText += ", and the overlap and the sizes of the sets are inside the range measured for sketches of this precision"
		}
		r.VerdictText += "."
	default:
		r.Verdict = VerdictNotReliable
		why := "the sets lie outside the range where sketches of this precision are trustworthy"
		switch {
		case undetermined:
			why = "the registers cannot show how the sets overlap"
		case wide:
			why = fmt.Sprintf("its bounds %s span %s of it, more than the %s a reliable answer may span", bounds, widthText(r.RelativeWidth), percent(MaxRelativeWidth))
		}
		r.VerdictText = "Not reliable. The estimate is above its noise, but " + why + "; see the warnings."
		if inside != "" {
			r.VerdictText = "Not reliable. " + inside + ", as far as the sketches tell; but " + why + "; see the warnings."
		}
	}
}

// containment says, for people, that the answer's smallest set lies
// inside the others (r.Within, r.Same), naming the sets by the labels of
// its first k terms (the sets in request order); "" when it does not.
func containment(r *Intersection, k int) string {
	if r.Within == "" || len(r.Terms) < k {
		return ""
	}
	var others []string
	skipped := false
	for _, t := range r.Terms[:k] {
		if n := t.Sketches[0]; n != r.Within || skipped {
			others = append(others, n)
		} else {
			skipped = true
		}
	}
	all := strings.Join(others, " and ")
	switch {
	case r.Same && k == 2:
		return fmt.Sprintf("The sets hold the same users (%s is within %s and %s within %s): the overlap is their count", r.Within, all, all, r.Within)
	case r.Same:
		return "The sets hold the same users: the intersection is their count"
	case k == 2:
		return fmt.Sprintf("All of %s is within %s: the overlap is %s's count", r.Within, all, r.Within)
	}
	return fmt.Sprintf("All of %s is within every other set (%s): the intersection is %s's count", r.Within, all, r.Within)
}

// ReliableWithin reports whether the answer would be reliable if its
// bounds could span up to maxWidth of the estimate instead of
// MaxRelativeWidth, everything else unchanged: x.Reliable equals
// x.ReliableWithin(MaxRelativeWidth). cmd/intersim uses it to show how
// the limit trades reliable answers for their coverage.
func (x Intersection) ReliableWithin(maxWidth float64) bool {
	return x.anyWidth && x.RelativeWidth <= maxWidth
}

// percent formats a share for a warning: 0.0123 → "1.23%".
func percent(f float64) string {
	return fmt.Sprintf("%.3g%%", 100*f)
}
