package cpc

import (
	"encoding/binary"
	"fmt"
	"math"

	dscpc "github.com/apache/datasketches-go/cpc"
)

const (
	serialVersion = 1
	family        = 16

	flagBigEndian  = 1
	flagCompressed = 2
	flagHIP        = 4
	flagSV         = 8
	flagWindow     = 16
)

// preInts is the preamble size, in 32-bit words, of each format.
var preInts = [8]int{2, 2, 4, 8, 4, 8, 6, 10}

// fields are the byte offsets of each format's preamble fields (0: the
// format has none): coupons, surprising values, KxP, HIP accumulator,
// surprising-value words, window words.
var fields = [8][6]int{
	{},
	{},
	{8, 0, 0, 0, 12, 0},
	{8, 0, 16, 24, 12, 0},
	{8, 0, 0, 0, 0, 12},
	{8, 0, 16, 24, 0, 12},
	{8, 12, 0, 0, 16, 20},
	{8, 12, 16, 24, 32, 36},
}

// Sniff reports whether b starts like a CPC sketch (serialization
// version 1, family 16).
func Sniff(b []byte) bool { return len(b) >= 8 && b[1] == serialVersion && b[2] == family }

// check validates the preamble of b (see doc.go) and returns its
// parameters.
func check(b []byte) (Params, error) {
	if len(b) < 8 {
		return Params{}, fmt.Errorf("cpc: preamble needs 8 bytes, have %d: %w", len(b), ErrTooShort)
	}
	if b[1] != serialVersion {
		return Params{}, fmt.Errorf("cpc: serialization version %d at byte 1, want 1: %w", b[1], ErrVersion)
	}
	if b[2] != family {
		return Params{}, fmt.Errorf("cpc: family %d at byte 2, want 16 (CPC): %w", b[2], ErrCorrupt)
	}
	p := Params{LgK: int(b[3])}
	if err := p.Validate(); err != nil {
		return Params{}, fmt.Errorf("cpc: lg_k %d at byte 3 not in [%d, %d]: %w", p.LgK, MinLgK, MaxLgK, ErrParams)
	}
	flags := b[5]
	format := int(flags >> 2 & 7)
	switch {
	case flags&flagBigEndian != 0 || flags&flagCompressed == 0 || flags>>5 != 0:
		return Params{}, fmt.Errorf("cpc: flags %#02x at byte 5: %w", flags, ErrCorrupt)
	case int(b[0]) != preInts[format]:
		return Params{}, fmt.Errorf("cpc: %d preamble ints at byte 0, format %d has %d: %w", b[0], format, preInts[format], ErrCorrupt)
	case b[4] > 63:
		return Params{}, fmt.Errorf("cpc: first column %d at byte 4: %w", b[4], ErrCorrupt)
	}
	if sh := binary.LittleEndian.Uint16(b[6:]); sh != SeedHash {
		return Params{}, fmt.Errorf("cpc: seed hash %#04x at byte 6, want %#04x (seed %d): %w", sh, SeedHash, Seed, ErrParams)
	}
	pre := 4 * preInts[format]
	if len(b) < pre {
		return Params{}, fmt.Errorf("cpc: format %d's preamble needs %d bytes, have %d: %w", format, pre, len(b), ErrTooShort)
	}
	if format < 2 {
		if len(b) != pre {
			return Params{}, fmt.Errorf("cpc: %d trailing bytes after an empty sketch: %w", len(b)-pre, ErrCorrupt)
		}
		return p, nil
	}
	f := fields[format]
	u32 := func(at int) uint64 {
		if at == 0 {
			return 0
		}
		return uint64(binary.LittleEndian.Uint32(b[at:]))
	}
	coupons, sv, svWords, wWords := u32(f[0]), u32(f[1]), u32(f[4]), u32(f[5])
	if format < 4 {
		sv = coupons // sparse and hybrid: every coupon is a surprising value
	}
	k := uint64(1) << p.LgK
	want := uint64(pre) + 4*(svWords+wWords)
	fl := flavor(p.LgK, coupons)
	switch {
	case coupons == 0 || coupons > 64*k:
		return Params{}, fmt.Errorf("cpc: %d coupons at byte 8 in %d rows of 64 columns: %w", coupons, k, ErrCorrupt)
	case uint64(len(b)) < want:
		return Params{}, fmt.Errorf("cpc: streams of %d and %d words need %d bytes, have %d: %w", svWords, wWords, want, len(b), ErrTooShort)
	case uint64(len(b)) > want:
		return Params{}, fmt.Errorf("cpc: %d trailing bytes at byte %d: %w", uint64(len(b))-want, want, ErrCorrupt)
	case (svWords > 0) != (flags&flagSV != 0) || (wWords > 0) != (flags&flagWindow != 0):
		return Params{}, fmt.Errorf("cpc: flags %#02x disagree with streams of %d and %d words: %w", flags, svWords, wWords, ErrCorrupt)
	case (sv > 0) != (svWords > 0) || sv > 16*svWords || sv > coupons:
		return Params{}, fmt.Errorf("cpc: %d surprising values in %d words: %w", sv, svWords, ErrCorrupt)
	case format < 4 && fl > 2, format >= 4 && fl < 3:
		return Params{}, fmt.Errorf("cpc: %d coupons do not fit format %d: %w", coupons, format, ErrCorrupt)
	case (wWords > 0) != (format >= 4):
		return Params{}, fmt.Errorf("cpc: a window of %d words in format %d: %w", wWords, format, ErrCorrupt)
	case 8*4*wWords < k && format >= 4:
		return Params{}, fmt.Errorf("cpc: a window of %d rows compressed into %d words: %w", k, wWords, ErrCorrupt)
	case (flags&flagHIP != 0) != (format&1 == 1):
		return Params{}, fmt.Errorf("cpc: flags %#02x disagree with format %d on HIP: %w", flags, format, ErrCorrupt)
	}
	if format&1 == 1 {
		for _, at := range []int{f[2], f[3]} {
			if v := math.Float64frombits(binary.LittleEndian.Uint64(b[at:])); math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return Params{}, fmt.Errorf("cpc: %v at byte %d: %w", v, at, ErrCorrupt)
			}
		}
	}
	return p, nil
}

