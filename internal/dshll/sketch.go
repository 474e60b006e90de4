package dshll

import (
	"fmt"
	"math"

	dshll "github.com/apache/datasketches-go/hll"
)

// Sketch is a DataSketches HLL sketch. It is not safe for concurrent use.
type Sketch struct {
	lib dshll.HllSketch
	p   Params
}

func sqrtInt(n int) float64 { return math.Sqrt(float64(n)) }

// New returns an empty sketch.
func New(p Params) (*Sketch, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	lib, err := dshll.NewHllSketch(p.LgK, p.Type.lib())
	if err != nil {
		return nil, fmt.Errorf("dshll: new: %v: %w", err, ErrParams)
	}
	return &Sketch{lib: lib, p: p}, nil
}

// Params returns the sketch's parameters.
func (s *Sketch) Params() Params { return s.p }

// IsEmpty reports whether nothing was added.
func (s *Sketch) IsEmpty() bool { return s.lib.IsEmpty() }

// Mode is the current mode: "LIST", "SET" or "HLL".
func (s *Sketch) Mode() string {
	switch int(s.lib.GetCurMode()) {
	case modeList:
		return "LIST"
	case modeSet:
		return "SET"
	}
	return "HLL"
}

// AddInt adds v as update(long) does. The library fails only on a state
// Decode's checks keep out; the error is ErrCorrupt.
func (s *Sketch) AddInt(v int64) error {
	if err := s.lib.UpdateInt64(v); err != nil {
		return fmt.Errorf("dshll: update: %v: %w", err, ErrCorrupt)
	}
	return nil
}

// AddString adds v's UTF-8 bytes as update(String) does; "" is ignored.
func (s *Sketch) AddString(v string) error {
	if v == "" {
		return nil
	}
	if err := s.lib.UpdateString(v); err != nil {
		return fmt.Errorf("dshll: update: %v: %w", err, ErrCorrupt)
	}
	return nil
}

func (s *Sketch) estimate() (float64, error) {
	e, err := s.lib.GetEstimate()
	if err != nil {
		return 0, fmt.Errorf("%v: %w", err, ErrCorrupt)
	}
	return e, nil
}

// Estimate returns the estimated number of distinct ids.
func (s *Sketch) Estimate() float64 {
	e, _ := s.estimate()
	return e
}

// LowerBound and UpperBound bound the number of distinct ids at sd (1 to
// 3) standard deviations, as the library computes them.
func (s *Sketch) LowerBound(sd int) (float64, error) {
	if sd < 1 || sd > 3 {
		return 0, fmt.Errorf("dshll: %d standard deviations not in [1, 3]: %w", sd, ErrParams)
	}
	return s.lib.GetLowerBound(sd)
}

// UpperBound: see LowerBound.
func (s *Sketch) UpperBound(sd int) (float64, error) {
	if sd < 1 || sd > 3 {
		return 0, fmt.Errorf("dshll: %d standard deviations not in [1, 3]: %w", sd, ErrParams)
	}
	return s.lib.GetUpperBound(sd)
}

// Clone returns an independent copy.
func (s *Sketch) Clone() *Sketch {
	c, err := s.lib.Copy()
	if err != nil {
		panic("dshll: copy: " + err.Error()) // Copy fails for no sketch this package holds
	}
	return &Sketch{lib: c, p: s.p}
}

// SizeBytes is the length of the compact image.
func (s *Sketch) SizeBytes() int {
	b, _ := s.AppendBinary(nil)
	return len(b)
}

// MemoryBytes approximates the heap the sketch holds.
func (s *Sketch) MemoryBytes() int { return 256 + 2*s.lib.GetUpdatableSerializationBytes() }

