package sketch

import (
	"fmt"
	"math"
)

// mlePair estimates the intersection of two sketches of equal log2m with
// the joint likelihood: Ertl's estimator over the register pairs, or, when
// exactly one side is EXPLICIT, the membership estimator.
func mlePair(a, b operand, log2m int) (pairExtras, error) {
	switch {
	case a.explicit != nil && b.explicit == nil:
		return membership(a, b, log2m, false), nil
	case b.explicit != nil && a.explicit == nil:
		return membership(b, a, log2m, true), nil
	}
	ra, rb := a.sk.Registers(nil), b.sk.Registers(nil)
	rw := min(a.sk.Params().Regwidth, b.sk.Params().Regwidth)
	est, err := jointMLE(ra, rb, log2m, rw)
	if err != nil {
		return pairExtras{}, fmt.Errorf("sketch: joint estimate of %q and %q: %w", a.name, b.name, err)
	}
	return fromJoint(est, min(a.card, b.card)), nil
}

// fromJoint turns the three joint estimates and their covariance into the
// intersection, the relative complements and the Jaccard index. Without a
// usable covariance (a ridge in the likelihood) every error is the
// smallest set, so the bounds span every possible value.
func fromJoint(est jointEstimate, smallest float64) pairExtras {
	sd := func(i int) float64 { return math.Sqrt(max(est.cov[i][i], 0)) }
	out := pairExtras{
		x:     Bounded{Estimate: est.x, Error: sd(2)},
		aNotB: &Bounded{Estimate: est.a, Error: sd(0)},
		bNotA: &Bounded{Estimate: est.b, Error: sd(1)},
	}
	u := est.a + est.b + est.x
	j := &Bounded{}
	if u > 0 {
		// Delta method for x/(a+b+x): gradient (-x, -x, a+b)/u².
		j.Estimate = est.x / u
		g := [3]float64{-est.x / (u * u), -est.x / (u * u), (est.a + est.b) / (u * u)}
		v := 0.0
		for i := range 3 {
			for k := range 3 {
				v += g[i] * est.cov[i][k] * g[k]
			}
		}
		j.Error = math.Sqrt(max(v, 0))
	}
	out.jaccard = j
	// The union a + b + x and the users in one set only, a + b, with
	// their variances from the covariance.
	varOf := func(w [3]float64) float64 {
		v := 0.0
		for i := range 3 {
			for k := range 3 {
				v += w[i] * est.cov[i][k] * w[k]
			}
		}
		return math.Sqrt(max(v, 0))
	}
	out.union = &Bounded{Estimate: u, Error: varOf([3]float64{1, 1, 1})}
	out.one = &Bounded{Estimate: est.a + est.b, Error: varOf([3]float64{1, 1, 0})}
	out.zeroPlausible = est.lrZero <= envelopeZ*envelopeZ
	if !est.determined && !est.exactZero {
		out.undetermined = true
		out.x.Error = max(smallest, out.x.Estimate)
		out.aNotB.Error = max(out.aNotB.Estimate, smallest)
		out.bNotA.Error = max(out.bNotA.Estimate, smallest)
		out.one.Error = max(out.one.Estimate, smallest)
		out.union.Error = max(out.union.Error, smallest)
		j.Error = 1
	}
	return out
}

