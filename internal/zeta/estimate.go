package zeta

import (
	"math"

	"github.com/sketchd/sketchd/internal/hllbias"
)

// Estimate is the cardinality estimate, rounded as ZetaSketch's
// longResult and BigQuery's HLL_COUNT.EXTRACT return it:
//
//   - sparse: linear counting over the 2^sp sparse buckets,
//     round(2^sp·ln(2^sp/(2^sp − values))), exactly ZetaSketch's;
//   - normal, with empty registers and the linear count h = m·ln(m/V) at
//     most the HLL++ paper's threshold for p (5m/2 above 18): round(h),
//     exactly ZetaSketch's;
//   - otherwise the raw estimate E = α·m²/Σ2^-register (α as ZetaSketch
//     takes it: 0.7213/(1+1.079/m) at these precisions; the sum in
//     register order, as ZetaSketch adds it), less its simulated bias
//     (package hllbias) while E is within that table (p ≤ 18 and E up to
//     about 5m): close to ZetaSketch's, whose own table differs
//     (docs/formats.md gives by how much); above, round(E), exactly
//     ZetaSketch's.
func (s *Sketch) Estimate() int64 {
	e, _ := s.Describe()
	return e
}

// Describe returns the estimate and its relative standard error:
// linear counting's (Whang et al.: √(m(e^t − t − 1))/n at t = n/m, with m
// the sparse or normal bucket count) while the estimate is a linear
// count, else HyperLogLog's 1.04/√(2^p); 0 for an empty sketch.
func (s *Sketch) Describe() (estimate int64, stdError float64) {
	s.Compact()
	if !s.normal {
		if len(s.sparse) == 0 {
			return 0, 0
		}
		n := math.Round(linearCount(1<<s.sp, (1<<s.sp)-len(s.sparse)))
		return int64(n), lcError(1<<s.sp, n)
	}
	if s.data == nil {
		return 0, 0
	}
	e, lc := s.estimate()
	n := math.Round(e)
	switch {
	case n == 0:
		return 0, 0
	case lc:
		return int64(n), lcError(1<<s.p, n)
	}
	return int64(n), 1.04 / math.Sqrt(float64(int(1)<<s.p))
}

// inversePowers[r] is 2^-r, what a register of value r adds to the
// harmonic sum.
var inversePowers = func() (t [66]float64) {
	for r := range t {
		t[r] = 1 / float64(uint64(1)<<r)
	}
	return t
}()

// estimate is the normal estimate before rounding, and whether it is the
// linear count.
func (s *Sketch) estimate() (float64, bool) {
	zeros, sum := 0, 0.0
	for _, r := range s.data {
		if r == 0 {
			zeros++
		}
		sum += inversePowers[r]
	}
	m := 1 << s.p
	if zeros > 0 {
		if h := linearCount(m, zeros); h <= linearCountingThreshold(s.p) {
			return h, true
		}
	}
	e := alpha(s.p) * float64(m) * float64(m) / sum
	b, _ := hllbias.BiasKNN(s.p, alpha(s.p), e)
	return e - b, false
}

// StdError is Describe's relative standard error.
func (s *Sketch) StdError() float64 {
	_, se := s.Describe()
	return se
}

func lcError(m int, n float64) float64 {
	t := n / float64(m)
	return math.Sqrt(float64(m)*(math.Exp(t)-t-1)) / n
}

func linearCount(m, zeros int) float64 {
	return float64(m) * math.Log(float64(m)/float64(zeros))
}

// alpha is HyperLogLog's constant for 2^p registers as ZetaSketch
// takes it (p is at least 10 here).
func alpha(p int) float64 { return 0.7213 / (1 + 1.079/float64(int(1)<<p)) }

// lcThresholds are the cardinalities up to which HLL++ prefers linear
// counting, for precisions 4..18: the thresholds published in the HLL++
// paper (Heule, Nunkesser and Hall 2013, appendix), which ZetaSketch
// uses.
var lcThresholds = [...]float64{10, 20, 40, 80, 220, 400, 900, 1800, 3100, 6500, 11500, 20000, 50000, 120000, 350000}

// linearCountingThreshold is the threshold for p: the paper's, or 5m/2
// (the original HyperLogLog's) above 18, as ZetaSketch falls back to.
func linearCountingThreshold(p int) float64 {
	if p >= 4 && p <= 18 {
		return lcThresholds[p-4]
	}
	return float64(5 * (int(1) << p) / 2)
}
