package sketch

import (
	"math"

	"github.com/sketchd/sketchd/internal/hll"
)

// Inclusion–exclusion subtracts estimates of similar size, so a bias
// shared by them does not cancel: it lands in the difference whole.
// postgresql-hll's estimator (which internal/hll reproduces) switches from
// linear counting to the raw HLL estimate α·m²/Σ2^-M once that exceeds
// 2.5·m, and the raw estimate overshoots there: +2.4% at n = 2.5m, +1% at
// 3m, +0.15% at 4m, nothing left by 5m. The intersection of two sets of
// 2.5m each that share a fifth of their elements then comes out about 25%
// high, many envelopes off for large m. debiased removes that overshoot
// from a raw-estimator term using the expected register distribution under
// the Poisson model (the same model as the joint MLE); terms estimated by
// linear counting, or exactly, are left as they are.
//
// The correction applies at every load the raw estimate is taken at, not
// only where the overshoot is large: past about 5m the raw estimate runs
// 1.2e-4 to 1.4e-4 low (postgresql-hll's α_m is an approximation), and a
// correction that stopped at some load would move the unions on one side
// of it by that much and leave the others, which a signed sum of many
// unions (an overlap's region) turns into users that are not there: at
// 16m and 16,384 registers, 36 of them per union corrected.

// debiasMinLog2m: the Poisson correction assumes many registers; smaller
// sketches are left alone.
const debiasMinLog2m = 7

// debiased returns the cardinality of a sketch s whose postgresql-hll
// estimate is est, with the raw estimator's bias removed when s is in
// register form (from its histogram, which a FULL sketch keeps).
func debiased(s *hll.Sketch, est float64) float64 {
	var hist [128]int
	if !inDebiasBand(s.Params(), est) || !s.Histogram(&hist) {
		return est
	}
	return debiasedHistogram(s.Params(), est, &hist)
}

// inDebiasBand reports whether an estimate may carry the raw estimator's
// bias. Below 2m linear counting is always the branch taken (the raw
// estimate would be above 2.5m only with a 25% overshoot).
func inDebiasBand(p hll.Params, est float64) bool {
	m := float64(p.NumRegisters())
	return p.Log2m >= debiasMinLog2m && est >= 2*m
}

// debiasedRegisters is debiased for the registers max(a[i], b[i]) (b nil:
// a alone) of a sketch at p whose postgresql-hll estimate is est.
func debiasedRegisters(p hll.Params, est float64, a, b []uint8) float64 {
	if !inDebiasBand(p, est) {
		return est
	}
	var hist [128]int
	hll.RegisterHistogram(&hist, a, b)
	return debiasedHistogram(p, est, &hist)
}

// debiasedHistogram is debiased for registers whose histogram is hist
// (hist[v] registers hold v), of a sketch at p whose postgresql-hll
// estimate is est.
func debiasedHistogram(p hll.Params, est float64, hist *[128]int) float64 {
	if !inDebiasBand(p, est) {
		return est
	}
	m := float64(p.NumRegisters())
	sum, zeros := 0.0, hist[0]
	for v, n := range hist {
		if n != 0 {
			sum += math.Ldexp(float64(n), -v)
		}
	}
	alpha := 0.7213 / (1 + 1.079/m)
	raw := alpha * m * m / sum
	if zeros != 0 && raw < 2.5*m {
		return est // linear counting: unbiased
	}
	if raw != est {
		return est // the large-range correction was applied
	}
	return m * poissonLoad(alpha*m/raw, min(1<<p.Regwidth-1, 64-p.Log2m))
}

// poissonLoad returns the load L (elements per register) whose expected
// E[2^-K] under the Poisson model with values capped at top is target:
// the load whose expected raw estimate is the one observed. E[2^-K]
// falls as L grows and is convex, so Newton's method from the observed
// load (within a few percent) converges in a few steps; a step that
// leaves the bracket kept bisects it instead.
func poissonLoad(target float64, top int) float64 {
	l := 0.7213 / target
	lo, hi := l/2, l*2
	for range 100 {
		e, slope := meanInvPow2(l, top)
		if e > target {
			lo = l
		} else {
			hi = l
		}
		next := l - (e-target)/slope
		if !(next > lo && next < hi) {
			next = (lo + hi) / 2
		}
		if math.Abs(next-l) <= 1e-13*l {
			return next
		}
		l = next
	}
	return l
}

// meanInvPow2 returns E[2^-K] for one register under the Poisson model
// with load L (elements per register) and values capped at top:
// P(K <= k) = exp(-L·2^-k) below the cap; and its derivative in L.
func meanInvPow2(load float64, top int) (e, slope float64) {
	// F_k = P(K <= k), dF_k/dL = -2^-k·F_k; E = Σ_k 2^-k·(F_k - F_{k-1})
	// + 2^-top·(1 - F_{top-1}).
	prev := math.Exp(-load) // k = 0
	prevD := -prev
	e, slope = prev, prevD
	for k := 1; k < top; k++ {
		w := math.Ldexp(1, -k)
		cdf := math.Exp(-load * w)
		d := -w * cdf
		e += w * (cdf - prev)
		slope += w * (d - prevD)
		prev, prevD = cdf, d
	}
	w := math.Ldexp(1, -top)
	return e + w*(1-prev), slope - w*prevD
}
