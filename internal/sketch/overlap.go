package sketch

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/sketchd/sketchd/internal/hll"
)

// Limits of one overlap (docs/intersection.md, "Users in several sets").
const (
	MinOverlap = 2
	MaxOverlap = 64
	// OverlapWork and MaxOverlapUnions bound the work of one overlap:
	// the unions it estimates times the registers each holds (twice:
	// once whole, once in replicates), and the unions themselves (each
	// count is a sum over them, once per replicate). The unions of every
	// subset of the operands that leaves out at most j of them are built
	// for the largest j that fits both: all 2^N − 1 subsets up to 12
	// operands at log2m ≤ 14 (9 at log2m 17), and always at least the
	// N + 1 unions that the "only here" counts need (every N up to 64 at
	// every log2m).
	OverlapWork      = 1 << 26
	MaxOverlapUnions = 4096
	// MaxOverlapRegions: the count of every region (the users in exactly
	// a given set of operands) is reported for at most this many
	// operands (255 regions).
	MaxOverlapRegions = 8
)

// ErrOverlapCount: fewer than MinOverlap or more than MaxOverlap operands.
var ErrOverlapCount = errors.New("wrong number of operands")

// Figure is one count of an overlap with its error, bounds and verdict.
// For two sets every figure is the intersection estimator's (overlapPair):
// the users in both are Intersect's answer, its estimate, error, bounds
// and verdict as they are; the others its extras, judged by their bounds.
type Figure struct {
	// Estimate is RawEstimate clamped to [0, the union's estimate].
	Estimate float64
	// RawEstimate is the signed sum of unions the count is made of (for
	// two sets, the estimator's own value).
	RawEstimate float64
	// Error is a one-sigma error of RawEstimate, measured on replicates
	// of the registers, and never below the floor the unions' own error
	// implies (overlapEstimates.figure, floor; docs/intersection.md); 0
	// when exact.
	Error float64
	// Lower and Upper are RawEstimate ∓ z·Error, clipped to 0 below and
	// to the union's upper bound above; they contain Estimate. z is 3 for
	// the union, and for the other counts Student's t quantile for the
	// same 99.73% with the replicates' degrees of freedom (3.26 with 32).
	Lower, Upper float64
	// Verdict judges the bounds alone (JudgeBounds), but for the users in
	// both of two sets, which carry the intersection's verdict.
	Verdict Verdict
}

// Region is the count of users in exactly the operands Members, and in
// no other.
type Region struct {
	Members []string
	Figure
}

// Overlap is how N sets overlap: how many users are in exactly k of them
// and in at least k, and how many only in each (DESIGN.md, "What the
// founding case studies did"). Every count is a signed sum of the
// estimates of unions of the operands, which are lossless.
type Overlap struct {
	// Sets is N; Log2m the register count compared at (the smallest of
	// the operands', larger ones folded down).
	Sets, Log2m int
	// Union is the number of users in at least one set.
	Union Figure
	// Exactly[k−1] counts the users in exactly k sets, AtLeast[k−1] those
	// in at least k. When the overlap is not Complete they stop at
	// k = Depth and k = Depth + 1.
	Exactly, AtLeast []Figure
	// OnlyHere[i] counts the users of operand i in no other operand.
	OnlyHere []Figure
	// Regions has one count per non-empty subset of operands (ordered by
	// size, then operand order) when Sets ≤ MaxOverlapRegions.
	Regions []Region
	// Complete is true when every k is answered. Depth is the most
	// operands left out of the unions built (N − 1 when complete) and
	// Unions how many were built.
	Complete      bool
	Depth, Unions int
	// Warnings say, in plain words, what the figures leave out or assume.
	Warnings []string
	// Method is the estimator every count comes from: for two sets the
	// intersection's (Intersect or IntersectFamily: the joint MLE by
	// default for hll sketches, inclusion–exclusion otherwise), so that
	// the users in both are what POST /v1/intersection answers; for more,
	// inclusion–exclusion over the unions with errors measured on
	// replicates.
	Method Method
}

