package cms

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
)

// roundTrip decodes b, which must be valid, and checks that encoding the
// result gives b back.
func roundTrip(tb testing.TB, b []byte) *Sketch {
	tb.Helper()
	s, err := Decode(b)
	if err != nil {
		tb.Fatalf("Decode: %v", err)
	}
	again, err := s.AppendBinary([]byte("prefix"))
	if err != nil {
		tb.Fatalf("AppendBinary: %v", err)
	}
	if !bytes.HasPrefix(again, []byte("prefix")) || !bytes.Equal(again[6:], b) {
		tb.Fatalf("encode(decode(b)) differs from b:\n got % x\nwant % x", again[6:], b)
	}
	return s
}

// Hand-made encodings: header fields, varints and candidates.
func header(ver, flags, depth byte, width uint32, topk uint16, n uint64) []byte {
	b := []byte{ver, flags, depth}
	b = binary.BigEndian.AppendUint32(b, width)
	b = binary.BigEndian.AppendUint16(b, topk)
	return binary.BigEndian.AppendUint64(b, n)
}

func uv(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.AppendUvarint(b, v)
	}
	return b
}

func u16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }

func intCand(est uint64, v int64) []byte {
	return binary.BigEndian.AppendUint64(append(uv(est), kindInt), uint64(v))
}

func textCand(est uint64, s string) []byte {
	b := append(uv(est), kindText)
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func cat(parts ...[]byte) []byte {
	return bytes.Join(parts, nil)
}

// With width 1 every id's estimate is its row's only counter, so any
// candidate with a count up to N is consistent with the counters.
var (
	validNarrow   = cat(header(version, 0, 2, 1, 2, 10), uv(10, 10), u16(2), intCand(7, 42), textCand(5, "a"))
	validInexact  = cat(header(version, flagInexact, 2, 1, 0, 10), uv(10, 9), u16(0))
	validCons     = cat(header(version, flagConserv, 2, 2, 0, 10), uv(6, 3, 10, 0), u16(0))
	validBigCount = cat(header(version, 0, 1, 1, 1, math.MaxInt64), uv(math.MaxInt64), u16(1), textCand(math.MaxInt64, "ü"))
	validTies     = cat(header(version, 0, 1, 1, 4, 9), uv(9), u16(4), intCand(9, -5), intCand(9, 3), textCand(9, ""), textCand(9, "b"))
)

func validEncodings(tb testing.TB) map[string][]byte {
	tb.Helper()
	out := map[string][]byte{
		"narrow":    validNarrow,
		"inexact":   validInexact,
		"cons":      validCons,
		"big count": validBigCount,
		"ties":      validTies,
	}
	for _, p := range []Params{
		{Width: 1, Depth: 1},
		{Width: 7, Depth: 3, TopK: 2},
		{Width: 50, Depth: 4, Conservative: true, TopK: 5},
		{Width: 200, Depth: 2, TopK: 10},
		{Width: 20, Depth: 2, TopK: 3, DomainBits: 8},
		{Width: 9, Depth: 3, Conservative: true, DomainBits: 12},
	} {
		s := mustNew(tb, p)
		out[paramsName(p)+" empty"] = mustEncode(tb, s)
		for i := range 300 {
			var err error
			if p.DomainBits > 0 {
				err = s.AddInt(int64(i*i%250), uint64(i%200+1))
			} else if i%3 == 0 {
				err = s.AddText([]byte(strings.Repeat("é", i%7)), uint64(i%5+1))
			} else {
				err = s.AddInt(int64(i%37)-10, uint64(i%200+1))
			}
			if err != nil {
				tb.Fatal(err)
			}
		}
		out[paramsName(p)] = mustEncode(tb, s)
	}
	return out
}

func paramsName(p Params) string {
	var b strings.Builder
	b.WriteString("w")
	b.WriteString(itoa(p.Width))
	b.WriteString("d")
	b.WriteString(itoa(p.Depth))
	b.WriteString("k")
	b.WriteString(itoa(p.TopK))
	if p.Conservative {
		b.WriteString("c")
	}
	if p.DomainBits > 0 {
		b.WriteString("r")
		b.WriteString(itoa(p.DomainBits))
	}
	return b.String()
}

func itoa(v int) string { return IntID(int64(v)).String() }

func TestRoundTrip(t *testing.T) {
	for name, b := range validEncodings(t) {
		t.Run(name, func(t *testing.T) {
			s := roundTrip(t, b)
			var u Sketch
			if err := u.UnmarshalBinary(b); err != nil {
				t.Fatalf("UnmarshalBinary: %v", err)
			}
			if !bytes.Equal(mustEncode(t, &u), b) {
				t.Fatal("UnmarshalBinary then encode differs")
			}
			// The decoded sketch works on: an addition and a union keep it
			// decodable.
			if s.CheckAdd(2) == nil && s.DomainBits() == 0 {
				if err := s.AddInt(12345, 1); err != nil {
					t.Fatal(err)
				}
				if err := s.AddText([]byte("new"), 1); err != nil {
					t.Fatal(err)
				}
				roundTrip(t, mustEncode(t, s))
			}
			if s.CheckAdd(2) == nil && s.DomainBits() > 0 {
				if err := s.AddInt(int64(1)<<s.DomainBits()-1, 2); err != nil {
					t.Fatal(err)
				}
				roundTrip(t, mustEncode(t, s))
			}
			if s.CheckAdd(s.Total()) == nil {
				if err := s.Union(s.Clone()); err != nil {
					t.Fatal(err)
				}
				roundTrip(t, mustEncode(t, s))
			}
		})
	}
}

func TestDecodedCandidates(t *testing.T) {
	s := roundTrip(t, validNarrow)
	want := []Item{{IntID(42), 10}, {TextID("a"), 10}}
	got := s.Top(0)
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Top(0) = %v, want %v", got, want)
	}
	if p := s.Params(); p != (Params{Width: 1, Depth: 2, TopK: 2}) {
		t.Fatalf("Params() = %+v", p)
	}
	// The stored counts rank the candidates: "a" (5) is the lightest and
	// goes first when a heavier id arrives.
	if err := s.AddInt(7, 1); err != nil {
		t.Fatal(err)
	}
	got = s.Top(0)
	if len(got) != 2 || got[0].ID != IntID(7) || got[1].ID != IntID(42) {
		t.Fatalf("Top(0) after adding 7 = %v, want 7 and 42", got)
	}
}

