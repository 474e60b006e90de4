package sketch

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// This file holds the joint maximum-likelihood estimator for two register
// sketches, after O. Ertl, "New cardinality estimation methods for
// HyperLogLog sketches" (2017, arXiv:1706.07290, section "Cardinality
// estimation of set intersections and complements"), adapted to
// postgresql-hll's registers.
//
// Register model. A hash sets register h & (m-1) to 1 + trailing zeros of
// the 64-log2m bits above the index, capped at C = 2^regwidth-1. Under the
// Poisson model (elements arrive at rate λ, spread evenly over m
// registers) a register stays at or below k with probability
// exp(-λ·ρ(k)/m), ρ(k) = P(value > k) = 2^-k for k < U and 0 for k = U,
// where U = min(C, 64-log2m) is the largest value a register can take.
// That is Ertl's model with his q = U-1: level U plays his "q+1"
// (saturated or all-zero bits). For regwidth <= 5 the cap decides (U = C,
// 31 for regwidth 5); for regwidth >= 6 the hash width does, where the
// model is off by a probability of 2^-(64-log2m) per element (the hash
// whose upper bits are all zero changes no register), far below anything
// measurable.
//
// Joint model. A = S1\S2, B = S2\S1, X = S1∩S2 are disjoint and fill their
// own virtual registers K_A, K_B, K_X at rates λa, λb, λx; the sketches
// hold K1 = max(K_A, K_X) and K2 = max(K_B, K_X). Registers are independent
// under the Poisson model, so the log-likelihood depends on the registers
// only through five histograms (the sufficient statistic): for each level
// k, how many registers have K1 = k < K2, K1 = k > K2, K2 = k < K1,
// K2 = k > K1, and K1 = K2 = k.

// Limits of the numerical search.
const (
	mleMaxIter = 200
	// mleTolPhi stops the search once no log-rate moves by more than
	// this (a relative change of the rates of 1e-7).
	mleTolPhi = 1e-7
	// mleTolGain stops it once a step gains less log-likelihood than
	// this: far below one unit of information.
	mleTolGain = 1e-10
	// mleMaxStep caps one step of a log-rate (a factor e^3 in the rate).
	mleMaxStep = 3.0
)

// errMLEInput reports register slices that cannot be two sketches of the
// same log2m.
var errMLEInput = errors.New("sketch: joint estimate: registers do not match the parameters")

// registerModel gives the register-value distribution for log2m and
// regwidth.
type registerModel struct {
	m int // number of registers
	q int // levels run 0..q+1; q+1 is the highest value a register can hold
}

// newRegisterModel returns the model of the package comment above.
func newRegisterModel(log2m, regwidth int) registerModel {
	c := 1<<regwidth - 1
	u := min(c, 64-log2m)
	return registerModel{m: 1 << log2m, q: u - 1}
}

// jointStats is the sufficient statistic of a register pair (K1, K2):
// lt1[k] = #{K1 = k < K2}, gt1[k] = #{K1 = k > K2}, lt2[k] = #{K2 = k < K1},
// gt2[k] = #{K2 = k > K1}, eq[k] = #{K1 = K2 = k}, for k = 0..q+1.
type jointStats struct {
	registerModel
	lt1, gt1, lt2, gt2, eq []float64
	// t[k] = 2^-min(k,q)/m: the rate factor of the log terms at level k.
	t []float64
	// sa, sb, sx are the linear coefficients of λa, λb, λx:
	// Σ_{k<=q} 2^-k/m times the registers whose K1 (sa), K2 (sb) or
	// min(K1, K2) (sx) is k.
	sa, sb, sx float64
	// minZero reports min(K1, K2) = 0 in every register: then no element
	// is in both sets (one would have raised both registers).
	minZero bool
}

// newJointStats counts the register pairs of a and b, values capped at q+1.
func newJointStats(a, b []uint8, mod registerModel) jointStats {
	return jointStatsFromCounts(pairCounts(a, b, uint8(mod.q+1)), mod)
}

