package dshll

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	dshll "github.com/apache/datasketches-go/hll"
)

// Preamble fields (see doc.go).
const (
	serialVersion = 1
	family        = 7

	preIntsList = 2
	preIntsSet  = 3
	preIntsHLL  = 10

	modeList = 0
	modeSet  = 1
	modeHLL  = 2

	flagBigEndian = 1
	flagReadOnly  = 2
	flagEmpty     = 4
	flagCompact   = 8
	flagOutOfOrd  = 16
	flagRebuild   = 32
	flagsKnown    = flagBigEndian | flagReadOnly | flagEmpty | flagCompact | flagOutOfOrd | flagRebuild

	listStart    = 8
	setStart     = 12
	hllStart     = 40
	listArrLg    = 3              // a LIST image's array: 8 slots
	maxListCount = 1 << listArrLg // a full list becomes a set: at most 7
)

// Sniff reports whether b starts like a DataSketches HLL sketch
// (serialization version 1, family 7, a known preamble size).
func Sniff(b []byte) bool {
	return len(b) >= 8 && b[1] == serialVersion && b[2] == family && (b[0] == preIntsList || b[0] == preIntsSet || b[0] == preIntsHLL)
}

// initialLgAux is log2 of the slots of an HLL_4 sketch's first aux array
// at lg_k, which updatable images carry even while it is empty: 2 up to
// lg_k 6, 3 to 9, 4 to 11, 5 to 13, then lg_k - 8 (the libraries'
// LG_AUX_ARR_INTS).
func initialLgAux(lgK int) int {
	switch {
	case lgK <= 6:
		return 2
	case lgK <= 9:
		return 3
	case lgK <= 11:
		return 4
	case lgK <= 13:
		return 5
	}
	return lgK - 8
}

// registerBytes is the size of the register array of type t at lg_k.
func registerBytes(t Type, lgK int) int {
	k := 1 << lgK
	switch t {
	case HLL4:
		return k / 2
	case HLL6:
		return k*3/4 + 1
	}
	return k
}

// ParamsOf reads the parameters from a preamble; it does not validate
// the rest (Decode does).
func ParamsOf(b []byte) (Params, error) {
	if len(b) < 8 {
		return Params{}, fmt.Errorf("dshll: preamble needs 8 bytes, have %d: %w", len(b), ErrTooShort)
	}
	p := Params{LgK: int(b[3]), Type: Type(b[7] >> 2 & 3)}
	if p.LgK < MinLgK || p.LgK > MaxLgK {
		return Params{}, fmt.Errorf("dshll: lg_k %d at byte 3 not in [%d, %d]: %w", p.LgK, MinLgK, MaxLgK, ErrParams)
	}
	if p.Type > HLL8 {
		return Params{}, fmt.Errorf("dshll: target type %d in byte 7: %w", p.Type, ErrCorrupt)
	}
	return p, nil
}

