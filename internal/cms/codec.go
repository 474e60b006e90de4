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
	versionRanged  = 0xC2 // version 2: version 1 with a value domain and its dyadic levels
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
	b = slices.Grow(b, headerLen+1+len(s.counters)*(1+len(s.upper))+2+len(s.top.slots)*16)
	v := byte(version)
	if s.bits > 0 {
		v = versionRanged
	}
	b = append(b, v, flags, byte(s.depth))
	b = binary.BigEndian.AppendUint32(b, uint32(s.width))
	b = binary.BigEndian.AppendUint16(b, uint16(s.top.k))
	b = binary.BigEndian.AppendUint64(b, s.n)
	if s.bits > 0 {
		b = append(b, byte(s.bits))
	}
	b = appendCounters(b, s.counters)
	for _, l := range s.upper {
		b = appendCounters(b, l)
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

func appendCounters(b []byte, cs []uint64) []byte {
	for _, v := range cs {
		if v < 0x80 {
			b = append(b, byte(v))
		} else {
			b = binary.AppendUvarint(b, v)
		}
	}
	return b
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
//   - ErrVersion: the first byte is neither 0xC1 nor 0xC2;
//   - ErrParams: depth, width, topk or (version 2) domain bits are out of
//     range (Params.Validate; version 2 needs domain bits of at least 1);
//   - ErrCorrupt: unknown or contradictory flags; N above math.MaxInt64; a
//     varint that is not minimal or overflows 64 bits; a counter above N;
//     with plain update a row not summing to exactly N (or, once
//     conservative counters were unioned in, above N); with conservative
//     update a row summing above N or all rows together below N (at
//     every hashed level of a version 2 sketch); an exact level not
//     summing to N; more
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
	if b[0] != version && b[0] != versionRanged {
		if b[0]>>4 == version>>4 {
			return nil, fmt.Errorf("cms: offset 0: format version %d, want 1 or 2: %w", b[0]&0xF, ErrVersion)
		}
		return nil, fmt.Errorf("cms: offset 0: first byte %#02x is not a Count-Min encoding: %w", b[0], ErrVersion)
	}
	hdr := headerLen
	bits := 0
	if b[0] == versionRanged {
		if len(b) < headerLen+1 {
			return nil, fmt.Errorf("cms: version 2 header needs %d bytes, got %d: %w", headerLen+1, len(b), ErrTooShort)
		}
		if bits = int(b[headerLen]); bits == 0 {
			return nil, fmt.Errorf("cms: offset %d: domain bits 0 in a version 2 sketch: %w", headerLen, ErrParams)
		}
		hdr++
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
		DomainBits:   bits,
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
	if need := p.Counters() + 2; len(b)-hdr < need {
		return nil, fmt.Errorf("cms: %d counters need at least %d bytes after the header, got %d: %w",
			p.Counters(), need, len(b)-hdr, ErrTooShort)
	}
	s := newSketch(p, make([]uint64, p.Width*p.Depth))
	s.n = n
	s.exact = flags&(flagConserv|flagInexact) == 0
	off, err := s.decodeCounters(b, hdr)
	if err != nil {
		return nil, err
	}
	for j := 1; j < bits; j++ {
		if off, err = s.decodeLevel(b, off, j); err != nil {
			return nil, err
		}
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
	return s.decodeRows(b, off, s.counters, 0)
}

// decodeLevel fills level j (≥ 1) of a ranged sketch from b[off:]: rows
// checked as level 0's, or exact counters that must sum to N.
func (s *Sketch) decodeLevel(b []byte, off, j int) (int, error) {
	l := s.upper[j-1]
	if !s.exactLevel(j) {
		return s.decodeRows(b, off, l, j)
	}
	var sum uint64
	for i := range l {
		v, m, err := uvarint(b, off)
		if err != nil {
			return 0, fmt.Errorf("cms: offset %d: counter %d of level %d: %w", off, i, j, err)
		}
		if v > s.n-sum {
			return 0, fmt.Errorf("cms: offset %d: counter %d of level %d: level sum exceeds total %d: %w", off, i, j, s.n, ErrCorrupt)
		}
		sum += v
		l[i] = v
		off += m
	}
	if sum != s.n {
		return 0, fmt.Errorf("cms: offset %d: level %d sums to %d, want total %d: %w", off, j, sum, s.n, ErrCorrupt)
	}
	return off, nil
}

// decodeRows fills the depth rows c of level j from b[off:] and checks
// their sums against s.n; it returns the offset after the last counter.
func (s *Sketch) decodeRows(b []byte, off int, c []uint64, j int) (int, error) {
	level := ""
	if j > 0 {
		level = fmt.Sprintf(" of level %d", j)
	}
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
					return 0, fmt.Errorf("cms: offset %d: counter %d of row %d%s: %w", off, col, row, level, err)
				}
			}
			if v > s.n-sum {
				return 0, fmt.Errorf("cms: offset %d: counter %d of row %d%s: row sum exceeds total %d: %w",
					off, col, row, level, s.n, ErrCorrupt)
			}
			sum += v
			c[row*s.width+col] = v
			off += m
		}
		if s.exact && sum != s.n {
			return 0, fmt.Errorf("cms: offset %d: row %d%s sums to %d, want total %d: %w", off, row, level, sum, s.n, ErrCorrupt)
		}
		all += min(sum, s.n-all)
	}
	if all < s.n {
		return 0, fmt.Errorf("cms: offset %d: counters%s sum to %d, less than total %d: %w", off, level, all, s.n, ErrCorrupt)
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