// EstimateOverlap counts how the sets sks (named by labels, in order)
// overlap. The sketches must be of one HLL-family kind with registers,
// so that their unions are lossless and their errors can be measured on
// the registers: hll, ds_hll, zeta_hll or airlift_hll (registerSource).
// Other kinds fail with a Conflict, cpc with one saying why. Sketches of
// different precision are compared at the smallest (and at most
// hll.MaxLog2m), larger ones folded down. If every operand is an hll
// sketch holding an exact list of hashes (EXPLICIT or EMPTY), every
// count is exact.
//
// Two sets are counted by the estimator of their intersection (method
// as for Intersect, "" for its default; IntersectFamily for the other
// kinds), so that every route answers "how many in both" with one
// number: the users in both are Intersect's answer with its bounds and
// verdict, the users only in one its relative complements, the union
// and the users in one set only the same estimator's. More sets take
// inclusion–exclusion ("" or MethodInclusionExclusion).
//
// It fails with an *Error of kind Invalid wrapping ErrOverlapCount,
// ErrMethod or ErrUndefined, or of kind Conflict for mixed kinds or kinds
// without registers; labels of another length than sks, a nil sketch or
// a failed fold are internal errors.
func EstimateOverlap(labels []string, sks []Sketch, method Method) (Overlap, error) {
	n := len(sks)
	if n < MinOverlap || n > MaxOverlap {
		return Overlap{}, Wrap(Invalid, ErrOverlapCount, fmt.Sprintf("an overlap takes %d to %d sketches or series ranges, got %d", MinOverlap, MaxOverlap, n))
	}
	if len(labels) != n {
		return Overlap{}, fmt.Errorf("sketch: overlap: %d labels for %d sketches", len(labels), n)
	}
	for i, s := range sks {
		if s == nil {
			return Overlap{}, fmt.Errorf("sketch: overlap: sketch %q is nil", labels[i])
		}
	}
	if _, err := ParseMethod(string(method)); err != nil {
		return Overlap{}, err
	}
	if method == MethodMLE && n != 2 {
		return Overlap{}, Wrap(Invalid, ErrMethod, fmt.Sprintf("method %q takes exactly two sketches, got %d", method, n))
	}
	if err := SameKind(labels, sks); err != nil {
		return Overlap{}, err
	}
	var out Overlap
	var err error
	if _, ok := HLLOf(sks[0]); ok {
		var hs []*hll.Sketch
		if hs, err = overlapOperands(labels, sks); err != nil {
			return Overlap{}, err
		}
		if n == 2 {
			return overlapPair(labels, sks, method)
		}
		out, err = overlapHLL(labels, hs)
	} else {
		if err = familyRegisters(labels, sks); err != nil {
			return Overlap{}, err
		}
		if n == 2 {
			return overlapPair(labels, sks, method)
		}
		out, err = overlapFamily(labels, sks)
	}
	out.Method = MethodInclusionExclusion
	return out, err
}

