package hll

import "math"

// Estimate returns the cardinality estimate: 0 for EMPTY, the exact count
// for EXPLICIT, and for registers postgresql-hll's multiset_card (HLL
// estimator with its small-range linear counting and large-range
// correction), within ~1e-9 relative of hll_cardinality for the same bytes.
//
// Two documented departures, both where PostgreSQL has no usable number:
//   - regwidth >= 6: PostgreSQL computes 2^L with a 64-bit shift that
//     wraps (L = 2^regwidth - 2 + log2m >= 64), so beyond the linear
//     counting range hll_cardinality is NaN. Here 2^L is computed in
//     floating point (as java-hll does since 1.5.2), giving a finite value.
//   - a raw estimate at or beyond 2^L (registers saturated, which only
//     small regwidths reach) makes the large-range formula NaN in every
//     implementation. Here it returns 2^L·ln(m), the large-range estimate
//     at the point where one register in m is still unsaturated: the
//     registers cannot tell larger cardinalities apart.
//
// UNDEFINED sketches (SQL NULL in PostgreSQL) return NaN.
func (s *Sketch) Estimate() float64 {
	switch s.kind {
	case kindUndefined:
		return math.NaN()
	case kindEmpty:
		return 0
	case kindExplicit:
		return float64(len(s.explicit))
	case kindSparse:
		// Absent registers count 2^0 each; the filled ones in index order.
		sum := float64(s.p.NumRegisters() - len(s.pairs))
		for _, p := range s.pairs {
			sum += math.Ldexp(1, -int(uint8(p)))
		}
		return registerEstimate(s.p, sum, s.p.NumRegisters()-len(s.pairs))
	}
	sum := 0.0
	for v, n := range s.hist {
		if n != 0 {
			sum += math.Ldexp(float64(n), -v)
		}
	}
	return registerEstimate(s.p, sum, s.hist[0])
}

// StdError returns the relative standard error of the estimate: 0 for
// EMPTY and EXPLICIT (exact), 1.04/sqrt(m) for registers.
func (s *Sketch) StdError() float64 {
	switch s.kind {
	case kindSparse, kindDense:
		return s.p.StdError()
	case kindUndefined:
		return math.NaN()
	}
	return 0
}

// registerEstimate is multiset_card for sum = Σ 2^-M[j] and zeros = #{j:
// M[j] = 0}, with the departures documented on Estimate.
func registerEstimate(p Params, sum float64, zeros int) float64 {
	m := float64(p.NumRegisters())
	e := alphaMM(p.NumRegisters()) / sum
	if zeros != 0 && e < 5.0*m/2.0 {
		return m * math.Log(m/float64(zeros))
	}
	twoL := math.Ldexp(1, 1<<p.Regwidth-2+p.Log2m)
	switch {
	case e <= twoL/30.0:
		return e
	case e < twoL:
		return -twoL * math.Log(1.0-e/twoL)
	}
	return twoL * math.Log(m)
}

// alphaMM is postgresql-hll's gamma_register_count_squared (m > 8), with
// its operation order.
func alphaMM(nregs int) float64 {
	m := float64(nregs)
	switch nregs {
	case 16:
		return 0.673 * m * m
	case 32:
		return 0.697 * m * m
	case 64:
		return 0.709 * m * m
	}
	return (0.7213 / (1.0 + 1.079/m)) * m * m
}
