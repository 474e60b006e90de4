package zeta

import (
	"fmt"
	"math/bits"
)

// Field tags (field number << 3 | wire type) of the fields sketchd reads
// and writes; doc.go lists them with their meaning.
const (
	tagType            = 1<<3 | 0
	tagNumValues       = 2<<3 | 0
	tagEncodingVersion = 3<<3 | 0
	tagValueType       = 4<<3 | 0
	tagHLL             = 112<<3 | 2
	tagSparseSize      = 2<<3 | 0
	tagPrecision       = 3<<3 | 0
	tagSparsePrecision = 4<<3 | 0
	tagData            = 5<<3 | 2
	tagSparseData      = 6<<3 | 2

	aggregatorHLL   = 112 // AggregatorType.HYPERLOGLOG_PLUS_UNIQUE
	encodingVersion = 2
)

// Sniff reports whether b begins as a ZetaSketch HLL++ state does: field
// 1 (the aggregator type) with HYPERLOGLOG_PLUS_UNIQUE (112).
func Sniff(b []byte) bool { return len(b) >= 2 && b[0] == tagType && b[1] == aggregatorHLL }

// AppendBinary appends the sketch's AggregatorStateProto bytes, exactly
// as ZetaSketch's serializeToByteArray writes them (see doc.go); it
// compacts the sketch first.
func (s *Sketch) AppendBinary(b []byte) []byte {
	s.Compact()
	inner := s.hllSize()
	b = appendUvarint(b, tagType)
	b = appendUvarint(b, aggregatorHLL)
	b = appendUvarint(b, tagNumValues)
	b = appendUvarint(b, uint64(s.numValues))
	b = appendUvarint(b, tagEncodingVersion)
	b = appendUvarint(b, encodingVersion)
	if s.valueType != TypeUnknown {
		b = appendUvarint(b, tagValueType)
		b = appendUvarint(b, uint64(s.valueType))
	}
	b = appendUvarint(b, tagHLL)
	b = appendUvarint(b, uint64(inner))
	if n := len(s.sparse); n != 0 && !s.normal {
		b = appendUvarint(b, tagSparseSize)
		b = appendUvarint(b, uint64(n))
	}
	b = appendUvarint(b, tagPrecision)
	b = appendUvarint(b, uint64(s.p))
	if s.sp != 0 {
		b = appendUvarint(b, tagSparsePrecision)
		b = appendUvarint(b, uint64(s.sp))
	}
	if s.normal {
		if s.data != nil {
			b = appendUvarint(b, tagData)
			b = appendUvarint(b, uint64(len(s.data)))
			b = append(b, s.data...)
		}
		return b
	}
	b = appendUvarint(b, tagSparseData)
	b = appendUvarint(b, uint64(sparseSize(s.sparse)))
	last := uint32(0)
	for _, v := range s.sparse {
		b = appendUvarint(b, uint64(v-last))
		last = v
	}
	return b
}

// SizeBytes is the length of AppendBinary's encoding.
func (s *Sketch) SizeBytes() int {
	s.Compact()
	inner := s.hllSize()
	n := 2 + 1 + uvarintLen(uint64(s.numValues)) + 2 + 2 + uvarintLen(uint64(inner)) + inner
	if s.valueType != TypeUnknown {
		n += 1 + uvarintLen(uint64(s.valueType))
	}
	return n
}

// hllSize is the length of the HyperLogLogPlusUniqueStateProto.
func (s *Sketch) hllSize() int {
	n := 2
	if s.sp != 0 {
		n += 2
	}
	if s.normal {
		if s.data != nil {
			n += 1 + uvarintLen(uint64(len(s.data))) + len(s.data)
		}
		return n
	}
	if l := len(s.sparse); l != 0 {
		n += 1 + uvarintLen(uint64(l))
	}
	sz := sparseSize(s.sparse)
	return n + 1 + uvarintLen(uint64(sz)) + sz
}

