package dshll

import (
	"fmt"

	dshll "github.com/apache/datasketches-go/hll"
)

// Limits on lg_k: what every DataSketches library accepts.
const (
	MinLgK     = 4
	MaxLgK     = 21
	DefaultLgK = 12
)

// Type is the target type: the width of the registers in HLL mode.
type Type uint8

// The target types, numbered as in the mode byte.
const (
	HLL4 Type = iota // 4-bit registers with an aux map: K/2 bytes
	HLL6             // 6-bit registers: 3K/4 bytes
	HLL8             // one byte per register: K bytes, the fastest
)

// String names the type as the libraries do ("HLL_4").
func (t Type) String() string {
	switch t {
	case HLL4, HLL6, HLL8:
		return fmt.Sprintf("HLL_%d", 4+2*int(t))
	}
	return fmt.Sprintf("Type(%d)", t)
}

// ParseType reads "HLL_4", "HLL_6" or "HLL_8".
func ParseType(s string) (Type, error) {
	for t := HLL4; t <= HLL8; t++ {
		if s == t.String() {
			return t, nil
		}
	}
	return 0, fmt.Errorf("dshll: target type %q is not HLL_4, HLL_6 or HLL_8: %w", s, ErrParams)
}

func (t Type) lib() dshll.TgtHllType { return dshll.TgtHllType(t) }

// Params are a sketch's parameters.
type Params struct {
	LgK  int
	Type Type
}

// DefaultParams returns lg_k 12, HLL_4: the libraries' defaults.
func DefaultParams() Params { return Params{LgK: DefaultLgK, Type: HLL4} }

// Validate returns an error wrapping ErrParams unless lg_k and the type
// are in range.
func (p Params) Validate() error {
	switch {
	case p.LgK < MinLgK || p.LgK > MaxLgK:
		return fmt.Errorf("dshll: lg_k %d not in [%d, %d]: %w", p.LgK, MinLgK, MaxLgK, ErrParams)
	case p.Type > HLL8:
		return fmt.Errorf("dshll: target type %d: %w", p.Type, ErrParams)
	}
	return nil
}

// K returns the number of registers, 2^lg_k.
func (p Params) K() int { return 1 << p.LgK }

// RelativeError is the relative standard error of an estimate at one
// standard deviation: 1.04/√K, the composite (and union) estimator's;
// the HIP estimator of a sketch only ever updated does better (about
// 0.836/√K), and the library's bounds say so.
func (p Params) RelativeError() float64 { return 1.04 / sqrtInt(p.K()) }

// String describes the parameters.
func (p Params) String() string { return fmt.Sprintf("lg_k=%d tgt_type=%s", p.LgK, p.Type) }
