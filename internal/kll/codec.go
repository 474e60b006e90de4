package kll

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Preamble constants of DataSketches' compact KLL format (doc.go).
const (
	family          = 15
	preIntsShort    = 2 // empty or single item
	preIntsFull     = 5
	serVerFull      = 1 // empty or full
	serVerSingle    = 2
	serVerUpdatable = 3 // Java's updatable (direct) form, not read
	flagEmpty       = 1
	flagSorted      = 2 // level 0 sorted
	flagSingle      = 4
	// flagDoubles is how DataSketches' Java library 3.2 to 4.0 marked a
	// sketch of doubles (DOUBLES_SKETCH_BIT_MASK; its floats sketch, with
	// 4-byte items, went unmarked); 4.1 stopped writing it and every
	// version since ignores it.
	flagDoubles   = 8
	fullHeaderLen = 20
)

// ItemType is what a sketch keeps, as byte 7 of sketchd's encoding says:
// 0 doubles (what the libraries write there), 1 longs.
type ItemType byte

// The item types.
const (
	Doubles ItemType = 0
	Longs   ItemType = 1
)

// String names the type as the API does.
func (t ItemType) String() string {
	if t == Longs {
		return "long"
	}
	return "double"
}

// ItemTypeOf is the ItemType of a sketch of T.
func ItemTypeOf[T Item]() ItemType {
	var z T
	if _, ok := any(z).(float64); ok {
		return Doubles
	}
	return Longs
}

// Sniff reports whether b starts like a compact KLL sketch: a preamble of
// 2 or 5 ints, serial version 1 or 2 and family 15.
func Sniff(b []byte) bool {
	return len(b) >= 8 && (b[0] == preIntsShort || b[0] == preIntsFull) && (b[1] == serVerFull || b[1] == serVerSingle) && b[2] == family
}

// TypeOf returns the item type b's byte 7 names (ErrCorrupt for another
// value), without decoding the rest.
func TypeOf(b []byte) (ItemType, error) {
	if len(b) < 8 {
		return 0, fmt.Errorf("kll: preamble needs 8 bytes, got %d: %w", len(b), ErrTooShort)
	}
	if t := ItemType(b[7]); t == Doubles || t == Longs {
		return t, nil
	}
	return 0, fmt.Errorf("kll: offset 7: item type %d is neither 0 (doubles) nor 1 (longs): %w", b[7], ErrCorrupt)
}

// Declared reports the item type b's preamble declares, if it declares
// one: longs when byte 7 is 1 (sketchd's mark), doubles when flag 8 of
// byte 3 is set (how DataSketches' Java library 3.2 to 4.0 marked a
// sketch of doubles). ok is false for bytes that are no KLL preamble
// (Sniff) and for every other library's: their sketches of doubles and of
// longs look alike, and only the reader can say which it has. A preamble
// with both marks declares longs, which Decode then refuses.
func Declared(b []byte) (t ItemType, ok bool) {
	switch {
	case !Sniff(b):
		return 0, false
	case ItemType(b[7]) == Longs:
		return Longs, true
	case b[3]&flagDoubles != 0:
		return Doubles, true
	}
	return 0, false
}

// MarkLongs returns a copy of b whose byte 7 says longs: how the bytes of
// a library's sketch of longs, which do not say so, are taken as longs.
func MarkLongs(b []byte) []byte {
	c := slices.Clone(b)
	if len(c) >= 8 {
		c[7] = byte(Longs)
	}
	return c
}

// SizeBytes is the length of the sketch's compact encoding (AppendBinary),
// without encoding it: an 8-byte head, then the value of a sketch of one,
// or for two or more values the rest of the header, a word per level, min,
// max and the retained items.
func (s *Sketch[T]) SizeBytes() int {
	switch s.n {
	case 0:
		return 8
	case 1:
		return 8 + 8
	}
	return fullHeaderLen + 4*s.numLevels() + 8*(s.Retained()+2)
}