// Decode parses an AggregatorStateProto of type HYPERLOGLOG_PLUS_UNIQUE
// as strictly as doc.go describes: the fields sketchd knows, each at
// most once, in field order, varints in their shortest form, and nothing
// else. Errors wrap ErrCorrupt (malformed or inconsistent bytes, with
// the byte offset), ErrVersion (another aggregator type or encoding
// version), ErrParams (precisions outside 10..24 and p..25) or
// ErrValueType (a value type other than unknown, 64-bit integers and
// strings). Allocation is bounded by a small multiple of len(b): the
// registers and sparse values are in b.
func Decode(b []byte) (*Sketch, error) {
	r := reader{b: b}
	var (
		s        Sketch
		seen     int // the last field number read
		typ      uint64
		ver      uint64 = 1
		hll      []byte
		hllAt    int
		haveType bool
		haveNum  bool
	)
	for !r.done() {
		at := r.i
		tag, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		num := int(tag >> 3)
		if num <= seen {
			return nil, fmt.Errorf("zeta: field %d at byte %d after field %d: %w", num, at, seen, ErrCorrupt)
		}
		seen = num
		switch tag {
		case tagType:
			if typ, err = r.uvarint(); err != nil {
				return nil, err
			}
			haveType = true
		case tagNumValues:
			v, err := r.uvarint()
			if err != nil {
				return nil, err
			}
			if v > 1<<63-1 {
				return nil, fmt.Errorf("zeta: num_values at byte %d is negative: %w", at, ErrCorrupt)
			}
			s.numValues, haveNum = int64(v), true
		case tagEncodingVersion:
			if ver, err = r.uvarint(); err != nil {
				return nil, err
			}
		case tagValueType:
			v, err := r.uvarint()
			if err != nil {
				return nil, err
			}
			switch ValueType(v) {
			case TypeLong, TypeString:
				s.valueType = ValueType(v)
			default:
				return nil, fmt.Errorf("zeta: value type %d at byte %d is not one sketchd counts (8, 64-bit integers; 11, strings and bytes): %w", v, at, ErrValueType)
			}
		case tagHLL:
			if hll, err = r.bytes(); err != nil {
				return nil, err
			}
			hllAt = r.i - len(hll)
		default:
			return nil, fmt.Errorf("zeta: unknown field %d (wire type %d) at byte %d: %w", num, tag&7, at, ErrCorrupt)
		}
	}
	if !haveType || typ != aggregatorHLL {
		return nil, fmt.Errorf("zeta: aggregator type %d is not HYPERLOGLOG_PLUS_UNIQUE (112): %w", typ, ErrVersion)
	}
	if !haveNum {
		return nil, fmt.Errorf("zeta: no num_values: %w", ErrCorrupt)
	}
	if ver != encodingVersion {
		return nil, fmt.Errorf("zeta: encoding version %d, sketchd reads 2: %w", ver, ErrVersion)
	}
	if seen != 112 {
		return nil, fmt.Errorf("zeta: no hyperloglogplus_unique_state (field 112): %w", ErrCorrupt)
	}
	if err := s.decodeHLL(hll, hllAt); err != nil {
		return nil, err
	}
	return &s, nil
}

// decodeHLL reads the HyperLogLogPlusUniqueStateProto at offset base.
func (s *Sketch) decodeHLL(b []byte, base int) error {
	r := reader{b: b, base: base}
	seen := 0
	var sparseN uint64
	var data, sparse []byte
	haveData, haveSparse := false, false
	dataAt, sparseAt := 0, 0
	for !r.done() {
		at := r.base + r.i
		tag, err := r.uvarint()
		if err != nil {
			return err
		}
		num := int(tag >> 3)
		if num <= seen {
			return fmt.Errorf("zeta: state field %d at byte %d after field %d: %w", num, at, seen, ErrCorrupt)
		}
		seen = num
		switch tag {
		case tagSparseSize, tagPrecision, tagSparsePrecision:
			v, err := r.uvarint()
			if err != nil {
				return err
			}
			if v > 1<<31-1 {
				return fmt.Errorf("zeta: state field %d at byte %d is out of range: %w", num, at, ErrCorrupt)
			}
			switch tag {
			case tagSparseSize:
				sparseN = v
			case tagPrecision:
				s.p = int(v)
			default:
				s.sp = int(v)
			}
		case tagData:
			if data, err = r.bytes(); err != nil {
				return err
			}
			haveData, dataAt = true, r.base+r.i-len(data)
		case tagSparseData:
			if sparse, err = r.bytes(); err != nil {
				return err
			}
			haveSparse, sparseAt = true, r.base+r.i-len(sparse)
		default:
			return fmt.Errorf("zeta: unknown state field %d (wire type %d) at byte %d: %w", num, tag&7, at, ErrCorrupt)
		}
	}
	if err := (Params{s.p, s.sp}).Validate(); err != nil {
		return err
	}
	m := 1 << s.p
	switch {
	case haveData && haveSparse:
		return fmt.Errorf("zeta: both normal data and sparse data: %w", ErrCorrupt)
	case haveData:
		if len(data) != m {
			return fmt.Errorf("zeta: normal data of %d bytes at byte %d, precision %d needs %d: %w", len(data), dataAt, s.p, m, ErrCorrupt)
		}
		for i, v := range data {
			if int(v) > 65-s.p {
				return fmt.Errorf("zeta: register %d is %d, above %d at precision %d: %w", i, v, 65-s.p, s.p, ErrCorrupt)
			}
		}
		if sparseN != 0 {
			return fmt.Errorf("zeta: sparse_size %d with normal data: %w", sparseN, ErrCorrupt)
		}
		s.normal, s.data = true, append([]byte(nil), data...)
	case s.sp == 0:
		if haveSparse || sparseN != 0 {
			return fmt.Errorf("zeta: sparse data without a sparse precision: %w", ErrCorrupt)
		}
		s.normal = true
	default:
		if len(sparse) > m {
			return fmt.Errorf("zeta: sparse data of %d bytes at byte %d, more than the %d of normal data: %w", len(sparse), sparseAt, m, ErrCorrupt)
		}
		if sparseN > uint64(len(sparse)) {
			return fmt.Errorf("zeta: sparse_size %d with %d bytes of sparse data: %w", sparseN, len(sparse), ErrCorrupt)
		}
		vals, err := decodeSparse(enc{s.p, s.sp}, sparse, sparseAt, int(sparseN))
		if err != nil {
			return err
		}
		s.sparse = vals
	}
	return nil
}