// overlapPair counts the overlap of two sets with their intersection's
// estimator: every count is Intersect's (or IntersectFamily's) answer or
// one of its pair's extras, by the same estimator.
func overlapPair(labels []string, sks []Sketch, method Method) (Overlap, error) {
	var x Intersection
	var err error
	if _, ok := HLLOf(sks[0]); ok {
		hs := make([]*hll.Sketch, 2)
		for i, s := range sks {
			hs[i], _ = HLLOf(s)
		}
		x, err = Intersect(labels, hs, method)
	} else {
		x, err = IntersectFamily(labels, sks, method)
	}
	if err != nil {
		return Overlap{}, err
	}
	exact := x.Verdict == VerdictExact
	union := Figure{Estimate: x.union.Estimate, RawEstimate: x.union.Estimate, Error: x.union.Error, Lower: x.union.Lower, Upper: x.union.Upper}
	union.Verdict, _ = JudgeBounds(union.Estimate, union.Lower, union.Upper, exact && union.Error == 0)
	// Every count is clamped to [0, the union], as an overlap's are;
	// RawEstimate keeps the estimator's value.
	clamp := func(f Figure) Figure {
		f.Estimate = min(max(f.Estimate, 0), union.Estimate)
		f.Lower = min(f.Lower, f.Estimate)
		return f
	}
	of := func(b *Bounded, raw float64) Figure {
		f := clamp(Figure{Estimate: b.Estimate, RawEstimate: raw, Error: b.Error, Lower: b.Lower, Upper: b.Upper})
		f.Verdict, _ = JudgeBounds(f.Estimate, f.Lower, f.Upper, exact && b.Error == 0)
		return f
	}
	both := clamp(Figure{Estimate: x.Estimate, RawEstimate: x.RawEstimate, Error: x.Error, Lower: x.Lower, Upper: x.Upper, Verdict: x.Verdict})
	one := of(x.one, x.union.Estimate-x.RawEstimate)
	a, b := of(x.ANotB, x.ANotB.Estimate), of(x.BNotA, x.BNotA.Estimate)
	out := Overlap{
		Sets: 2, Log2m: x.Log2m, Union: union, Method: x.Method,
		Exactly: []Figure{one, both}, AtLeast: []Figure{union, both}, OnlyHere: []Figure{a, b},
		Regions:  []Region{{Members: slices.Clone(labels[:1]), Figure: a}, {Members: slices.Clone(labels[1:]), Figure: b}, {Members: slices.Clone(labels), Figure: both}},
		Complete: true, Depth: 1, Unions: 3, Warnings: []string{},
	}
	for _, w := range x.Warnings {
		out.Warnings = append(out.Warnings, "users in both: "+w)
	}
	return out, nil
}

// overlapKinds names the kinds an overlap takes, for messages.
const overlapKinds = "hll, ds_hll, zeta_hll or airlift_hll"

// overlapOperands returns hll operands as the hll sketches they are.
func overlapOperands(labels []string, sks []Sketch) ([]*hll.Sketch, error) {
	hs := make([]*hll.Sketch, len(sks))
	for i, s := range sks {
		h, _ := HLLOf(s)
		if h.Representation() == hll.Undefined {
			return nil, Wrap(Invalid, ErrUndefined, fmt.Sprintf("sketch %q is undefined and cannot be counted", labels[i]))
		}
		hs[i] = h
	}
	return hs, nil
}

// overlapHLL counts the overlap of HLL sketches.
func overlapHLL(labels []string, hs []*hll.Sketch) (Overlap, error) {
	n := len(hs)
	p := hs[0].Params()
	allExact := true
	for _, h := range hs {
		p.Log2m = min(p.Log2m, h.Params().Log2m)
		p.Regwidth = max(p.Regwidth, h.Params().Regwidth)
		switch h.Representation() {
		case hll.Empty, hll.Explicit:
		default:
			allExact = false
		}
	}
	if allExact {
		out := Overlap{Sets: n, Log2m: p.Log2m, Warnings: []string{}}
		exactOverlap(&out, labels, hs)
		return out, nil
	}
	// Registers at the common log2m; a narrower regwidth's values are
	// valid in the widest one.
	folded := false
	regs := make([][]uint8, n)
	for i, h := range hs {
		if h.Params().Log2m != p.Log2m {
			f, err := h.Fold(p.Log2m, h.Params().Regwidth)
			if err != nil {
				return Overlap{}, fmt.Errorf("sketch: fold %q to log2m %d: %w", labels[i], p.Log2m, err)
			}
			h, folded = f, true
		}
		regs[i] = h.Registers(nil)
	}
	var warnings []string
	if folded {
		warnings = append(warnings, fmt.Sprintf("the sketches were folded to %d registers (log2m %d) to compare them, so the error is that of the smallest sketch", p.NumRegisters(), p.Log2m))
	}
	return overlapRegisters(labels, regs, p, warnings), nil
}