// check validates b as doc.go lays it out, before the library reads it.
// See Decode for the errors.
func check(b []byte) (Params, error) {
	if len(b) < 8 {
		return Params{}, fmt.Errorf("dshll: preamble needs 8 bytes, have %d: %w", len(b), ErrTooShort)
	}
	if b[1] != serialVersion {
		return Params{}, fmt.Errorf("dshll: serialization version %d at byte 1, want 1: %w", b[1], ErrVersion)
	}
	if b[2] != family {
		return Params{}, fmt.Errorf("dshll: family %d at byte 2, want 7 (HLL): %w", b[2], ErrCorrupt)
	}
	p, err := ParamsOf(b)
	if err != nil {
		return Params{}, err
	}
	flags, mode := b[5], int(b[7]&3)
	compact := flags&flagCompact != 0
	switch {
	case flags&^flagsKnown != 0 || flags&flagBigEndian != 0:
		return Params{}, fmt.Errorf("dshll: flags %#02x at byte 5: %w", flags, ErrCorrupt)
	case b[7]>>4 != 0 || mode == 3:
		return Params{}, fmt.Errorf("dshll: mode byte %#02x at byte 7: %w", b[7], ErrCorrupt)
	case mode == modeList && b[0] != preIntsList, mode == modeSet && b[0] != preIntsSet, mode == modeHLL && b[0] != preIntsHLL:
		return Params{}, fmt.Errorf("dshll: %d preamble ints at byte 0 for mode %d: %w", b[0], mode, ErrCorrupt)
	}
	size := func(want int) error {
		switch {
		case len(b) < want:
			return fmt.Errorf("dshll: mode %d needs %d bytes, have %d: %w", mode, want, len(b), ErrTooShort)
		case len(b) > want:
			return fmt.Errorf("dshll: %d trailing bytes at byte %d: %w", len(b)-want, want, ErrCorrupt)
		}
		return nil
	}
	// coupons checks n coupons from start: none free, none repeated
	// (the library would count a repeat twice).
	coupons := func(start, n int) error {
		seen := make(map[uint32]bool, n)
		for i := range n {
			c := binary.LittleEndian.Uint32(b[start+4*i:])
			switch {
			case c == 0:
				return fmt.Errorf("dshll: free coupon at byte %d among %d: %w", start+4*i, n, ErrCorrupt)
			case seen[c]:
				return fmt.Errorf("dshll: coupon %#x at byte %d repeated: %w", c, start+4*i, ErrCorrupt)
			}
			seen[c] = true
		}
		return nil
	}
	switch mode {
	case modeList:
		n := int(b[6])
		if flags&flagEmpty != 0 && n != 0 {
			return Params{}, fmt.Errorf("dshll: empty flag with %d coupons: %w", n, ErrCorrupt)
		}
		if n >= maxListCount {
			return Params{}, fmt.Errorf("dshll: %d coupons at byte 6, more than a list holds (%d): %w", n, maxListCount-1, ErrCorrupt)
		}
		want := listStart + 4*n
		if !compact && len(b) != listStart {
			if b[4] != listArrLg {
				return Params{}, fmt.Errorf("dshll: list array of 2^%d slots at byte 4, want 2^%d: %w", b[4], listArrLg, ErrCorrupt)
			}
			want = listStart + 4<<listArrLg
		}
		if err := size(want); err != nil {
			return Params{}, err
		}
		return p, coupons(listStart, n)
	case modeSet:
		if len(b) < setStart {
			return Params{}, fmt.Errorf("dshll: set preamble needs %d bytes, have %d: %w", setStart, len(b), ErrTooShort)
		}
		n := uint64(binary.LittleEndian.Uint32(b[8:]))
		want := uint64(setStart) + 4*n
		if !compact {
			lgArr := int(b[4])
			if lgArr < 5 || lgArr > 26 || n > 1<<lgArr {
				return Params{}, fmt.Errorf("dshll: set array of 2^%d slots at byte 4 for %d coupons: %w", lgArr, n, ErrCorrupt)
			}
			want = uint64(setStart) + 4<<lgArr
		}
		if uint64(len(b)) < want {
			return Params{}, fmt.Errorf("dshll: %d coupons need %d bytes, have %d: %w", n, want, len(b), ErrTooShort)
		}
		if err := size(int(want)); err != nil {
			return Params{}, err
		}
		if n == 0 || n > uint64(p.K()) {
			return Params{}, fmt.Errorf("dshll: %d coupons at byte 8 in SET mode of %d registers: %w", n, p.K(), ErrCorrupt)
		}
		if compact {
			return p, coupons(setStart, int(n))
		}
		filled := 0
		seen := make(map[uint32]bool, n)
		for i := setStart; i < len(b); i += 4 {
			if c := binary.LittleEndian.Uint32(b[i:]); c != 0 {
				if seen[c] {
					return Params{}, fmt.Errorf("dshll: coupon %#x at byte %d repeated: %w", c, i, ErrCorrupt)
				}
				seen[c] = true
				filled++
			}
		}
		if uint64(filled) != n {
			return Params{}, fmt.Errorf("dshll: %d filled slots, not the %d coupons at byte 8: %w", filled, n, ErrCorrupt)
		}
		return p, nil
	}
	// HLL mode.
	if len(b) < hllStart {
		return Params{}, fmt.Errorf("dshll: HLL preamble needs %d bytes, have %d: %w", hllStart, len(b), ErrTooShort)
	}
	// The HIP accumulator and KxQ0 are sums of positive terms; KxQ1 sums
	// 2^-v - 1 over registers of 32 and more, so it is negative when
	// there are any.
	for _, at := range []int{8, 16, 24} {
		if v := math.Float64frombits(binary.LittleEndian.Uint64(b[at:])); math.IsNaN(v) || math.IsInf(v, 0) || (v < 0 && at != 24) {
			return Params{}, fmt.Errorf("dshll: accumulator %v at byte %d: %w", v, at, ErrCorrupt)
		}
	}
	if cm := b[6]; cm > 63 {
		return Params{}, fmt.Errorf("dshll: cur_min %d at byte 6: %w", cm, ErrCorrupt)
	}
	if n := binary.LittleEndian.Uint32(b[32:]); uint64(n) > uint64(p.K()) {
		return Params{}, fmt.Errorf("dshll: %d registers at cur_min (byte 32), more than %d: %w", n, p.K(), ErrCorrupt)
	}
	aux := uint64(binary.LittleEndian.Uint32(b[36:]))
	want := uint64(hllStart + registerBytes(p.Type, p.LgK))
	switch {
	case p.Type != HLL4 && aux != 0:
		return Params{}, fmt.Errorf("dshll: %d aux entries at byte 36 in a %s sketch: %w", aux, p.Type, ErrCorrupt)
	case aux > uint64(p.K()):
		return Params{}, fmt.Errorf("dshll: %d aux entries at byte 36, more than %d registers: %w", aux, p.K(), ErrCorrupt)
	case p.Type == HLL4 && compact:
		want += 4 * aux
	case p.Type == HLL4:
		lgAux := int(b[4])
		if lgAux == 0 {
			// No aux map yet: the libraries write 0 there and the
			// initial array's slots after the registers.
			lgAux = initialLgAux(p.LgK)
		}
		if lgAux < 2 || lgAux > p.LgK || aux > 1<<lgAux {
			return Params{}, fmt.Errorf("dshll: aux array of 2^%d slots at byte 4 for %d entries: %w", lgAux, aux, ErrCorrupt)
		}
		want += 4 << lgAux
	}
	if uint64(len(b)) < want {
		return Params{}, fmt.Errorf("dshll: %s registers need %d bytes, have %d: %w", p.Type, want, len(b), ErrTooShort)
	}
	if err := size(int(want)); err != nil {
		return Params{}, err
	}
	if err := checkRegisters(b, p, flags&flagRebuild != 0); err != nil {
		return Params{}, err
	}
	if p.Type == HLL4 {
		if err := checkAux(b, p, int(aux), compact); err != nil {
			return Params{}, err
		}
	}
	return p, nil
}

