package kll

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestSmallLayout builds the bytes of small sketches by hand from doc.go's
// table and compares.
func TestSmallLayout(t *testing.T) {
	s, _ := New[float64](200)
	if got := hex.EncodeToString(s.AppendBinary(nil)); got != "02010f01c8000800" {
		t.Errorf("empty = %s", got)
	}
	s.Update(1.5)
	if got := hex.EncodeToString(s.AppendBinary(nil)); got != "02020f04c8000800"+"000000000000f83f" {
		t.Errorf("one item = %s", got)
	}
	s.Update(-2)
	// Full: n 2, min k 200, one level starting at 198 (items go down from
	// 200), min -2, max 1.5, then the items: -2 (the later) and 1.5.
	want := "05010f00c8000800" + "0200000000000000" + "c800" + "01" + "00" + "c6000000" +
		"00000000000000c0" + "000000000000f83f" + "00000000000000c0" + "000000000000f83f"
	if got := hex.EncodeToString(s.AppendBinary(nil)); got != want {
		t.Errorf("two items\n got %s\nwant %s", got, want)
	}
	l, _ := New[int64](8)
	l.Update(-1)
	if got := hex.EncodeToString(l.AppendBinary(nil)); got != "02020f0408000801"+"ffffffffffffffff" {
		t.Errorf("a long = %s", got)
	}
}

func validEncodings(tb testing.TB) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, n := range []int{0, 1, 2, 7, 100, 3000} {
		s, _ := New[float64](8)
		l, _ := New[int64](20)
		for i := range n {
			s.Update(float64(i*i%97) - 40.5)
			l.Update(int64(i*31%1000) - 500)
		}
		out = append(out, s.AppendBinary(nil), l.AppendBinary(nil))
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	for i, b := range validEncodings(t) {
		var err error
		var back []byte
		if b[7] == byte(Longs) {
			var s *Sketch[int64]
			if s, err = Decode[int64](b); err == nil {
				back = s.AppendBinary(nil)
				checkSize(t, s, i)
				s.Update(3) // a decoded sketch takes updates
				checkSize(t, s, i)
				_, err = Decode[int64](s.AppendBinary(nil))
			}
		} else {
			var s *Sketch[float64]
			if s, err = Decode[float64](b); err == nil {
				back = s.AppendBinary(nil)
				checkSize(t, s, i)
				s.Update(3)
				checkSize(t, s, i)
				_, err = Decode[float64](s.AppendBinary(nil))
			}
		}
		if err != nil || !slices.Equal(back, b) {
			t.Errorf("encoding %d: %v, round trip equal %t", i, err, slices.Equal(back, b))
		}
	}
}

// checkSize checks SizeBytes against the encoding it counts.
func checkSize[T Item](t *testing.T, s *Sketch[T], i int) {
	t.Helper()
	if got, want := s.SizeBytes(), len(s.AppendBinary(nil)); got != want {
		t.Errorf("encoding %d (n=%d): SizeBytes() = %d, AppendBinary wrote %d", i, s.N(), got, want)
	}
}

// malformed lists encodings that each break one rule, with the sentinel
// the violation gives (doubles unless byte 7 says longs).
func malformed() []struct {
	name string
	b    []byte
	want error
} {
	two := func() []byte {
		s, _ := New[float64](200)
		s.Update(1.5)
		s.Update(-2)
		return s.AppendBinary(nil)
	}
	big := func() []byte {
		s, _ := New[float64](8)
		for i := range 100 {
			s.Update(float64(i))
		}
		return s.AppendBinary(nil)
	}
	set := func(b []byte, off int, v byte) []byte { b[off] = v; return b }
	put64 := func(b []byte, off int, v uint64) []byte { binary.LittleEndian.PutUint64(b[off:], v); return b }
	bigLevels := int(big()[18])
	itemsAt := 20 + 4*bigLevels
	return []struct {
		name string
		b    []byte
		want error
	}{
		{"empty input", nil, ErrTooShort},
		{"preamble cut", two()[:7], ErrTooShort},
		{"theta family", set(two(), 2, 3), ErrVersion},
		{"updatable", set(two(), 1, 3), ErrVersion},
		{"preamble 3", set(two(), 0, 3), ErrVersion},
		{"unknown flag", set(two(), 3, 16), ErrCorrupt},
		{"empty flag on a full sketch", set(two(), 3, 1), ErrCorrupt},
		{"k 7", set(set(two(), 4, 7), 5, 0), ErrParams},
		{"m 4", set(two(), 6, 4), ErrParams},
		{"item type 2", set(two(), 7, 2), ErrCorrupt},
		{"doubles read as longs", set(two(), 7, 1), ErrCorrupt},
		{"empty with trailing byte", []byte{2, 1, 15, 1, 200, 0, 8, 0, 0}, ErrCorrupt},
		{"empty without its flag", []byte{2, 1, 15, 0, 200, 0, 8, 0}, ErrCorrupt},
		{"single cut", []byte{2, 2, 15, 4, 200, 0, 8, 0, 0, 0}, ErrTooShort},
		{"single NaN", append([]byte{2, 2, 15, 4, 200, 0, 8, 0}, binary.LittleEndian.AppendUint64(nil, math.Float64bits(math.NaN()))...), ErrCorrupt},
		{"single with trailing byte", append([]byte{2, 2, 15, 4, 200, 0, 8, 0}, make([]byte, 9)...), ErrCorrupt},
		{"full preamble cut", two()[:19], ErrTooShort},
		{"n 1 in the full form", put64(two(), 8, 1), ErrCorrupt},
		{"n not the weights", put64(two(), 8, 3), ErrCorrupt},
		{"min k 7", set(two(), 16, 7), ErrCorrupt},
		{"min k above k", set(set(two(), 16, 201), 17, 0), ErrCorrupt},
		{"no levels", set(two(), 18, 0), ErrCorrupt},
		{"62 levels", set(two(), 18, 62), ErrCorrupt},
		{"byte 19", set(two(), 19, 1), ErrCorrupt},
		{"levels claim items absent", set(two(), 20, 100), ErrTooShort},
		{"level beyond capacity", set(set(big(), 20, 0xff), 21, 0xff), ErrCorrupt},
		{"no items", set(two(), 20, 200), ErrCorrupt},
		{"trailing byte", append(two(), 0), ErrCorrupt},
		{"items cut", big()[:len(big())-1], ErrTooShort},
		{"min above max", put64(two(), 24, math.Float64bits(5)), ErrCorrupt},
		{"max infinite", put64(two(), 32, math.Float64bits(math.Inf(1))), ErrCorrupt},
		{"item below min", put64(two(), 40, math.Float64bits(-3)), ErrCorrupt},
		{"exact min not an item", put64(two(), 24, math.Float64bits(-2.5)), ErrCorrupt},
		{"level 2 unsorted", func() []byte {
			b := big()
			start := binary.LittleEndian.Uint32(b[20:])
			l2 := int(binary.LittleEndian.Uint32(b[28:]) - start)
			at := itemsAt + 16 + 8*l2 // the first two items of level 2
			x, y := slices.Clone(b[at:at+8]), slices.Clone(b[at+8:at+16])
			copy(b[at:], y)
			copy(b[at+8:], x)
			return b
		}(), ErrCorrupt},
		{"level 0 flagged sorted, unsorted", set(big(), 3, 2), ErrCorrupt},
	}
}