// overlapRegisters counts the overlap of register arrays at p: register
// values are one plus a count of leading or trailing zeros of a hash's
// bits outside the index, 0 for an empty register, whatever the format.
// warnings are appended to the answer's.
func overlapRegisters(labels []string, regs [][]uint8, p hll.Params, warnings []string) Overlap {
	n := len(regs)
	out := Overlap{Sets: n, Log2m: p.Log2m, Warnings: []string{}}
	m := p.NumRegisters()
	depth := 1
	for depth < n-1 {
		t := latticeSize(n, depth+1)
		if t*m > OverlapWork || t > MaxOverlapUnions {
			break
		}
		depth++
	}
	ests := newOverlapEstimates(regs, p, depth)
	out.Depth, out.Unions, out.Complete = depth, len(ests.masks), depth == n-1
	out.Union = ests.union()
	fig := func(c []float64) Figure { return ests.figure(c, out.Union.Upper) }
	// Exactly k: Σ over |D| ≤ k of (−1)^(k−|D|+1)·C(N−|D|, k−|D|)·V_D,
	// where V_D is the union of every operand not in D.
	maxK := depth
	if out.Complete {
		maxK = n
	}
	below := make([]float64, len(ests.masks)) // Σ_{j<k} exactly_j
	atLeast := func() []float64 {
		c := make([]float64, len(below))
		for i := range c {
			c[i] = b2f(ests.masks[i] == 0) - below[i]
		}
		return c
	}
	for k := 1; k <= maxK; k++ {
		c := ests.coefficients(func(d uint64) float64 {
			j := bits.OnesCount64(d)
			if j > k {
				return 0
			}
			return sign(k-j+1) * binomial(n-j, k-j)
		})
		if k == 1 {
			out.AtLeast = append(out.AtLeast, out.Union) // the same count
		} else {
			out.AtLeast = append(out.AtLeast, fig(atLeast()))
		}
		out.Exactly = append(out.Exactly, fig(c))
		for i := range below {
			below[i] += c[i]
		}
	}
	if !out.Complete {
		out.AtLeast = append(out.AtLeast, fig(atLeast()))
		out.Warnings = append(out.Warnings, fmt.Sprintf(
			"with %d sets and %d registers, counting every k needs more than the %d unions or %d register reads a request may use: users in exactly k sets are counted for k ≤ %d, in at least k for k ≤ %d",
			n, m, MaxOverlapUnions, OverlapWork, depth, depth+1))
	}
	for i := range n {
		c := ests.coefficients(func(d uint64) float64 {
			switch d {
			case 0:
				return 1
			case 1 << i:
				return -1
			}
			return 0
		})
		out.OnlyHere = append(out.OnlyHere, fig(c))
	}
	if out.Complete && n <= MaxOverlapRegions {
		for _, r := range regionMasks(n) {
			// g(C) = Σ_{D ⊆ C} (−1)^(|C|−|D|+1)·V_D.
			c := ests.coefficients(func(d uint64) float64 {
				if d&^r != 0 {
					return 0
				}
				return sign(bits.OnesCount64(r) - bits.OnesCount64(d) + 1)
			})
			out.Regions = append(out.Regions, Region{Members: membersOf(r, labels), Figure: fig(c)})
		}
	}
	if !ests.measured() {
		out.Warnings = append(out.Warnings, fmt.Sprintf("with %d registers the errors cannot be measured from the registers; each is the sum of the unions' errors as if independent, which is wider", m))
	}
	out.Warnings = append(out.Warnings, warnings...)
	return out
}

// latticeSize is the number of subsets of n operands with at most depth
// members: the unions an overlap of that depth builds. It saturates at
// 2^40, far above any bound.
func latticeSize(n, depth int) int {
	t := 0.0
	for j := 0; j <= depth; j++ {
		t += binomial(n, j)
	}
	return int(min(t, 1<<40))
}

// Replicates: the registers are split by the low bits of their index into
// 2^replicateBits groups of at least 2^minReplicateLog2m registers, as
// many bits as that allows up to the maximum; with fewer than
// 2^minReplicates groups the errors are not measured.
const (
	replicateBits     = 5
	minReplicateLog2m = 7
	minReplicates     = 3
)

