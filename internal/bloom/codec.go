package bloom

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Encoding constants; doc.go describes the layout byte by byte.
const (
	version   = 0xB1 // high nibble 0xB marks a Bloom filter, low nibble is version 1
	headerLen = 36
)

// Sniff reports whether b starts like a Bloom filter's encoding (its
// version byte), for uploads that do not say their kind.
func Sniff(b []byte) bool { return len(b) > 0 && b[0] == version }

// MarshalBinary returns the encoding of f (doc.go).
func (f *Filter) MarshalBinary() ([]byte, error) { return f.AppendBinary(nil), nil }

// AppendBinary appends the encoding of f (doc.go) to b.
func (f *Filter) AppendBinary(b []byte) []byte {
	b = slices.Grow(b, f.SizeBytes())
	b = append(b, version, 0, byte(f.p.Hashes), 0)
	b = binary.BigEndian.AppendUint64(b, uint64(f.p.Bits))
	b = binary.BigEndian.AppendUint64(b, uint64(f.p.ExpectedItems))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(f.p.FPP))
	b = binary.BigEndian.AppendUint64(b, uint64(f.set))
	for _, w := range f.words {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	return b
}

// UnmarshalBinary replaces f with the filter encoded in b; see Decode for
// what is accepted. On error f is unchanged.
func (f *Filter) UnmarshalBinary(b []byte) error {
	d, err := Decode(b)
	if err != nil {
		return err
	}
	*f = *d
	return nil
}

// Decode returns the filter encoded in b (doc.go), checked as strictly as
// an upload. Errors name the offset and wrap:
//
//   - ErrTooShort: b is shorter than the 36-byte header, or than the
//     header plus the bit array it declares;
//   - ErrVersion: the first byte is not 0xB1;
//   - ErrParams: bits or hashes out of range, bits not a multiple of 64,
//     a stated rate out of range (Params.Validate);
//   - ErrCorrupt: non-zero flags or reserved byte; expected items above
//     2^63−1; a stated rate without items or items without a rate; a bit
//     count that is not the population count of the array; bytes after
//     the array.
//
// Nothing is allocated before the length is checked against the header,
// so memory is bounded by len(b).
func Decode(b []byte) (*Filter, error) {
	if len(b) < headerLen {
		return nil, fmt.Errorf("bloom: header needs %d bytes, got %d: %w", headerLen, len(b), ErrTooShort)
	}
	if b[0] != version {
		if b[0]>>4 == version>>4 {
			return nil, fmt.Errorf("bloom: offset 0: format version %d, want %d: %w", b[0]&0xF, version&0xF, ErrVersion)
		}
		return nil, fmt.Errorf("bloom: offset 0: first byte %#02x is not a Bloom filter encoding: %w", b[0], ErrVersion)
	}
	if b[1] != 0 {
		return nil, fmt.Errorf("bloom: offset 1: flags %#02x: %w", b[1], ErrCorrupt)
	}
	if b[3] != 0 {
		return nil, fmt.Errorf("bloom: offset 3: reserved byte %#02x: %w", b[3], ErrCorrupt)
	}
	m := binary.BigEndian.Uint64(b[4:])
	n := binary.BigEndian.Uint64(b[12:])
	fppBits := binary.BigEndian.Uint64(b[20:])
	set := binary.BigEndian.Uint64(b[28:])
	if m > MaxBits {
		return nil, fmt.Errorf("bloom: offset 4: bits %d not in %d..%d (the limit is a 16 MiB filter): %w", m, MinBits, MaxBits, ErrParams)
	}
	if n > math.MaxInt64 {
		return nil, fmt.Errorf("bloom: offset 12: expected items %d above %d: %w", n, int64(math.MaxInt64), ErrCorrupt)
	}
	if (n == 0) != (fppBits == 0) {
		return nil, fmt.Errorf("bloom: offset 12: expected items %d and rate bits %#x: both or neither are stated: %w", n, fppBits, ErrCorrupt)
	}
	p := Params{Bits: int(m), Hashes: int(b[2]), ExpectedItems: int64(n), FPP: math.Float64frombits(fppBits)}
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("bloom: offset 2: %w", err)
	}
	if want := headerLen + int(m)/8; len(b) != want {
		if len(b) < want {
			return nil, fmt.Errorf("bloom: %d bits need %d bytes, got %d: %w", m, want, len(b), ErrTooShort)
		}
		return nil, fmt.Errorf("bloom: offset %d: %d trailing bytes: %w", want, len(b)-want, ErrCorrupt)
	}
	f := &Filter{p: p, words: make([]uint64, m/64)}
	pop := 0
	for i := range f.words {
		w := binary.LittleEndian.Uint64(b[headerLen+8*i:])
		f.words[i] = w
		pop += bits.OnesCount64(w)
	}
	if uint64(pop) != set {
		return nil, fmt.Errorf("bloom: offset 28: %d bits set stated, %d in the array: %w", set, pop, ErrCorrupt)
	}
	f.set = pop
	return f, nil
}
