package theta

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// The compact theta sketch format, serial version 3 (little-endian):
//
//	byte 0     preamble longs: 1 (empty, or one hash while exact), 2 (exact),
//	           3 (estimating: theta follows)
//	byte 1     serial version, 3
//	byte 2     family, 3 (compact theta)
//	bytes 3-4  lg_nom and lg_arr in update sketches; unused in compact ones
//	           (the libraries write 0 and never read them; AppendStored
//	           keeps lg_k in byte 3)
//	byte 5     flags: 1 big-endian (never), 2 read-only, 4 empty, 8 compact,
//	           16 ordered, 32 single item (Java only)
//	bytes 6-7  seed hash
//	bytes 8-11 number of hashes (preamble longs >= 2)
//	bytes 12-15 unused in compact sketches (Java writes p, the float32
//	           1.0, there; C++ and Python write 0; no reader uses it)
//	bytes 16-23 theta (preamble longs 3)
//	then the hashes, 8 bytes each, ascending when ordered
const (
	serialVersion = 3
	familyCompact = 3

	flagBigEndian  = 1
	flagReadOnly   = 2
	flagEmpty      = 4
	flagCompact    = 8
	flagOrdered    = 16
	flagSingleItem = 32
	flagsKnown     = flagBigEndian | flagReadOnly | flagEmpty | flagCompact | flagOrdered | flagSingleItem
)

func (s *Sketch) preambleLongs() int {
	switch {
	case s.IsEstimationMode():
		return 3
	case s.empty || s.Retained() == 1:
		return 1
	}
	return 2
}

// MarshalBinary encodes the sketch as DataSketches' C++ and Python
// libraries serialize an ordered compact sketch.
func (s *Sketch) MarshalBinary() ([]byte, error) {
	return s.AppendBinary(make([]byte, 0, s.SizeBytes()))
}

// AppendBinary appends the ordered compact encoding of s to b: the bytes
// compact_theta_sketch::serialize writes for the same contents (the empty
// sketch with the seed hash, as C++ writes it; Java writes zero there, and
// Decode accepts both). It never fails; the error is for
// encoding.BinaryAppender.
func (s *Sketch) AppendBinary(b []byte) ([]byte, error) {
	pre := s.preambleLongs()
	flags := byte(flagCompact | flagReadOnly | flagOrdered)
	if s.empty {
		flags |= flagEmpty
	}
	b = append(b, byte(pre), serialVersion, familyCompact, 0, 0, flags)
	b = binary.LittleEndian.AppendUint16(b, SeedHash())
	if pre > 1 {
		b = binary.LittleEndian.AppendUint32(b, uint32(s.Retained()))
		b = binary.LittleEndian.AppendUint32(b, 0)
	}
	if pre > 2 {
		b = binary.LittleEndian.AppendUint64(b, s.theta)
	}
	if s.empty {
		return b, nil
	}
	if s.table == nil {
		for _, h := range s.sorted {
			b = binary.LittleEndian.AppendUint64(b, h)
		}
		return b, nil
	}
	n := len(b)
	for _, h := range s.table {
		if h != 0 {
			b = binary.LittleEndian.AppendUint64(b, h)
		}
	}
	sortLongs(b[n:])
	return b, nil
}

// AppendStored appends the encoding AppendBinary writes, except that byte
// 3 holds lg_k: the preamble's lg_nom field, which DataSketches' update
// sketches use for exactly this and its compact-sketch readers (Java, C++,
// Python) ignore. Decode then restores the sketch's parameters, which the
// compact format otherwise does not record; the libraries read these bytes
// as the same sketch.
func (s *Sketch) AppendStored(b []byte) []byte {
	n := len(b)
	b, _ = s.AppendBinary(b)
	b[n+3] = s.lgK
	return b
}