// overlapEstimates holds, for every subset D of the operands with at most
// depth members (masks), V_D: the estimate of the union of the operands
// not in D, from all registers (card) and from each replicate (reps).
//
// A replicate is the registers whose index has given low bits j: an
// element lands there exactly when its hash's low bits are j, and the
// register keeps the value it would have in a sketch of those elements
// alone with the index's other bits as its index. So replicate j is an
// HLL sketch, with 1/B of the registers, of the 1/B of the users whose
// hashes end in j; the B replicates are independent samples, and a count
// computed on each estimates 1/B of the count. The spread of the B values
// measures the count's error, whatever the unions and their signs.
type overlapEstimates struct {
	p     hll.Params
	masks []uint64
	card  []float64
	reps  [][]float64 // reps[j][i]: V_{masks[i]} on replicate j
	// z is how many errors the bounds lie from the estimate: Student's
	// t quantile for 99.73% (as ±3 sigma of a normal error) with B − 1
	// degrees of freedom, since the error itself is estimated from B
	// replicates; 3 when it is not measured.
	z float64
}

// studentT997 is Student's t quantile for a two-sided 99.73% interval
// (±3 sigma of a normal) with B − 1 degrees of freedom, by replicates B
// (computed by numerical integration of the t density).
var studentT997 = map[int]float64{8: 4.53, 16: 3.586, 32: 3.261}

// roundingFloor is the relative size below which a signed sum of unions
// is rounding, not users (overlapEstimates.figure): above 4,096 terms
// times float64's epsilon (2.2e-16), the worst case of their sum.
const roundingFloor = 1e-12

// newOverlapEstimates estimates the lattice of unions of regs at p.
func newOverlapEstimates(regs [][]uint8, p hll.Params, depth int) *overlapEstimates {
	e := &overlapEstimates{p: p, z: envelopeZ}
	e.masks, e.card = unionLattice(regs, p, depth, true)
	b := min(replicateBits, p.Log2m-minReplicateLog2m)
	if b < minReplicates {
		return e
	}
	e.z = studentT997[1<<b]
	reps := 1 << b
	rp := p
	rp.Log2m -= b
	sub := make([][]uint8, len(regs))
	for i := range sub {
		sub[i] = make([]uint8, rp.NumRegisters())
	}
	for j := range reps {
		for i, r := range regs {
			for k := range sub[i] {
				sub[i][k] = r[k<<b|j]
			}
		}
		_, c := unionLattice(sub, rp, depth, false)
		e.reps = append(e.reps, c)
	}
	return e
}

// measured reports whether errors come from replicates.
func (e *overlapEstimates) measured() bool { return e.reps != nil }

// coefficients returns f(D) for every subset D of the lattice.
func (e *overlapEstimates) coefficients(f func(d uint64) float64) []float64 {
	c := make([]float64, len(e.masks))
	for i, d := range e.masks {
		c[i] = f(d)
	}
	return c
}

// floor is the least error a count x of the overlap can have, whatever
// its replicates show: σ·√(|x|·U), U the union of every operand and σ
// HLL's relative error 1.04/√m. The count's users are seen only in the
// registers they hold, about the share |x|/U of them, so it is known no
// better than an estimate from that many registers: relative error
// σ/√(|x|/U). For x = U it is the union's own error σ·U. The replicates
// measure what varies from replicate to replicate; what a count shares
// with all of them (a bias of the estimator at its load, or registers
// that say little about a small count) they do not see, and their spread
// can collapse to a few users around an estimate of many (a region with
// no users counted as 73 ± 1). docs/intersection.md ("The error of a
// count") measures how often the floor decides.
func (e *overlapEstimates) floor(x float64) float64 {
	return e.p.StdError() * math.Sqrt(math.Abs(x)*max(e.card[0], 0))
}

// union is the union of every operand, with HLL's own error.
func (e *overlapEstimates) union() Figure {
	u := e.card[0]
	f := Figure{RawEstimate: u, Estimate: u, Error: e.p.StdError() * u}
	f.Lower = max(0, u-envelopeZ*f.Error)
	f.Upper = u + envelopeZ*f.Error
	f.Verdict, _ = JudgeBounds(f.Estimate, f.Lower, f.Upper, false)
	return f
}