// membership estimates |E∩S| for an EXPLICIT sketch E (its exact hashes)
// and a register sketch R of S, at log2m, by maximum likelihood over E's
// hashes given R's registers.
//
// Take a hash of E with register i and value v, and let r = R's register
// i. If the hash is in S it helped build R, so r >= v; if not, it is
// independent of R. Under the Poisson model with load L = |S|/m per
// register, the likelihood ratio "in S" : "not in S" of what R shows is
//
//	r < v:  0 (the hash is certainly not in S)
//	r > v:  1 (R's register was set by another element either way)
//	r = v:  1/(1 - e^{-L·2^-v})  (the hash may be the one that set it;
//	        at the cap v = C, 1/(1 - e^{-L·2^-(C-1)}))
//
// so with p = x/n the share of E in S, each hash contributes
// log(1 - p + p·ratio). The log-likelihood is concave in p; its maximum
// is found by bisection and the error is n/√I(p), I the Fisher
// information. Counting only the hashes that pass (r >= v) would weigh
// low values, which pass whether in S or not, as much as high ones; this
// weighs each hash by what it tells, and beats both that count and
// Ertl's estimator on E's materialised registers (TestMembership).
// swapped reports that E is the second sketch of the request.
func membership(e, r operand, log2m int, swapped bool) pairExtras {
	regs := r.sk.Registers(nil)
	rw := r.sk.Params().Regwidth
	top := min(1<<rw-1, 64-log2m)
	load := r.card / float64(len(regs))
	// Hashes that R's register matches exactly, as ratio-1, and the
	// number R rules out.
	var eqGain []float64
	out := 0
	for _, h := range e.explicit {
		i, v := registerOf(h, log2m, rw)
		switch rv := regs[i]; {
		case v == 0 || rv > v:
		case rv < v:
			out++
		default:
			k := min(int(v), top-1)
			eqGain = append(eqGain, 1/(-math.Expm1(-load*math.Ldexp(1, -k)))-1)
		}
	}
	n := float64(len(e.explicit))
	deriv := func(p float64) (d, info float64) {
		d = -float64(out) / (1 - p)
		info = float64(out) / ((1 - p) * (1 - p))
		for _, g := range eqGain {
			q := g / (1 + p*g)
			d += q
			info += q * q
		}
		return d, info
	}
	var p float64
	switch {
	case n == 0:
	case out == 0 && len(eqGain) > 0:
		p = 1
	default:
		if d, _ := deriv(0); d > 0 {
			lo, hi := 0.0, 1.0
			for range 60 {
				mid := (lo + hi) / 2
				if d, _ := deriv(mid); d > 0 {
					lo = mid
				} else {
					hi = mid
				}
			}
			p = (lo + hi) / 2
		}
	}
	x := p * n
	// The bounds are where the log-likelihood falls envelopeZ²/2 below its
	// maximum (99.73% for a likelihood-ratio interval), the one-sigma error
	// the farther end of where it falls 1/2, plus a quarter element of
	// variance for small counts. The curvature at the maximum (Fisher's
	// information) says nothing when the maximum is at p = 1, where a
	// subset's hashes all pass: there it called 1,000 of 1,000 hashes
	// inside a set of 1,000,000 "1,000 ± 315", spurious, though a disjoint
	// set would have had a dozen of its hashes ruled out.
	loglik := func(p float64) float64 {
		l := 0.0
		if out > 0 {
			l = float64(out) * math.Log1p(-p)
		}
		for _, g := range eqGain {
			l += math.Log1p(p * g)
		}
		return l
	}
	interval := func(drop float64) (lo, hi float64) {
		top := loglik(p)
		// loglik is concave: it falls monotonically away from p.
		edge := func(from, to float64) float64 {
			if top-loglik(to) <= drop {
				return to
			}
			for range 60 {
				mid := (from + to) / 2
				if top-loglik(mid) <= drop {
					from = mid
				} else {
					to = mid
				}
			}
			return (from + to) / 2
		}
		return edge(p, 0), edge(p, 1)
	}
	lo, hi := interval(envelopeZ * envelopeZ / 2)
	lo1, hi1 := interval(0.5)
	sd := math.Sqrt(math.Pow(n*max(p-lo1, hi1-p), 2) + 0.25)
	undetermined := info0(n, eqGain, out)
	if n == 0 || undetermined {
		sd, lo, hi = n, 0, 1
	}
	xc := min(x, r.card)
	eNotR := &Bounded{Estimate: n - xc, Error: sd}
	rNotE := &Bounded{Estimate: max(r.card-xc, 0), Error: math.Hypot(r.sigma*r.card, sd)}
	res := pairExtras{x: Bounded{Estimate: x, Error: sd}, aNotB: eNotR, bNotA: rNotE, undetermined: undetermined,
		bounded: true, lower: lo * n, upper: hi * n}
	if swapped {
		res.aNotB, res.bNotA = rNotE, eNotR
	}
	res.jaccard = jaccardOf(xc, sd, n+r.card-xc, r.sigma*r.card/max(n+r.card-xc, 1))
	u := n + r.card - xc
	res.union = &Bounded{Estimate: u, Error: math.Hypot(r.sigma*r.card, sd)}
	res.one = &Bounded{Estimate: max(u-xc, 0), Error: math.Hypot(r.sigma*r.card, 2*sd)}
	return res
}

// info0 reports that R tells nothing about E: every hash of E is matched
// by a larger register (R saturated) though E is not empty.
func info0(n float64, eqGain []float64, out int) bool {
	return n > 0 && out == 0 && len(eqGain) == 0
}