func malformed() []struct {
	name string
	b    []byte
	want error
} {
	long := strings.Repeat("x", MaxTextLen+1)
	return []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrTooShort},
		{"header cut", validNarrow[:headerLen-1], ErrTooShort},
		{"header only", validNarrow[:headerLen], ErrTooShort},
		{"version 3", cat([]byte{0xC3}, validNarrow[1:]), ErrVersion},
		{"version 0", cat([]byte{0xC0}, validNarrow[1:]), ErrVersion},
		{"hll bytes", cat([]byte{0x14}, validNarrow[1:]), ErrVersion},
		{"unknown flag", cat(header(version, 4, 2, 1, 2, 10), uv(10, 10), u16(0)), ErrCorrupt},
		{"both flags", cat(header(version, 3, 2, 1, 2, 10), uv(10, 10), u16(0)), ErrCorrupt},
		{"depth 0", cat(header(version, 0, 0, 1, 0, 0), u16(0)), ErrParams},
		{"depth 33", cat(header(version, 0, 33, 1, 0, 0), make([]byte, 33), u16(0)), ErrParams},
		{"width 0", cat(header(version, 0, 1, 0, 0, 0), u16(0)), ErrParams},
		{"too many counters", cat(header(version, 0, 2, 1<<21+1, 0, 0), u16(0)), ErrParams},
		{"width 2^32-1", cat(header(version, 0, 1, math.MaxUint32, 0, 0), u16(0)), ErrParams},
		{"topk 1001", cat(header(version, 0, 1, 1, 1001, 0), uv(0), u16(0)), ErrParams},
		{"total above MaxInt64", cat(header(version, 0, 1, 1, 0, 1<<63), uv(1<<63), u16(0)), ErrCorrupt},
		{"huge shape, tiny input", cat(header(version, 0, 32, 1<<17, 0, 0), []byte{0, 0, 0}), ErrTooShort},
		{"one counter short", cat(header(version, 0, 2, 3, 0, 0), uv(0, 0, 0, 0, 0), u16(0))[:headerLen+6], ErrTooShort},
		{"counter varint cut", cat(header(version, 0, 2, 1, 0, 200), []byte{0xC8, 0x81, 0x80, 0x80}), ErrTooShort},
		{"candidate count missing", cat(header(version, 0, 2, 1, 0, 200), uv(200, 200)), ErrTooShort},
		{"counter not minimal", cat(header(version, 0, 2, 1, 0, 10), []byte{0x8A, 0x00}, uv(10), u16(0)), ErrCorrupt},
		{"counter overflows", cat(header(version, 0, 1, 1, 0, 10), bytes.Repeat([]byte{0xFF}, 10), []byte{0x01}, u16(0)), ErrCorrupt},
		{"counter above total", cat(header(version, flagConserv, 2, 1, 0, 10), uv(11, 10), u16(0)), ErrCorrupt},
		{"plain row below total", cat(header(version, 0, 2, 1, 0, 10), uv(10, 9), u16(0)), ErrCorrupt},
		{"plain row above total", cat(header(version, 0, 2, 2, 0, 10), uv(5, 5, 5, 6), u16(0)), ErrCorrupt},
		{"inexact row above total", cat(header(version, flagInexact, 2, 2, 0, 10), uv(5, 5, 5, 6), u16(0)), ErrCorrupt},
		{"conservative rows below total", cat(header(version, flagConserv, 2, 2, 0, 10), uv(3, 2, 4, 0), u16(0)), ErrCorrupt},
		{"conservative nonzero with zero total", cat(header(version, flagConserv, 1, 2, 0, 0), uv(0, 1), u16(0)), ErrCorrupt},
		{"more candidates than topk", cat(header(version, 0, 1, 1, 1, 10), uv(10), u16(2), intCand(3, 1), intCand(2, 2)), ErrCorrupt},
		{"candidates claimed, bytes missing", cat(header(version, 0, 1, 1, 1000, 10), uv(10), u16(1000), intCand(3, 1)), ErrTooShort},
		{"candidate count 0", cat(header(version, 0, 1, 1, 1, 10), uv(10), u16(1), intCand(0, 1)), ErrCorrupt},
		{"candidate above estimate", cat(header(version, 0, 1, 1, 1, 10), uv(10), u16(1), intCand(11, 1)), ErrCorrupt},
		{"candidate above its counters", cat(header(version, 0, 1, 2, 1, 10), uv(0, 10), u16(1), intCand(1, columnZeroID(2))), ErrCorrupt},
		{"candidate count not minimal", cat(header(version, 0, 1, 1, 1, 10), uv(10), u16(1), []byte{0x83, 0x00, kindInt}, make([]byte, 8)), ErrCorrupt},
		{"candidate count cut", cat(header(version, 0, 1, 1, 1, 200), uv(200), u16(1), []byte{0x83, 0x81, 0x80, 0x80}), ErrTooShort},
		{"kind missing", cat(header(version, 0, 1, 1, 2, 10), uv(10), u16(2), intCand(3, 1), uv(2)), ErrTooShort},
		{"kind 2", cat(header(version, 0, 1, 1, 1, 10), uv(10), u16(1), []byte{3, 2, 0, 0}), ErrCorrupt},
		{"int id cut", cat(header(version, 0, 1, 1, 1, 10), uv(10), u16(1), intCand(3, 1)[:7]), ErrTooShort},
		{"text length cut", cat(header(version, 0, 1, 1, 2, 10), uv(10), u16(2), intCand(3, 1), []byte{2, kindText, 0}), ErrTooShort},
		{"text cut", cat(header(version, 0, 1, 1, 1, 10), uv(10), u16(1), textCand(3, "hello")[:6]), ErrTooShort},
		{"text too long", cat(header(version, 0, 1, 1, 1, 10), uv(10), u16(1), textCand(3, long)), ErrCorrupt},
		{"text not UTF-8", cat(header(version, 0, 1, 1, 1, 10), uv(10), u16(1), textCand(3, "a\xff")), ErrCorrupt},
		{"candidates ascending", cat(header(version, 0, 1, 1, 2, 10), uv(10), u16(2), intCand(5, 42), intCand(7, 43)), ErrCorrupt},
		{"tie: text before int", cat(header(version, 0, 1, 1, 2, 10), uv(10), u16(2), textCand(5, "a"), intCand(5, 42)), ErrCorrupt},
		{"tie: ints descending", cat(header(version, 0, 1, 1, 2, 10), uv(10), u16(2), intCand(5, 43), intCand(5, 42)), ErrCorrupt},
		{"duplicate int", cat(header(version, 0, 1, 1, 2, 10), uv(10), u16(2), intCand(7, 42), intCand(5, 42)), ErrCorrupt},
		{"duplicate text", cat(header(version, 0, 1, 1, 2, 10), uv(10), u16(2), textCand(7, "a"), textCand(5, "a")), ErrCorrupt},
		{"same entry twice", cat(header(version, 0, 1, 1, 2, 10), uv(10), u16(2), textCand(7, "a"), textCand(7, "a")), ErrCorrupt},
		{"trailing byte", cat(validNarrow, []byte{0}), ErrCorrupt},
		{"trailing candidate", cat(header(version, 0, 1, 1, 2, 10), uv(10), u16(1), intCand(7, 42), intCand(5, 43)), ErrCorrupt},
	}
}