// jointStatsFromCounts is the statistic of the register pair counts c
// (pairCounts' classes).
func jointStatsFromCounts(c [5][256]int, mod registerModel) jointStats {
	n := mod.q + 2
	buf := make([]float64, 6*n)
	s := jointStats{
		registerModel: mod,
		lt1:           buf[0*n : 1*n],
		gt1:           buf[1*n : 2*n],
		lt2:           buf[2*n : 3*n],
		gt2:           buf[3*n : 4*n],
		eq:            buf[4*n : 5*n],
		t:             buf[5*n : 6*n],
	}
	m := float64(mod.m)
	for k := range n {
		s.lt1[k], s.gt1[k], s.lt2[k], s.gt2[k], s.eq[k] = float64(c[0][k]), float64(c[1][k]), float64(c[2][k]), float64(c[3][k]), float64(c[4][k])
		s.t[k] = math.Ldexp(1/m, -min(k, mod.q))
		if k <= mod.q {
			w := math.Ldexp(1/m, -k)
			s.sa += (s.lt1[k] + s.eq[k] + s.gt1[k]) * w
			s.sb += (s.lt2[k] + s.eq[k] + s.gt2[k]) * w
			s.sx += (s.lt1[k] + s.eq[k] + s.lt2[k]) * w
		}
	}
	s.minZero = s.lt1[0]+s.eq[0]+s.lt2[0] == m
	return s
}

// pairCounts counts the register pairs of a and b (equal lengths), each
// register capped at top (below 64), by class: c[0][k] pairs with a's
// register k below b's, c[3][k] with b's k above a's, c[1][k] and c[2][k]
// the same with a above b, c[4][k] both k. It first counts each (a, b)
// pair of values in a 64×64 table, one increment a register and no
// branch (the classes of random register pairs are unpredictable: a
// branch per register mispredicts about half the time), then sums the
// table by class as a pairScan does.
func pairCounts(a, b []uint8, top uint8) (c [5][256]int) {
	var s pairScan
	b = b[:len(a)]
	for i, ka := range a {
		s.joint[int(min(ka, top))<<6|int(min(b[i], top))]++
	}
	s.vmax = int(top)
	return s.counts(top)
}

// logTerm adds count·log(z) to f, z = 1-e^{-t·u} given as zm = -z =
// e^{-t·u}-1 (math.Expm1, exact for small t·u), and its derivatives with
// respect to u (first and second) times count to d1, d2.
func logTerm(count, t, zm float64) (f, d1, d2 float64) {
	z := -zm
	y := 1 + zm // e^{-t·u}
	r := y / z  // 1/(e^{t·u}-1); 0 once e^{-t·u} underflows
	f = count * math.Log(z)
	d1 = count * t * r
	d2 = -count * t * t * r / z // r·(1+r) = y/z²
	return f, d1, d2
}

