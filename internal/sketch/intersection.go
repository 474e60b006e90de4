package sketch

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/sketchd/sketchd/internal/hll"
)

// Method names an intersection estimator.
type Method string

// The intersection estimators. The zero Method asks for DefaultMethod.
const (
	// MethodInclusionExclusion estimates |A∩B| as |A| + |B| - |A∪B| (and
	// its k-set generalisation) from the sketches' own estimates.
	MethodInclusionExclusion Method = "inclusion_exclusion"
	// MethodMLE is O. Ertl's joint maximum-likelihood estimator over the
	// register pairs of two sketches (two sketches only).
	MethodMLE Method = "mle"
)

// DefaultMethod returns the method used when a request names none: the
// joint maximum-likelihood estimator for two sketches, inclusion–exclusion
// for more (the likelihood method is defined for pairs only). The choice
// rests on the simulation in docs/intersection.md: the MLE's median
// relative error is lower than inclusion–exclusion's in most cells and its
// envelope is far narrower at the same coverage.
func DefaultMethod(k int) Method {
	if k == 2 {
		return MethodMLE
	}
	return MethodInclusionExclusion
}

// Limits on the number of sketches in one intersection.
const (
	MinIntersect = 2
	MaxIntersect = 8
)

// Intersection errors. Intersect returns them inside an *Error of kind
// Invalid (a 400 for the HTTP layer) with a client-safe detail; test with
// errors.Is.
var (
	// ErrSketchCount: fewer than MinIntersect or more than MaxIntersect
	// sketches.
	ErrSketchCount = errors.New("wrong number of sketches")
	// ErrMethod: an unknown method, or "mle" with other than two sketches.
	ErrMethod = errors.New("unsupported intersection method")
	// ErrUndefined: a sketch is UNDEFINED (PostgreSQL's NULL hll).
	ErrUndefined = errors.New("undefined sketch")
)

// envelopeZ is how many error envelopes Lower and Upper lie from the
// estimate: ±3Δ, 99.7% for a normal error. The simulation in
// docs/intersection.md chose it. The MLE's Δ is an honest one-sigma error
// (over its reliable answers the 68th, 95th and 99th percentiles of
// |raw - truth|/Δ are 1.01, 1.99 and 2.58), so ±2.5Δ covered 98.7% of
// them; but cells at the edge of the cutoffs, where an answer is flagged
// reliable because its error pushed it over the edge, dipped to 94.9%.
// With ±3Δ the worst such cell is at 97.9%.
const envelopeZ = 3

// spuriousFactor: an estimate within this many envelopes of zero cannot be
// told from an empty intersection (DESIGN.md). Intersect also calls an
// estimate spurious when its Lower bound reaches zero (estimate ≤ 3Δ),
// which contains DESIGN.md's rule: with the MLE's honest one-sigma Δ the
// 1.2Δ rule alone let about one disjoint pair in fifteen pass as
// overlapping.
const spuriousFactor = 1.2

// Bounded is an estimate with its error.
type Bounded struct {
	// Estimate is the point estimate.
	Estimate float64
	// Error is an estimate of the standard deviation of Estimate (one
	// sigma): about two answers in three fall within ±Error of the truth
	// and about 95% within ±2·Error. It is 0 when the value is exact.
	Error float64
	// Lower and Upper are Estimate ∓ z·Error, z as for the intersection's
	// bounds, Lower clipped at 0 (set by Intersect for the pair's extras).
	Lower, Upper float64
}

// bound sets b's bounds z errors either side of its estimate.
func (b *Bounded) bound(z float64) {
	if b == nil {
		return
	}
	b.Lower, b.Upper = max(0, b.Estimate-z*b.Error), b.Estimate+z*b.Error
}

// Term is one union of the inclusion–exclusion sum: the cardinality
// estimate of the union of Sketches. Terms with an odd number of sketches
// are added, those with an even number subtracted.
type Term struct {
	Sketches    []string
	Cardinality float64
}

