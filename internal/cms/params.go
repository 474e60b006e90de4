package cms

import (
	"fmt"
	"math"
)

// Limits on a sketch's shape and heavy-hitter list. They bound what any
// request or upload can make the server allocate: at most MaxCounters
// 8-byte counters (32 MiB) and MaxTopK candidates of at most MaxTextLen
// bytes each.
const (
	// MinDepth is the fewest rows: δ = e^-1 ≈ 0.37.
	MinDepth = 1
	// MaxDepth is the most rows: δ = e^-32 ≈ 1.3e-14.
	MaxDepth = 32
	// MinWidth is the fewest counters a row.
	MinWidth = 1
	// MaxCounters bounds width·depth: 2^22 counters, 32 MiB.
	MaxCounters = 1 << 22
	// MaxTopK is the most heavy-hitter candidates a sketch keeps.
	MaxTopK = 1000
	// MaxTextLen is the longest text id, in bytes, that can be added (and
	// so kept as a heavy-hitter candidate).
	MaxTextLen = 1024
	// MaxDomainBits bounds the value domain of a ranged sketch: values
	// are non-negative int64s.
	MaxDomainBits = 63
)

// Params are a sketch's parameters.
type Params struct {
	// Width is the number of counters in each row; the error bound is
	// ε = e/Width.
	Width int
	// Depth is the number of rows (independent hashes); the failure
	// probability is δ = e^-Depth.
	Depth int
	// Conservative selects conservative update for future additions.
	Conservative bool
	// TopK is the number of heavy-hitter candidates kept; 0 keeps none.
	TopK int
	// DomainBits, when not 0, makes the sketch count integer values in
	// [0, 2^DomainBits) at every dyadic level (dyadic.go), for range
	// counts and quantiles; 1..MaxDomainBits.
	DomainBits int
}

// DefaultParams returns ε = 0.001, δ = 0.01 (width 2719, depth 5), plain
// update and no heavy hitters.
func DefaultParams() Params {
	return Params{Width: 2719, Depth: 5}
}

// ParamsFromError returns the smallest width and depth that give error
// bound epsilon (an estimate exceeds the true count by at most epsilon·N)
// with probability at least 1-delta: width = ⌈e/epsilon⌉,
// depth = ⌈ln(1/delta)⌉. Both must lie strictly between 0 and 1, and the
// resulting shape within the limits, or the error wraps ErrParams.
// Conservative and TopK are left zero for the caller to set.
//
// The ceilings tolerate a relative rounding error of 1e-9, so that
// ParamsFromError(p.Epsilon(), p.Delta()) gives back p's width and depth.
func ParamsFromError(epsilon, delta float64) (Params, error) {
	if !(epsilon > 0 && epsilon < 1) {
		return Params{}, fmt.Errorf("cms: epsilon %v not in (0, 1): %w", epsilon, ErrParams)
	}
	if !(delta > 0 && delta < 1) {
		return Params{}, fmt.Errorf("cms: delta %v not in (0, 1): %w", delta, ErrParams)
	}
	w := ceilTolerant(math.E / epsilon)
	d := ceilTolerant(math.Log(1 / delta))
	if d > MaxDepth {
		return Params{}, fmt.Errorf("cms: delta %v needs depth %v, more than %d: %w", delta, d, MaxDepth, ErrParams)
	}
	if d < MinDepth {
		d = MinDepth
	}
	if w > MaxCounters/d {
		return Params{}, fmt.Errorf("cms: epsilon %v and delta %v need %v×%v counters, more than %d: %w",
			epsilon, delta, w, d, MaxCounters, ErrParams)
	}
	p := Params{Width: int(w), Depth: int(d)}
	return p, p.Validate()
}

// ceilTolerant is ⌈x⌉, except that x within a relative 1e-9 above an
// integer rounds down to it.
func ceilTolerant(x float64) float64 {
	return math.Ceil(x * (1 - 1e-9))
}

// Validate reports whether p may be used to create a sketch: depth in
// MinDepth..MaxDepth, width at least MinWidth, width·depth at most
// MaxCounters, TopK in 0..MaxTopK. The error wraps ErrParams and names the
// parameter.
func (p Params) Validate() error {
	if err := p.check(); err != nil {
		return fmt.Errorf("cms: %w", err)
	}
	return nil
}

// check is Validate without the package prefix.
func (p Params) check() error {
	if p.Depth < MinDepth || p.Depth > MaxDepth {
		return fmt.Errorf("depth %d not in %d..%d: %w", p.Depth, MinDepth, MaxDepth, ErrParams)
	}
	if p.Width < MinWidth {
		return fmt.Errorf("width %d less than %d: %w", p.Width, MinWidth, ErrParams)
	}
	if p.Width > MaxCounters/p.Depth {
		return fmt.Errorf("width %d × depth %d exceeds %d counters: %w", p.Width, p.Depth, MaxCounters, ErrParams)
	}
	if p.DomainBits < 0 || p.DomainBits > MaxDomainBits {
		return fmt.Errorf("domain bits %d not in 0..%d: %w", p.DomainBits, MaxDomainBits, ErrParams)
	}
	if n := p.Counters(); n > MaxCounters {
		return fmt.Errorf("width %d × depth %d at %d dyadic levels takes %d counters, more than %d: %w",
			p.Width, p.Depth, p.DomainBits, n, MaxCounters, ErrParams)
	}
	if p.TopK < 0 || p.TopK > MaxTopK {
		return fmt.Errorf("topk %d not in 0..%d: %w", p.TopK, MaxTopK, ErrParams)
	}
	return nil
}

// Counters returns the number of counters a sketch with p holds:
// width·depth, and for a ranged sketch those of every level above 0 too.
// It saturates above MaxCounters.
func (p Params) Counters() int {
	n := p.Width * p.Depth
	for j := 1; j < p.DomainBits && n <= MaxCounters; j++ {
		n += p.levelSize(j)
	}
	return n
}

// Epsilon returns the error bound factor e/Width: with probability at least
// 1-Delta an estimate exceeds the true count by at most Epsilon·N.
func (p Params) Epsilon() float64 {
	return math.E / float64(p.Width)
}

// Delta returns the failure probability e^-Depth of the Epsilon bound for
// one estimate.
func (p Params) Delta() float64 {
	return math.Exp(-float64(p.Depth))
}