// eval returns the log-likelihood at rates l = (λa, λb, λx), its gradient
// and its Hessian with respect to the rates.
func (s *jointStats) eval(l [3]float64) (f float64, g [3]float64, h [3][3]float64) {
	la, lb, lx := l[0], l[1], l[2]
	f = -la*s.sa - lb*s.sb - lx*s.sx
	g = [3]float64{-s.sa, -s.sb, -s.sx}
	add := func(i, j int, v float64) {
		h[i][j] += v
		if i != j {
			h[j][i] += v
		}
	}
	for k := 1; k <= s.q+1; k++ {
		lt1, lt2, gt1, gt2, n := s.lt1[k], s.lt2[k], s.gt1[k], s.gt2[k], s.eq[k]
		if k > s.q {
			lt1, lt2 = 0, 0 // no register is below the highest value
		}
		if lt1 == 0 && lt2 == 0 && gt1 == 0 && gt2 == 0 && n == 0 {
			continue
		}
		t := s.t[k]
		// e^{-t·λ}-1 for each rate a term of this level needs, once.
		var ma, mb float64
		if gt1 != 0 || n != 0 {
			ma = math.Expm1(-t * la)
		}
		if gt2 != 0 || n != 0 {
			mb = math.Expm1(-t * lb)
		}
		if lt1 != 0 {
			// K1 = k < K2: the first sketch's register came from A or X.
			v, d1, d2 := logTerm(lt1, t, math.Expm1(-t*(la+lx)))
			f += v
			g[0] += d1
			g[2] += d1
			add(0, 0, d2)
			add(0, 2, d2)
			add(2, 2, d2)
		}
		if lt2 != 0 {
			v, d1, d2 := logTerm(lt2, t, math.Expm1(-t*(lb+lx)))
			f += v
			g[1] += d1
			g[2] += d1
			add(1, 1, d2)
			add(1, 2, d2)
			add(2, 2, d2)
		}
		// K1 = k > K2: the first sketch's register came from A alone.
		if gt1 != 0 {
			v, d1, d2 := logTerm(gt1, t, ma)
			f += v
			g[0] += d1
			add(0, 0, d2)
		}
		if gt2 != 0 {
			v, d1, d2 := logTerm(gt2, t, mb)
			f += v
			g[1] += d1
			add(1, 1, d2)
		}
		if n != 0 {
			// K1 = K2 = k: P ∝ Zx + Yx·Za·Zb with Y = e^{-tλ}, Z = 1-Y.
			mx := math.Expm1(-t * lx)
			ya, yb, yx := 1+ma, 1+mb, 1+mx
			za, zb, zx := -ma, -mb, -mx
			p := zx + yx*za*zb
			if p <= 0 {
				// Only when all three rates vanish; the search never
				// goes there (the rates stay positive).
				return math.Inf(-1), g, h
			}
			oneMinus := ya + za*yb // 1 - Za·Zb without cancellation
			d := [3]float64{t * yx * ya * zb, t * yx * yb * za, t * yx * oneMinus}
			t2 := t * t
			dd := [3][3]float64{
				{-t2 * yx * ya * zb, t2 * yx * ya * yb, -t2 * yx * ya * zb},
				{t2 * yx * ya * yb, -t2 * yx * yb * za, -t2 * yx * yb * za},
				{-t2 * yx * ya * zb, -t2 * yx * yb * za, -t2 * yx * oneMinus},
			}
			f += n * math.Log(p)
			for i := range 3 {
				g[i] += n * d[i] / p
				for j := i; j < 3; j++ {
					add(i, j, n*(dd[i][j]/p-d[i]*d[j]/(p*p)))
				}
			}
		}
	}
	return f, g, h
}

// singleEstimate is the maximum-likelihood cardinality of one register
// histogram c (levels 0..q+1) under the same model. The log-likelihood is
// concave in λ, so its derivative falls monotonically through zero;
// Newton's method finds the root, falling back to bisection of the
// bracket it keeps whenever a step would leave it.
func singleEstimate(c []float64, mod registerModel) float64 {
	m := float64(mod.m)
	lin, harm, nonzero := 0.0, 0.0, 0.0
	for k := 0; k <= mod.q+1; k++ {
		w := math.Ldexp(1/m, -k)
		harm += c[k] * w
		if k <= mod.q {
			lin += c[k] * w
		}
		if k > 0 {
			nonzero += c[k]
		}
	}
	if nonzero == 0 {
		return 0
	}
	if lin == 0 {
		// Every register saturated: the data only bound λ from below.
		return math.Ldexp(m, mod.q+1)
	}
	deriv := func(l float64) (d, dd float64) {
		d = -lin
		for k := 1; k <= mod.q+1; k++ {
			if c[k] == 0 {
				continue
			}
			t := math.Ldexp(1/m, -min(k, mod.q))
			em := math.Expm1(t * l)
			r := 1 / em
			d += c[k] * t * r
			dd -= c[k] * t * t * r * (1 + r)
		}
		return d, dd
	}
	// Start from the raw HLL estimate, which is within a few percent.
	l := 0.7213 * m / harm
	lo, hi := 0.0, math.Inf(1)
	for range 100 {
		d, dd := deriv(l)
		if d > 0 {
			lo = l
		} else {
			hi = l
		}
		next := l - d/dd
		if !(next > lo && next < hi) {
			switch {
			case math.IsInf(hi, 1):
				next = 2 * l
			case lo == 0:
				next = hi / 2
			default:
				next = math.Sqrt(lo * hi)
			}
		}
		if math.Abs(next-l) <= 1e-12*l {
			return next
		}
		l = next
	}
	return l
}