// Union returns the union of ss at parameters p, as DataSketches' union
// of lg_max_k p.LgK computes it: the result has the smallest lg_k of p and
// of the inputs in HLL mode (sketches in HLL mode with more registers are
// downsampled), in p's target type.
//
// datasketches-go v0.2.0's union leaves the downsampling cases
// unimplemented and merges a source with fewer registers without
// downsampling the union (which Java's union does), so this function
// never gives it either: it downsamples every HLL-mode input with more
// registers than the result first (downsample), and runs the library's
// union at the result's lg_k, where it agrees with Java's bit for bit
// (java_interop_test.go).
func Union(p Params, ss ...*Sketch) (*Sketch, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	lgK := p.LgK
	for _, s := range ss {
		if s.Mode() == "HLL" {
			lgK = min(lgK, s.p.LgK)
		}
	}
	u, err := dshll.NewUnion(lgK)
	if err != nil {
		return nil, fmt.Errorf("dshll: union: %v: %w", err, ErrParams)
	}
	for _, s := range ss {
		src := s.lib
		if s.Mode() == "HLL" && s.p.LgK > lgK {
			if src, err = downsample(s, lgK); err != nil {
				return nil, err
			}
		}
		if err := u.UpdateSketch(src); err != nil {
			return nil, fmt.Errorf("dshll: union: %v: %w", err, ErrCorrupt)
		}
	}
	r, err := u.GetResult(p.Type.lib())
	if err != nil {
		return nil, fmt.Errorf("dshll: union result: %v: %w", err, ErrCorrupt)
	}
	return &Sketch{lib: r, p: Params{LgK: r.GetLgConfigK(), Type: p.Type}}, nil
}

// downsample returns s (in HLL mode) with 2^lgK registers, lgK below its
// own: register j keeps the largest value of the registers whose index
// is j modulo 2^lgK (a register's value does not depend on lg_k; its
// index is the hash's low lg_k bits). It reads s's registers from its
// HLL_8 image and hands the library an HLL_8 image of the folded
// registers, out of order and flagged for the library to rebuild
// cur_min, its count and KxQ from them.
func downsample(s *Sketch, lgK int) (dshll.HllSketch, error) {
	h8, err := s.lib.CopyAs(dshll.TgtHllTypeHll8)
	if err != nil {
		return nil, fmt.Errorf("dshll: downsample: %v: %w", err, ErrCorrupt)
	}
	img, err := h8.ToUpdatableSlice()
	if err != nil || len(img) < hllStart+s.p.K() {
		return nil, fmt.Errorf("dshll: downsample: an HLL_8 image of %d bytes (%v): %w", len(img), err, ErrCorrupt)
	}
	out := make([]byte, hllStart+1<<lgK)
	copy(out, []byte{preIntsHLL, serialVersion, family, byte(lgK), 0, flagOutOfOrd | flagRebuild, 0, modeHLL | byte(HLL8)<<2})
	mask := 1<<lgK - 1
	for i, v := range img[hllStart : hllStart+s.p.K()] {
		out[hllStart+i&mask] = max(out[hllStart+i&mask], v)
	}
	d, err := dshll.NewHllSketchFromSlice(out, true)
	if err != nil {
		return nil, fmt.Errorf("dshll: downsample: %v: %w", err, ErrCorrupt)
	}
	return d, nil
}

// ErrFewerRegisters is wrapped by Merge's refusal of a sketch with fewer
// registers in HLL mode: the union would drop the receiver's precision.
var ErrFewerRegisters = fmt.Errorf("fewer registers: %w", ErrParams)

// Merge unions o into s, keeping s's parameters; o in HLL mode with a
// smaller lg_k (which would downsample s) is refused with
// ErrFewerRegisters, leaving s unchanged.
func (s *Sketch) Merge(o *Sketch) error {
	if o.Mode() == "HLL" && o.p.LgK < s.p.LgK {
		return fmt.Errorf("dshll: a sketch of lg_k %d (HLL mode) into one of lg_k %d: %w", o.p.LgK, s.p.LgK, ErrFewerRegisters)
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
	return fmt.Sprintf("ds_hll{%v, %s, estimate %.1f}", s.p, s.Mode(), s.Estimate())
}