// Decode decodes a CPC image (doc.go lays out the bytes and lists the
// errors). The preamble is checked before the library reads it; a
// stream the library cannot decompress, or a panic of the library on
// one, is ErrCorrupt.
func Decode(b []byte) (s *Sketch, err error) {
	p, err := check(b)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("cpc: the library failed on the image: %v: %w", r, ErrCorrupt)
		}
	}()
	lib, err := dscpc.NewCpcSketchFromSlice(b, Seed)
	if err != nil {
		return nil, fmt.Errorf("cpc: %v: %w", err, ErrCorrupt)
	}
	if lib.GetLgK() != p.LgK {
		return nil, fmt.Errorf("cpc: the library read lg_k %d from an image of %d: %w", lib.GetLgK(), p.LgK, ErrCorrupt)
	}
	// The library keeps what it decompressed without checking that it
	// is the coupons the preamble promised; a sketch that is not
	// re-serializes differently or fails to.
	s = &Sketch{lib: lib, p: p}
	if _, err := s.MarshalBinary(); err != nil {
		return nil, err
	}
	if e := s.Estimate(); math.IsNaN(e) || e < 0 {
		return nil, fmt.Errorf("cpc: estimate %v: %w", e, ErrCorrupt)
	}
	return s, nil
}

// UnmarshalBinary replaces s with the sketch in b; on error s is
// unchanged.
func (s *Sketch) UnmarshalBinary(b []byte) error {
	d, err := Decode(b)
	if err != nil {
		return err
	}
	*s = *d
	return nil
}
