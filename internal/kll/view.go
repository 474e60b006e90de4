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
	// Each level is a sorted run (level 0 once sorted) of items weighing
	// 2^h, the runs adjacent in items: merge neighbours pairwise, as
	// DataSketches does, rather than sort everything.
	type run struct{ at, n int }
	total := s.Retained()
	items, ws := make([]T, 0, total+2), make([]uint64, 0, total+2)
	var runs []run
	for h := range s.numLevels() {
		lv := s.level(h)
		if len(lv) == 0 {
			continue
		}
		at := len(items)
		items = append(items, lv...)
		if h == 0 && !s.level0Sorted {
			slices.Sort(items[at:])
		}
		for range lv {
			ws = append(ws, 1<<h)
		}
		runs = append(runs, run{at, len(lv)})
	}
	bufI, bufW := make([]T, len(items)), make([]uint64, len(items))
	for len(runs) > 1 {
		next := runs[:0]
		for i := 0; i < len(runs); i += 2 {
			if i+1 == len(runs) {
				next = append(next, runs[i])
				continue
			}
			a, b := runs[i], runs[i+1]
			ai, aw := items[a.at:a.at+a.n], ws[a.at:a.at+a.n]
			bi, bw := items[b.at:b.at+b.n], ws[b.at:b.at+b.n]
			oi, ow := bufI[a.at:b.at+b.n], bufW[a.at:b.at+b.n]
			x, y := 0, 0
			for o := range oi {
				if x < len(ai) && (y == len(bi) || ai[x] <= bi[y]) {
					oi[o], ow[o] = ai[x], aw[x]
					x++
				} else {
					oi[o], ow[o] = bi[y], bw[y]
					y++
				}
			}
			copy(items[a.at:], oi)
			copy(ws[a.at:], ow)
			next = append(next, run{a.at, a.n + b.n})
		}
		runs = next
	}
	if len(items) > 0 && s.IsEstimationMode() {
		if s.min < items[0] {
			ws[0]--
			items, ws = slices.Insert(items, 0, s.min), slices.Insert(ws, 0, 1)
		}
		if last := len(items) - 1; s.max > items[last] {
			ws[last]--
			items, ws = append(items, s.max), append(ws, 1)
		}
	}
	var c uint64
	for i, w := range ws {
		c += w
		ws[i] = c
	}
	return &View[T]{items: items, cum: ws, n: s.n}
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
