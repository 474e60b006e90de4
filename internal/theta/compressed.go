package theta

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// The compressed compact theta sketch, serial version 4 (little-endian
// fields, big-endian bit packing), which DataSketches' Java
// (toByteArrayCompressed), C++ and Python (serialize(compress=True))
// libraries write for an ordered compact sketch with at least one hash
// (two while exact; an empty or single-hash exact sketch stays version 3):
//
//	byte 0     preamble longs: 1 (exact), 2 (estimating: theta follows)
//	byte 1     serial version, 4
//	byte 2     family, 3 (compact theta)
//	byte 3     entry bits: the width of every packed delta, 1 to 63
//	byte 4     number-of-entries bytes, 1 to 4
//	byte 5     flags: compact, read-only and ordered (26); never empty
//	bytes 6-7  seed hash
//	bytes 8-15 theta (preamble longs 2)
//	then the number of entries in as many little-endian bytes as byte 4
//	says, then the deltas between successive ascending hashes (the first
//	from 0), entry-bits wide each, packed most significant bit first into
//	one bit stream and padded with zero bits to a whole byte.
const serialVersionCompressed = 4

// compressible reports whether AppendCompressed writes version 4 for s:
// the libraries compress an ordered sketch that is estimating or holds at
// least two hashes.
func (s *Sketch) compressible() bool {
	n := s.Retained()
	return !s.empty && (n >= 2 || (n == 1 && s.IsEstimationMode()))
}

// AppendCompressed appends the sketch as DataSketches' libraries serialize
// it when asked for compressed bytes: serial version 4 when the sketch
// holds hashes to pack, otherwise the same version 3 bytes AppendBinary
// writes (the libraries do the same). The result is what C++'s
// serialize_compressed and Java's toByteArrayCompressed write for the same
// contents.
func (s *Sketch) AppendCompressed(b []byte) []byte {
	if !s.compressible() {
		b, _ = s.AppendBinary(b)
		return b
	}
	hs := s.Hashes(nil)
	var ored, prev uint64
	for _, h := range hs {
		ored |= h - prev
		prev = h
	}
	entryBits := 64 - bits.LeadingZeros64(ored)
	n := uint32(len(hs))
	nBytes := (32 - bits.LeadingZeros32(n) + 7) / 8
	pre := byte(1)
	if s.IsEstimationMode() {
		pre = 2
	}
	b = append(b, pre, serialVersionCompressed, familyCompact, byte(entryBits), byte(nBytes), flagCompact|flagReadOnly|flagOrdered)
	b = binary.LittleEndian.AppendUint16(b, SeedHash())
	if pre == 2 {
		b = binary.LittleEndian.AppendUint64(b, s.theta)
	}
	for i := range nBytes {
		b = append(b, byte(n>>(8*i)))
	}
	w := bitWriter{b: b}
	prev = 0
	for _, h := range hs {
		w.write(h-prev, uint(entryBits))
		prev = h
	}
	return w.flush()
}

// CompressedSizeBytes returns the length of AppendCompressed's encoding.
func (s *Sketch) CompressedSizeBytes() int { return len(s.AppendCompressed(nil)) }

// bitWriter appends values most significant bit first.
type bitWriter struct {
	b    []byte
	acc  uint64 // pending bits, right-aligned
	nacc uint   // how many
}

func (w *bitWriter) write(v uint64, n uint) {
	for n > 0 {
		take := min(n, 56-w.nacc)
		w.acc = w.acc<<take | (v>>(n-take))&(1<<take-1)
		w.nacc += take
		n -= take
		for w.nacc >= 8 {
			w.nacc -= 8
			w.b = append(w.b, byte(w.acc>>w.nacc))
		}
		w.acc &= 1<<w.nacc - 1
	}
}

func (w *bitWriter) flush() []byte {
	if w.nacc > 0 {
		w.b = append(w.b, byte(w.acc<<(8-w.nacc)))
	}
	return w.b
}

// compressedCount reads the number of entries of version 4 bytes, or
// false when the preamble does not hold one.
func compressedCount(b []byte) (int, bool) {
	if len(b) < 8 || b[0] < 1 || b[0] > 2 || b[4] < 1 || b[4] > 4 {
		return 0, false
	}
	off, nb := 8*int(b[0]), int(b[4])
	if len(b) < off+nb {
		return 0, false
	}
	n := 0
	for i := range nb {
		n |= int(b[off+i]) << (8 * i)
	}
	return n, true
}

