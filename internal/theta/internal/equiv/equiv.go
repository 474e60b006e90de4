// Package equiv computes the tables of "equivalent standard deviations"
// that theta's binomial bounds use for 1..120 samples at a small sampling
// rate.
//
// For n samples at a rate θ → 0 the exact bounds on N are those of a
// Poisson mean: the lower bound λ_lo/θ with P(X ≥ n | λ_lo) = δ and the
// upper bound λ_hi/θ with P(X ≤ n | λ_hi) = δ, where δ is the tail for s
// standard deviations. The continuity-corrected normal bound with s'
// deviations tends, as θ → 0, to ((n∓½) + s'²/2 ∓ (s'/2)·sqrt(s'² +
// 4(n∓½)))/θ; s' is chosen so that this equals the Poisson bound. The
// result is the quantity DataSketches tabulates, derived here rather than
// copied; it agrees with the library's table to about 1e-7 relative.
package equiv

import "math"

// Delta holds the library's tail probabilities for 1, 2, 3 standard
// deviations (index 0 unused), the same constants as theta's bounds.
var Delta = [4]float64{0.5, 0.1586553191586026479, 0.0227502618904135701, 0.0013498126861731796}

// Tables computes both tables.
func Tables() (lb, ub [121][3]float64) {
	lb[0], ub[0] = [3]float64{1, 2, 3}, [3]float64{1, 2, 3}
	for n := 1; n <= 120; n++ {
		for s := 1; s <= 3; s++ {
			d := Delta[s]
			lamLo := bisect(func(l float64) float64 { return 1 - poissonCDF(n-1, l) - d }, 0, 1000)
			h := float64(n) - 0.5
			lb[n][s-1] = bisect(func(x float64) float64 { return h + x*x/2 - x/2*math.Sqrt(x*x+4*h) - lamLo }, 0, 100)
			lamHi := bisect(func(l float64) float64 { return poissonCDF(n, l) - d }, 0, 1000)
			hu := float64(n) + 0.5
			ub[n][s-1] = bisect(func(x float64) float64 { return hu + x*x/2 + x/2*math.Sqrt(x*x+4*hu) - lamHi }, 0, 100)
		}
	}
	return lb, ub
}

// poissonCDF returns P(X <= k) for X ~ Poisson(lambda).
func poissonCDF(k int, lambda float64) float64 {
	term := math.Exp(-lambda)
	sum := term
	for i := 1; i <= k; i++ {
		term *= lambda / float64(i)
		sum += term
	}
	return sum
}

// bisect finds a root of f in [lo, hi], where f changes sign, to the last
// bit.
func bisect(f func(float64) float64, lo, hi float64) float64 {
	flo := f(lo)
	for range 2000 {
		mid := (lo + hi) / 2
		if mid == lo || mid == hi {
			break
		}
		fm := f(mid)
		if (flo <= 0) == (fm <= 0) {
			lo, flo = mid, fm
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}
