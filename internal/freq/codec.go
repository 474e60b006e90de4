package freq

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/sketchd/sketchd/internal/theta"
)

// The compact tuple sketch format, serial version 3 (little-endian), with
// an integer summary:
//
//	byte 0     preamble longs: 1 (empty, or one entry while exact), 2
//	           (exact), 3 (estimating: theta follows)
//	byte 1     serial version, 3
//	byte 2     family, 9 (tuple)
//	byte 3     sketch type, 1 (compact tuple sketch)
//	byte 4     unused (the libraries write 0 and never read it;
//	           AppendStored keeps lg_k there)
//	byte 5     flags: 1 big-endian (never), 2 read-only, 4 empty, 8
//	           compact, 16 ordered
//	bytes 6-7  seed hash
//	bytes 8-11 number of entries (preamble longs >= 2); 12-15 unused
//	bytes 16-23 theta (preamble longs 3)
//	then per entry: the 8-byte key and its summary, either 4 bytes (a
//	little-endian int32: the C++ and Python libraries with an int32 serde)
//	or 5 bytes (Java's IntegerSummary: the int32, then its mode, 0 = sum)
const (
	serialVersion = 3
	familyTuple   = 9
	typeCompact   = 1

	flagBigEndian = 1
	flagReadOnly  = 2
	flagEmpty     = 4
	flagCompact   = 8
	flagOrdered   = 16
	flagsKnown    = flagBigEndian | flagReadOnly | flagEmpty | flagCompact | flagOrdered

	modeSum = 0
)

// Summary widths: SummaryInt32 is the C++/Python int32 serde's 4 bytes;
// SummaryJava is Java IntegerSummary's 5 (value, mode).
const (
	SummaryInt32 = 4
	SummaryJava  = 5
)

func (s *Sketch) preambleLongs() int {
	switch {
	case s.IsEstimationMode():
		return 3
	case s.empty || s.n == 1:
		return 1
	}
	return 2
}

// SizeBytes returns the length of MarshalBinary's encoding.
func (s *Sketch) SizeBytes() int { return 8*s.preambleLongs() + (8+SummaryInt32)*s.n }

// MarshalBinary encodes the sketch with 4-byte summaries (AppendBinary).
func (s *Sketch) MarshalBinary() ([]byte, error) {
	return s.AppendBinary(make([]byte, 0, s.SizeBytes()))
}

// AppendBinary appends the ordered compact tuple encoding with 4-byte
// integer summaries: the bytes the C++ library, and the Python one with
// PyIntsSerDe, write for a compact_tuple_sketch with an AccumulatorPolicy
// over the same contents. It never fails.
func (s *Sketch) AppendBinary(b []byte) ([]byte, error) {
	return s.appendWidth(b, SummaryInt32), nil
}

// AppendJava appends the encoding with Java IntegerSummary's 5-byte
// summaries (the count, then mode 0, sum), which Java's
// IntegerSummaryDeserializer reads; the C++ and Python libraries read it
// with a serde that skips the mode byte.
func (s *Sketch) AppendJava(b []byte) []byte { return s.appendWidth(b, SummaryJava) }

func (s *Sketch) appendWidth(b []byte, width int) []byte {
	pre := s.preambleLongs()
	flags := byte(flagCompact | flagReadOnly | flagOrdered)
	if s.empty {
		flags |= flagEmpty
	}
	b = append(b, byte(pre), serialVersion, familyTuple, typeCompact, 0, flags)
	b = binary.LittleEndian.AppendUint16(b, theta.SeedHash())
	if pre > 1 {
		b = binary.LittleEndian.AppendUint32(b, uint32(s.n))
		b = binary.LittleEndian.AppendUint32(b, 0)
	}
	if pre > 2 {
		b = binary.LittleEndian.AppendUint64(b, s.theta)
	}
	keys, counts := s.sortedEntries()
	for i, h := range keys {
		b = binary.LittleEndian.AppendUint64(b, h)
		b = binary.LittleEndian.AppendUint32(b, counts[i])
		if width == SummaryJava {
			b = append(b, modeSum)
		}
	}
	return b
}