// decodeCompressed decodes serial version 4 (see the layout above) into a
// sketch with parameters p. Errors: a preamble or packed data shorter than
// declared: ErrTooShort; another seed's hash, or more entries than p
// keeps: ErrParams; another family, flags other than compact, read-only
// and ordered (read-only optional), preamble longs other than 1 or 2,
// entry bits outside 1..63, entry-count bytes outside 1..4, no entries,
// trailing bytes, padding bits that are not zero, or a delta of zero (a
// repeated hash) or a hash not below theta: ErrCorrupt. The packed length
// is checked against the count before anything is allocated.
func decodeCompressed(b []byte, p Params) (*Sketch, error) {
	if b[2] != familyCompact {
		return nil, fmt.Errorf("theta: family %d at byte 2 of a compressed sketch, want 3 (compact theta): %w", b[2], ErrCorrupt)
	}
	pre, entryBits, nb, flags := int(b[0]), int(b[3]), int(b[4]), b[5]
	switch {
	case pre < 1 || pre > 2:
		return nil, fmt.Errorf("theta: %d preamble longs at byte 0 of a compressed sketch, want 1 or 2: %w", pre, ErrCorrupt)
	case flags&^flagReadOnly != flagCompact|flagOrdered:
		return nil, fmt.Errorf("theta: flags %#02x at byte 5 of a compressed sketch, want compact and ordered: %w", flags, ErrCorrupt)
	case entryBits < 1 || entryBits > 63:
		return nil, fmt.Errorf("theta: %d entry bits at byte 3 not in [1, 63]: %w", entryBits, ErrCorrupt)
	case nb < 1 || nb > 4:
		return nil, fmt.Errorf("theta: %d entry-count bytes at byte 4 not in [1, 4]: %w", nb, ErrCorrupt)
	}
	if sh := binary.LittleEndian.Uint16(b[6:]); sh != SeedHash() {
		return nil, fmt.Errorf("theta: seed hash %#04x at byte 6, want %#04x (seed %d): %w", sh, SeedHash(), Seed, ErrParams)
	}
	off := 8 * pre
	if len(b) < off+nb {
		return nil, fmt.Errorf("theta: compressed preamble needs %d bytes, have %d: %w", off+nb, len(b), ErrTooShort)
	}
	s := &Sketch{lgK: uint8(p.LgK), theta: MaxTheta}
	if pre == 2 {
		s.theta = binary.LittleEndian.Uint64(b[8:])
		if s.theta == 0 || s.theta > MaxTheta {
			return nil, fmt.Errorf("theta: theta %#x at byte 8 not in (0, 2^63-1]: %w", s.theta, ErrCorrupt)
		}
	}
	n, _ := compressedCount(b)
	off += nb
	dataBits := uint64(n) * uint64(entryBits)
	want := uint64(off) + (dataBits+7)/8
	switch {
	case n == 0:
		return nil, fmt.Errorf("theta: a compressed sketch with no entries at byte %d: %w", off-nb, ErrCorrupt)
	case uint64(len(b)) < want:
		return nil, fmt.Errorf("theta: %d entries of %d bits need %d bytes, have %d: %w", n, entryBits, want, len(b), ErrTooShort)
	case uint64(len(b)) > want:
		return nil, fmt.Errorf("theta: %d trailing bytes at byte %d: %w", uint64(len(b))-want, want, ErrCorrupt)
	case n > p.MaxRetained():
		return nil, fmt.Errorf("theta: %d hashes, more than lg_k %d keeps (%d): %w", n, p.LgK, p.MaxRetained(), ErrParams)
	}
	if pad := uint(want*8 - uint64(off)*8 - dataBits); pad > 0 && b[len(b)-1]&(1<<pad-1) != 0 {
		return nil, fmt.Errorf("theta: padding bits of byte %d not zero: %w", len(b)-1, ErrCorrupt)
	}
	r := bitReader{b: b[off:]}
	e := make([]uint64, n)
	var prev uint64
	for i := range e {
		d := r.read(uint(entryBits))
		h := prev + d
		switch {
		case d == 0:
			return nil, fmt.Errorf("theta: entry %d repeats the one before (delta 0): %w", i, ErrCorrupt)
		case h < prev || h >= s.theta:
			return nil, fmt.Errorf("theta: entry %d, hash %#x, not below theta %#x: %w", i, h, s.theta, ErrCorrupt)
		}
		e[i], prev = h, h
	}
	s.sorted = e
	return s, nil
}

// bitReader reads values most significant bit first; the caller has
// checked that the bits are there.
type bitReader struct {
	b   []byte
	bit uint64 // position in bits
}

func (r *bitReader) read(n uint) uint64 {
	var v uint64
	for n > 0 {
		at, used := r.bit/8, uint(r.bit%8)
		take := min(n, 8-used)
		v = v<<take | uint64(r.b[at]>>(8-used-take))&(1<<take-1)
		r.bit += uint64(take)
		n -= take
	}
	return v
}