// sortLongs sorts the little-endian uint64s in b in place.
func sortLongs(b []byte) {
	e := make([]uint64, len(b)/8)
	for i := range e {
		e[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	slices.Sort(e)
	for i, h := range e {
		binary.LittleEndian.PutUint64(b[8*i:], h)
	}
}

// Sniff reports whether b starts like a theta sketch sketchd reads: a
// compact sketch of serial version 3 (preamble longs 1 to 3, family 3) or
// 4 (compressed: preamble longs 1 or 2, family 3), or Java's update
// sketch (preamble longs 3 under the resize-factor bits, serial version
// 3, family 2). It does not validate the rest; Decode does.
func Sniff(b []byte) bool {
	if len(b) < 8 {
		return false
	}
	switch {
	case b[1] == serialVersion && b[2] == familyCompact:
		return b[0] >= 1 && b[0] <= 3
	case b[1] == serialVersionCompressed && b[2] == familyCompact:
		return b[0] >= 1 && b[0] <= 2
	case b[1] == serialVersion && b[2] == familyUpdate:
		return b[0]&0x3f == updatePreLongs
	}
	return false
}

// Decode decodes a compact theta sketch (see DecodeParams for what is
// accepted and the errors) with the parameters the bytes imply: lg_k from
// byte 3 when it holds one in range (AppendStored writes it there);
// otherwise the default, 12, or the smallest lg_k that keeps all the
// retained hashes if that is larger. The libraries write 0 in byte 3, so
// their sketches decode at lg_k 12 or more: never fewer hashes than they
// hold, and no bound changes (the estimate and bounds depend only on the
// hashes and theta).
func Decode(b []byte) (*Sketch, error) {
	return DecodeParams(b, ParamsOf(b))
}

// ParamsOf returns the parameters Decode uses for b (valid whatever b is).
func ParamsOf(b []byte) Params {
	compressed := len(b) >= 8 && b[1] == serialVersionCompressed
	if !compressed && len(b) >= 4 && int(b[3]) >= MinLgK && int(b[3]) <= MaxLgK {
		return Params{LgK: int(b[3])}
	}
	p := DefaultParams()
	n := 0
	switch {
	case compressed:
		n, _ = compressedCount(b)
	case len(b) >= 12 && b[0] >= 2:
		n = int(binary.LittleEndian.Uint32(b[8:]))
	}
	for p.LgK < MaxLgK && p.MaxRetained() < n {
		p.LgK++
	}
	return p
}

// UnmarshalBinary replaces s with the sketch encoded in b, keeping s's
// lg_k (see DecodeParams). On error s is unchanged.
func (s *Sketch) UnmarshalBinary(b []byte) error {
	d, err := DecodeParams(b, s.Params())
	if err != nil {
		return err
	}
	*s = *d
	return nil
}

// DecodeParams decodes a theta sketch as DataSketches' Java, C++ and
// Python libraries write it, into a sketch with parameters p: the compact
// format does not record lg_k, which decides how the sketch keeps growing.
// It accepts serial version 4 (compressed; decodeCompressed in
// compressed.go documents it), Java's update sketch (family 2;
// decodeUpdate in update.go), and the compact sketch of serial version 3:
//
//   - the empty form: 8 bytes, preamble 1, the empty flag, seed hash 0
//     (Java) or the hash of seed 9001 (C++, Python);
//   - the single-item form: 16 bytes, preamble 1, one hash, theta 1, with
//     or without Java's single-item flag;
//   - preamble 2 (exact) and 3 (estimating, theta in (0, 2^63-1]) with
//     exactly the declared number of hashes, ordered or not.
//
// Errors: fewer bytes than the preamble or the declared hashes need:
// ErrTooShort. A serial version other than 3 or 4: ErrVersion. The seed
// hash of another seed, an invalid p, or more hashes than p keeps
// (Params.MaxRetained): ErrParams. Another family, the big-endian, unknown
// or missing compact flag, a preamble that does not fit the flags,
// trailing bytes, or a hash that is zero, not below theta, out of order or
// repeated: ErrCorrupt. Nothing is allocated before the length is checked
// against the declared count.
func DecodeParams(b []byte, p Params) (*Sketch, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if len(b) < 8 {
		return nil, fmt.Errorf("theta: preamble needs 8 bytes, have %d: %w", len(b), ErrTooShort)
	}
	switch {
	case b[1] == serialVersionCompressed:
		return decodeCompressed(b, p)
	case b[1] != serialVersion:
		return nil, fmt.Errorf("theta: serial version %d at byte 1, want 3 or 4: %w", b[1], ErrVersion)
	case b[2] == familyUpdate:
		return decodeUpdate(b, p)
	}
	if b[2] != familyCompact {
		return nil, fmt.Errorf("theta: family %d at byte 2, want 3 (compact theta sketch): %w", b[2], ErrCorrupt)
	}
	pre, flags := int(b[0]), b[5]
	switch {
	case flags&^flagsKnown != 0 || flags&flagBigEndian != 0:
		return nil, fmt.Errorf("theta: flags %#02x at byte 5: %w", flags, ErrCorrupt)
	case flags&flagCompact == 0:
		return nil, fmt.Errorf("theta: flags %#02x at byte 5 lack compact (an update sketch): %w", flags, ErrCorrupt)
	case pre < 1 || pre > 3:
		return nil, fmt.Errorf("theta: %d preamble longs at byte 0, want 1 to 3: %w", pre, ErrCorrupt)
	}
	seedHash := binary.LittleEndian.Uint16(b[6:])
	s := &Sketch{lgK: uint8(p.LgK), theta: MaxTheta}
	if flags&flagEmpty != 0 {
		switch {
		case pre != 1 || flags&flagSingleItem != 0:
			return nil, fmt.Errorf("theta: empty sketch with %d preamble longs, flags %#02x: %w", pre, flags, ErrCorrupt)
		case len(b) != 8:
			return nil, fmt.Errorf("theta: empty sketch followed by %d bytes at byte 8: %w", len(b)-8, ErrCorrupt)
		case seedHash != 0 && seedHash != SeedHash():
			return nil, fmt.Errorf("theta: seed hash %#04x at byte 6, want %#04x (seed %d): %w", seedHash, SeedHash(), Seed, ErrParams)
		}
		s.empty = true
		s.sorted = []uint64{}
		return s, nil
	}
	if seedHash != SeedHash() {
		return nil, fmt.Errorf("theta: seed hash %#04x at byte 6, want %#04x (seed %d): %w", seedHash, SeedHash(), Seed, ErrParams)
	}
	if flags&flagSingleItem != 0 && pre != 1 {
		return nil, fmt.Errorf("theta: single-item flag with %d preamble longs: %w", pre, ErrCorrupt)
	}
	var count uint64
	switch pre {
	case 1:
		count = 1
	default:
		if len(b) < 8*pre {
			return nil, fmt.Errorf("theta: preamble needs %d bytes, have %d: %w", 8*pre, len(b), ErrTooShort)
		}
		count = uint64(binary.LittleEndian.Uint32(b[8:]))
		if pre == 3 {
			s.theta = binary.LittleEndian.Uint64(b[16:])
			if s.theta == 0 || s.theta > MaxTheta {
				return nil, fmt.Errorf("theta: theta %#x at byte 16 not in (0, 2^63-1]: %w", s.theta, ErrCorrupt)
			}
		}
	}
	want := uint64(8*pre) + 8*count
	switch {
	case uint64(len(b)) < want:
		return nil, fmt.Errorf("theta: %d hashes need %d bytes, have %d: %w", count, want, len(b), ErrTooShort)
	case uint64(len(b)) > want:
		return nil, fmt.Errorf("theta: %d trailing bytes at byte %d: %w", uint64(len(b))-want, want, ErrCorrupt)
	case count > uint64(p.MaxRetained()):
		return nil, fmt.Errorf("theta: %d hashes, more than lg_k %d keeps (%d): %w", count, p.LgK, p.MaxRetained(), ErrParams)
	}
	e := make([]uint64, count)
	off := 8 * pre
	for i := range e {
		h := binary.LittleEndian.Uint64(b[off+8*i:])
		if h == 0 || h >= s.theta {
			return nil, fmt.Errorf("theta: hash %#x at byte %d not in (0, theta %#x): %w", h, off+8*i, s.theta, ErrCorrupt)
		}
		if flags&flagOrdered != 0 && i > 0 && h <= e[i-1] {
			return nil, fmt.Errorf("theta: hash at byte %d not above the one before in an ordered sketch: %w", off+8*i, ErrCorrupt)
		}
		e[i] = h
	}
	if flags&flagOrdered == 0 {
		slices.Sort(e)
		for i := 1; i < len(e); i++ {
			if e[i] == e[i-1] {
				return nil, fmt.Errorf("theta: hash %#x repeated: %w", e[i], ErrCorrupt)
			}
		}
	}
	s.sorted = e
	return s, nil
}
