package kll

import (
	"fmt"
	"math"
)

// Limits on k, as DataSketches has them: the sketch keeps about
// 3k items (at most a few hundred more), so MaxK bounds what any request or
// upload can make the server hold at 65535·3 + 488 items (1.6 MB).
const (
	MinK     = 8
	MaxK     = 65535
	DefaultK = 200
	// m is the smallest level capacity; DataSketches fixes it at 8.
	m = 8
	// maxLevels bounds the levels of a sketch: one more than there are
	// powers of two below 2^64, the most n a sketch counts.
	maxLevels = 61
)

// CheckK reports whether k is a valid KLL parameter (MinK..MaxK); the
// error wraps ErrParams.
func CheckK(k int) error {
	if k < MinK || k > MaxK {
		return fmt.Errorf("kll: k %d not in %d..%d: %w", k, MinK, MaxK, ErrParams)
	}
	return nil
}

// NormalizedRankError is DataSketches' empirical 99th-percentile rank
// error of a sketch whose smallest k is k: single-sided (quantile, rank,
// CDF) 2.296/k^0.9723, double-sided (PMF) 2.446/k^0.9433. At k = 200 they
// are 1.33% and 1.65%.
func NormalizedRankError(k int, pmf bool) float64 {
	if pmf {
		return 2.446 / math.Pow(float64(k), 0.9433)
	}
	return 2.296 / math.Pow(float64(k), 0.9723)
}

// capAux is ⌊k·(2/3)^depth + ½⌋ in integer arithmetic, as DataSketches
// computes level capacities.
func capAux(k uint64, depth int) uint64 {
	if depth > 30 {
		half := depth / 2
		return capAux(capAux(k, half), depth-half)
	}
	pow3 := uint64(1)
	for range depth {
		pow3 *= 3
	}
	twoK := k << 1
	tmp := (twoK << depth) / pow3
	return (tmp + 1) >> 1
}

// levelCapacity is the capacity of level h of a sketch with numLevels
// levels: k·(2/3)^(numLevels−h−1), at least m.
func levelCapacity(k, numLevels, h int) int {
	return int(max(m, capAux(uint64(k), numLevels-h-1)))
}

// totalCapacity is the sum of the level capacities.
func totalCapacity(k, numLevels int) int {
	t := 0
	for h := range numLevels {
		t += levelCapacity(k, numLevels, h)
	}
	return t
}