// AppendStored appends the 4-byte-summary encoding with lg_k in byte 4,
// which the libraries' readers skip as unused, so that Decode restores the
// sketch's parameters (the format does not record them).
func (s *Sketch) AppendStored(b []byte) []byte { return s.AppendStoredWidth(b, SummaryInt32) }

// AppendStoredWidth is AppendStored with summaries of the given width:
// SummaryInt32 (the C++/Python form) or SummaryJava (Java's
// IntegerSummary, value then mode).
func (s *Sketch) AppendStoredWidth(b []byte, width int) []byte {
	n := len(b)
	b = s.appendWidth(b, width)
	b[n+4] = s.lgK
	return b
}

// Sniff reports whether b starts like a compact tuple sketch of serial
// version 3 (preamble longs 1 to 3, version 3, family 9, type 1).
func Sniff(b []byte) bool {
	return len(b) >= 8 && b[0] >= 1 && b[0] <= 3 && b[1] == serialVersion && b[2] == familyTuple && b[3] == typeCompact
}

// Decode decodes a compact tuple sketch (see DecodeParams) with the
// parameters the bytes imply: lg_k from byte 4 when it holds one in range
// (AppendStored writes it there), otherwise 12 or the smallest lg_k that
// keeps every entry if that is larger.
func Decode(b []byte) (*Sketch, error) {
	return DecodeParams(b, ParamsOf(b))
}

// ParamsOf returns the parameters Decode uses for b.
func ParamsOf(b []byte) Params {
	if len(b) >= 5 && int(b[4]) >= theta.MinLgK && int(b[4]) <= theta.MaxLgK {
		return Params{LgK: int(b[4])}
	}
	p := DefaultParams()
	if len(b) >= 12 && b[0] >= 2 {
		n := int(binary.LittleEndian.Uint32(b[8:]))
		for p.LgK < theta.MaxLgK && p.MaxRetained() < n {
			p.LgK++
		}
	}
	return p
}

// UnmarshalBinary replaces s with the sketch in b, keeping s's lg_k (see
// DecodeParams). On error s is unchanged.
func (s *Sketch) UnmarshalBinary(b []byte) error {
	d, err := DecodeParams(b, s.Params())
	if err != nil {
		return err
	}
	*s = *d
	return nil
}