// decodeSparse reads n difference-encoded sparse values: each a valid
// value of e, strictly increasing, one per sparse index.
func decodeSparse(e enc, b []byte, base, n int) ([]uint32, error) {
	r := reader{b: b, base: base}
	vals := make([]uint32, 0, n)
	var last uint64
	for i := 0; !r.done(); i++ {
		at := r.base + r.i
		d, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		if i > 0 && d == 0 {
			return nil, fmt.Errorf("zeta: sparse value %d at byte %d repeats the one before: %w", i, at, ErrCorrupt)
		}
		last += d
		if last > 1<<31-1 || !e.valid(uint32(last)) {
			return nil, fmt.Errorf("zeta: sparse value %d (%d) at byte %d is not a sparse value at precisions %d/%d: %w", i, last, at, e.p, e.sp, ErrCorrupt)
		}
		v := uint32(last)
		if len(vals) > 0 && e.key(vals[len(vals)-1]) == e.key(v) {
			return nil, fmt.Errorf("zeta: sparse value %d at byte %d repeats a sparse index: %w", i, at, ErrCorrupt)
		}
		if len(vals) == n {
			return nil, fmt.Errorf("zeta: more sparse values than sparse_size %d: %w", n, ErrCorrupt)
		}
		vals = append(vals, v)
	}
	if len(vals) != n {
		return nil, fmt.Errorf("zeta: %d sparse values, sparse_size says %d: %w", len(vals), n, ErrCorrupt)
	}
	return vals, nil
}

// reader reads protobuf wire data strictly; base is b's offset in the
// whole input, for messages.
type reader struct {
	b    []byte
	i    int
	base int
}

func (r *reader) done() bool { return r.i >= len(r.b) }

// uvarint reads a varint of at most 10 bytes in its shortest form.
func (r *reader) uvarint() (uint64, error) {
	at := r.base + r.i
	var v uint64
	for k := 0; ; k++ {
		if r.i >= len(r.b) {
			return 0, fmt.Errorf("zeta: varint at byte %d runs past the end: %w", at, ErrCorrupt)
		}
		c := r.b[r.i]
		r.i++
		if k == 9 && c > 1 {
			return 0, fmt.Errorf("zeta: varint at byte %d overflows 64 bits: %w", at, ErrCorrupt)
		}
		v |= uint64(c&0x7f) << (7 * k)
		if c < 0x80 {
			if c == 0 && k > 0 {
				return 0, fmt.Errorf("zeta: varint at byte %d is not in its shortest form: %w", at, ErrCorrupt)
			}
			return v, nil
		}
	}
}

// bytes reads a length-delimited field's contents.
func (r *reader) bytes() ([]byte, error) {
	at := r.base + r.i
	n, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(r.b)-r.i) {
		return nil, fmt.Errorf("zeta: field of %d bytes at byte %d runs past the end: %w", n, at, ErrCorrupt)
	}
	v := r.b[r.i : r.i+int(n) : r.i+int(n)]
	r.i += int(n)
	return v, nil
}

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }
