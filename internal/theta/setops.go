package theta

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// MaxIntersect is the most sketches Intersect accepts at once.
const MaxIntersect = 64

// Intersect returns the intersection of the sketches as DataSketches'
// theta intersection computes it: theta is the least of their thetas, the
// hashes those below it that every sketch holds; if any sketch is empty, so
// is the result. Its bounds (LowerBound, UpperBound) are the library's
// intersection bounds. The result has the largest lg_k of the inputs.
// Between 1 and MaxIntersect sketches are accepted, else ErrParams.
func Intersect(sketches ...*Sketch) (*Sketch, error) {
	if len(sketches) == 0 || len(sketches) > MaxIntersect {
		return nil, fmt.Errorf("theta: intersection of %d sketches, want 1 to %d: %w", len(sketches), MaxIntersect, ErrParams)
	}
	r := &Sketch{theta: MaxTheta}
	valid, curSorted := false, false
	var cur []uint64
	for _, s := range sketches {
		r.lgK = max(r.lgK, s.lgK)
		if r.empty {
			continue
		}
		r.empty = s.empty
		if r.empty {
			r.theta, cur = MaxTheta, nil
			continue
		}
		r.theta = min(r.theta, s.theta)
		if valid && len(cur) == 0 {
			continue
		}
		if s.Retained() == 0 {
			valid, cur = true, nil
			continue
		}
		if !valid {
			// Tables are not sorted here: only the matches are, at the end.
			valid, cur, curSorted = true, s.entries(nil), s.table == nil
			continue
		}
		switch {
		case s.table != nil:
			cur = filterContained(cur, s, r.theta)
		case curSorted:
			cur = intersectSorted(cur, s.sorted, r.theta)
		default:
			cur = filterSorted(cur, s.sorted, r.theta)
		}
		if len(cur) == 0 && r.theta == MaxTheta {
			r.empty = true
		}
	}
	if !curSorted {
		slices.Sort(cur)
	}
	r.sorted = cur
	if r.sorted == nil {
		r.sorted = []uint64{}
	}
	return r, nil
}

// intersectSorted returns the hashes below theta in both sorted lists,
// reusing a's storage.
func intersectSorted(a, b []uint64, theta uint64) []uint64 {
	out := a[:0]
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			if a[i] < theta {
				out = append(out, a[i])
			}
			i++
			j++
		}
	}
	return out
}

// filterContained keeps the hashes of cur below theta that s (a table)
// holds, in place.
func filterContained(cur []uint64, s *Sketch, theta uint64) []uint64 {
	out := cur[:0]
	for _, h := range cur {
		if h < theta && s.contains(h) {
			out = append(out, h)
		}
	}
	return out
}

// filterSorted keeps the hashes of cur below theta found in sorted, in
// place.
func filterSorted(cur, sorted []uint64, theta uint64) []uint64 {
	out := cur[:0]
	for _, h := range cur {
		if _, ok := slices.BinarySearch(sorted, h); ok && h < theta {
			out = append(out, h)
		}
	}
	return out
}

// AnotB returns the hashes of a not in b, as DataSketches' A-not-B does:
// theta is the lesser of the two, the result keeps a's hashes below it
// that b does not hold. An empty a gives an empty result; an empty b gives
// a copy of a. The result has a's lg_k.
func AnotB(a, b *Sketch) *Sketch {
	if a.empty || (a.Retained() > 0 && b.empty) {
		c := a.Clone()
		c.compact()
		return c
	}
	r := &Sketch{lgK: a.lgK, theta: min(a.theta, b.Theta64())}
	ha, hb := a.Hashes(nil), b.Hashes(nil)
	out := make([]uint64, 0, len(ha))
	j := 0
	for _, h := range ha {
		if h >= r.theta {
			break
		}
		for j < len(hb) && hb[j] < h {
			j++
		}
		if j < len(hb) && hb[j] == h {
			continue
		}
		out = append(out, h)
	}
	r.sorted = out
	r.empty = len(out) == 0 && r.theta == MaxTheta
	return r
}

// Similarity is a Jaccard index |A∩B|/|A∪B| with its bounds at about 95%
// confidence (two standard deviations), as DataSketches' Jaccard
// similarity computes them.
type Similarity struct {
	Lower, Estimate, Upper float64
}