// columnZeroID returns an int id that lands in column 0 of a one-row
// sketch of the given width.
func columnZeroID(width int) int64 {
	s, _ := New(Params{Width: width, Depth: 1})
	for v := int64(0); ; v++ {
		s.counters[0] = 1
		if s.EstimateInt(v) == 1 {
			return v
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, tc := range malformed() {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Decode(tc.b)
			if !errors.Is(err, tc.want) || s != nil {
				t.Fatalf("Decode(% x) = %v, %v, want %v", tc.b, s, err, tc.want)
			}
			if n := sentinels(err); n != 1 {
				t.Fatalf("error %q wraps %d sentinels, want 1", err, n)
			}
			u := roundTrip(t, validNarrow)
			if err := u.UnmarshalBinary(tc.b); !errors.Is(err, tc.want) {
				t.Fatalf("UnmarshalBinary error %v, want %v", err, tc.want)
			}
			if !bytes.Equal(mustEncode(t, u), validNarrow) {
				t.Fatal("receiver changed by a failed UnmarshalBinary")
			}
		})
	}
}

var allSentinels = []error{ErrParams, ErrItem, ErrOverflow, ErrIncompatible, ErrTooShort, ErrVersion, ErrCorrupt}

func sentinels(err error) int {
	n := 0
	for _, s := range allSentinels {
		if errors.Is(err, s) {
			n++
		}
	}
	return n
}

