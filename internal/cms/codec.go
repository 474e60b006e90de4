package cms

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Encoding constants; doc.go describes the layout byte by byte.
const (
	version        = 0xC1 // high nibble 0xC marks a CMS encoding, low nibble is version 1
	headerLen      = 17
	flagConserv    = 1 << 0
	flagInexact    = 1 << 1
	kindInt        = 0
	kindText       = 1
	minCandidateSz = 4 // count varint, kind, empty text's 2-byte length
)

// MarshalBinary returns the encoding of s (doc.go). It fails only for the
// zero Sketch (ErrParams).
func (s *Sketch) MarshalBinary() ([]byte, error) {
	return s.AppendBinary(nil)
}

// AppendBinary appends the encoding of s (doc.go) to b. It fails only for
// the zero Sketch (ErrParams), returning b unchanged.
func (s *Sketch) AppendBinary(b []byte) ([]byte, error) {
	if s.depth == 0 {
		return b, fmt.Errorf("cms: encode a sketch not initialised: %w", ErrParams)
	}
	var flags byte
	switch {
	case s.conservative:
		flags = flagConserv
	case !s.exact:
		flags = flagInexact
	}
	b = slices.Grow(b, headerLen+len(s.counters)+2+len(s.top.slots)*16)
	b = append(b, version, flags, byte(s.depth))
	b = binary.BigEndian.AppendUint32(b, uint32(s.width))
	b = binary.BigEndian.AppendUint16(b, uint16(s.top.k))
	b = binary.BigEndian.AppendUint64(b, s.n)
	for _, v := range s.counters {
		if v < 0x80 {
			b = append(b, byte(v))
		} else {
			b = binary.AppendUvarint(b, v)
		}
	}
	cs := s.top.ranked()
	b = binary.BigEndian.AppendUint16(b, uint16(len(cs)))
	for _, c := range cs {
		b = binary.AppendUvarint(b, c.est)
		if c.id.isText {
			b = append(b, kindText)
			b = binary.BigEndian.AppendUint16(b, uint16(len(c.id.text)))
			b = append(b, c.id.text...)
		} else {
			b = append(b, kindInt)
			b = binary.BigEndian.AppendUint64(b, uint64(c.id.num))
		}
	}
	return b, nil
}

// UnmarshalBinary replaces s with the sketch encoded in b; see Decode for
// what is accepted. On error s is unchanged.
func (s *Sketch) UnmarshalBinary(b []byte) error {
	d, err := Decode(b)
	if err != nil {
		return err
	}
	*s = *d
	return nil
}