// Intersection is the estimated size of the intersection of 2 to 8 HLL
// sketches with its error envelope (DESIGN.md, "Intersection and its error
// envelope"). Cardinalities are in distinct elements.
type Intersection struct {
	// Estimate is RawEstimate clamped to [0, smallest set].
	Estimate float64
	// RawEstimate is the estimator's own value, which inclusion–exclusion
	// may put below zero or above the smallest set.
	RawEstimate float64
	// Error is Δ, a one-sigma error of RawEstimate, the estimator's own:
	// for inclusion–exclusion of hll sketches the spread of the same sum
	// on replicates of the registers, never below the floor the union's
	// error sets (termReplicates; with fewer than 1,024 registers, and for
	// the other kinds, the envelope √(Σ (σ_t·|term|)²) with σ_t the
	// union's relative error, 0 for exact EXPLICIT terms); for the joint
	// MLE the square root of the inverse observed Fisher information; for
	// the MLE of an EXPLICIT sketch against registers the likelihood's
	// own one-sigma interval. 0 when the answer is exact.
	Error float64
	// Lower and Upper bound the intersection: RawEstimate ∓ zΔ, z being 3
	// or, for an error measured on B replicates, Student's t quantile for
	// the same 99.73% (3.26 for 32); for the MLE of an EXPLICIT sketch
	// the likelihood-ratio interval at the same level. Clipped to 0 below
	// and, above, to the smallest set's estimate plus 3 times its own
	// standard error (the smallest set's size is itself estimated).
	Lower, Upper float64
	// Spurious is true when Estimate is within 1.2·Δ of zero or Lower
	// reaches zero: the sets may well be disjoint. (For the MLE, Lower is
	// also 0 when a likelihood-ratio test cannot reject disjoint sets.)
	Spurious bool
	// RelativeWidth is (Upper − Lower) / Estimate: 0 when exact, +Inf
	// when the estimate is 0 but the bounds are not.
	RelativeWidth float64
	// Reliable is true when Verdict is VerdictReliable or VerdictExact:
	// the estimate is not spurious, the bounds span at most
	// MaxRelativeWidth of it and, for two sketches, the overlap and
	// cardinality ratio lie inside DESIGN.md's practical cutoffs for the
	// number of registers. Warnings say why not, in plain words.
	Reliable bool
	Warnings []string
	// Verdict is the answer's verdict; VerdictText says it in one or two
	// sentences for people, starting with the verdict ("Reliable. …").
	Verdict     Verdict
	VerdictText string
	// Within names the smallest set when, as far as the errors tell, it
	// lies inside every other: the answer is not spurious, its bounds are
	// as narrow as a reliable answer's, and the estimate reaches the
	// smallest set's estimate less that set's own error (its exact size
	// when exact). The intersection is then that set's count, and
	// VerdictText says so rather than that the sets may not overlap.
	// Same is true when every set lies inside every other so: they hold
	// the same users.
	Within string
	Same   bool
	// anyWidth: every condition of Reliable holds but the width's.
	anyWidth bool
	// Terms are the 2^k-1 unions of inclusion–exclusion (reported for
	// either method), ordered by size then input order. A term estimated
	// by the raw HLL formula (from about 2.5m up) has that
	// formula's known bias removed, so it can differ from the union
	// endpoint's cardinality by up to 2.4%; see intersection_bias.go.
	Terms []Term
	// Overlap is Estimate over the smallest set's estimate;
	// CardinalityRatio the largest set's estimate over the smallest's.
	// Both are 0 when the smallest set is empty.
	Overlap, CardinalityRatio float64
	// Log2m is the register count the sketches were compared at: the
	// smallest of their log2m (larger ones are folded down).
	Log2m int
	// Method is the estimator used.
	Method Method
	// Jaccard (|A∩B|/|A∪B|), ANotB (|A\B|) and BNotA (|B\A|) are set for
	// two sketches only, each with its own one-sigma error and bounds.
	Jaccard, ANotB, BNotA *Bounded
	// union (|A∪B|) and one (|A\B| + |B\A|) are the pair's union and the
	// users in one set only, by the same estimator: an overlap of two
	// sets answers with them (EstimateOverlap).
	union, one *Bounded
	// z is how many errors the bounds lie from the estimate.
	z float64
}

// operand is one input sketch prepared for the estimators.
type operand struct {
	name     string
	sk       *hll.Sketch // folded to the common log2m
	explicit []uint64    // exact hashes when the original is EXPLICIT
	exact    bool        // EXPLICIT or EMPTY: card is exact
	card     float64     // cardinality estimate (exact when exact)
	sigma    float64     // relative standard error of card
}

