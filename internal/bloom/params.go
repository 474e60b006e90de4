package bloom

import (
	"fmt"
	"math"
)

// Limits on a filter's shape. MaxBits bounds what any request or upload
// can make the server allocate for one filter: a 16 MiB bit array.
const (
	// MinBits is the smallest filter: one 64-bit word.
	MinBits = 64
	// MaxBits is the largest filter, 2^27 bits (16 MiB): 13.9 million
	// items at a 1% false-positive rate, or 9.3 million at 0.1%.
	MaxBits = 1 << 27
	// MaxHashes is the most bit positions per item.
	MaxHashes = 32
	// MinFPP and MaxFPP bound a stated false-positive rate.
	MinFPP = 1e-9
	MaxFPP = 0.5
)

// Params are a filter's parameters: its shape (Bits, Hashes) and, for a
// filter made by ParamsFor, the items and false-positive rate it was made
// for (both zero otherwise). Params are comparable with ==.
type Params struct {
	// Bits is m, the number of bits: a multiple of 64.
	Bits int
	// Hashes is k, the bit positions set per item.
	Hashes int
	// ExpectedItems is n, the items the filter was sized for; 0 when it
	// was created from its shape.
	ExpectedItems int64
	// FPP is p, the stated false-positive rate at ExpectedItems items; 0
	// when it was created from its shape.
	FPP float64
}

// DefaultParams is a filter for a million items at a 1% false-positive
// rate (9,662,080 bits, 7 hashes: 1.2 MB).
func DefaultParams() Params {
	p, _ := ParamsFor(1_000_000, 0.01)
	return p
}

// ParamsFor returns the smallest filter that holds n items with a
// false-positive rate of at most p (doc.go says how). n must be at least
// 1 and p within [MinFPP, MaxFPP]; a filter over MaxBits is refused, and
// every error wraps ErrParams and says what the limit allows.
func ParamsFor(n int64, p float64) (Params, error) {
	if n < 1 {
		return Params{}, fmt.Errorf("bloom: expected items %d less than 1: %w", n, ErrParams)
	}
	if !(p >= MinFPP && p <= MaxFPP) {
		return Params{}, fmt.Errorf("bloom: false-positive rate %v not in [%v, %v]: %w", p, MinFPP, MaxFPP, ErrParams)
	}
	m, k := size(float64(n), p)
	if m > MaxBits {
		textbook := math.Ceil(-float64(n) * math.Log(p) / (math.Ln2 * math.Ln2))
		return Params{}, fmt.Errorf("bloom: %d items at a false-positive rate of %v need at least %.0f bits, more than the limit of %d bits (16 MiB); at that rate a filter holds at most %d items: %w",
			n, p, textbook, MaxBits, maxItems(p), ErrParams)
	}
	out := Params{Bits: int(m), Hashes: k, ExpectedItems: n, FPP: p}
	return out, out.Validate()
}

// size returns the bits and hashes ParamsFor picks for n items at rate p:
// +Inf bits past MaxBits.
func size(n, p float64) (float64, int) {
	kOpt := math.Log(1/p) / math.Ln2
	best, bestK := math.Inf(1), max(1, int(math.Round(kOpt)))
	for _, k := range []int{int(math.Floor(kOpt)), int(math.Floor(kOpt)) + 1} {
		if k < 1 || k > MaxHashes {
			continue
		}
		if m := bitsFor(n, p, k); m < best {
			best, bestK = m, k
		}
	}
	return best, bestK
}

// margin is the share of the stated rate a filter is sized for, and
// fillSigmas how far above its expected fill it must still meet it
// (doc.go).
const (
	margin     = 0.97
	fillSigmas = 3
)

// bitsFor is the least multiple of 64 bits m for which k hashes and n
// items give a rate of at most margin·p even at a fill fillSigmas
// standard deviations above the expected one; +Inf past MaxBits.
func bitsFor(n, p float64, k int) float64 {
	// Below the textbook size, (1 − e^(−kn/m))^k = margin·p, the rate is
	// too high even at the expected fill; the margin never needs twice it.
	lo := math.Ceil(-float64(k) * n / math.Log1p(-math.Pow(margin*p, 1/float64(k))))
	if !(lo <= MaxBits) {
		return math.Inf(1)
	}
	ok := func(m float64) bool { return highRate(m, n, k) <= margin*p }
	hi := 2 * lo
	for !ok(hi) {
		hi *= 2
	}
	for hi-lo > 1 {
		mid := math.Floor((lo + hi) / 2)
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	m := max(MinBits, math.Ceil(hi/64)*64)
	if m > MaxBits {
		return math.Inf(1)
	}
	return m
}

// highRate is the rate of a filter of m bits holding n items with k
// hashes whose fill is fillSigmas standard deviations above its expected
// fill. The kn positions fall like balls into m bins: with λ = kn/m the
// clear bits E have mean m·e^(−λ) and variance m·e^(−λ)·(1 − (1+λ)·e^(−λ)).
func highRate(m, n float64, k int) float64 {
	lambda := float64(k) * n / m
	clear := math.Exp(-lambda)
	sd := math.Sqrt(math.Max(0, m*clear*(1-(1+lambda)*clear)))
	fill := math.Min(1, (m*(1-clear)+fillSigmas*sd)/m)
	return math.Pow(fill, float64(k))
}

// maxItems is the most items a filter within MaxBits holds at rate p.
func maxItems(p float64) int64 {
	lo, hi := int64(0), int64(1)<<40
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if m, _ := size(float64(mid), p); m <= MaxBits {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// Validate reports whether p may be used to create a filter (doc.go's
// limits). The error wraps ErrParams and names the parameter.
func (p Params) Validate() error {
	if err := p.check(); err != nil {
		return fmt.Errorf("bloom: %w", err)
	}
	return nil
}

func (p Params) check() error {
	if p.Bits < MinBits || p.Bits > MaxBits {
		return fmt.Errorf("bits %d not in %d..%d (the limit is a 16 MiB filter): %w", p.Bits, MinBits, MaxBits, ErrParams)
	}
	if p.Bits%64 != 0 {
		return fmt.Errorf("bits %d is not a multiple of 64: %w", p.Bits, ErrParams)
	}
	if p.Hashes < 1 || p.Hashes > MaxHashes {
		return fmt.Errorf("hashes %d not in 1..%d: %w", p.Hashes, MaxHashes, ErrParams)
	}
	switch {
	case p.ExpectedItems == 0 && p.FPP == 0:
	case p.ExpectedItems < 1:
		return fmt.Errorf("expected items %d less than 1: %w", p.ExpectedItems, ErrParams)
	case !(p.FPP >= MinFPP && p.FPP <= MaxFPP):
		return fmt.Errorf("false-positive rate %v not in [%v, %v]: %w", p.FPP, MinFPP, MaxFPP, ErrParams)
	}
	return nil
}

// Stated reports whether the filter was made for a stated number of items
// and rate.
func (p Params) Stated() bool { return p.ExpectedItems > 0 }

// RateAt is the false-positive rate an ideal filter of this shape reaches
// with n distinct items: (1 − e^(−kn/m))^k.
func (p Params) RateAt(n float64) float64 {
	if n <= 0 {
		return 0
	}
	return math.Pow(-math.Expm1(-float64(p.Hashes)*n/float64(p.Bits)), float64(p.Hashes))
}