// Decode returns the sketch encoded in b (doc.go), which it checks as
// strictly as an upload. Errors name the offset and wrap:
//
//   - ErrTooShort: b ends inside the header, a counter, the candidate
//     list or a candidate, or is shorter than one byte per declared
//     counter (checked before anything is allocated);
//   - ErrVersion: the first byte is not 0xC1;
//   - ErrParams: depth, width or topk are out of range (Params.Validate);
//   - ErrCorrupt: unknown or contradictory flags; N above math.MaxInt64; a
//     varint that is not minimal or overflows 64 bits; a counter above N;
//     with plain update a row not summing to exactly N (or, once
//     conservative counters were unioned in, above N); with conservative
//     update a row summing above N or all rows together below N; more
//     candidates than topk; a candidate count of 0 or above the id's
//     estimate from the counters; an unknown id kind; a text id over
//     MaxTextLen bytes or not UTF-8; candidates out of rank order
//     (heaviest first, ties by id) or repeated; bytes after the last
//     candidate.
//
// Memory allocated is bounded by a small multiple of len(b).
func Decode(b []byte) (*Sketch, error) {
	if len(b) < headerLen {
		return nil, fmt.Errorf("cms: header needs %d bytes, got %d: %w", headerLen, len(b), ErrTooShort)
	}
	if b[0] != version {
		if b[0]>>4 == version>>4 {
			return nil, fmt.Errorf("cms: offset 0: format version %d, want %d: %w", b[0]&0xF, version&0xF, ErrVersion)
		}
		return nil, fmt.Errorf("cms: offset 0: first byte %#02x is not a Count-Min encoding: %w", b[0], ErrVersion)
	}
	flags := b[1]
	if flags&^(flagConserv|flagInexact) != 0 || flags == flagConserv|flagInexact {
		return nil, fmt.Errorf("cms: offset 1: flags %#02x: %w", flags, ErrCorrupt)
	}
	p := Params{
		Depth:        int(b[2]),
		Width:        int(binary.BigEndian.Uint32(b[3:7])),
		TopK:         int(binary.BigEndian.Uint16(b[7:9])),
		Conservative: flags&flagConserv != 0,
	}
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("cms: offset 2: %w", err)
	}
	n := binary.BigEndian.Uint64(b[9:17])
	if n > maxTotal {
		return nil, fmt.Errorf("cms: offset 9: total %d exceeds %d: %w", n, uint64(maxTotal), ErrCorrupt)
	}
	// Every counter takes at least a byte and the candidate count two:
	// refuse a short input before allocating its counters.
	if need := p.Width*p.Depth + 2; len(b)-headerLen < need {
		return nil, fmt.Errorf("cms: %d counters need at least %d bytes after the header, got %d: %w",
			p.Width*p.Depth, need, len(b)-headerLen, ErrTooShort)
	}
	s := newSketch(p, make([]uint64, p.Width*p.Depth))
	s.n = n
	s.exact = flags&(flagConserv|flagInexact) == 0
	off, err := s.decodeCounters(b, headerLen)
	if err != nil {
		return nil, err
	}
	off, err = s.decodeCandidates(b, off)
	if err != nil {
		return nil, err
	}
	if off != len(b) {
		return nil, fmt.Errorf("cms: offset %d: %d trailing bytes: %w", off, len(b)-off, ErrCorrupt)
	}
	return s, nil
}

// decodeCounters fills s.counters from b[off:] and checks the row sums
// against s.n; it returns the offset after the last counter.
func (s *Sketch) decodeCounters(b []byte, off int) (int, error) {
	var all uint64 // sum over all rows, saturating at n
	for row := range s.depth {
		var sum uint64
		for col := range s.width {
			v, m := uint64(0), 1
			if off < len(b) && b[off] < 0x80 {
				v = uint64(b[off]) // the common one-byte case, inline
			} else {
				var err error
				if v, m, err = uvarint(b, off); err != nil {
					return 0, fmt.Errorf("cms: offset %d: counter %d of row %d: %w", off, col, row, err)
				}
			}
			if v > s.n-sum {
				return 0, fmt.Errorf("cms: offset %d: counter %d of row %d: row sum exceeds total %d: %w",
					off, col, row, s.n, ErrCorrupt)
			}
			sum += v
			s.counters[row*s.width+col] = v
			off += m
		}
		if s.exact && sum != s.n {
			return 0, fmt.Errorf("cms: offset %d: row %d sums to %d, want total %d: %w", off, row, sum, s.n, ErrCorrupt)
		}
		all += min(sum, s.n-all)
	}
	if all < s.n {
		return 0, fmt.Errorf("cms: offset %d: counters sum to %d, less than total %d: %w", off, all, s.n, ErrCorrupt)
	}
	return off, nil
}

