package hll

import (
	"fmt"
	"math"
	"math/bits"
)

// Parameter limits. They are the part of postgresql-hll's ranges (log2m
// 0..17, regwidth 0..7, expthresh -1, 0 or a power of two up to 16383) in
// which a sketch can also be estimated, so every sketch loads into
// PostgreSQL.
const (
	MinLog2m      = 4
	MaxLog2m      = 17
	MinRegwidth   = 1
	MaxRegwidth   = 7
	MaxExpthresh  = 8192 // largest power of two PostgreSQL accepts as a typmod
	AutoExpthresh = -1

	// maxExplicit is postgresql-hll's explicit capacity on 64-bit builds
	// (mse_nelem_max): an EXPLICIT body never holds more elements.
	maxExplicit = 16383
	cutoffAuto  = 63
)

// Params are a sketch's parameters, as in postgresql-hll's
// hll_empty(log2m, regwidth, expthresh, sparseon).
type Params struct {
	// Log2m is log2 of the number of registers m.
	Log2m int
	// Regwidth is the register width in bits; values cap at 2^Regwidth-1.
	Regwidth int
	// Expthresh is the EXPLICIT capacity: -1 chooses it from log2m and
	// regwidth (the int64s that fit in a FULL body), 0 disables EXPLICIT,
	// otherwise a power of two counting elements (PostgreSQL's convention,
	// not java-hll's exponent). Decoded SPARSE and FULL sketches may carry
	// larger powers of two; the capacity in effect is capped at 16383.
	Expthresh int64
	// Sparse allows the SPARSE representation.
	Sparse bool
}

// DefaultParams returns sketchd's defaults: log2m 14, regwidth 5, automatic
// explicit threshold, sparse on.
func DefaultParams() Params {
	return Params{Log2m: 14, Regwidth: 5, Expthresh: AutoExpthresh, Sparse: true}
}

// Validate reports whether p may be used to create a sketch. The error
// wraps ErrParams and names the parameter.
func (p Params) Validate() error {
	if p.Log2m < MinLog2m || p.Log2m > MaxLog2m {
		return fmt.Errorf("hll: log2m %d not in %d..%d: %w", p.Log2m, MinLog2m, MaxLog2m, ErrParams)
	}
	if p.Regwidth < MinRegwidth || p.Regwidth > MaxRegwidth {
		return fmt.Errorf("hll: regwidth %d not in %d..%d: %w", p.Regwidth, MinRegwidth, MaxRegwidth, ErrParams)
	}
	if p.Expthresh != AutoExpthresh && p.Expthresh != 0 &&
		(p.Expthresh < 0 || p.Expthresh > MaxExpthresh || p.Expthresh&(p.Expthresh-1) != 0) {
		return fmt.Errorf("hll: expthresh %d is not -1, 0 or a power of two up to %d: %w", p.Expthresh, MaxExpthresh, ErrParams)
	}
	return nil
}

// NumRegisters returns m = 2^Log2m.
func (p Params) NumRegisters() int { return 1 << p.Log2m }

// StdError returns the relative standard error of an estimate, 1.04/sqrt(m).
func (p Params) StdError() float64 { return 1.04 / math.Sqrt(float64(p.NumRegisters())) }

// ExplicitCapacity returns T, the number of distinct hashes an EXPLICIT
// sketch holds before it turns into registers (postgresql-hll's
// expthresh_value, capped like mse_nelem_max).
func (p Params) ExplicitCapacity() int {
	t := p.Expthresh
	if t == AutoExpthresh {
		t = int64((p.Regwidth*p.NumRegisters()+7)/8) / 8
	}
	return int(min(t, maxExplicit))
}

// maxValue is the largest register value, 2^regwidth - 1.
func (p Params) maxValue() uint8 { return uint8(1)<<p.Regwidth - 1 }

// cutoffCode encodes Expthresh for the third header byte: 63 auto, 0 off,
// else log2(T)+1.
func (p Params) cutoffCode() byte {
	switch p.Expthresh {
	case AutoExpthresh:
		return cutoffAuto
	case 0:
		return 0
	}
	return byte(bits.Len64(uint64(p.Expthresh)))
}

// expthreshFromCode decodes the cutoff code c (0..63).
func expthreshFromCode(c byte) int64 {
	switch c {
	case cutoffAuto:
		return AutoExpthresh
	case 0:
		return 0
	}
	return 1 << (c - 1)
}

// String formats p like the service and PostgreSQL's hll_print describe it.
func (p Params) String() string {
	return fmt.Sprintf("log2m=%d regwidth=%d expthresh=%d sparse=%t", p.Log2m, p.Regwidth, p.Expthresh, p.Sparse)
}