// checkRegisters checks the registers against the preamble: every value
// fits 6 bits (at most 63, cur_min + 14 for an HLL_4 register outside the
// aux map), and unless the image asks the reader to rebuild them, the
// count at cur_min is the registers'. The
// libraries keep these exact; the library here computes with them
// unchecked.
func checkRegisters(b []byte, p Params, rebuild bool) error {
	curMin := int(b[6])
	regs := b[hllStart : hllStart+registerBytes(p.Type, p.LgK)]
	atMin := 0
	switch p.Type {
	case HLL4:
		// Above 48 the aux token is the only 4-bit value that fits.
		limit := byte(max(0, min(14, 63-curMin)))
		for i, x := range regs {
			for j, v := range [2]byte{x & 15, x >> 4} {
				switch {
				case v == 0:
					atMin++
				case v != auxToken && v > limit:
					return fmt.Errorf("dshll: register %d holds cur_min %d + %d, more than 63: %w", 2*i+j, curMin, v, ErrCorrupt)
				}
			}
		}
	case HLL6:
		for i := range p.K() {
			bit := 6 * i
			if v := (int(regs[bit/8]) | int(regs[bit/8+1])<<8) >> (bit % 8) & 63; v == curMin {
				atMin++
			}
		}
	default:
		for i, v := range regs {
			switch {
			case v > 63:
				return fmt.Errorf("dshll: register %d holds %d, more than 63: %w", i, v, ErrCorrupt)
			case int(v) == curMin:
				atMin++
			}
		}
	}
	if n := int(binary.LittleEndian.Uint32(b[32:])); !rebuild && n != atMin {
		return fmt.Errorf("dshll: %d registers at cur_min (byte 32), but %d are: %w", n, atMin, ErrCorrupt)
	}
	return nil
}

// auxToken is the 4-bit register value of an HLL_4 register whose value
// is in the aux map (it is at least cur_min + 15).
const auxToken = 15