// jointEstimate is the outcome of jointMLE.
type jointEstimate struct {
	// a, b, x are the estimated |S1\S2|, |S2\S1| and |S1∩S2|.
	a, b, x float64
	// cov is the inverse observed Fisher information in (λa, λb, λx) at
	// the estimate: the asymptotic covariance of the three estimates.
	cov [3][3]float64
	// determined is false when the information matrix is singular or not
	// positive definite: the likelihood has a ridge (for example every
	// register of one sketch above the other's) and says little about
	// how the cardinalities split. cov is then unusable.
	determined bool
	// exactZero reports that the registers prove the sets disjoint.
	exactZero bool
	// lrZero is the likelihood-ratio statistic of "the sets are
	// disjoint": twice the log-likelihood gained by letting λx leave 0.
	// Unlike the covariance it stays honest where the likelihood is far
	// from quadratic, such as near Ertl's ridge.
	lrZero float64
	// iterations counts accepted and rejected search steps.
	iterations int
}

// jointMLE estimates |S1\S2|, |S2\S1| and |S1∩S2| from the registers of
// two sketches of equal log2m. regwidth is the narrower register width of
// the two: values are capped at its maximum, which makes a wider sketch
// distributed like a narrower one. It returns an error when the slices do
// not hold 2^log2m registers each.
func jointMLE(a, b []uint8, log2m, regwidth int) (jointEstimate, error) {
	if log2m < 0 || log2m > 30 || regwidth < 1 || regwidth > 8 || len(a) != 1<<log2m || len(b) != len(a) {
		return jointEstimate{}, fmt.Errorf("%w: log2m %d, regwidth %d, %d and %d registers", errMLEInput, log2m, regwidth, len(a), len(b))
	}
	s := newJointStats(a, b, newRegisterModel(log2m, regwidth))
	return s.maximize(), nil
}

// maximize runs the search of jointMLE on the statistic.
func (s *jointStats) maximize() jointEstimate {
	n := s.q + 2
	c1, c2, cu := make([]float64, n), make([]float64, n), make([]float64, n)
	for k := range n {
		c1[k] = s.lt1[k] + s.eq[k] + s.gt1[k]
		c2[k] = s.lt2[k] + s.eq[k] + s.gt2[k]
		cu[k] = s.gt1[k] + s.eq[k] + s.gt2[k] // registers of the union
	}
	e1, e2 := singleEstimate(c1, s.registerModel), singleEstimate(c2, s.registerModel)
	if s.minZero {
		// Ertl's special case: no register is raised in both sketches,
		// so no element is in both sets.
		return s.finish([3]float64{e1, e2, 0}, true, 0, 0)
	}
	eu := singleEstimate(cu, s.registerModel)
	// Start from inclusion-exclusion over the single estimates, kept at
	// least 1 so the logarithms exist (Ertl, Algorithm 2).
	phi := [3]float64{
		math.Log(max(1, eu-e2)),
		math.Log(max(1, eu-e1)),
		math.Log(max(1, e1+e2-eu)),
	}
	rates := func(p [3]float64) [3]float64 { return [3]float64{math.Exp(p[0]), math.Exp(p[1]), math.Exp(p[2])} }

	// Levenberg–Marquardt on the log-rates φ = log λ: Newton steps on the
	// φ-Hessian, damped towards gradient ascent while they fail to
	// increase the likelihood.
	mu := 0.0
	f, gl, hl := s.eval(rates(phi))
	iter := 0
	for iter < mleMaxIter {
		iter++
		l := rates(phi)
		var g [3]float64
		var a [3][3]float64 // -Hessian in φ, plus damping
		for i := range 3 {
			g[i] = l[i] * gl[i]
			for j := range 3 {
				a[i][j] = -l[i] * l[j] * hl[i][j]
			}
			a[i][i] -= g[i]
		}
		var step [3]float64
		solved := false
		for range 100 {
			d := a
			for i := range 3 {
				d[i][i] += mu
			}
			if step, solved = solve3(d, g); solved {
				break
			}
			mu = max(4*mu, 1e-3*maxAbsDiag(a), 1e-9)
		}
		if !solved {
			break // non-finite curvature: keep the best point so far
		}
		big := 0.0
		for i := range 3 {
			big = max(big, math.Abs(step[i]))
		}
		if big > mleMaxStep {
			for i := range 3 {
				step[i] *= mleMaxStep / big
			}
			big = mleMaxStep
		}
		gain := g[0]*step[0] + g[1]*step[1] + g[2]*step[2]
		if big < mleTolPhi || gain < mleTolGain {
			break
		}
		next := [3]float64{phi[0] + step[0], phi[1] + step[1], phi[2] + step[2]}
		fn, gn, hn := s.eval(rates(next))
		if fn > f || (fn == f && big < 1e-3) {
			phi, f, gl, hl = next, fn, gn, hn
			mu /= 3
			if mu < 1e-12 {
				mu = 0
			}
			continue
		}
		mu = max(4*mu, 1e-3*maxAbsDiag(a), 1e-9)
	}
	// With λx = 0 the likelihood splits into one term per sketch, each
	// the single-sketch likelihood: its maximum is at (e1, e2).
	f0, _, _ := s.eval([3]float64{e1, e2, 0})
	lr := math.Inf(1)
	if !math.IsInf(f0, -1) && !math.IsNaN(f0) {
		lr = max(2*(f-f0), 0)
	}
	if l := rates(phi); min(l[0], l[1], l[2]) >= 1e-9 {
		// The search's last point is where finish would evaluate:
		// its gradient and Hessian are known.
		return s.finishAt(l, gl, hl, false, iter, lr)
	}
	return s.finish(rates(phi), false, iter, lr)
}