// AppendBinary appends the sketch's compact encoding (doc.go) to b.
func (s *Sketch[T]) AppendBinary(b []byte) []byte {
	var flags byte
	if s.level0Sorted {
		flags |= flagSorted
	}
	head := func(preInts, serVer, flags byte) []byte {
		b = append(b, preInts, serVer, family, flags)
		b = binary.LittleEndian.AppendUint16(b, uint16(s.k))
		return append(b, m, byte(ItemTypeOf[T]()))
	}
	switch s.n {
	case 0:
		// An empty sketch read with level 0 flagged sorted writes it back.
		return head(preIntsShort, serVerFull, flags|flagEmpty)
	case 1:
		b = head(preIntsShort, serVerSingle, flags|flagSingle)
		return appendItem(b, s.at(s.levels[0]))
	}
	b = slices.Grow(b, s.SizeBytes())
	b = head(preIntsFull, serVerFull, flags)
	b = binary.LittleEndian.AppendUint64(b, s.n)
	b = binary.LittleEndian.AppendUint16(b, uint16(s.minK))
	b = append(b, byte(s.numLevels()), 0)
	for _, l := range s.levels[:s.numLevels()] {
		b = binary.LittleEndian.AppendUint32(b, uint32(l))
	}
	b = appendItem(b, s.min)
	b = appendItem(b, s.max)
	for i := s.levels[0]; i < s.levels[s.numLevels()]; i++ {
		b = appendItem(b, s.at(i))
	}
	return b
}

func appendItem[T Item](b []byte, v T) []byte {
	switch x := any(v).(type) {
	case float64:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	case int64:
		return binary.LittleEndian.AppendUint64(b, uint64(x))
	}
	panic("kll: unreachable item type")
}

func readItem[T Item](b []byte) T {
	u := binary.LittleEndian.Uint64(b)
	var z T
	switch any(z).(type) {
	case float64:
		return any(math.Float64frombits(u)).(T)
	default:
		return any(int64(u)).(T)
	}
}

// finite reports whether v is not a NaN or an infinity.
func finite[T Item](v T) bool {
	f, ok := any(v).(float64)
	return !ok || !math.IsNaN(f) && !math.IsInf(f, 0)
}