// checkAux checks that an HLL_4 image's aux map holds exactly the
// registers whose 4-bit value is the aux token, each once, with a value
// the 4 bits could not hold: the library looks the former up in the
// latter unchecked.
func checkAux(b []byte, p Params, aux int, compact bool) error {
	regs := b[hllStart : hllStart+registerBytes(HLL4, p.LgK)]
	tokens := 0
	for _, x := range regs {
		if x&15 == auxToken {
			tokens++
		}
		if x>>4 == auxToken {
			tokens++
		}
	}
	if tokens != aux {
		return fmt.Errorf("dshll: %d registers point into the aux map, which holds %d: %w", tokens, aux, ErrCorrupt)
	}
	if aux == 0 {
		return nil
	}
	curMin := int(b[6])
	seen := make(map[uint32]bool, aux)
	for at := hllStart + len(regs); at < len(b); at += 4 {
		pair := binary.LittleEndian.Uint32(b[at:])
		if pair == 0 {
			if compact {
				return fmt.Errorf("dshll: free aux entry at byte %d: %w", at, ErrCorrupt)
			}
			continue
		}
		slot, v := pair&(1<<26-1), int(pair>>26)
		switch {
		case slot >= uint32(p.K()):
			return fmt.Errorf("dshll: aux entry at byte %d for register %d of %d: %w", at, slot, p.K(), ErrCorrupt)
		case seen[slot]:
			return fmt.Errorf("dshll: aux entry at byte %d repeats register %d: %w", at, slot, ErrCorrupt)
		case regs[slot/2]>>(4*(slot%2))&15 != auxToken:
			return fmt.Errorf("dshll: aux entry at byte %d for register %d, which does not point there: %w", at, slot, ErrCorrupt)
		case v < curMin+auxToken:
			return fmt.Errorf("dshll: aux value %d at byte %d below cur_min %d + 15: %w", v, at, curMin, ErrCorrupt)
		}
		seen[slot] = true
	}
	if len(seen) != aux {
		return fmt.Errorf("dshll: %d aux entries, not the %d at byte 36: %w", len(seen), aux, ErrCorrupt)
	}
	return nil
}

// Decode decodes a DataSketches HLL sketch image (doc.go lays out the
// bytes and lists the errors). The bytes are validated before the library
// reads them; whatever the library still refuses, or panics on, is
// ErrCorrupt. The sketch keeps nothing of b: the library reads an HLL
// mode image's registers in place, so it is handed a copy (b may be a
// request buffer that a later request reuses).
func Decode(b []byte) (s *Sketch, err error) {
	p, err := check(b)
	if err != nil {
		return nil, err
	}
	b = bytes.Clone(b)
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("dshll: the library failed on the image: %v: %w", r, ErrCorrupt)
		}
	}()
	lib, err := dshll.NewHllSketchFromSlice(b, true)
	if err != nil {
		return nil, fmt.Errorf("dshll: %v: %w", err, ErrCorrupt)
	}
	if lib.GetLgConfigK() != p.LgK || Type(lib.GetTgtHllType()) != p.Type {
		return nil, fmt.Errorf("dshll: the library read lg_k %d %v from a %v image: %w", lib.GetLgConfigK(), lib.GetTgtHllType(), p, ErrCorrupt)
	}
	out := &Sketch{lib: lib, p: p}
	if _, err := out.estimate(); err != nil {
		return nil, fmt.Errorf("dshll: estimate: %w", err)
	}
	return out, nil
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

// AppendBinary appends the compact image (Java's toCompactByteArray).
func (s *Sketch) AppendBinary(b []byte) ([]byte, error) {
	img, err := s.lib.ToCompactSlice()
	if err != nil {
		return b, fmt.Errorf("dshll: serialize: %w", err)
	}
	return append(b, img...), nil
}

// MarshalBinary returns the compact image.
func (s *Sketch) MarshalBinary() ([]byte, error) { return s.AppendBinary(nil) }

// AppendUpdatable appends the updatable image (Java's
// toUpdatableByteArray, what Spark's hll_sketch_agg returns).
func (s *Sketch) AppendUpdatable(b []byte) ([]byte, error) {
	img, err := s.lib.ToUpdatableSlice()
	if err != nil {
		return b, fmt.Errorf("dshll: serialize: %w", err)
	}
	return append(b, img...), nil
}
