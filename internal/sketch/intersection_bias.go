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

// debiasMaxLoad: beyond this load (raw estimate over m) the raw
// estimator's bias is below 0.05% and the term is left alone.
const debiasMaxLoad = 16

// debiasMinLog2m: the Poisson correction assumes many registers; smaller
// sketches are left alone.
const debiasMinLog2m = 7

// debiased returns the cardinality of a register sketch s whose
// postgresql-hll estimate is est, with the raw estimator's bias removed.
// buf is scratch space for the registers; the grown buffer is returned.
func debiased(s *hll.Sketch, est float64, buf []uint8) (float64, []uint8) {
	switch s.Representation() {
	case hll.Sparse, hll.Full:
	default:
		return est, buf
	}
	p := s.Params()
	if !inDebiasBand(p, est) {
		return est, buf
	}
	buf = s.Registers(buf)
	return debiasedRegisters(p, est, buf, nil), buf
}

// inDebiasBand reports whether an estimate may carry the raw estimator's
// bias. Below 2m linear counting is always the branch taken (the raw
// estimate would be above 2.5m only with a 25% overshoot).
func inDebiasBand(p hll.Params, est float64) bool {
	m := float64(p.NumRegisters())
	return p.Log2m >= debiasMinLog2m && est <= debiasMaxLoad*m && est >= 2*m
}

// debiasedRegisters is debiased for the registers max(a[i], b[i]) (b nil:
// a alone) of a sketch at p whose postgresql-hll estimate is est.
func debiasedRegisters(p hll.Params, est float64, a, b []uint8) float64 {
	if !inDebiasBand(p, est) {
		return est
	}
	m := float64(p.NumRegisters())
	var hist [256]int
	if b == nil {
		for _, v := range a {
			hist[v]++
		}
	} else {
		b = b[:len(a)]
		for i, v := range a {
			hist[max(v, b[i])]++
		}
	}
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
	load := raw / m
	if load > debiasMaxLoad || raw != est {
		// Negligible bias, or the large-range correction was applied.
		return est
	}
	// Find the load L whose expected Σ2^-M/m equals alpha/load, i.e.
	// whose expected raw estimate is the observed one; E[2^-K] falls as L
	// grows, so bisect.
	top := min(1<<p.Regwidth-1, 64-p.Log2m)
	target := alpha / load
	lo, hi := load/2, load*2
	for range 60 {
		mid := (lo + hi) / 2
		if meanInvPow2(mid, top) > target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return m * (lo + hi) / 2
}

// meanInvPow2 returns E[2^-K] for one register under the Poisson model
// with load L (elements per register) and values capped at top:
// P(K <= k) = exp(-L·2^-k) below the cap.
func meanInvPow2(load float64, top int) float64 {
	e := math.Exp(-load) // k = 0
	prev := e
	for k := 1; k < top; k++ {
		cdf := math.Exp(-load * math.Ldexp(1, -k))
		e += math.Ldexp(cdf-prev, -k)
		prev = cdf
	}
	return e + math.Ldexp(1-prev, -top)
}
