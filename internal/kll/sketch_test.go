package kll

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// trueRank is the fraction of sorted values at most x.
func trueRank(sorted []float64, x float64) float64 {
	return float64(sort.Search(len(sorted), func(i int) bool { return sorted[i] > x })) / float64(len(sorted))
}

// rankDistance is how far the ranks of value x (all positions it holds in
// sorted) lie from rank r: 0 when r falls among them.
func rankDistance(sorted []float64, x, r float64) float64 {
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
	t.Parallel()
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