// Decode returns the sketch of items T encoded in b (doc.go), checked as
// strictly as an upload. Errors name the offset and wrap:
//
//   - ErrTooShort: b ends inside the preamble, the levels or the items;
//   - ErrVersion: family not 15, a preamble and serial version that are
//     neither empty (2, 1), single (2, 2) nor full (5, 1), among them
//     Java's updatable form (serial version 3);
//   - ErrParams: k outside MinK..MaxK, m not 8;
//   - ErrCorrupt: unknown flags or flags that contradict the preamble;
//     byte 7 not T's item type; flag 8 (a sketch of doubles, as Java 3.2
//     to 4.0 wrote it) when T is int64; a byte after the number of levels not
//     zero; n of 0 or 1 in the full form; min k outside 8..k; no levels or
//     more than 61; level boundaries out of order or beyond the capacity
//     the levels imply; no items retained; weights (2^h an item of level
//     h) not summing to n; a non-finite double; min above max; an item
//     outside [min, max]; a level above 0 (or level 0 when flagged) out of
//     order; in exact mode (one level) a min or max that is not the
//     smallest or largest item; bytes after the last item.
//
// The items are checked against the input's length before anything is
// allocated, and a decoded sketch holds only its retained items, so memory
// is bounded by len(b). Flag 8 is read, not kept: the sketch encodes as
// the libraries write it today, without it.
func Decode[T Item](b []byte) (*Sketch[T], error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("kll: preamble needs 8 bytes, got %d: %w", len(b), ErrTooShort)
	}
	if b[2] != family {
		return nil, fmt.Errorf("kll: offset 2: family %d is not KLL (15): %w", b[2], ErrVersion)
	}
	preInts, serVer, flags := b[0], b[1], b[3]
	full := preInts == preIntsFull && serVer == serVerFull
	switch {
	case serVer == serVerUpdatable:
		return nil, fmt.Errorf("kll: offset 1: serial version 3 is Java's updatable form; send the compact bytes (toByteArray): %w", ErrVersion)
	case !full && !(preInts == preIntsShort && (serVer == serVerFull || serVer == serVerSingle)):
		return nil, fmt.Errorf("kll: offset 0: preamble of %d ints with serial version %d: %w", preInts, serVer, ErrVersion)
	}
	if flags&^(flagEmpty|flagSorted|flagSingle|flagDoubles) != 0 {
		return nil, fmt.Errorf("kll: offset 3: flags %#02x: %w", flags, ErrCorrupt)
	}
	if flags&flagDoubles != 0 && ItemTypeOf[T]() != Doubles {
		return nil, fmt.Errorf("kll: offset 3: flag 8 marks a sketch of doubles (as DataSketches' Java library 3.2 to 4.0 wrote it), not of %ss: %w", ItemTypeOf[T](), ErrCorrupt)
	}
	k := int(binary.LittleEndian.Uint16(b[4:]))
	if err := CheckK(k); err != nil {
		return nil, fmt.Errorf("kll: offset 4: %w", err)
	}
	if b[6] != m {
		return nil, fmt.Errorf("kll: offset 6: m %d, want 8: %w", b[6], ErrParams)
	}
	if want := ItemTypeOf[T](); ItemType(b[7]) != want {
		return nil, fmt.Errorf("kll: offset 7: item type %d, want %d (%s): %w", b[7], want, want, ErrCorrupt)
	}
	s := &Sketch[T]{k: k, minK: k, level0Sorted: flags&flagSorted != 0}
	switch {
	case !full && serVer == serVerFull: // empty
		if flags&flagEmpty == 0 || flags&flagSingle != 0 {
			return nil, fmt.Errorf("kll: offset 3: flags %#02x in an empty sketch's preamble: %w", flags, ErrCorrupt)
		}
		if len(b) != 8 {
			return nil, fmt.Errorf("kll: offset 8: %d bytes after an empty sketch: %w", len(b)-8, ErrCorrupt)
		}
		// No items: the array is allocated by the first update.
		s.levels, s.off = []int{k, k}, k
		return s, nil
	case !full: // single item
		if flags&flagSingle == 0 || flags&flagEmpty != 0 {
			return nil, fmt.Errorf("kll: offset 3: flags %#02x in a single item's preamble: %w", flags, ErrCorrupt)
		}
		if len(b) < 16 {
			return nil, fmt.Errorf("kll: a single item needs 16 bytes, got %d: %w", len(b), ErrTooShort)
		}
		if len(b) > 16 {
			return nil, fmt.Errorf("kll: offset 16: %d bytes after the item: %w", len(b)-16, ErrCorrupt)
		}
		v := readItem[T](b[8:])
		if !finite(v) {
			return nil, fmt.Errorf("kll: offset 8: the item is not finite: %w", ErrCorrupt)
		}
		s.n, s.min, s.max = 1, v, v
		s.levels, s.items, s.off = []int{k - 1, k}, []T{v}, k-1
		return s, nil
	}
	if flags&(flagEmpty|flagSingle) != 0 {
		return nil, fmt.Errorf("kll: offset 3: flags %#02x in a full sketch's preamble: %w", flags, ErrCorrupt)
	}
	if len(b) < fullHeaderLen {
		return nil, fmt.Errorf("kll: the full preamble needs %d bytes, got %d: %w", fullHeaderLen, len(b), ErrTooShort)
	}
	s.n = binary.LittleEndian.Uint64(b[8:])
	s.minK = int(binary.LittleEndian.Uint16(b[16:]))
	nl := int(b[18])
	switch {
	case s.n < 2:
		return nil, fmt.Errorf("kll: offset 8: n %d in the full form, which holds at least 2: %w", s.n, ErrCorrupt)
	case s.minK < MinK || s.minK > k:
		return nil, fmt.Errorf("kll: offset 16: min k %d not in %d..%d: %w", s.minK, MinK, k, ErrCorrupt)
	case nl < 1 || nl > maxLevels:
		return nil, fmt.Errorf("kll: offset 18: %d levels, not in 1..%d: %w", nl, maxLevels, ErrCorrupt)
	case b[19] != 0:
		return nil, fmt.Errorf("kll: offset 19: %#02x where zero is written: %w", b[19], ErrCorrupt)
	}
	itemsAt := fullHeaderLen + 4*nl
	if len(b) < itemsAt+16 {
		return nil, fmt.Errorf("kll: %d levels, min and max need %d bytes, got %d: %w", nl, itemsAt+16, len(b), ErrTooShort)
	}
	capacity := totalCapacity(k, nl)
	levels := make([]int, nl+1)
	for h := range nl {
		levels[h] = int(binary.LittleEndian.Uint32(b[fullHeaderLen+4*h:]))
	}
	levels[nl] = capacity
	for h := range nl {
		if levels[h] > levels[h+1] {
			return nil, fmt.Errorf("kll: offset %d: level %d starts at %d, after %d: %w", fullHeaderLen+4*h, h, levels[h], levels[h+1], ErrCorrupt)
		}
	}
	retained := capacity - levels[0]
	if retained < 1 {
		return nil, fmt.Errorf("kll: offset 20: no items retained: %w", ErrCorrupt)
	}
	if want := itemsAt + 16 + 8*retained; len(b) != want {
		if len(b) < want {
			return nil, fmt.Errorf("kll: %d items need %d bytes, got %d: %w", retained, want, len(b), ErrTooShort)
		}
		return nil, fmt.Errorf("kll: offset %d: %d trailing bytes: %w", want, len(b)-want, ErrCorrupt)
	}
	var weight, carry uint64
	for h := range nl {
		hi, lo := bits.Mul64(uint64(levels[h+1]-levels[h]), 1<<h)
		weight, carry = bits.Add64(weight, lo, 0)
		if hi != 0 || carry != 0 {
			return nil, fmt.Errorf("kll: level weights overflow: %w", ErrCorrupt)
		}
	}
	if weight != s.n {
		return nil, fmt.Errorf("kll: offset 20: the levels weigh %d, but n is %d: %w", weight, s.n, ErrCorrupt)
	}
	s.levels, s.off = levels, levels[0]
	s.min, s.max = readItem[T](b[itemsAt:]), readItem[T](b[itemsAt+8:])
	if !finite(s.min) || !finite(s.max) || s.min > s.max {
		return nil, fmt.Errorf("kll: offset %d: min %v and max %v: %w", itemsAt, s.min, s.max, ErrCorrupt)
	}
	s.items = make([]T, retained)
	at := itemsAt + 16
	for i := range s.items {
		v := readItem[T](b[at+8*i:])
		if !finite(v) || v < s.min || v > s.max {
			return nil, fmt.Errorf("kll: offset %d: item %v is not within [min %v, max %v]: %w", at+8*i, v, s.min, s.max, ErrCorrupt)
		}
		s.items[i] = v
	}
	for h := range nl {
		if (h > 0 || s.level0Sorted) && !slices.IsSorted(s.level(h)) {
			return nil, fmt.Errorf("kll: level %d is not sorted: %w", h, ErrCorrupt)
		}
	}
	if nl == 1 && (slices.Min(s.items) != s.min || slices.Max(s.items) != s.max) {
		return nil, fmt.Errorf("kll: exact mode, but min %v or max %v is not among the items: %w", s.min, s.max, ErrCorrupt)
	}
	return s, nil
}
