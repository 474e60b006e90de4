package cpc

import (
	"encoding/binary"
	"errors"
	"fmt"

	dscpc "github.com/apache/datasketches-go/cpc"
)

// Sentinel errors; every error the package returns wraps exactly one.
var (
	ErrTooShort = errors.New("input too short")
	ErrVersion  = errors.New("unsupported serialization version")
	ErrParams   = errors.New("parameters out of range")
	ErrCorrupt  = errors.New("corrupt sketch")
)

// Limits on lg_k.
const (
	MinLgK     = 4
	MaxLgK     = 26
	DefaultLgK = 11 // the libraries' default
)

// Seed is DataSketches' default update seed; SeedHash its 16-bit hash,
// as every image carries it.
const (
	Seed     = 9001
	SeedHash = 0x93cc
)

// Params are a CPC sketch's parameters.
type Params struct{ LgK int }

// DefaultParams returns lg_k 11, the libraries' default.
func DefaultParams() Params { return Params{LgK: DefaultLgK} }

// Validate returns an error wrapping ErrParams unless lg_k is in range.
func (p Params) Validate() error {
	if p.LgK < MinLgK || p.LgK > MaxLgK {
		return fmt.Errorf("cpc: lg_k %d not in [%d, %d]: %w", p.LgK, MinLgK, MaxLgK, ErrParams)
	}
	return nil
}

// String describes the parameters.
func (p Params) String() string { return fmt.Sprintf("lg_k=%d", p.LgK) }

// Sketch is a CPC sketch. It is not safe for concurrent use.
type Sketch struct {
	lib *dscpc.CpcSketch
	p   Params
}

// New returns an empty sketch.
func New(p Params) (*Sketch, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	lib, err := dscpc.NewCpcSketch(p.LgK, Seed)
	if err != nil {
		return nil, fmt.Errorf("cpc: new: %v: %w", err, ErrParams)
	}
	return &Sketch{lib: lib, p: p}, nil
}

// Params returns the sketch's parameters.
func (s *Sketch) Params() Params { return s.p }

// AddInt adds v as update(long) does.
func (s *Sketch) AddInt(v int64) error {
	if err := s.lib.UpdateInt64(v); err != nil {
		return fmt.Errorf("cpc: update: %v: %w", err, ErrCorrupt)
	}
	return nil
}

// AddString adds v's UTF-8 bytes as update(String) does; "" is ignored.
func (s *Sketch) AddString(v string) error {
	if v == "" {
		return nil
	}
	if err := s.lib.UpdateString(v); err != nil {
		return fmt.Errorf("cpc: update: %v: %w", err, ErrCorrupt)
	}
	return nil
}

// Estimate returns the estimated number of distinct ids.
func (s *Sketch) Estimate() float64 { return s.lib.GetEstimate() }

// LowerBound and UpperBound bound it at sd (1 to 3) standard deviations.
func (s *Sketch) LowerBound(sd int) (float64, error) {
	if sd < 1 || sd > 3 {
		return 0, fmt.Errorf("cpc: %d standard deviations not in [1, 3]: %w", sd, ErrParams)
	}
	return s.lib.GetLowerBound(sd), nil
}

// UpperBound: see LowerBound.
func (s *Sketch) UpperBound(sd int) (float64, error) {
	if sd < 1 || sd > 3 {
		return 0, fmt.Errorf("cpc: %d standard deviations not in [1, 3]: %w", sd, ErrParams)
	}
	return s.lib.GetUpperBound(sd), nil
}

// Flavor names the sketch's state as the format does: EMPTY, SPARSE,
// HYBRID, PINNED or SLIDING, from its coupon count (read from its image:
// the library does not tell it).
func (s *Sketch) Flavor() string {
	b, _ := s.MarshalBinary()
	return FlavorOf(b)
}

// FlavorOf names the flavor of an image, "" if it has no preamble.
func FlavorOf(b []byte) string {
	if len(b) < 8 {
		return ""
	}
	var c uint64
	if len(b) >= 12 && b[5]>>2&7 >= 2 {
		c = uint64(binary.LittleEndian.Uint32(b[8:]))
	}
	return [...]string{"EMPTY", "SPARSE", "HYBRID", "PINNED", "SLIDING"}[flavor(int(b[3]), c)]
}

// flavor is the format's flavor of c coupons at lg_k.
func flavor(lgK int, c uint64) int {
	k := uint64(1) << min(lgK, 40)
	switch {
	case c == 0:
		return 0
	case 32*c < 3*k:
		return 1
	case 2*c < k:
		return 2
	case 8*c < 27*k:
		return 3
	}
	return 4
}

// Clone returns an independent copy.
func (s *Sketch) Clone() *Sketch {
	c, err := s.lib.Copy()
	if err != nil {
		panic("cpc: copy: " + err.Error()) // fails for no sketch this package holds
	}
	return &Sketch{lib: c, p: s.p}
}

// AppendBinary appends the compressed image (Java's toByteArray).
func (s *Sketch) AppendBinary(b []byte) ([]byte, error) {
	img, err := s.lib.ToCompactSlice()
	if err != nil {
		return b, fmt.Errorf("cpc: serialize: %v: %w", err, ErrCorrupt)
	}
	return append(b, img...), nil
}

// MarshalBinary returns the compressed image.
func (s *Sketch) MarshalBinary() ([]byte, error) { return s.AppendBinary(nil) }

// MemoryBytes approximates the heap the sketch holds: at most a window
// of K bytes and a table of surprising values.
func (s *Sketch) MemoryBytes() int { return 512 + 1<<s.p.LgK }

// Union returns the union of ss at parameters p: the library's union of
// lg_k p.LgK, whose result has the smallest lg_k of p and of the inputs.
func Union(p Params, ss ...*Sketch) (*Sketch, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	u, err := dscpc.NewCpcUnionSketch(p.LgK, Seed)
	if err != nil {
		return nil, fmt.Errorf("cpc: union: %v: %w", err, ErrParams)
	}
	for _, s := range ss {
		if err := u.Update(s.lib); err != nil {
			return nil, fmt.Errorf("cpc: union: %v: %w", err, ErrCorrupt)
		}
	}
	r, err := u.GetResult()
	if err != nil {
		return nil, fmt.Errorf("cpc: union result: %v: %w", err, ErrCorrupt)
	}
	return &Sketch{lib: r, p: Params{LgK: r.GetLgK()}}, nil
}

// ErrFewerRows is wrapped by Merge's refusal of a sketch of smaller lg_k.
var ErrFewerRows = fmt.Errorf("fewer rows: %w", ErrParams)

// Merge unions o into s, keeping s's lg_k; o of a smaller lg_k is refused
// with ErrFewerRows (the union would reduce s), leaving s unchanged.
func (s *Sketch) Merge(o *Sketch) error {
	if o.p.LgK < s.p.LgK {
		return fmt.Errorf("cpc: a sketch of lg_k %d into one of lg_k %d: %w", o.p.LgK, s.p.LgK, ErrFewerRows)
	}
	u, err := Union(s.p, s, o)
	if err != nil {
		return err
	}
	*s = *u
	return nil
}

// String describes the sketch.
func (s *Sketch) String() string {
	return fmt.Sprintf("cpc{%v, estimate %.1f}", s.p, s.Estimate())
}