// newOperand is s as an operand compared at log2m (at most s's): folded
// if need be, with its count.
func newOperand(name string, s *hll.Sketch, log2m int) (operand, error) {
	op := operand{name: name, sk: s}
	if p := s.Params(); p.Log2m != log2m {
		f, err := s.Fold(log2m, p.Regwidth)
		if err != nil {
			return operand{}, fmt.Errorf("sketch: fold %q to log2m %d: %w", name, log2m, err)
		}
		op.sk = f
	}
	switch s.Representation() {
	case hll.Empty:
		op.exact = true
	case hll.Explicit:
		op.explicit, _ = s.Explicit()
		op.exact = true
		op.card = float64(len(op.explicit))
	default:
		op.card = debiased(op.sk, op.sk.Estimate())
		op.sigma = op.sk.StdError()
	}
	return op, nil
}

// IntersectCeiling returns a number no Estimate of Intersect([a, b], any
// method) exceeds: the smaller of the two counts Intersect compares
// them by, computed as Intersect computes them (the estimate is clamped
// to it). It costs a count of each sketch, not an intersection, so a
// rank can pass over a candidate that cannot reach its top K. ok is
// false where Intersect would refuse the pair.
func IntersectCeiling(a, b *hll.Sketch) (ceiling float64, ok bool) {
	if a == nil || b == nil || a.Representation() == hll.Undefined || b.Representation() == hll.Undefined {
		return 0, false
	}
	log2m := min(a.Params().Log2m, b.Params().Log2m)
	oa, err := newOperand("", a, log2m)
	if err != nil {
		return 0, false
	}
	ob, err := newOperand("", b, log2m)
	if err != nil {
		return 0, false
	}
	return min(oa.card, ob.card), true
}

// Intersect estimates the size of the intersection of sketches (2 to 8,
// named by names in the same order) with method, "" meaning
// DefaultMethod(len(sketches)). Sketches of different log2m are folded to
// the smallest first. EMPTY operands and all-EXPLICIT operand sets give
// exact answers (Error 0) whatever the method; with "mle", one EXPLICIT
// sketch against a register sketch is estimated by testing each of its
// hashes against the other's registers (see docs/intersection.md).
//
// It fails with an *Error of kind Invalid wrapping ErrSketchCount,
// ErrMethod or ErrUndefined; names of another length than sketches, a nil
// sketch or a failed fold are internal errors.
func Intersect(names []string, sketches []*hll.Sketch, method Method) (Intersection, error) {
	k := len(sketches)
	if k < MinIntersect || k > MaxIntersect {
		return Intersection{}, Wrap(Invalid, ErrSketchCount, fmt.Sprintf("an intersection takes %d to %d sketches, got %d", MinIntersect, MaxIntersect, k))
	}
	if len(names) != k {
		return Intersection{}, fmt.Errorf("sketch: intersect: %d names for %d sketches", len(names), k)
	}
	if method == "" {
		method = DefaultMethod(k)
	}
	switch method {
	case MethodInclusionExclusion:
	case MethodMLE:
		if k != 2 {
			return Intersection{}, Wrap(Invalid, ErrMethod, fmt.Sprintf("method %q takes exactly two sketches, got %d", method, k))
		}
	default:
		return Intersection{}, methodError(string(method))
	}
	log2m := hll.MaxLog2m + 1
	for i, s := range sketches {
		if s == nil {
			return Intersection{}, fmt.Errorf("sketch: intersect: sketch %q is nil", names[i])
		}
		if s.Representation() == hll.Undefined {
			return Intersection{}, Wrap(Invalid, ErrUndefined, fmt.Sprintf("sketch %q is undefined and cannot be intersected", names[i]))
		}
		log2m = min(log2m, s.Params().Log2m)
	}
	ops := make([]operand, k)
	folded := false
	for i, s := range sketches {
		op, err := newOperand(names[i], s, log2m)
		if err != nil {
			return Intersection{}, err
		}
		folded = folded || op.sk != s
		ops[i] = op
	}

	// Two FULL sketches by the MLE: one pass over their registers gives
	// the union term and the joint statistic.
	if method == MethodMLE {
		if scan := newPairScan(ops[0], ops[1]); scan != nil {
			defer scan.release()
			return intersectScanned(ops, scan, method, folded), nil
		}
	}
	terms, err := unionTerms(ops)
	if err != nil {
		return Intersection{}, err
	}
	res := Intersection{Log2m: log2m, Method: method, Terms: publicTerms(terms)}

	minOp, _ := smallestLargest(ops)
	var est pairExtras
	exact := false
	switch {
	case minOp.exact && minOp.card == 0:
		// An empty operand: the intersection is exactly empty.
		exact = true
		est = exactPair(ops, 0)
	case allExplicit(ops):
		exact = true
		est = exactPair(ops, float64(exactIntersection(ops)))
	case method == MethodMLE:
		est, err = mlePair(ops[0], ops[1], log2m)
		if err != nil {
			return Intersection{}, err
		}
	default:
		est = inclusionExclusionMeasured(ops, terms, replicatesFor(ops, terms, log2m))
	}
	finish(&res, ops, est, exact, folded)
	return res, nil
}

