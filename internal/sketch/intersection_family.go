package sketch

import (
	"fmt"
	"math/bits"
)

// IntersectFamily estimates the intersection of 2 to 8 sketches of one of
// the HLL family's other formats (ds_hll, cpc, zeta_hll, airlift_hll) by inclusion–exclusion over
// the unions of every subset, each computed by the kind's own union, with
// Intersect's envelope, bounds, verdict and warnings. The error model:
// each term's error is its relative standard error times its size, the
// relative standard error being what the kind's one-standard-deviation
// bounds imply for that union (Info.StdError: DataSketches' composite
// estimator for an HLL union, ICON for a CPC union; for a zeta_hll union
// or an airlift_hll union linear counting's error while its estimate is a
// linear count, else 1.04/√2^p); Δ = √(Σ (σ_t·|t|)²).
// The practical cutoffs are those for the union's 2^lg_k registers (for
// CPC, which is more accurate at the same K, they are conservative).
//
// The MLE needs postgresql-hll registers: asking for it is Invalid
// (ErrMethod). A kind outside the family is a Conflict; sketches of
// another count Invalid (ErrSketchCount). Sketches of different lg_k are
// compared at the smallest, as their unions are.
func IntersectFamily(names []string, sks []Sketch, method Method) (Intersection, error) {
	k := len(sks)
	if k < MinIntersect || k > MaxIntersect {
		return Intersection{}, Wrap(Invalid, ErrSketchCount, fmt.Sprintf("an intersection takes %d to %d sketches, got %d", MinIntersect, MaxIntersect, k))
	}
	if len(names) != k {
		return Intersection{}, fmt.Errorf("sketch: intersect: %d names for %d sketches", len(names), k)
	}
	if err := SameKind(names, sks); err != nil {
		return Intersection{}, err
	}
	kind := sks[0].Kind()
	if kind != &dshllKind && kind != &cpcKind && kind != &zetaKind && kind != &airliftKind {
		return Intersection{}, Errorf(Conflict, "intersections by inclusion-exclusion of unions take ds_hll, cpc, zeta_hll or airlift_hll sketches, not %s", kind.Type)
	}
	switch method {
	case "", MethodInclusionExclusion:
	case MethodMLE:
		return Intersection{}, Wrap(Invalid, ErrMethod, fmt.Sprintf("method %q needs hll sketches (postgresql-hll registers); %s sketches take %q", method, kind.Type, MethodInclusionExclusion))
	default:
		return Intersection{}, methodError(string(method))
	}
	ops := make([]operand, k)
	lgKs := map[int]bool{}
	allEmpty := false
	for i, s := range sks {
		var in Info
		s.Describe(&in)
		ops[i] = operand{name: names[i], card: in.Cardinality, sigma: in.StdError, exact: in.Cardinality == 0}
		lgKs[familyLgK(s)] = true
		allEmpty = allEmpty || in.Cardinality == 0
	}
	terms := make([]term, 0, 1<<k-1)
	lgK := 0
	for mask := uint(1); mask < 1<<k; mask++ {
		var members []Sketch
		t := term{mask: mask}
		for j := range k {
			if mask&(1<<j) != 0 {
				members = append(members, sks[j])
				t.names = append(t.names, names[j])
			}
		}
		u, err := kind.Union(members)
		if err != nil {
			return Intersection{}, err
		}
		var in Info
		u.Describe(&in)
		t.card, t.sigma = in.Cardinality, in.StdError
		if mask == 1<<k-1 {
			lgK = familyLgK(u)
		}
		terms = append(terms, t)
	}
	// Terms by size, then in input order, as Intersect reports them.
	sortTerms(terms, k)
	res := Intersection{Log2m: lgK, Method: MethodInclusionExclusion, Warnings: []string{}}
	res.Terms = make([]Term, len(terms))
	for i, t := range terms {
		res.Terms[i] = Term{Sketches: t.names, Cardinality: t.card}
	}
	est := inclusionExclusion(ops, terms)
	exact := allEmpty
	if exact {
		est = exactPair(ops, 0)
	}
	finish(&res, ops, est, exact, len(lgKs) > 1)
	return res, nil
}

// familyLgK is a family sketch's lg_k (its registers are 2^lg_k).
func familyLgK(s Sketch) int {
	switch p := s.Params().(type) {
	case DSHLLParams:
		return p.LgK
	case CPCParams:
		return p.LgK
	case ZetaParams:
		return p.Precision
	case AirliftParams:
		return p.IndexBits
	}
	return 0
}

// sortTerms orders terms by size, then by their members in input order
// (the subsets' masks, read from the lowest bit).
func sortTerms(terms []term, k int) {
	less := func(a, b term) bool {
		if ca, cb := bits.OnesCount(a.mask), bits.OnesCount(b.mask); ca != cb {
			return ca < cb
		}
		for i := range k {
			ia, ib := a.mask&(1<<i) != 0, b.mask&(1<<i) != 0
			if ia != ib {
				return ia
			}
		}
		return false
	}
	for i := 1; i < len(terms); i++ {
		for j := i; j > 0 && less(terms[j], terms[j-1]); j-- {
			terms[j], terms[j-1] = terms[j-1], terms[j]
		}
	}
}
