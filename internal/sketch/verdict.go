package sketch

import (
	"fmt"
	"math"
	"strconv"
)

// Verdict is the one-word judgement an answer built from sketches carries
// beside its estimate, error and bounds: what a reader may do with the
// number. The API shows it as is and the console prints it; neither
// decides it again.
type Verdict string

// The verdicts, strongest first.
const (
	// VerdictExact: the count has no error (every operand is held as an
	// exact list of hashes, or an empty operand decides it).
	VerdictExact Verdict = "exact"
	// VerdictReliable: the bounds are narrow (RelativeWidth at most
	// MaxRelativeWidth) and every other condition of the answer holds;
	// in the simulation of docs/intersection.md such bounds contain the
	// true count in at least 95% of answers in every cell.
	VerdictReliable Verdict = "reliable"
	// VerdictNotReliable: the estimate is above its noise, but its bounds
	// are too wide, or the sets lie outside the range where the estimator
	// is trustworthy; the warnings say which.
	VerdictNotReliable Verdict = "not_reliable"
	// VerdictSpurious: the estimate cannot be told from zero.
	VerdictSpurious Verdict = "spurious"
)

// MaxRelativeWidth is the widest a reliable answer's bounds may be, as a
// share of its estimate: upper − lower ≤ 0.5 × estimate, so a reliable
// count is known to within about ±25%. docs/intersection.md ("Verdicts")
// shows how the share of reliable answers and their coverage change with
// this limit in the simulation.
const MaxRelativeWidth = 0.5

// RelativeWidth is how wide the bounds [lower, upper] are as a share of
// estimate: (upper − lower) / estimate. It is 0 for an exact answer
// (lower = upper) and +Inf when the estimate is 0 but the bounds are not.
func RelativeWidth(estimate, lower, upper float64) float64 {
	w := upper - lower
	switch {
	case w <= 0:
		return 0
	case estimate <= 0:
		return math.Inf(1)
	}
	return w / estimate
}

// boundsVerdict judges an estimate by its bounds alone: exact when it has
// no error, spurious when its lower bound reaches zero, reliable when its
// bounds span at most MaxRelativeWidth of it, otherwise not reliable.
func boundsVerdict(estimate, lower, upper float64, exact bool) Verdict {
	switch {
	case exact:
		return VerdictExact
	case lower <= 0:
		return VerdictSpurious
	case RelativeWidth(estimate, lower, upper) <= MaxRelativeWidth:
		return VerdictReliable
	}
	return VerdictNotReliable
}

// widthWarning explains a verdict lost to wide bounds.
func widthWarning(lower, upper, width float64) string {
	return fmt.Sprintf("the bounds (%s to %s) span %s of the estimate; an answer is reliable only when they span at most %s of it",
		countText(lower), countText(upper), widthText(width), percent(MaxRelativeWidth))
}

// widthText formats a relative width as a percentage ("94%"), or says
// that it has no finite size.
func widthText(w float64) string {
	if math.IsInf(w, 0) || math.IsNaN(w) {
		return "an unbounded multiple"
	}
	return fmt.Sprintf("%.0f%%", 100*w)
}

// countText formats a count for people: rounded, with thousands
// separators ("16,616").
func countText(x float64) string {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return fmt.Sprint(x)
	}
	n := int64(math.Round(x))
	s := strconv.FormatInt(max(n, -n), 10)
	out := make([]byte, 0, len(s)+len(s)/3+1)
	if n < 0 {
		out = append(out, '-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// JudgeBounds judges an estimate that needs no other condition than its
// bounds (a theta intersection's, an overlap count's): exact when it has
// no error, spurious when its lower bound reaches zero, reliable when its
// bounds span at most MaxRelativeWidth of it, otherwise not reliable. It
// returns the verdict and its text for people.
func JudgeBounds(estimate, lower, upper float64, exact bool) (Verdict, string) {
	v := boundsVerdict(estimate, lower, upper, exact)
	bounds := fmt.Sprintf("(%s to %s)", countText(lower), countText(upper))
	width := RelativeWidth(estimate, lower, upper)
	switch v {
	case VerdictExact:
		return v, "Exact. This count has no error."
	case VerdictSpurious:
		return v, fmt.Sprintf("Spurious. The estimate (%s) cannot be told from zero: its bounds %s reach 0. Do not act on it.", countText(estimate), bounds)
	case VerdictReliable:
		return v, fmt.Sprintf("Reliable. The bounds %s span %s of the estimate (reliable answers span at most %s).", bounds, widthText(width), percent(MaxRelativeWidth))
	}
	return v, fmt.Sprintf("Not reliable. The estimate is above its noise, but its bounds %s span %s of it, more than the %s a reliable answer may span.",
		bounds, widthText(width), percent(MaxRelativeWidth))
}

// MinThetaRetained is how many sampled hashes a theta intersection must
// keep for its bounds to be called reliable: below it the binomial
// bounds are wide.
const MinThetaRetained = 10

// JudgeTheta judges a theta intersection (DataSketches' estimate and its
// bounds at two standard deviations, retained sampled hashes, exact in
// exact mode): JudgeBounds, and not reliable when fewer than
// MinThetaRetained hashes are in the intersection. It returns the
// verdict, its text and the warnings that say why it is not reliable.
// POST /v1/intersection, /v1/rank and cmd/intersim judge theta by it.
func JudgeTheta(estimate, lower, upper float64, retained int, exact bool) (Verdict, string, []string) {
	v, text := JudgeBounds(estimate, lower, upper, exact)
	var warnings []string
	switch {
	case v == VerdictExact:
	case lower == 0:
		warnings = append(warnings, "the lower bound is 0: the sets may not overlap at all")
	case retained < MinThetaRetained:
		v = VerdictNotReliable
		text = fmt.Sprintf("Not reliable. Only %d sampled users are in the intersection: its bounds are wide.", retained)
		warnings = append(warnings, fmt.Sprintf("only %d sampled users are in the intersection: its bounds are wide", retained))
	case v == VerdictNotReliable:
		warnings = append(warnings, fmt.Sprintf("the bounds span %.0f%% of the estimate; an answer is reliable only when they span at most %.0f%% of it (%d sampled users are in the intersection)",
			100*RelativeWidth(estimate, lower, upper), 100*MaxRelativeWidth, retained))
	}
	return v, text, warnings
}