// finish attaches the covariance at rates l.
func (s *jointStats) finish(l [3]float64, exactZero bool, iter int, lrZero float64) jointEstimate {
	at := [3]float64{max(l[0], 1e-9), max(l[1], 1e-9), max(l[2], 1e-9)}
	_, g, h := s.eval(at)
	return s.finishAt(l, g, h, exactZero, iter, lrZero)
}

// finishAt is finish with the gradient g and Hessian h of the
// log-likelihood at l (each rate at least 1e-9) already known.
func (s *jointStats) finishAt(l, g [3]float64, h [3][3]float64, exactZero bool, iter int, lrZero float64) jointEstimate {
	est := jointEstimate{a: l[0], b: l[1], x: l[2], exactZero: exactZero, iterations: iter, lrZero: lrZero}
	var info [3][3]float64
	for i := range 3 {
		for j := range 3 {
			info[i][j] = -h[i][j]
		}
	}
	if min(l[0], l[1], l[2]) < 1 {
		est.cov, est.determined = boundaryCovariance(info, g, l)
	} else {
		est.cov, est.determined = inverseSPD3(info)
	}
	if exactZero {
		est.cov[2] = [3]float64{}
		est.cov[0][2], est.cov[1][2] = 0, 0
	}
	return est
}

// boundaryZ is the likelihood-ratio distance, in standard deviations,
// over which a rate held on its boundary is let move: the envelope's.
const boundaryZ = envelopeZ