// figure is the count Σ c_D·V_D with its error, bounds and verdict. The
// estimate is clamped to [0, the union's estimate], the upper bound to
// uMax (the union's).
func (e *overlapEstimates) figure(c []float64, uMax float64) Figure {
	// dot is Σ c_D·V_D. Where leaving operands out changes no register
	// the unions are equal and the sum is 0, but summed in floating point
	// it leaves rounding of the order of the terms' magnitude times the
	// machine epsilon times their number (at most 4,096): below
	// roundingFloor of that magnitude, far below one user, it is 0.
	dot := func(v []float64) float64 {
		s, mag := 0.0, 0.0
		for i, ci := range c {
			if ci != 0 {
				s += ci * v[i]
				mag += math.Abs(ci * v[i])
			}
		}
		if math.Abs(s) <= roundingFloor*mag {
			return 0
		}
		return s
	}
	raw := dot(e.card)
	f := Figure{RawEstimate: raw, Estimate: min(max(raw, 0), e.card[0])}
	if e.reps != nil {
		// B independent replicates, each 1/B of the count: the full
		// count's variance is B times their sample variance.
		b := float64(len(e.reps))
		xs := make([]float64, len(e.reps))
		mean := 0.0
		for j, r := range e.reps {
			xs[j] = dot(r)
			mean += xs[j] / b
		}
		ss := 0.0
		for _, x := range xs {
			ss += (x - mean) * (x - mean)
		}
		f.Error = math.Sqrt(b * ss / (b - 1))
	} else {
		// Each union's own error, as if independent: wider.
		sigma, v := e.p.StdError(), 0.0
		for i, ci := range c {
			v += (ci * sigma * e.card[i]) * (ci * sigma * e.card[i])
		}
		f.Error = math.Sqrt(v)
	}
	f.Error = max(f.Error, e.floor(raw))
	f.Lower = max(0, raw-e.z*f.Error)
	f.Upper = min(max(raw+e.z*f.Error, 0), uMax)
	f.Lower, f.Upper = min(f.Lower, f.Estimate), max(f.Upper, f.Estimate)
	f.Verdict, _ = JudgeBounds(f.Estimate, f.Lower, f.Upper, false)
	return f
}

// unionLattice estimates the union of the complement of every subset D
// of at most depth operands, on bare registers at p (hll's MaxRegisters
// and RegisterEstimate: the numbers building the unions would give),
// depth first over the operands left out: the union for
// D = {d1 < … < dj} is the union of the operands before d1 and between
// the ds, grown one operand at a time as the next left-out operand moves
// right, with the union of those after dj (precomputed suffixes). Each
// subset costs about three passes over the registers; the memory is one
// register array per level. Raw-estimator terms have their bias removed
// (debiasedRegisters), as the intersection's terms do, when debias is
// set: replicates measure only the spread, which the correction (a smooth
// function of slope near 1) leaves as it is.
func unionLattice(regs [][]uint8, p hll.Params, depth int, debias bool) ([]uint64, []float64) {
	n := len(regs)
	m := p.NumRegisters()
	suffix := make([][]uint8, n+1)
	for i := n - 1; i >= 0; i-- {
		suffix[i] = slices.Clone(regs[i])
		if suffix[i+1] != nil {
			hll.MaxRegisters(suffix[i], suffix[i+1])
		}
	}
	size := latticeSize(n, depth)
	masks := make([]uint64, 0, size)
	card := make([]float64, 0, size)
	add := func(mask uint64, a, b []uint8) {
		var est float64
		if debias {
			// One pass over the registers for the estimate and its
			// correction.
			var hist [128]int
			hll.RegisterHistogram(&hist, a, b)
			est = debiasedHistogram(p, hll.HistogramEstimate(p, &hist), &hist)
		} else {
			est = sumEstimate(p, a, b)
		}
		masks = append(masks, mask)
		card = append(card, est)
	}
	// level[j] holds the running union of the operands included so far
	// at recursion level j.
	level := make([][]uint8, depth+1)
	// acc is the union of the operands before start that are not left
	// out (nil: none).
	var walk func(start int, mask uint64, left int, acc []uint8)
	walk = func(start int, mask uint64, left int, acc []uint8) {
		switch {
		case acc == nil:
			add(mask, suffix[start], nil)
		case suffix[start] == nil:
			add(mask, acc, nil)
		default:
			add(mask, acc, suffix[start])
		}
		if left == 0 {
			return
		}
		j := depth - left
		run, own := acc, false
		for e := start; e < n; e++ {
			walk(e+1, mask|1<<e, left-1, run)
			if own {
				hll.MaxRegisters(run, regs[e])
				continue
			}
			if level[j] == nil {
				level[j] = make([]uint8, m)
			}
			copy(level[j], regs[e])
			if run != nil {
				hll.MaxRegisters(level[j], run)
			}
			run, own = level[j], true
		}
	}
	walk(0, 0, depth, nil)
	return masks, card
}

