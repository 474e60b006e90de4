package airlift

import (
	"encoding/binary"
	"fmt"
)

// Format tags (the first byte).
const (
	tagSparseV1 = 0
	tagDenseV1  = 1
	tagSparseV2 = 2
	tagDenseV2  = 3
	maxDelta    = 15
)

// Sniff reports whether b is laid out as a SPARSE_V2 or DENSE_V2
// HyperLogLog: the tag, index bits airlift writes (1..16; sketchd reads
// 4..16, and Decode says so) and the length its counts imply. Two bytes
// of tag and index bits alone would also be the start of other formats
// (DataSketches' preamble of two longs, serial version 1 to 16).
func Sniff(b []byte) bool {
	if len(b) < 4 || b[1] < 1 || b[1] > MaxIndexBits {
		return false
	}
	switch b[0] {
	case tagSparseV2:
		return len(b) == 4+4*int(binary.LittleEndian.Uint16(b[2:]))
	case tagDenseV2:
		head := 3 + 1<<b[1]/2 + 2
		return len(b) >= head && len(b) == head+3*int(binary.LittleEndian.Uint16(b[head-2:]))
	}
	return false
}

// AppendBinary appends the sketch as HyperLogLog.serialize writes it
// (doc.go).
func (s *Sketch) AppendBinary(b []byte) []byte {
	if !s.dense {
		b = append(b, tagSparseV2, byte(s.p))
		b = binary.LittleEndian.AppendUint16(b, uint16(len(s.entries)))
		for _, e := range s.entries {
			b = binary.LittleEndian.AppendUint32(b, e)
		}
		return b
	}
	base := uint8(255)
	for _, v := range s.regs {
		base = min(base, v)
	}
	b = append(b, tagDenseV2, byte(s.p), base)
	var over []int
	for i := 0; i < len(s.regs); i += 2 {
		hi, lo := s.regs[i]-base, s.regs[i+1]-base
		if hi > maxDelta {
			over = append(over, i)
		}
		if lo > maxDelta {
			over = append(over, i+1)
		}
		b = append(b, min(hi, maxDelta)<<4|min(lo, maxDelta))
	}
	b = binary.LittleEndian.AppendUint16(b, uint16(len(over)))
	for _, i := range over {
		b = binary.LittleEndian.AppendUint16(b, uint16(i))
	}
	for _, i := range over {
		b = append(b, s.regs[i]-base-maxDelta)
	}
	return b
}

// SizeBytes is the length of AppendBinary's encoding.
func (s *Sketch) SizeBytes() int {
	if !s.dense {
		return 4 + 4*len(s.entries)
	}
	base := uint8(255)
	for _, v := range s.regs {
		base = min(base, v)
	}
	over := 0
	for _, v := range s.regs {
		if v-base > maxDelta {
			over++
		}
	}
	return 3 + len(s.regs)/2 + 2 + 3*over
}

// Decode reads a SPARSE_V2 or DENSE_V2 HyperLogLog as strictly as doc.go
// describes. Errors wrap ErrVersion (another tag), ErrParams (index
// bits outside 4..16) or ErrCorrupt (anything else, with its byte
// offset). It allocates at most the registers (2^p bytes, which the
// image's length implies) or 4 bytes an entry.
func Decode(b []byte) (*Sketch, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("airlift: %d bytes, too short for a tag and index bits: %w", len(b), ErrCorrupt)
	}
	switch b[0] {
	case tagSparseV2, tagDenseV2:
	case tagSparseV1:
		return nil, fmt.Errorf("airlift: format tag 0 (SPARSE_V1), which airlift no longer reads either: %w", ErrVersion)
	case tagDenseV1:
		return nil, fmt.Errorf("airlift: format tag 1 (DENSE_V1, before 2016), which sketchd does not read: %w", ErrVersion)
	default:
		return nil, fmt.Errorf("airlift: format tag %d is not SPARSE_V2 (2) or DENSE_V2 (3): %w", b[0], ErrVersion)
	}
	p := int(b[1])
	if err := (Params{p}).Validate(); err != nil {
		return nil, err
	}
	if b[0] == tagSparseV2 {
		return decodeSparse(b, p)
	}
	return decodeDense(b, p)
}

