package hll

import (
	"encoding/binary"
	"fmt"
	"slices"
)

const (
	headerLen     = 3
	schemaVersion = 1
)

// MarshalBinary encodes the sketch in the storage format v1.
func (s *Sketch) MarshalBinary() ([]byte, error) {
	return s.AppendBinary(make([]byte, 0, s.SizeBytes()))
}

// AppendBinary appends the storage-format encoding of s to b. Registers are
// written SPARSE or FULL by postgresql-hll's pack-time rule (see
// SetMaxSparse), so the bytes equal what PostgreSQL writes for the same
// contents. It never fails; the error is for encoding.BinaryAppender.
func (s *Sketch) AppendBinary(b []byte) ([]byte, error) {
	rep := s.Representation()
	b = append(b,
		schemaVersion<<4|byte(rep),
		byte(s.p.Regwidth-1)<<5|byte(s.p.Log2m),
		boolBit(s.p.Sparse)<<6|s.p.cutoffCode())
	switch rep {
	case Explicit:
		for _, h := range s.explicit {
			b = binary.BigEndian.AppendUint64(b, uint64(h))
		}
	case Sparse:
		b = s.appendSparse(b)
	case Full:
		b = s.appendFull(b)
	}
	return b, nil
}

func boolBit(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// bitWriter packs words MSB-first into a byte stream (storage format §3).
type bitWriter struct {
	b    []byte
	acc  uint64 // pending bits, right-aligned
	nacc uint   // number of pending bits (< 8 between calls)
}

func (w *bitWriter) write(v uint64, n uint) {
	w.acc = w.acc<<n | v
	w.nacc += n
	for w.nacc >= 8 {
		w.nacc -= 8
		w.b = append(w.b, byte(w.acc>>w.nacc))
	}
}

// flush pads the last byte with zero bits.
func (w *bitWriter) flush() []byte {
	if w.nacc > 0 {
		w.b = append(w.b, byte(w.acc<<(8-w.nacc)))
		w.nacc = 0
	}
	return w.b
}

func (s *Sketch) appendSparse(b []byte) []byte {
	w := bitWriter{b: b}
	rw := uint(s.p.Regwidth)
	n := uint(s.p.Log2m) + rw
	switch s.kind {
	case kindSparse:
		for _, p := range s.pairs {
			w.write(uint64(p>>8)<<rw|uint64(uint8(p)), n)
		}
	case kindDense:
		for i, v := range s.regs {
			if v != 0 {
				w.write(uint64(i)<<rw|uint64(v), n)
			}
		}
	}
	return w.flush()
}

func (s *Sketch) appendFull(b []byte) []byte {
	regs := s.regs
	if s.kind == kindSparse {
		regs = s.Registers(nil)
	}
	return packFull(b, regs, s.p.Regwidth)
}

// packFull appends m registers of rw bits. m is a multiple of 8, and 8
// registers of rw bits are exactly rw bytes, so each group is assembled in
// a uint64 and its low 8·rw bits written big-endian.
func packFull(b, regs []uint8, rw int) []byte {
	n := len(b)
	b = slices.Grow(b, len(regs)/8*rw)[:n+len(regs)/8*rw]
	out := b[n:]
	shift := uint(rw)
	for g := 0; g+8 <= len(regs); g += 8 {
		r := regs[g : g+8 : g+8]
		acc := uint64(r[0])
		for _, v := range r[1:] {
			acc = acc<<shift | uint64(v)
		}
		for k := rw - 1; k >= 0; k-- {
			out[k] = byte(acc)
			acc >>= 8
		}
		out = out[rw:]
	}
	return b
}

// unpackFull is packFull's inverse; it also counts the register values.
func unpackFull(regs []uint8, hist *[128]int, body []byte, rw int) {
	shift := uint(rw)
	mask := uint64(1)<<shift - 1
	for g := 0; g+8 <= len(regs); g += 8 {
		var acc uint64
		for _, c := range body[:rw] {
			acc = acc<<8 | uint64(c)
		}
		body = body[rw:]
		r := regs[g : g+8 : g+8]
		for k := 7; k >= 0; k-- {
			v := uint8(acc & mask)
			r[k] = v
			hist[v]++
			acc >>= shift
		}
	}
}

// Decode parses a sketch in the storage format v1. It accepts exactly:
//
//   - 3 header bytes: version nibble 1 (else ErrVersion); type nibble 0..4
//     (else ErrCorrupt); regwidth 1..7 and log2m 4..17 (else ErrParams:
//     PostgreSQL also takes log2m 0..3 and regwidth 0, which cannot be
//     estimated); the cutoff code, which for EMPTY and EXPLICIT must be
//     0..14 or 63 as in PostgreSQL (else ErrParams). Bit 7 of the third
//     byte is ignored, as every reader does.
//   - UNDEFINED, EMPTY: nothing after the header (else ErrCorrupt).
//   - EXPLICIT: a multiple of 8 bytes (else ErrCorrupt), at most 16383
//     elements (else ErrCorrupt), big-endian int64s strictly ascending as
//     signed values (else ErrCorrupt), as PostgreSQL requires.
//   - SPARSE: floor(8·len/(log2m+regwidth)) words of index<<regwidth|value
//     with strictly ascending indexes and non-zero values, except that a
//     final all-zero word is the padding of a short word width; fewer than 8
//     padding bits, all zero (else ErrCorrupt).
//   - FULL: exactly m·regwidth/8 bytes (ErrTooShort if fewer, ErrCorrupt
//     if more); with m >= 16 there are no padding bits.
//
// Sizes are checked before anything is allocated, so memory use is bounded
// by a small multiple of len(b) whatever the header claims.
func Decode(b []byte) (*Sketch, error) {
	typ, p, body, err := header(b)
	if err != nil {
		return nil, err
	}
	switch typ {
	case Undefined, Empty:
		if typ == Undefined {
			return newSketch(p, kindUndefined), nil
		}
		return newSketch(p, kindEmpty), nil
	case Explicit:
		return decodeExplicit(p, body)
	case Sparse:
		return decodeSparse(p, body)
	}
	return decodeFull(p, body)
}

// Check reports whether Decode accepts b, with the same error, and the
// stored representation and the parameters of the sketch it would
// return, without building the sketch: a FULL sketch's registers are not
// unpacked (every bit pattern of the right length is a valid one), nor
// an EXPLICIT sketch's elements copied. It allocates only for a SPARSE
// body, which it decodes. A store checks stored bytes with it where it
// needs only to know they would read back (a backup).
func Check(b []byte) (Representation, Params, error) {
	typ, p, body, err := header(b)
	if err != nil {
		return 0, Params{}, err
	}
	switch typ {
	case Explicit:
		_, err = checkExplicit(body)
	case Sparse:
		_, err = decodeSparse(p, body)
	case Full:
		err = checkFull(p, body)
	}
	if err != nil {
		return 0, Params{}, err
	}
	return typ, p, nil
}

// header checks the header of a sketch in the storage format v1 (see
// Decode), and an UNDEFINED or EMPTY sketch's empty body: the type, the
// parameters and the body.
func header(b []byte) (Representation, Params, []byte, error) {
	if len(b) < headerLen {
		return 0, Params{}, nil, fmt.Errorf("hll: %d bytes, need a %d-byte header: %w", len(b), headerLen, ErrTooShort)
	}
	if v := b[0] >> 4; v != schemaVersion {
		return 0, Params{}, nil, fmt.Errorf("hll: schema version %d: %w", v, ErrVersion)
	}
	typ := Representation(b[0] & 0x0f)
	if typ > Full {
		return 0, Params{}, nil, fmt.Errorf("hll: type %d: %w", typ, ErrCorrupt)
	}
	p := Params{
		Log2m:     int(b[1] & 0x1f),
		Regwidth:  int(b[1]>>5) + 1,
		Expthresh: expthreshFromCode(b[2] & 0x3f),
		Sparse:    b[2]>>6&1 == 1,
	}
	if p.Log2m < MinLog2m || p.Log2m > MaxLog2m {
		return 0, Params{}, nil, fmt.Errorf("hll: header log2m %d not in %d..%d: %w", p.Log2m, MinLog2m, MaxLog2m, ErrParams)
	}
	if p.Regwidth > MaxRegwidth {
		return 0, Params{}, nil, fmt.Errorf("hll: header regwidth %d not in %d..%d: %w", p.Regwidth, MinRegwidth, MaxRegwidth, ErrParams)
	}
	if (typ == Empty || typ == Explicit) && p.Expthresh > maxExplicit {
		return 0, Params{}, nil, fmt.Errorf("hll: header expthresh %d above %d: %w", p.Expthresh, maxExplicit, ErrParams)
	}
	body := b[headerLen:]
	if (typ == Undefined || typ == Empty) && len(body) != 0 {
		return 0, Params{}, nil, fmt.Errorf("hll: %s sketch with %d body bytes: %w", typ, len(body), ErrCorrupt)
	}
	return typ, p, body, nil
}

// UnmarshalBinary replaces s with the sketch encoded in b (see Decode). On
// error s is unchanged.
func (s *Sketch) UnmarshalBinary(b []byte) error {
	d, err := Decode(b)
	if err != nil {
		return err
	}
	*s = *d
	return nil
}

func decodeExplicit(p Params, body []byte) (*Sketch, error) {
	n, err := checkExplicit(body)
	if err != nil {
		return nil, err
	}
	s := newSketch(p, kindExplicit)
	s.explicit = make([]int64, n)
	for i := range n {
		s.explicit[i] = int64(binary.BigEndian.Uint64(body[8*i:]))
	}
	return s, nil
}

// checkExplicit checks an EXPLICIT body (see Decode) and returns how many
// elements it holds.
func checkExplicit(body []byte) (int, error) {
	if len(body)%8 != 0 {
		return 0, fmt.Errorf("hll: explicit body of %d bytes is not a multiple of 8: %w", len(body), ErrCorrupt)
	}
	n := len(body) / 8
	if n > maxExplicit {
		return 0, fmt.Errorf("hll: %d explicit elements, at most %d: %w", n, maxExplicit, ErrCorrupt)
	}
	for i := 1; i < n; i++ {
		if int64(binary.BigEndian.Uint64(body[8*i:])) <= int64(binary.BigEndian.Uint64(body[8*i-8:])) {
			return 0, fmt.Errorf("hll: explicit element %d not above element %d: %w", i, i-1, ErrCorrupt)
		}
	}
	return n, nil
}

// bitReader reads MSB-first words from a byte stream.
type bitReader struct {
	b    []byte
	pos  int    // next byte
	acc  uint64 // pending bits, right-aligned
	nacc uint
}

func (r *bitReader) read(n uint) uint64 {
	for r.nacc < n {
		r.acc = r.acc<<8 | uint64(r.b[r.pos])
		r.pos++
		r.nacc += 8
	}
	r.nacc -= n
	return r.acc >> r.nacc & (1<<n - 1)
}

// rest returns the unread bits of the current byte and how many there are.
func (r *bitReader) rest() (uint64, uint) {
	return r.acc & (1<<r.nacc - 1), r.nacc
}

func decodeSparse(p Params, body []byte) (*Sketch, error) {
	rw := uint(p.Regwidth)
	width := uint(p.Log2m) + rw
	bitsz := uint(len(body)) * 8
	n := int(bitsz / width)
	s := newSketch(p, kindSparse)
	r := bitReader{b: body}
	if n >= p.NumRegisters()/4 {
		s.densify()
	} else {
		s.pairs = make([]uint32, 0, n)
	}
	last := -1
	for k := range n {
		word := r.read(width)
		i, v := int(word>>rw), uint8(word&(1<<rw-1))
		if v == 0 {
			if word == 0 && k == n-1 && width < 8 {
				break // a padding-sized phantom word
			}
			return nil, fmt.Errorf("hll: sparse word %d sets register %d to zero: %w", k, i, ErrCorrupt)
		}
		if i <= last {
			return nil, fmt.Errorf("hll: sparse word %d: register %d after register %d: %w", k, i, last, ErrCorrupt)
		}
		last = i
		if s.kind == kindDense {
			s.setDense(uint32(i), v)
		} else {
			s.pairs = append(s.pairs, uint32(i)<<8|uint32(v))
		}
	}
	// The bits after the last word must be fewer than 8 (else the body
	// holds a stray byte) and zero.
	if pad, npad := r.rest(); bitsz-uint(n)*width >= 8 || npad != bitsz-uint(n)*width || pad != 0 {
		return nil, fmt.Errorf("hll: sparse body has %d bytes of %d-bit words and bad padding: %w", len(body), width, ErrCorrupt)
	}
	return s, nil
}

func decodeFull(p Params, body []byte) (*Sketch, error) {
	if err := checkFull(p, body); err != nil {
		return nil, err
	}
	m := p.NumRegisters()
	s := newSketch(p, kindDense)
	s.regs = make([]uint8, m)
	s.hist = new([128]int)
	unpackFull(s.regs, s.hist, body, p.Regwidth)
	return s, nil
}

// checkFull checks a FULL body's length (see Decode): m >= 16, so
// m·regwidth is a whole number of bytes, with no padding bits, and every
// bit pattern is a valid set of registers.
func checkFull(p Params, body []byte) error {
	m := p.NumRegisters()
	want := (m*p.Regwidth + 7) / 8
	switch {
	case len(body) < want:
		return fmt.Errorf("hll: full body of %d bytes, %d registers of %d bits need %d: %w", len(body), m, p.Regwidth, want, ErrTooShort)
	case len(body) > want:
		return fmt.Errorf("hll: full body of %d bytes, %d registers of %d bits need %d: %w", len(body), m, p.Regwidth, want, ErrCorrupt)
	}
	return nil
}