// Jaccard estimates the Jaccard index of a and b: it unions them with an
// lg_k large enough to keep both, intersects a, b and the union, and
// bounds the ratio of the intersection's retained count to the union's as
// a binomial proportion sampled at the intersection's theta. Two empty
// sketches, or identical retained sets, give {1, 1, 1}; one empty gives
// {0, 0, 0}.
func Jaccard(a, b *Sketch) Similarity {
	if a == b || (a.empty && b.empty) {
		return Similarity{1, 1, 1}
	}
	if a.empty || b.empty {
		return Similarity{0, 0, 0}
	}
	na, nb := a.Retained(), b.Retained()
	lgK := 5 // DataSketches' C++ minimum, which its Jaccard uses
	if n := na + nb; n > 1 {
		lgK = max(lgK, bits.Len(uint(n-1)))
	}
	lgK = min(lgK, MaxLgK)
	u := newUnion(uint8(lgK))
	u.Add(a)
	u.Add(b)
	un := u.Result()
	if un.Retained() == na && un.Retained() == nb && un.theta == a.theta && un.theta == b.theta {
		return Similarity{1, 1, 1}
	}
	in, _ := Intersect(a, b, un)
	countB := uint64(in.Retained())
	var countA uint64
	if un.theta == in.theta {
		countA = uint64(un.Retained())
	} else {
		for _, h := range un.sorted {
			if h < in.theta {
				countA++
			}
		}
	}
	if countA == 0 {
		return Similarity{0, 0.5, 1}
	}
	f := in.Theta()
	est := float64(countB) / float64(countA)
	if f == 1 {
		return Similarity{est, est, est}
	}
	s := 2 * hackyAdjuster(f)
	return Similarity{
		Lower:    lowerBoundOnP(countA, countB, s),
		Estimate: est,
		Upper:    upperBoundOnP(countA, countB, s),
	}
}

// hackyAdjuster widens the deviation for sampling rates near 1, as
// DataSketches' bounds on ratios in sampled sets do.
func hackyAdjuster(f float64) float64 {
	t := math.Sqrt(1 - f)
	if f <= 0.5 {
		return t
	}
	return t + 0.01*(f-0.5)
}

// lowerBoundOnP is an approximate lower confidence bound on a binomial
// proportion p after k successes in n trials at s standard deviations,
// through the Abramowitz–Stegun 26.5.22 approximation of the inverse
// incomplete beta function, with the exact forms at the edges.
func lowerBoundOnP(n, k uint64, s float64) float64 {
	switch {
	case n == 0, k == 0:
		return 0
	case k == 1:
		return 1 - math.Pow(1-deltaOfKappa(s), 1/float64(n))
	case k == n:
		return math.Pow(deltaOfKappa(s), 1/float64(n))
	}
	return 1 - asInverseBeta(float64(n-k)+1, float64(k), -s)
}

// upperBoundOnP is the matching upper bound.
func upperBoundOnP(n, k uint64, s float64) float64 {
	switch {
	case n == 0, k == n:
		return 1
	case k == n-1:
		return math.Pow(1-deltaOfKappa(s), 1/float64(n))
	case k == 0:
		return 1 - math.Pow(deltaOfKappa(s), 1/float64(n))
	}
	return 1 - asInverseBeta(float64(n-k), float64(k)+1, s)
}

// deltaOfKappa is the normal tail beyond kappa deviations, computed with
// the Abramowitz–Stegun 7.1.28 approximation of erf as the library does.
func deltaOfKappa(kappa float64) float64 { return normalCDF(-kappa) }

func normalCDF(x float64) float64 { return 0.5 * (1 + approxErf(x/math.Sqrt2)) }

func approxErf(x float64) float64 {
	if x < 0 {
		return -approxErfNonNeg(-x)
	}
	return approxErfNonNeg(x)
}

// approxErfNonNeg is A&S 7.1.28: 1 - 1/(1 + a1 x + … + a6 x^6)^16.
func approxErfNonNeg(x float64) float64 {
	const (
		a1 = 0.0705230784
		a2 = 0.0422820123
		a3 = 0.0092705272
		a4 = 0.0001520143
		a5 = 0.0002765672
		a6 = 0.0000430638
	)
	x2 := x * x
	x3 := x2 * x
	x4 := x2 * x2
	x5 := x2 * x3
	x6 := x3 * x3
	sum := 1 + a1*x + a2*x2 + a3*x3 + a4*x4 + a5*x5 + a6*x6
	sum2 := sum * sum
	sum4 := sum2 * sum2
	sum8 := sum4 * sum4
	return 1 - 1/(sum8*sum8)
}

// asInverseBeta is A&S 26.5.22: the x at which the regularised incomplete
// beta I_x(a, b) equals the normal tail at yp deviations.
func asInverseBeta(a, b, yp float64) float64 {
	b2m1 := 2*b - 1
	a2m1 := 2*a - 1
	lambda := (yp*yp - 3) / 6
	h := 2 / (1/a2m1 + 1/b2m1)
	term1 := yp * math.Sqrt(h+lambda) / h
	term2 := 1/b2m1 - 1/a2m1
	term3 := lambda + 5.0/6 - 2/(3*h)
	w := term1 - term2*term3
	return a / (a + b*math.Exp(2*w))
}
