package theta

import "fmt"

// Limits on lg_k, the log2 of the nominal number of entries k. Java's
// DataSketches accepts 4..26 (C++ and Python start at 5); 26 bounds a
// sketch at 2^27 table slots, 1 GiB, which no request can ask for: the
// server's own limits are tighter.
const (
	MinLgK     = 4
	MaxLgK     = 26
	DefaultLgK = 12
)

// Params are a theta sketch's parameters.
type Params struct {
	// LgK is log2 of the nominal entries k: the sketch keeps the k smallest
	// hashes once it has seen more than about 2k distinct values, and its
	// relative standard error is then about 1/sqrt(k).
	LgK int
}

// DefaultParams returns lg_k 12 (k = 4096, about 1.6% standard error),
// DataSketches' default.
func DefaultParams() Params { return Params{LgK: DefaultLgK} }

// Validate returns an error wrapping ErrParams unless MinLgK <= LgK <= MaxLgK.
func (p Params) Validate() error {
	if p.LgK < MinLgK || p.LgK > MaxLgK {
		return fmt.Errorf("theta: lg_k %d not in [%d, %d]: %w", p.LgK, MinLgK, MaxLgK, ErrParams)
	}
	return nil
}

// K returns the nominal number of entries, 2^LgK.
func (p Params) K() int { return 1 << p.LgK }

// MaxRetained returns the most entries a sketch with these parameters
// holds between rebuilds: 15/16 of its largest hash table, 2^(LgK+1)
// slots, as in DataSketches' QuickSelect sketch. A decoded sketch may hold
// up to this many; more is refused.
func (p Params) MaxRetained() int { return rebuildThreshold(p.LgK) }

// rebuildThreshold is ⌊15/16 · 2^(lgK+1)⌋ = 15 · 2^(lgK-3) for lgK >= 3.
func rebuildThreshold(lgK int) int { return 15 << (lgK - 3) }