// exactOverlap counts the overlap of exact lists of hashes.
func exactOverlap(out *Overlap, labels []string, hs []*hll.Sketch) {
	n := len(hs)
	member := map[uint64]uint64{}
	for i, h := range hs {
		list, _ := h.Explicit()
		for _, x := range list {
			member[x] |= 1 << i
		}
	}
	byMask := map[uint64]int{}
	exactly := make([]int, n+1)
	for _, mask := range member {
		byMask[mask]++
		exactly[bits.OnesCount64(mask)]++
	}
	exact := func(x int) Figure {
		v := float64(x)
		f := Figure{Estimate: v, RawEstimate: v, Lower: v, Upper: v}
		f.Verdict, _ = JudgeBounds(v, v, v, true)
		return f
	}
	out.Complete, out.Depth = true, n-1
	out.Union = exact(len(member))
	atLeast := len(member)
	for k := 1; k <= n; k++ {
		out.Exactly = append(out.Exactly, exact(exactly[k]))
		out.AtLeast = append(out.AtLeast, exact(atLeast))
		atLeast -= exactly[k]
	}
	for i := range n {
		out.OnlyHere = append(out.OnlyHere, exact(byMask[1<<i]))
	}
	if n <= MaxOverlapRegions {
		for _, r := range regionMasks(n) {
			out.Regions = append(out.Regions, Region{Members: membersOf(r, labels), Figure: exact(byMask[r])})
		}
	}
}

// regionMasks lists the non-empty subsets of n operands by size, then in
// operand order.
func regionMasks(n int) []uint64 {
	out := make([]uint64, 0, 1<<n-1)
	for r := uint64(1); r < 1<<n; r++ {
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b uint64) int {
		if d := bits.OnesCount64(a) - bits.OnesCount64(b); d != 0 {
			return d
		}
		// Within a size, input order: the lowest differing operand first.
		low := a ^ b
		if a&(low&-low) != 0 {
			return -1
		}
		return 1
	})
	return out
}

// membersOf names the operands in mask.
func membersOf(mask uint64, labels []string) []string {
	var out []string
	for i, l := range labels {
		if mask&(1<<i) != 0 {
			out = append(out, l)
		}
	}
	return out
}

// binomial is C(n, k) as a float64 (exact up to 2^53).
func binomial(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	k = min(k, n-k)
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return math.Round(r)
}

// sign is (−1)^k.
func sign(k int) float64 {
	if k%2 == 0 {
		return 1
	}
	return -1
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// inversePow2 is 2^-v for every register value.
var inversePow2 = func() (t [128]float64) {
	for v := range t {
		t[v] = math.Ldexp(1, -v)
	}
	return t
}()

// sumEstimate is hll.RegisterEstimate(p, a, b) for small register arrays
// (a replicate's): one pass summing 2^-max(a[i], b[i]) by table, with no
// histogram to clear. The sum may differ from the histogram's in the last
// bits; a replicate only measures spread.
func sumEstimate(p hll.Params, a, b []uint8) float64 {
	sum, zeros := 0.0, 0
	if b == nil {
		b = a
	}
	b = b[:len(a)]
	for i, v := range a {
		w := max(v, b[i]) & 127
		sum += inversePow2[w]
		if w == 0 {
			zeros++
		}
	}
	return hll.SumEstimate(p, sum, zeros)
}