// intersectScanned is Intersect's answer for two FULL operands by the
// MLE, from the scan of their registers (or a joint table read as one:
// JointPair.Intersect).
func intersectScanned(ops []operand, s *pairScan, method Method, folded bool) Intersection {
	res := Intersection{Log2m: s.p.Log2m, Method: method, Terms: publicTerms(s.terms(ops))}
	finish(&res, ops, s.mle(ops[0], ops[1]), false, folded)
	return res
}

// publicTerms returns the answer's terms of the union terms.
func publicTerms(terms []term) []Term {
	out := make([]Term, len(terms))
	for i, t := range terms {
		out[i] = Term{Sketches: t.names, Cardinality: t.card}
	}
	return out
}

// smallestLargest returns the operands with the smallest and the largest
// cardinality estimate (the first of equals).
func smallestLargest(ops []operand) (minOp, maxOp operand) {
	minOp, maxOp = ops[0], ops[0]
	for _, op := range ops[1:] {
		if op.card < minOp.card {
			minOp = op
		}
		if op.card > maxOp.card {
			maxOp = op
		}
	}
	return minOp, maxOp
}

// finish completes res from an estimator's answer: the clamped estimate,
// the bounds, overlap and ratio, the pair's extras and the verdict. res
// has its terms, Log2m and Method already.
func finish(res *Intersection, ops []operand, est pairExtras, exact, folded bool) {
	minOp, maxOp := smallestLargest(ops)
	z := est.boundsZ()
	res.RawEstimate, res.Error = est.x.Estimate, est.x.Error
	res.Estimate = min(max(res.RawEstimate, 0), minOp.card)
	res.Lower = max(0, res.RawEstimate-z*res.Error)
	res.Upper = min(max(res.RawEstimate+z*res.Error, 0), minOp.card*(1+envelopeZ*minOp.sigma))
	if est.bounded {
		res.Lower, res.Upper = est.lower, min(est.upper, res.Upper)
	}
	if est.zeroPlausible {
		res.Lower = 0
	}
	if exact {
		res.Lower, res.Upper = res.Estimate, res.Estimate
	}
	// The bounds always contain the clamped estimate.
	res.Lower, res.Upper = min(res.Lower, res.Estimate), max(res.Upper, res.Estimate)
	if minOp.card > 0 {
		res.Overlap = res.Estimate / minOp.card
		res.CardinalityRatio = maxOp.card / minOp.card
	}
	res.Spurious = res.Estimate <= spuriousFactor*res.Error || res.Lower <= 0
	res.RelativeWidth = RelativeWidth(res.Estimate, res.Lower, res.Upper)
	if len(ops) == 2 {
		res.Jaccard, res.ANotB, res.BNotA = est.jaccard, est.aNotB, est.bNotA
		res.union, res.one = est.union, est.one
		for _, b := range []*Bounded{res.Jaccard, res.ANotB, res.BNotA, res.union, res.one} {
			b.bound(z)
		}
		res.Jaccard.Upper = min(res.Jaccard.Upper, 1)
	}
	res.z = z
	if within(res, minOp) {
		res.Within = minOp.name
		res.Same = within(res, maxOp)
	}
	judge(res, len(ops), exact, folded, est.undetermined)
}