func TestDecodeMalformed(t *testing.T) {
	for _, c := range malformed() {
		_, err := Decode[float64](c.b)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: Decode = %v, want %v", c.name, err, c.want)
		}
	}
	// Longs: the item type must say so.
	l, _ := New[int64](8)
	l.Update(4)
	if _, err := Decode[float64](l.AppendBinary(nil)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("longs read as doubles: %v", err)
	}
	if _, err := Decode[int64](MarkLongs(validEncodings(t)[0])); err != nil {
		t.Errorf("an empty sketch marked as longs: %v", err)
	}
}

// TestJavaFourDoubles: DataSketches' Java library 3.2 to 4.0 set flag 8 in
// a sketch of doubles (KllHelper.loadFirst8Bytes, fastEmptyCompactByteArray
// and fastSingleItemCompactByteArray in its 4.0.0 sources), the bytes
// otherwise as today's. Such bytes decode as doubles, to the sketch
// without the flag, and declare doubles; as longs they are refused.
func TestJavaFourDoubles(t *testing.T) {
	for i, b := range validEncodings(t) {
		if b[7] == byte(Longs) {
			if d, ok := Declared(b); !ok || d != Longs {
				t.Errorf("encoding %d, marked longs, declares %v %t", i, d, ok)
			}
			if _, ok := Declared(libraryBytesOf(b)); ok {
				t.Errorf("encoding %d as a library writes it declares an item type", i)
			}
			continue
		}
		if _, ok := Declared(b); ok {
			t.Errorf("encoding %d, unmarked, declares an item type", i)
		}
		old := slices.Clone(b)
		old[3] |= flagDoubles
		if d, ok := Declared(old); !ok || d != Doubles {
			t.Errorf("encoding %d with flag 8 declares %v %t", i, d, ok)
		}
		s, err := Decode[float64](old)
		if err != nil {
			t.Errorf("encoding %d with flag 8: %v", i, err)
			continue
		}
		if !slices.Equal(s.AppendBinary(nil), b) {
			t.Errorf("encoding %d with flag 8 encodes as\n %x, not\n %x", i, s.AppendBinary(nil), b)
		}
		if _, err := Decode[int64](MarkLongs(old)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "flag 8") {
			t.Errorf("encoding %d with flag 8 read as longs: %v", i, err)
		}
	}
	if _, ok := Declared([]byte{1, 2, 3}); ok {
		t.Error("three bytes declare an item type")
	}
}

// libraryBytesOf is b with byte 7 as the libraries write it, 0.
func libraryBytesOf(b []byte) []byte {
	c := slices.Clone(b)
	c[7] = 0
	return c
}

// TestDecodeAllocation: inputs claiming the largest sketch allocate no
// more than a small multiple of their length.
func TestDecodeAllocation(t *testing.T) {
	// An empty sketch of k 65535 and a single item: 8 and 16 bytes.
	empty := []byte{2, 1, 15, 1, 0xff, 0xff, 8, 0}
	single := append([]byte{2, 2, 15, 4, 0xff, 0xff, 8, 0}, make([]byte, 8)...)
	// Full, k 65535, 61 levels: a capacity of about 200,000 items, but only
	// the one retained item is sent.
	full := []byte{5, 1, 15, 0, 0xff, 0xff, 8, 0}
	full = binary.LittleEndian.AppendUint64(full, 1<<60)
	full = append(full, 8, 0, 61, 0)
	capacity := totalCapacity(MaxK, 61)
	for range 61 {
		full = binary.LittleEndian.AppendUint32(full, uint32(capacity-1))
	}
	full = append(full, make([]byte, 24)...)
	for _, b := range [][]byte{empty, single, full} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 10 {
			_, _ = Decode[float64](b)
		}
		runtime.ReadMemStats(&after)
		if got := (after.TotalAlloc - before.TotalAlloc) / 10; got > uint64(64*len(b)+1024) {
			t.Errorf("decoding %d bytes allocated %d", len(b), got)
		}
	}
}
