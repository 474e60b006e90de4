package cms

import (
	"errors"
	"fmt"
	"math"

	"github.com/sketchd/sketchd/internal/murmur"
)

// Dyadic levels (Cormode and Muthukrishnan). A sketch with DomainBits B
// counts integer values v in [0, 2^B). Level j (0 ≤ j < B) counts v's
// prefix v >> j: level 0 is the sketch's own counters (the values
// themselves, as any Count-Min counts ids), level j a sketch of the 2^(B−j)
// dyadic intervals [k·2^j, (k+1)·2^j). A level whose 2^(B−j) intervals
// fit in width·depth counters keeps them exactly, one counter each; the
// others are Count-Min rows hashing the prefix with seed j. Level B, the
// whole domain, is N.
//
// A range [lo, hi] is the sum of at most 2B dyadic intervals, at most two
// per level; each hashed one overcounts by at most ε·N with probability
// at least 1−δ, each exact one not at all. So a range estimate is never
// below the true count, and with probability at least 1 − h·δ at most
// h·ε·N above it, h being the hashed intervals it summed (union bound).
//
// A quantile walks down from level B: at each level it takes the left
// child if its count reaches the rank still sought, and otherwise
// subtracts it and takes the right one (binary search over prefix
// ranges). Every hashed level's overcount moves the answer's rank by at
// most ε·N, so the value found has a rank within L·ε·N of q·N, L being
// the hashed levels, with probability at least 1 − L·δ.

var errTextRanged = fmt.Errorf("a Count-Min over a value domain counts integer values, not texts: %w", ErrItem)

// errNotRanged is returned by range queries on a sketch without levels.
var errNotRanged = errors.New("cms: the sketch has no value domain (DomainBits 0): range queries need one")

// levelSize is the number of counters level j (1 ≤ j < DomainBits)
// keeps: 2^(B−j) exact ones when that fits in width·depth, else
// width·depth hashed ones.
func (p Params) levelSize(j int) int {
	if exactAt(p.DomainBits, j, p.Width*p.Depth) {
		return 1 << (p.DomainBits - j)
	}
	return p.Width * p.Depth
}

// exactLevel reports whether level j keeps exact counters.
func (s *Sketch) exactLevel(j int) bool { return exactAt(s.bits, j, s.width*s.depth) }

// exactAt reports whether level j of a domain of bits bits keeps exact
// counters: its 2^(bits−j) values fit in cells counters.
func exactAt(bits, j, cells int) bool {
	shift := bits - j
	return shift < 62 && 1<<shift <= cells
}

// checkValue refuses, for a ranged sketch, a value outside its domain.
func (s *Sketch) checkValue(v int64) error {
	if s.bits > 0 && (v < 0 || uint64(v)>>s.bits != 0) {
		return fmt.Errorf("value %d outside the domain [0, 2^%d): %w", v, s.bits, ErrItem)
	}
	return nil
}

// checkID is ID.check plus, for a ranged sketch, its domain: integer
// values in [0, 2^DomainBits).
func (s *Sketch) checkID(id ID) error {
	if s.bits > 0 {
		if id.isText {
			return errTextRanged
		}
		return s.checkValue(id.num)
	}
	return id.check()
}

// CheckID reports whether id may be added to s: a valid text id (see
// ID.Validate), or for a sketch with a value domain an integer in it.
// The error wraps ErrItem.
func (s *Sketch) CheckID(id ID) error {
	if err := s.checkID(id); err != nil {
		return fmt.Errorf("cms: %w", err)
	}
	return nil
}

// addUpper adds count to v's interval at every level above 0.
func (s *Sketch) addUpper(v int64, count uint64) {
	for j := 1; j < s.bits; j++ {
		key := uint64(v) >> j
		l := s.upper[j-1]
		if s.exactLevel(j) {
			l[key] += count
			continue
		}
		h1, h2 := murmur.Int64(int64(key), uint32(j))
		s.updateRows(l, h1, h2, count)
	}
}