// within reports whether op, the smallest set of the answer r or another,
// lies inside the others as far as the errors tell: r is not spurious
// (the sets overlap), and its estimate is op's count to within op's own
// error (op's exact size when op is exact). Requiring the estimate
// itself, not its bounds, to reach op's count, and the bounds to be as
// narrow as a reliable answer's (RelativeWidth at most MaxRelativeWidth,
// so "within the error" means within about ±25%), keeps a set half inside
// another, whose likelihood can peak at the whole set when few of its
// users show, from being called within it. Half a user is allowed for
// the rounding of sums of large unions that cancel.
func within(r *Intersection, op operand) bool {
	return !r.Spurious && op.card > 0 && r.Estimate >= op.card*(1-op.sigma)-0.5 && r.RelativeWidth <= MaxRelativeWidth
}

// ParseMethod returns the Method named s; "" gives "" (the default,
// decided by Intersect from the number of sketches). Unknown names fail
// with an *Error of kind Invalid wrapping ErrMethod.
func ParseMethod(s string) (Method, error) {
	switch m := Method(s); m {
	case "", MethodInclusionExclusion, MethodMLE:
		return m, nil
	}
	return "", methodError(s)
}

// methodError reports an unknown method name.
func methodError(s string) error {
	return Wrap(Invalid, ErrMethod, fmt.Sprintf("unknown intersection method %q (want %q or %q)", s, MethodInclusionExclusion, MethodMLE))
}

// pairExtras is what an estimator gives: the intersection with its error
// and, for two sketches, Jaccard and the relative complements, and the
// union and the users in one set only by the same estimator.
type pairExtras struct {
	x                     Bounded
	jaccard, aNotB, bNotA *Bounded
	union, one            *Bounded
	undetermined          bool // the MLE found a ridge, not a point
	// zeroPlausible: a likelihood-ratio test cannot reject an empty
	// intersection at the envelope's level, so Lower is 0.
	zeroPlausible bool
	// z is how many errors the bounds lie from the estimate (0:
	// envelopeZ): Student's t quantile when the error is measured on
	// replicates.
	z float64
	// bounded: the estimator gives the intersection's bounds itself
	// (lower, upper), from its likelihood, rather than ±z errors.
	bounded      bool
	lower, upper float64
}

// boundsZ is how many errors the bounds lie from the estimate.
func (e pairExtras) boundsZ() float64 {
	if e.z == 0 {
		return envelopeZ
	}
	return e.z
}

// term is one union of the inclusion–exclusion sum.
type term struct {
	mask  uint
	names []string
	card  float64
	sigma float64 // relative error of card: 0 when exact
	// hashes are the union's hashes when it is held exactly (sigma 0).
	hashes []uint64
}