// A short input claiming the largest shapes is refused before its
// counters are allocated, and a valid decode allocates within a small
// multiple of its input.
func TestDecodeAllocationBounded(t *testing.T) {
	claims := map[string][]byte{
		"32 rows of 2^17":  cat(header(version, 0, 32, 1<<17, MaxTopK, 0), make([]byte, 40)),
		"1 row of 2^22":    cat(header(version, flagConserv, 1, 1<<22, 0, 5), make([]byte, 1000)),
		"1000 candidates":  cat(header(version, 0, 1, 1, MaxTopK, 10), uv(10), u16(MaxTopK), intCand(3, 1)),
		"counters 1 short": cat(header(version, 0, 4, 1000, 0, 0), make([]byte, 4001)),
	}
	for name, b := range claims {
		if _, err := Decode(b); !errors.Is(err, ErrTooShort) {
			t.Fatalf("%s: Decode error %v, want ErrTooShort", name, err)
		}
		if got := allocBytes(func() { _, _ = Decode(b) }); got > 1024 {
			t.Errorf("%s: Decode of %d bytes allocated %d bytes, want at most 1024", name, len(b), got)
		}
	}
	big := mustNew(t, Params{Width: 1 << 16, Depth: 4, TopK: MaxTopK})
	for i := range 5000 {
		if err := big.AddText([]byte(strings.Repeat("é", i%500)), 1); err != nil {
			t.Fatal(err)
		}
	}
	b := mustEncode(t, big)
	if got, limit := allocBytes(func() { _, _ = Decode(b) }), 10*len(b)+64<<10; got > uint64(limit) {
		t.Errorf("Decode of %d bytes allocated %d bytes, want at most %d", len(b), got, limit)
	}
}

// allocBytes returns the bytes f allocates on average over 10 runs.
func allocBytes(f func()) uint64 {
	const runs = 10
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / runs
}
