package theta

import (
	"fmt"
	"math"
)

//go:generate go run ./internal/genequiv -o equiv_table.go

// deltaOfStdDevs[s] is the one-sided tail probability DataSketches uses
// for s standard deviations. These three constants are the library's; they
// differ from the normal tails 1-Φ(s) in the seventh digit, and using the
// same ones keeps the bounds that depend on them (few samples, moderate
// theta) equal to the library's, not merely close.
var deltaOfStdDevs = [4]float64{0.5, 0.1586553191586026479, 0.0227502618904135701, 0.0013498126861731796}

// LowerBound returns DataSketches' lower bound on the number of distinct
// values behind n retained hashes sampled at rate theta (0 < theta <= 1),
// at sd standard deviations (1, 2 or 3): BinomialBoundsN.getLowerBound.
// With theta == 1 it is n. It never exceeds the estimate n/theta nor falls
// below n.
func LowerBound(n uint64, theta float64, sd int) (float64, error) {
	if err := checkBoundArgs(theta, sd); err != nil {
		return 0, err
	}
	est := float64(n) / theta
	lb := approxLowerBound(n, theta, sd)
	return math.Min(est, math.Max(float64(n), lb)), nil
}

// UpperBound returns DataSketches' upper bound on the number of distinct
// values behind n retained hashes sampled at rate theta, at sd standard
// deviations: BinomialBoundsN.getUpperBound. It is at least n/theta.
func UpperBound(n uint64, theta float64, sd int) (float64, error) {
	if err := checkBoundArgs(theta, sd); err != nil {
		return 0, err
	}
	est := float64(n) / theta
	return math.Max(est, approxUpperBound(n, theta, sd)), nil
}

func checkBoundArgs(theta float64, sd int) error {
	if !(theta > 0 && theta <= 1) {
		return fmt.Errorf("theta: sampling rate %v not in (0, 1]: %w", theta, ErrParams)
	}
	if sd < 1 || sd > 3 {
		return fmt.Errorf("theta: %d standard deviations, want 1, 2 or 3: %w", sd, ErrParams)
	}
	return nil
}

// contClassicLB is the continuity-corrected normal-approximation lower
// bound on N from n successes at rate theta with s standard deviations:
// the smaller root of (N - (n-½)/θ)² = s²·N·(1-θ)/θ.
func contClassicLB(n uint64, theta, s float64) float64 {
	nHat := (float64(n) - 0.5) / theta
	b := s * math.Sqrt((1-theta)/theta)
	d := 0.5 * b * math.Sqrt(b*b+4*nHat)
	return nHat + 0.5*b*b - d
}

// contClassicUB is the larger root with n+½.
func contClassicUB(n uint64, theta, s float64) float64 {
	nHat := (float64(n) + 0.5) / theta
	b := s * math.Sqrt((1-theta)/theta)
	d := 0.5 * b * math.Sqrt(b*b+4*nHat)
	return nHat + 0.5*b*b + d
}

// specialNStar is the largest N whose probability of showing at least n
// successes at rate p is at most delta, found by summing the negative
// binomial posterior term by term (valid for n/p < 500).
func specialNStar(n uint64, p, delta float64) float64 {
	q := 1 - p
	cur := math.Pow(p, float64(n))
	tot := cur
	m := n
	for tot <= delta {
		cur = cur * q * float64(m) / float64(m+1-n)
		tot += cur
		m++
	}
	return float64(m - 1)
}

// specialNPrimeB is the smallest N at which at most n successes have
// probability at least 1-delta of having been seen.
func specialNPrimeB(n uint64, p, delta float64) float64 {
	q := 1 - p
	cur := math.Pow(p, float64(n))
	tot := cur
	m := n
	for tot < 1-delta {
		cur = cur * q * float64(m) / float64(m+1-n)
		tot += cur
		m++
	}
	return float64(m)
}

func approxLowerBound(n uint64, theta float64, sd int) float64 {
	switch {
	case theta == 1:
		return float64(n)
	case n == 0:
		return 0
	case n == 1:
		return math.Floor(math.Log(1-deltaOfStdDevs[sd]) / math.Log(1-theta))
	case n > 120:
		return contClassicLB(n, theta, float64(sd)) - 0.5
	case theta > 1-1e-5:
		return float64(n)
	case theta < float64(n)/360:
		return contClassicLB(n, theta, lbEquiv[n][sd-1]) - 0.5
	}
	return specialNStar(n, theta, deltaOfStdDevs[sd])
}

func approxUpperBound(n uint64, theta float64, sd int) float64 {
	switch {
	case theta == 1:
		return float64(n)
	case n == 0:
		return math.Ceil(math.Log(deltaOfStdDevs[sd]) / math.Log(1-theta))
	case n > 120:
		return contClassicUB(n, theta, float64(sd)) + 0.5
	case theta > 1-1e-5:
		return float64(n + 1)
	case theta < float64(n)/360:
		return contClassicUB(n, theta, ubEquiv[n][sd-1]) + 0.5
	}
	return specialNPrimeB(n+1, theta, deltaOfStdDevs[sd])
}