// unionTerms estimates the union of every non-empty subset of ops. Each
// union is built from the union of the subset without its last member,
// depth first, so every subset costs one pairwise union rather than
// |subset|-1, and at most k partial unions are alive at once.
func unionTerms(ops []operand) ([]term, error) {
	k := len(ops)
	terms := make([]term, 0, 1<<k-1)
	var walk func(start int, mask uint, acc *hll.Sketch) error
	walk = func(start int, mask uint, acc *hll.Sketch) error {
		for j := start; j < k; j++ {
			m := mask | 1<<j
			var u *hll.Sketch
			t := term{mask: m}
			if acc == nil {
				u = ops[j].sk
				t.card, t.sigma, t.hashes = ops[j].card, ops[j].sigma, ops[j].explicit
			} else {
				var err error
				if u, err = hll.Union(acc, ops[j].sk); err != nil {
					return fmt.Errorf("sketch: union for %q: %w", ops[j].name, err)
				}
				t.card = debiased(u, u.Estimate())
				t.sigma = u.StdError()
				if t.sigma == 0 {
					t.hashes, _ = unionTermExact(u)
				}
			}
			terms = append(terms, t)
			if j+1 < k {
				if err := walk(j+1, m, u); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(0, 0, nil); err != nil {
		return nil, err
	}
	slices.SortFunc(terms, func(a, b term) int {
		if d := onesCount(a.mask) - onesCount(b.mask); d != 0 {
			return d
		}
		// Within a size, input order: compare the member lists.
		for i := range k {
			ia, ib := a.mask&(1<<i) != 0, b.mask&(1<<i) != 0
			if ia != ib {
				if ia {
					return -1
				}
				return 1
			}
		}
		return 0
	})
	for i := range terms {
		for j := range k {
			if terms[i].mask&(1<<j) != 0 {
				terms[i].names = append(terms[i].names, ops[j].name)
			}
		}
	}
	return terms, nil
}

// onesCount is the number of sketches in a subset mask.
func onesCount(mask uint) int {
	n := 0
	for ; mask != 0; mask &= mask - 1 {
		n++
	}
	return n
}

// inclusionExclusion sums the terms with alternating signs and combines
// their errors into the envelope Δ = √(Σ (σ_t·|term|)²).
func inclusionExclusion(ops []operand, terms []term) pairExtras {
	raw, v := 0.0, 0.0
	for _, t := range terms {
		if onesCount(t.mask)%2 == 1 {
			raw += t.card
		} else {
			raw -= t.card
		}
		e := t.sigma * t.card
		v += e * e
	}
	out := pairExtras{x: Bounded{Estimate: raw, Error: math.Sqrt(v)}}
	if len(ops) != 2 {
		return out
	}
	// terms are ordered {A}, {B}, {A,B}.
	a, b, u := terms[0], terms[1], terms[2]
	ea, eb, eu := a.sigma*a.card, b.sigma*b.card, u.sigma*u.card
	out.aNotB = &Bounded{Estimate: min(max(u.card-b.card, 0), a.card), Error: math.Hypot(eu, eb)}
	out.bNotA = &Bounded{Estimate: min(max(u.card-a.card, 0), b.card), Error: math.Hypot(eu, ea)}
	out.jaccard = jaccardOf(min(max(raw, 0), min(a.card, b.card)), out.x.Error, u.card, u.sigma)
	out.union = &Bounded{Estimate: u.card, Error: eu}
	out.one = &Bounded{Estimate: max(2*u.card-a.card-b.card, 0), Error: math.Sqrt(4*eu*eu + ea*ea + eb*eb)}
	return out
}

// jaccardOf returns x/u with the error of a ratio whose numerator has
// error ex and whose denominator has relative error su.
func jaccardOf(x, ex, u, su float64) *Bounded {
	if u <= 0 {
		return &Bounded{}
	}
	j := min(x/u, 1)
	return &Bounded{Estimate: j, Error: math.Hypot(ex/u, j*su)}
}

// allExplicit reports whether every operand is an exact set of hashes.
func allExplicit(ops []operand) bool {
	for _, op := range ops {
		if op.explicit == nil {
			return false
		}
	}
	return true
}

// exactIntersection counts the hashes common to every EXPLICIT operand.
func exactIntersection(ops []operand) int {
	smallest := ops[0].explicit
	for _, op := range ops[1:] {
		if len(op.explicit) < len(smallest) {
			smallest = op.explicit
		}
	}
	sets := make([]map[uint64]struct{}, 0, len(ops))
	for _, op := range ops {
		set := make(map[uint64]struct{}, len(op.explicit))
		for _, h := range op.explicit {
			set[h] = struct{}{}
		}
		sets = append(sets, set)
	}
	n := 0
next:
	for _, h := range smallest {
		for _, set := range sets {
			if _, ok := set[h]; !ok {
				continue next
			}
		}
		n++
	}
	return n
}

// exactPair is the answer for exactly known sets with intersection x.
func exactPair(ops []operand, x float64) pairExtras {
	out := pairExtras{x: Bounded{Estimate: x}}
	if len(ops) == 2 {
		// x is exact; a set's own estimate may not be (an EMPTY set
		// against registers).
		a, b := ops[0].card, ops[1].card
		ea, eb := ops[0].sigma*a, ops[1].sigma*b
		out.aNotB = &Bounded{Estimate: a - x, Error: ea}
		out.bNotA = &Bounded{Estimate: b - x, Error: eb}
		out.jaccard = &Bounded{}
		if u := a + b - x; u > 0 {
			out.jaccard.Estimate = x / u
		}
		out.union = &Bounded{Estimate: a + b - x, Error: math.Hypot(ea, eb)}
		out.one = &Bounded{Estimate: a + b - 2*x, Error: math.Hypot(ea, eb)}
	}
	return out
}