// boundaryCovariance is the covariance when some rates sit on the
// boundary λ = 0 (below one element), where the normal approximation of
// the likelihood does not hold: identical sketches have λa = λb = 0,
// disjoint ones λx = 0, and there the information matrix need not even
// be positive definite.
//
// The free rates get the inverse of their block of the information
// matrix. A held rate i may still be positive: moving it by δ costs
// |g_i|·δ + I_s·δ²/2 of log-likelihood (g_i the gradient, I_s its
// information after the free rates adjust, a Schur complement), so the
// δ at which that reaches boundaryZ²/2 is how far the data let it go; it
// gets δ/boundaryZ as standard deviation, and the free rates get the
// shift that moving it by δ induces in them, likewise scaled. This is
// what catches the ridge Ertl describes, where every register of one
// sketch lies below the other's: there |g_i| is tiny, δ is large, and
// the intersection's error grows to match, instead of the rate held at
// zero pinning the others.
func boundaryCovariance(info [3][3]float64, grad, l [3]float64) (cov [3][3]float64, determined bool) {
	var free, held []int
	for i := range 3 {
		if l[i] >= 1 {
			free = append(free, i)
		} else {
			held = append(held, i)
		}
	}
	// Invert the free block, padded with the identity.
	var sub [3][3]float64
	for i := range 3 {
		sub[i][i] = 1
	}
	for _, i := range free {
		for _, j := range free {
			sub[i][j] = info[i][j]
		}
	}
	inv, ok := inverseSPD3(sub)
	if !ok {
		return cov, false
	}
	for _, i := range free {
		for _, j := range free {
			cov[i][j] = inv[i][j]
		}
	}
	total := max(l[0]+l[1]+l[2], 1)
	for _, i := range held {
		// w: how the free rates respond to a unit move of rate i.
		var w [3]float64
		schur := info[i][i]
		for _, j := range free {
			for _, k := range free {
				w[j] += inv[j][k] * info[k][i]
			}
			schur -= info[i][j] * w[j]
		}
		slope := max(-grad[i], 0)
		var d float64
		switch {
		case schur > 1e-12*max(info[i][i], 1e-300):
			d = (math.Sqrt(slope*slope+schur*boundaryZ*boundaryZ) - slope) / schur
		case slope > 0:
			d = boundaryZ * boundaryZ / (2 * slope)
		default:
			d = total
		}
		d = min(d, total)
		cov[i][i] += (d / boundaryZ) * (d / boundaryZ)
		for _, j := range free {
			shift := w[j] * d / boundaryZ
			cov[j][j] += shift * shift
		}
	}
	return cov, true
}

// maxAbsDiag returns the largest absolute diagonal entry of a.
func maxAbsDiag(a [3][3]float64) float64 {
	return max(math.Abs(a[0][0]), math.Abs(a[1][1]), math.Abs(a[2][2]))
}

// cholesky3 factors a symmetric 3×3 matrix as L·Lᵀ; ok is false when a is
// not (numerically) positive definite.
func cholesky3(a [3][3]float64) (l [3][3]float64, ok bool) {
	for i := range 3 {
		for j := 0; j <= i; j++ {
			sum := a[i][j]
			for k := range j {
				sum -= l[i][k] * l[j][k]
			}
			if i == j {
				if !(sum > 1e-12*math.Abs(a[i][i])) || math.IsInf(sum, 0) {
					return l, false
				}
				l[i][i] = math.Sqrt(sum)
			} else {
				l[i][j] = sum / l[j][j]
			}
		}
	}
	return l, true
}

// solve3 solves a·x = b for symmetric positive definite a.
func solve3(a [3][3]float64, b [3]float64) ([3]float64, bool) {
	l, ok := cholesky3(a)
	if !ok {
		return [3]float64{}, false
	}
	var y, x [3]float64
	for i := range 3 {
		sum := b[i]
		for k := range i {
			sum -= l[i][k] * y[k]
		}
		y[i] = sum / l[i][i]
	}
	for i := 2; i >= 0; i-- {
		sum := y[i]
		for k := i + 1; k < 3; k++ {
			sum -= l[k][i] * x[k]
		}
		x[i] = sum / l[i][i]
	}
	return x, true
}

// inverseSPD3 inverts a symmetric positive definite 3×3 matrix.
func inverseSPD3(a [3][3]float64) (inv [3][3]float64, ok bool) {
	for j := range 3 {
		var e [3]float64
		e[j] = 1
		col, ok := solve3(a, e)
		if !ok {
			return [3][3]float64{}, false
		}
		for i := range 3 {
			inv[i][j] = col[i]
		}
	}
	return inv, true
}

// registerOf returns the register index and value that hash h sets in a
// sketch of log2m and regwidth (value 0: it sets none), by the rule of the
// storage format: index from the low log2m bits, value 1 + trailing zeros
// of the bits above, capped at 2^regwidth-1.
func registerOf(h uint64, log2m, regwidth int) (int, uint8) {
	w := h >> uint(log2m)
	if w == 0 {
		return 0, 0
	}
	v := min(bits.TrailingZeros64(w)+1, 1<<regwidth-1)
	return int(h & (1<<uint(log2m) - 1)), uint8(v)
}