// decodeCandidates reads the heavy-hitter list at b[off:] into s.top; it
// returns the offset after it.
func (s *Sketch) decodeCandidates(b []byte, off int) (int, error) {
	if len(b)-off < 2 {
		return 0, fmt.Errorf("cms: offset %d: candidate count: %w", off, ErrTooShort)
	}
	c := int(binary.BigEndian.Uint16(b[off:]))
	if c > s.top.k {
		return 0, fmt.Errorf("cms: offset %d: %d candidates, topk %d: %w", off, c, s.top.k, ErrCorrupt)
	}
	off += 2
	if len(b)-off < c*minCandidateSz {
		return 0, fmt.Errorf("cms: offset %d: %d candidates need at least %d bytes, got %d: %w",
			off, c, c*minCandidateSz, len(b)-off, ErrTooShort)
	}
	if c == 0 {
		return off, nil
	}
	cs := make([]candidate, 0, c)
	t := &s.top
	for i := range c {
		start := off
		var cd candidate
		var err error
		cd, off, err = decodeCandidate(b, off)
		if err != nil {
			return 0, fmt.Errorf("cms: offset %d: candidate %d: %w", start, i, err)
		}
		if _, dup := t.lookup(cd.id); dup {
			return 0, fmt.Errorf("cms: offset %d: candidate %d: id %v repeated: %w", start, i, cd.id, ErrCorrupt)
		}
		if i > 0 && !heavier(cs[i-1], cd) {
			return 0, fmt.Errorf("cms: offset %d: candidate %d: not ranked below the one before: %w", start, i, ErrCorrupt)
		}
		if est := s.Estimate(cd.id); cd.est > est {
			return 0, fmt.Errorf("cms: offset %d: candidate %d: count %d above estimate %d: %w",
				start, i, cd.est, est, ErrCorrupt)
		}
		t.index(cd.id, int32(i))
		cs = append(cs, cd)
	}
	t.reset(cs)
	return off, nil
}

// decodeCandidate reads one candidate at b[off:]; errors carry no offset.
func decodeCandidate(b []byte, off int) (candidate, int, error) {
	var cd candidate
	est, m, err := uvarint(b, off)
	if err != nil {
		return cd, 0, fmt.Errorf("count: %w", err)
	}
	if est == 0 {
		return cd, 0, fmt.Errorf("count 0: %w", ErrCorrupt)
	}
	cd.est = est
	off += m
	if off >= len(b) {
		return cd, 0, fmt.Errorf("kind: %w", ErrTooShort)
	}
	kind := b[off]
	off++
	switch kind {
	case kindInt:
		if len(b)-off < 8 {
			return cd, 0, fmt.Errorf("int id: %w", ErrTooShort)
		}
		cd.id = IntID(int64(binary.BigEndian.Uint64(b[off:])))
		off += 8
	case kindText:
		if len(b)-off < 2 {
			return cd, 0, fmt.Errorf("text length: %w", ErrTooShort)
		}
		l := int(binary.BigEndian.Uint16(b[off:]))
		off += 2
		if l > MaxTextLen {
			return cd, 0, fmt.Errorf("text id of %d bytes, more than %d: %w", l, MaxTextLen, ErrCorrupt)
		}
		if len(b)-off < l {
			return cd, 0, fmt.Errorf("text id of %d bytes: %w", l, ErrTooShort)
		}
		txt := b[off : off+l]
		if !utf8.Valid(txt) {
			return cd, 0, fmt.Errorf("text id is not valid UTF-8: %w", ErrCorrupt)
		}
		cd.id = TextID(string(txt))
		off += l
	default:
		return cd, 0, fmt.Errorf("id kind %d: %w", kind, ErrCorrupt)
	}
	return cd, off, nil
}

// uvarint reads an unsigned LEB128 varint at b[off:] and returns it and
// its length. It must be minimal (no final 0x00 byte after the first), so
// every value has one encoding and round trips are byte-stable.
func uvarint(b []byte, off int) (uint64, int, error) {
	if off < len(b) && b[off] < 0x80 {
		return uint64(b[off]), 1, nil
	}
	v, m := binary.Uvarint(b[off:])
	switch {
	case m == 0:
		return 0, 0, fmt.Errorf("varint: %w", ErrTooShort)
	case m < 0:
		return 0, 0, fmt.Errorf("varint overflows 64 bits: %w", ErrCorrupt)
	case b[off+m-1] == 0:
		return 0, 0, fmt.Errorf("varint not minimal: %w", ErrCorrupt)
	}
	return v, m, nil
}