// levelEstimate is the count of interval key at level j, and whether it
// is exact.
func (s *Sketch) levelEstimate(j int, key uint64) (uint64, bool) {
	switch {
	case j == s.bits:
		return s.n, true
	case j == 0:
		return s.estimate(murmur.Int64(int64(key), 0)), false
	case s.exactLevel(j):
		return s.upper[j-1][key], true
	}
	h1, h2 := murmur.Int64(int64(key), uint32(j))
	return s.estimateRows(s.upper[j-1], h1, h2), false
}

// DomainBits returns the value domain's size in bits; 0 for a sketch
// without range queries.
func (s *Sketch) DomainBits() int { return s.bits }

// RangeEstimate is the estimated count of the values in a range.
type RangeEstimate struct {
	// Estimate is never below the true count.
	Estimate uint64
	// ErrorBound is h·ε·N: with probability at least Confidence the
	// estimate exceeds the true count by at most this.
	ErrorBound float64
	// Confidence is 1 − h·δ (at least 0).
	Confidence float64
	// Intervals is the number of dyadic intervals summed; Hashed (h)
	// those read from hashed levels.
	Intervals, Hashed int
}

// Range estimates how many of the values added lie in [lo, hi], both
// within the domain and lo ≤ hi (ErrParams otherwise; errNotRanged for a
// sketch without a domain).
func (s *Sketch) Range(lo, hi uint64) (RangeEstimate, error) {
	if s.bits == 0 {
		return RangeEstimate{}, errNotRanged
	}
	if hi>>s.bits != 0 || lo > hi {
		return RangeEstimate{}, fmt.Errorf("cms: range [%d, %d] not within [0, 2^%d) or reversed: %w", lo, hi, s.bits, ErrParams)
	}
	var out RangeEstimate
	add := func(j int, key uint64) {
		c, exact := s.levelEstimate(j, key)
		out.Estimate = min(s.n, out.Estimate+c)
		out.Intervals++
		if !exact {
			out.Hashed++
		}
	}
	l, r := lo, hi+1 // [l, r) at level j
	for j := 0; l < r; j++ {
		if l&1 == 1 {
			add(j, l)
			l++
		}
		if r&1 == 1 {
			r--
			add(j, r)
		}
		l, r = l>>1, r>>1
	}
	out.ErrorBound = float64(out.Hashed) * s.Epsilon() * float64(s.n)
	out.Confidence = math.Max(0, 1-float64(out.Hashed)*s.Delta())
	return out, nil
}

// QuantileEstimate is a value whose rank approximates a fraction q of N.
type QuantileEstimate struct {
	Q     float64
	Value uint64
	// RankError is L·ε, L the hashed levels: with probability at least
	// Confidence (1 − L·δ) the value's rank is within RankError·N of q·N.
	RankError, Confidence float64
}

// Quantile finds the value of rank ⌈q·N⌉ (at least 1) by binary search
// over prefix ranges. q must be in [0, 1] (ErrParams); ok is false for an
// empty sketch.
func (s *Sketch) Quantile(q float64) (est QuantileEstimate, ok bool, err error) {
	if s.bits == 0 {
		return est, false, errNotRanged
	}
	if !(q >= 0 && q <= 1) {
		return est, false, fmt.Errorf("cms: quantile %v not in [0, 1]: %w", q, ErrParams)
	}
	est.Q = q
	hashed := 0
	for j := 0; j < s.bits; j++ {
		if j == 0 || !s.exactLevel(j) {
			hashed++
		}
	}
	est.RankError = float64(hashed) * s.Epsilon()
	est.Confidence = math.Max(0, 1-float64(hashed)*s.Delta())
	if s.n == 0 {
		return est, false, nil
	}
	target := max(1, uint64(math.Ceil(q*float64(s.n))))
	key := uint64(0) // at level j+1
	for j := s.bits - 1; j >= 0; j-- {
		left := key << 1
		if c, _ := s.levelEstimate(j, left); c >= target {
			key = left
		} else {
			target -= c
			key = left | 1
		}
	}
	est.Value = key
	return est, true, nil
}