// DecodeParams decodes a compact tuple sketch, serial version 3, type 1, whose
// summaries are integer counts of either width (4 bytes as C++/Python
// write them, 5 as Java's IntegerSummary does, told apart by the length),
// into a sketch with parameters p (the format does not record lg_k). The
// empty form (8 bytes; any seed hash, as the libraries ignore it there),
// the single-entry form (preamble 1) and preambles 2 and 3 are accepted,
// ordered or not.
//
// Errors: fewer bytes than the preamble or the entries need: ErrTooShort.
// Serial version other than 3: ErrVersion. Another seed's hash, an invalid
// p, more entries than p keeps, or a Java summary whose mode is not sum:
// ErrParams. Another family or type, unknown, big-endian or missing
// compact flags, a preamble that does not fit the flags, a length that is
// not the entries at one summary width, a key that is zero, not below
// theta, out of order or repeated, or a count below 1: ErrCorrupt.
// Nothing is allocated before the length is checked against the count.
func DecodeParams(b []byte, p Params) (*Sketch, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if len(b) < 8 {
		return nil, fmt.Errorf("freq: preamble needs 8 bytes, have %d: %w", len(b), ErrTooShort)
	}
	if b[1] != serialVersion {
		return nil, fmt.Errorf("freq: serial version %d at byte 1, want 3: %w", b[1], ErrVersion)
	}
	if b[2] != familyTuple || b[3] != typeCompact {
		return nil, fmt.Errorf("freq: family %d type %d at bytes 2-3, want 9 type 1 (compact tuple sketch): %w", b[2], b[3], ErrCorrupt)
	}
	pre, flags := int(b[0]), b[5]
	switch {
	case flags&^flagsKnown != 0 || flags&flagBigEndian != 0 || flags&flagCompact == 0:
		return nil, fmt.Errorf("freq: flags %#02x at byte 5: %w", flags, ErrCorrupt)
	case pre < 1 || pre > 3:
		return nil, fmt.Errorf("freq: %d preamble longs at byte 0, want 1 to 3: %w", pre, ErrCorrupt)
	}
	seedHash := binary.LittleEndian.Uint16(b[6:])
	s := &Sketch{lgK: uint8(p.LgK), theta: theta.MaxTheta}
	if flags&flagEmpty != 0 {
		if pre != 1 || len(b) != 8 {
			return nil, fmt.Errorf("freq: empty sketch with %d preamble longs and %d bytes: %w", pre, len(b), ErrCorrupt)
		}
		s.empty = true
		return s, nil
	}
	if seedHash != theta.SeedHash() {
		return nil, fmt.Errorf("freq: seed hash %#04x at byte 6, want %#04x (seed %d): %w", seedHash, theta.SeedHash(), theta.Seed, ErrParams)
	}
	count := uint64(1)
	if pre > 1 {
		if len(b) < 8*pre {
			return nil, fmt.Errorf("freq: preamble needs %d bytes, have %d: %w", 8*pre, len(b), ErrTooShort)
		}
		count = uint64(binary.LittleEndian.Uint32(b[8:]))
		if pre == 3 {
			s.theta = binary.LittleEndian.Uint64(b[16:])
			if s.theta == 0 || s.theta > theta.MaxTheta {
				return nil, fmt.Errorf("freq: theta %#x at byte 16 not in (0, 2^63-1]: %w", s.theta, ErrCorrupt)
			}
		}
	}
	body := uint64(len(b) - 8*pre)
	var width uint64
	switch {
	case body < count*(8+SummaryInt32):
		return nil, fmt.Errorf("freq: %d entries need at least %d bytes after the preamble, have %d: %w", count, count*(8+SummaryInt32), body, ErrTooShort)
	case count == 0 && body == 0:
	case count > 0 && body == count*(8+SummaryInt32):
		width = SummaryInt32
	case count > 0 && body == count*(8+SummaryJava):
		width = SummaryJava
	default:
		return nil, fmt.Errorf("freq: %d bytes after the preamble hold %d entries at neither summary width: %w", body, count, ErrCorrupt)
	}
	if count > uint64(p.MaxRetained()) {
		return nil, fmt.Errorf("freq: %d entries, more than lg_k %d keeps (%d): %w", count, p.LgK, p.MaxRetained(), ErrParams)
	}
	keys := make([]uint64, count)
	counts := make([]uint32, count)
	off := 8 * pre
	for i := range keys {
		h := binary.LittleEndian.Uint64(b[off:])
		c := int32(binary.LittleEndian.Uint32(b[off+8:]))
		switch {
		case h == 0 || h >= s.theta:
			return nil, fmt.Errorf("freq: key %#x at byte %d not in (0, theta %#x): %w", h, off, s.theta, ErrCorrupt)
		case flags&flagOrdered != 0 && i > 0 && h <= keys[i-1]:
			return nil, fmt.Errorf("freq: key at byte %d not above the one before in an ordered sketch: %w", off, ErrCorrupt)
		case c < 1:
			return nil, fmt.Errorf("freq: count %d at byte %d below 1: %w", c, off+8, ErrCorrupt)
		case width == SummaryJava && b[off+12] != modeSum:
			return nil, fmt.Errorf("freq: summary mode %d at byte %d, want 0 (sum): %w", b[off+12], off+12, ErrParams)
		}
		keys[i], counts[i] = h, uint32(c)
		off += 8 + int(width)
	}
	if flags&flagOrdered == 0 {
		sorted := slices.Clone(keys)
		slices.Sort(sorted)
		for i := 1; i < len(sorted); i++ {
			if sorted[i] == sorted[i-1] {
				return nil, fmt.Errorf("freq: key %#x repeated: %w", sorted[i], ErrCorrupt)
			}
		}
	}
	if count > 0 {
		s.rehash(tableLgSize(int(count), p.LgK), keys, counts)
	}
	return s, nil
}