func decodeSparse(b []byte, p int) (*Sketch, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("airlift: sparse image of %d bytes has no entry count: %w", len(b), ErrCorrupt)
	}
	n := int(binary.LittleEndian.Uint16(b[2:]))
	if n > 1<<15-1 {
		return nil, fmt.Errorf("airlift: %d sparse entries, more than airlift's 32767: %w", n, ErrCorrupt)
	}
	if len(b) != 4+4*n {
		return nil, fmt.Errorf("airlift: sparse image of %d bytes for %d entries (needs %d): %w", len(b), n, 4+4*n, ErrCorrupt)
	}
	s := &Sketch{p: p, entries: make([]uint32, n)}
	for i := range s.entries {
		e := binary.LittleEndian.Uint32(b[4+4*i:])
		if e&63 > 64-prefixBits {
			return nil, fmt.Errorf("airlift: sparse entry %d at byte %d counts %d zeros, above %d: %w", i, 4+4*i, e&63, 64-prefixBits, ErrCorrupt)
		}
		if i > 0 && e>>6 <= s.entries[i-1]>>6 {
			return nil, fmt.Errorf("airlift: sparse entry %d at byte %d is not above the one before: %w", i, 4+4*i, ErrCorrupt)
		}
		s.entries[i] = e
	}
	s.capacity = max(n, 1)
	return s, nil
}

func decodeDense(b []byte, p int) (*Sketch, error) {
	m := 1 << p
	head := 3 + m/2 + 2
	if len(b) < head {
		return nil, fmt.Errorf("airlift: dense image of %d bytes, %d index bits need %d before the overflows: %w", len(b), p, head, ErrCorrupt)
	}
	base := b[2]
	k := int(binary.LittleEndian.Uint16(b[head-2:]))
	if len(b) != head+3*k {
		return nil, fmt.Errorf("airlift: dense image of %d bytes for %d overflows (needs %d): %w", len(b), k, head+3*k, ErrCorrupt)
	}
	top := 65 - p
	if int(base) > top {
		return nil, fmt.Errorf("airlift: baseline %d is above %d at %d index bits: %w", base, top, p, ErrCorrupt)
	}
	s := &Sketch{p: p, dense: true, regs: make([]uint8, m)}
	zero := false
	for i := range s.regs {
		d := b[3+i/2] >> 4
		if i%2 == 1 {
			d = b[3+i/2] & 15
		}
		zero = zero || d == 0
		s.regs[i] = base + d
	}
	if !zero {
		return nil, fmt.Errorf("airlift: baseline %d is below every register (airlift keeps it at the smallest): %w", base, ErrCorrupt)
	}
	for j := range k {
		at := head + 2*j
		i := int(binary.LittleEndian.Uint16(b[at:]))
		v := b[head+2*k+j]
		switch {
		case i >= m:
			return nil, fmt.Errorf("airlift: overflow %d at byte %d names bucket %d of %d: %w", j, at, i, m, ErrCorrupt)
		case j > 0 && i <= int(binary.LittleEndian.Uint16(b[at-2:])):
			return nil, fmt.Errorf("airlift: overflow %d at byte %d is not above the one before: %w", j, at, ErrCorrupt)
		case s.regs[i] != base+maxDelta:
			return nil, fmt.Errorf("airlift: overflow %d at byte %d is for bucket %d, whose delta is not %d: %w", j, at, i, maxDelta, ErrCorrupt)
		case v == 0:
			return nil, fmt.Errorf("airlift: overflow %d at byte %d is 0: %w", j, head+2*k+j, ErrCorrupt)
		case int(s.regs[i])+int(v) > top:
			return nil, fmt.Errorf("airlift: overflow %d at byte %d makes bucket %d %d, above %d at %d index bits: %w", j, head+2*k+j, i, int(s.regs[i])+int(v), top, p, ErrCorrupt)
		}
		s.regs[i] += v
	}
	for i, v := range s.regs {
		if int(v) > top {
			return nil, fmt.Errorf("airlift: bucket %d holds %d, above %d at %d index bits: %w", i, v, top, p, ErrCorrupt)
		}
	}
	return s, nil
}
