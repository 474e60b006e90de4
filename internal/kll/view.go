package kll

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// View is a sketch's retained items sorted, with cumulative weights (an
// item of level h weighs 2^h): what every query reads. Like DataSketches'
// Java library (6.x), it includes the sketch's min and max: when the
// smallest retained item is above the min, the min is put first with
// weight 1, taken from that item; the max likewise last. So quantile 0 is
// the min and quantile 1 the max. (The C++ and Python libraries do not
// add them: their answers differ from these only for ranks within 1/n of
// 0 or 1.)
type View[T Item] struct {
	items []T
	cum   []uint64
	n     uint64
}

// View sorts the sketch's items. Building it costs a sort of the retained
// items; a caller answering several questions builds it once.
func (s *Sketch[T]) View() *View[T] {
	type entry struct {
		v T
		w uint64
	}
	es := make([]entry, 0, s.Retained()+2)
	for h := range s.numLevels() {
		for _, v := range s.level(h) {
			es = append(es, entry{v, 1 << h})
		}
	}
	slices.SortStableFunc(es, func(a, b entry) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	if len(es) > 0 && s.IsEstimationMode() {
		if s.min < es[0].v {
			es[0].w--
			es = slices.Insert(es, 0, entry{s.min, 1})
		}
		if last := len(es) - 1; s.max > es[last].v {
			es[last].w--
			es = append(es, entry{s.max, 1})
		}
	}
	v := &View[T]{items: make([]T, len(es)), cum: make([]uint64, len(es)), n: s.n}
	var c uint64
	for i, e := range es {
		c += e.w
		v.items[i], v.cum[i] = e.v, c
	}
	return v
}

// N is the number of values the view describes.
func (v *View[T]) N() uint64 { return v.n }

// naturalRank turns a normalized rank into a weight to search for:
// ⌈rank·n⌉ (inclusive) or ⌊rank·n⌋, the product first rounded to 7
// decimals when n ≤ 10^7 so that 0.3·10 is 3, as the Java library does.
func (v *View[T]) naturalRank(rank float64, inclusive bool) uint64 {
	x := rank * float64(v.n)
	if v.n <= 10_000_000 {
		x = math.Round(x*1e7) / 1e7
	}
	if inclusive {
		return uint64(math.Ceil(x))
	}
	return uint64(math.Floor(x))
}

// Quantile returns the item at normalized rank rank in [0, 1]
// (ErrParams otherwise; ErrEmpty for an empty sketch): with inclusive,
// the smallest item whose cumulative weight reaches ⌈rank·n⌉; without,
// the smallest item whose cumulative weight exceeds ⌊rank·n⌋; the largest
// item when there is none.
func (v *View[T]) Quantile(rank float64, inclusive bool) (T, error) {
	var zero T
	if v.n == 0 {
		return zero, fmt.Errorf("kll: quantile of an empty sketch: %w", ErrEmpty)
	}
	if !(rank >= 0 && rank <= 1) {
		return zero, fmt.Errorf("kll: rank %v not in [0, 1]: %w", rank, ErrParams)
	}
	w := v.naturalRank(rank, inclusive)
	i := sort.Search(len(v.cum), func(i int) bool {
		if inclusive {
			return v.cum[i] >= w
		}
		return v.cum[i] > w
	})
	if i == len(v.cum) {
		i--
	}
	return v.items[i], nil
}

// QuantileBounds returns the items at ranks rank − eps and rank + eps
// (clipped to [0, 1]), inclusive: where the item of rank rank lies with
// the confidence of eps (the sketch's NormalizedRankError).
func (v *View[T]) QuantileBounds(rank, eps float64) (lo, hi T, err error) {
	if lo, err = v.Quantile(max(0, rank-eps), true); err != nil {
		return
	}
	hi, err = v.Quantile(min(1, rank+eps), true)
	return
}

// Rank returns the normalized rank of x: the weight of the items at most
// x (inclusive) or below x, over n. An empty sketch is ErrEmpty.
func (v *View[T]) Rank(x T, inclusive bool) (float64, error) {
	if v.n == 0 {
		return 0, fmt.Errorf("kll: rank in an empty sketch: %w", ErrEmpty)
	}
	i := sort.Search(len(v.items), func(i int) bool {
		if inclusive {
			return v.items[i] > x
		}
		return v.items[i] >= x
	})
	if i == 0 {
		return 0, nil
	}
	return float64(v.cum[i-1]) / float64(v.n), nil
}

// CheckSplits reports whether splits are split points: strictly
// increasing (finite, for doubles). The error wraps ErrParams.
func CheckSplits[T Item](splits []T) error {
	for i, x := range splits {
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("kll: split point %d is not finite: %w", i, ErrParams)
		}
		if i > 0 && !(splits[i-1] < x) {
			return fmt.Errorf("kll: split points must increase strictly; %v follows %v: %w", x, splits[i-1], ErrParams)
		}
	}
	return nil
}

// CDF returns, for m split points, m+1 cumulative ranks: the rank of each
// split point, then 1.
func (v *View[T]) CDF(splits []T, inclusive bool) ([]float64, error) {
	if err := CheckSplits(splits); err != nil {
		return nil, err
	}
	out := make([]float64, len(splits)+1)
	for i, x := range splits {
		r, err := v.Rank(x, inclusive)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	out[len(splits)] = 1
	return out, nil
}

// PMF returns, for m split points, the m+1 masses between them: the CDF's
// differences.
func (v *View[T]) PMF(splits []T, inclusive bool) ([]float64, error) {
	cdf, err := v.CDF(splits, inclusive)
	if err != nil {
		return nil, err
	}
	for i := len(cdf) - 1; i > 0; i-- {
		cdf[i] -= cdf[i-1]
	}
	return cdf, nil
}
