package kll

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// trueRank is the fraction of sorted values at most x.
func trueRank[T Item](sorted []T, x T) float64 {
	return float64(sort.Search(len(sorted), func(i int) bool { return sorted[i] > x })) / float64(len(sorted))
}

// rankDistance is how far the ranks of value x (all positions it holds in
// sorted) lie from rank r: 0 when r falls among them.
func rankDistance[T Item](sorted []T, x T, r float64) float64 {
	n := float64(len(sorted))
	lo := float64(sort.Search(len(sorted), func(i int) bool { return sorted[i] >= x })) / n
	hi := trueRank(sorted, x)
	switch {
	case r < lo:
		return lo - r
	case r > hi:
		return r - hi
	}
	return 0
}

// TestQuantilesWithinRankError adds a million simulated latencies and
// checks quantiles, ranks and PMF masses against the truth: each within
// the sketch's stated normalized rank error.
func TestQuantilesWithinRankError(t *testing.T) {
	for _, k := range []int{50, 200, 800} {
		s, err := New[float64](k)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(uint64(k), 7))
		vals := make([]float64, 1_000_000)
		for i := range vals {
			vals[i] = math.Exp(3 + 0.8*r.NormFloat64())
			s.Update(vals[i])
		}
		slices.Sort(vals)
		if s.N() != uint64(len(vals)) || s.Min() != vals[0] || s.Max() != vals[len(vals)-1] {
			t.Fatalf("k=%d: n %d min %v max %v", k, s.N(), s.Min(), s.Max())
		}
		eps, epsPMF := s.NormalizedRankError(false), s.NormalizedRankError(true)
		v := s.View()
		worstQ, worstR := 0.0, 0.0
		for i := 0; i <= 1000; i++ {
			q := float64(i) / 1000
			x, err := v.Quantile(q, true)
			if err != nil {
				t.Fatal(err)
			}
			worstQ = max(worstQ, rankDistance(vals, x, q))
			probe := vals[r.IntN(len(vals))]
			got, _ := v.Rank(probe, true)
			worstR = max(worstR, math.Abs(got-trueRank(vals, probe)))
		}
		splits := []float64{5, 10, 20, 40, 80}
		pmf, err := v.PMF(splits, true)
		if err != nil {
			t.Fatal(err)
		}
		worstP, prev := 0.0, 0.0
		for i, x := range append(splits, math.Inf(1)) {
			cur := trueRank(vals, x)
			worstP = max(worstP, math.Abs(pmf[i]-(cur-prev)))
			prev = cur
		}
		t.Logf("k=%d: %d retained; worst quantile rank error %.5f, rank %.5f, pmf %.5f; stated %.5f and %.5f", k, s.Retained(), worstQ, worstR, worstP, eps, epsPMF)
		if worstQ > eps || worstR > eps || worstP > epsPMF {
			t.Errorf("k=%d: errors %v %v %v above the stated %v (pmf %v)", k, worstQ, worstR, worstP, eps, epsPMF)
		}
		if q0, _ := v.Quantile(0, true); q0 != s.Min() {
			t.Errorf("k=%d: quantile 0 = %v, min %v", k, q0, s.Min())
		}
		if q1, _ := v.Quantile(1, true); q1 != s.Max() {
			t.Errorf("k=%d: quantile 1 = %v, max %v", k, q1, s.Max())
		}
	}
}

// TestLongsOverTheWholeRange: longs drawn from the whole int64 range,
// -2^63, 2^63-1 and 2^53+1 among them, against the truth compared as
// int64s: quantiles, ranks and CDF within the rank error, the ends
// exactly, and 2^53 told from 2^53+1.
func TestLongsOverTheWholeRange(t *testing.T) {
	s, _ := New[int64](200)
	r := rand.New(rand.NewPCG(53, 63))
	vals := make([]int64, 300_000)
	for i := range vals {
		vals[i] = int64(r.Uint64())
	}
	copy(vals[1000:], []int64{math.MinInt64, math.MaxInt64, 1<<53 + 1, 1<<53 + 1, 1<<53 + 1})
	for _, v := range vals {
		s.Update(v)
	}
	slices.Sort(vals)
	if s.Min() != math.MinInt64 || s.Max() != math.MaxInt64 {
		t.Fatalf("min %d max %d", s.Min(), s.Max())
	}
	eps := s.NormalizedRankError(false)
	v := s.View()
	worstQ, worstR := 0.0, 0.0
	for i := 0; i <= 1000; i++ {
		q := float64(i) / 1000
		x, _ := v.Quantile(q, true)
		worstQ = max(worstQ, rankDistance(vals, x, q))
		probe := int64(r.Uint64())
		got, _ := v.Rank(probe, true)
		worstR = max(worstR, math.Abs(got-trueRank(vals, probe)))
	}
	if worstQ > eps || worstR > eps {
		t.Errorf("worst quantile rank error %v, rank %v; stated %v", worstQ, worstR, eps)
	}
	if q0, _ := v.Quantile(0, true); q0 != math.MinInt64 {
		t.Errorf("quantile 0 = %d", q0)
	}
	if q1, _ := v.Quantile(1, true); q1 != math.MaxInt64 {
		t.Errorf("quantile 1 = %d", q1)
	}
	if r, _ := v.Rank(math.MaxInt64, true); r != 1 {
		t.Errorf("rank of 2^63-1 = %v, want 1", r)
	}
	if r, _ := v.Rank(math.MinInt64, false); r != 0 {
		t.Errorf("exclusive rank of -2^63 = %v, want 0", r)
	}
	cdf, err := v.CDF([]int64{math.MinInt64, 1 << 53, 1<<53 + 1, math.MaxInt64 - 1, math.MaxInt64}, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range []int64{math.MinInt64, 1 << 53, 1<<53 + 1, math.MaxInt64 - 1, math.MaxInt64} {
		if d := math.Abs(cdf[i] - trueRank(vals, x)); d > eps {
			t.Errorf("cdf at %d = %v, truth %v", x, cdf[i], trueRank(vals, x))
		}
	}
	if cdf[4] != 1 || cdf[5] != 1 {
		t.Errorf("cdf at 2^63-1 and past it = %v, %v; want 1, 1", cdf[4], cdf[5])
	}

	// Exact mode: 2^53 and 2^53+1 are two values.
	e, _ := New[int64](200)
	e.Update(1<<53 + 1)
	ev := e.View()
	if q, _ := ev.Quantile(0.5, true); q != 1<<53+1 {
		t.Errorf("median of {2^53+1} = %d", q)
	}
	if r, _ := ev.Rank(1<<53, true); r != 0 {
		t.Errorf("rank of 2^53 in {2^53+1} = %v, want 0", r)
	}
}
