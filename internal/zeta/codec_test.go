package zeta

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"runtime"
	"testing"
)

var sentinels = []error{ErrCorrupt, ErrVersion, ErrParams, ErrValueType, ErrPrecision, ErrFewerRegisters}

func wrapsOne(err error) bool {
	n := 0
	for _, s := range sentinels {
		if errors.Is(err, s) {
			n++
		}
	}
	return n == 1
}

func mustHex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func build(tb testing.TB, p Params, t ValueType, n int) *Sketch {
	tb.Helper()
	s, err := New(p)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.SetType(t); err != nil {
		tb.Fatal(err)
	}
	for v := range n {
		s.AddHash(HashInt(int64(v)))
	}
	return s
}

// Bytes written by ZetaSketch 0.1.0's Java library (TestPinnedBytes).
const (
	javaLongs10   = "08701005180220088207131005180a200f320bf18301ac01a71bec14dc03" // precision 10, longs 0..4
	javaStrings10 = "087010031802200b82070d1002180a200f3205bc9401f23b"             // precision 10, strings a, b, a
	javaEmpty15   = "0870100018022008820706180f20143200"                           // the builder's defaults, longs, nothing added
)

// TestPinnedBytes pins sketchd's bytes and hashes to ZetaSketch's, so
// that they are checked without a JVM too.
func TestPinnedBytes(t *testing.T) {
	s, _ := New(ParamsFor(10))
	for v := range int64(5) {
		if err := s.AddInt(v); err != nil {
			t.Fatal(err)
		}
	}
	str, _ := New(ParamsFor(10))
	for _, v := range []string{"a", "b", "a"} {
		if err := str.AddString(v); err != nil {
			t.Fatal(err)
		}
	}
	empty, _ := New(DefaultParams())
	empty.SetType(TypeLong)
	for _, c := range []struct {
		name string
		s    *Sketch
		want string
		est  int64
	}{{"longs", s, javaLongs10, 5}, {"strings", str, javaStrings10, 2}, {"empty", empty, javaEmpty15, 0}} {
		if got := hex.EncodeToString(c.s.AppendBinary(nil)); got != c.want {
			t.Errorf("%s: bytes %s, ZetaSketch's %s", c.name, got, c.want)
		}
		if c.s.Estimate() != c.est || c.s.SizeBytes() != len(c.want)/2 {
			t.Errorf("%s: estimate %d size %d, want %d %d", c.name, c.s.Estimate(), c.s.SizeBytes(), c.est, len(c.want)/2)
		}
	}
	for _, c := range []struct {
		got  uint64
		want uint64
	}{
		{HashInt(0), 0x853a22bd6e14a48f}, {HashInt(1), 0xb91968b83211c978}, {HashInt(-1), 0xda13d4a9f7078f79}, {HashInt(42), 0x583b2b9df8e0eb60},
		{HashString(""), 0x23ad7c904aa665e3}, {HashString("a"), 0x947947a2d71fb634}, {HashString("user-1"), 0x2f02d92c3914b875}, {HashString("日本語"), 0xa54e9fd69273db72},
	} {
		if c.got != c.want {
			t.Errorf("hash %#x, ZetaSketch's %#x", c.got, c.want)
		}
	}
}

func validImages(tb testing.TB) [][]byte {
	var out [][]byte
	for _, c := range []struct {
		p Params
		t ValueType
		n int
	}{
		{ParamsFor(10), TypeLong, 0}, {ParamsFor(10), TypeLong, 3}, {ParamsFor(10), TypeString, 2000},
		{Params{12, 0}, TypeUnknown, 0}, {Params{12, 0}, TypeLong, 100}, {Params{11, 11}, TypeLong, 40},
		{Params{11, 25}, TypeLong, 40},
	} {
		out = append(out, build(tb, c.p, c.t, c.n).AppendBinary(nil))
	}
	return append(out, mustHex(tb, javaLongs10), mustHex(tb, javaStrings10), mustHex(tb, javaEmpty15))
}

// state writes a longs sketch with the given state fields after
// precision p and sparse precision sp (0: none), and sparse_size n when
// not 0.
func state(n, p, sp int, rest []byte) []byte {
	var in []byte
	if n != 0 {
		in = append(in, tagSparseSize, byte(n))
	}
	in = append(in, tagPrecision, byte(p))
	if sp != 0 {
		in = append(in, tagSparsePrecision, byte(sp))
	}
	in = append(in, rest...)
	b := []byte{0x08, 0x70, 0x10, 0x01, 0x18, 0x02, 0x20, 0x08, 0x82, 0x07}
	b = appendUvarint(b, uint64(len(in)))
	return append(b, in...)
}

// sparseData is a sparse_data field of the given differences.
func sparseData(diffs ...uint64) []byte {
	var d []byte
	for _, v := range diffs {
		d = appendUvarint(d, v)
	}
	return append(appendUvarint([]byte{tagSparseData}, uint64(len(d))), d...)
}

type malformedCase struct {
	name string
	in   []byte
	want error
}

func malformed(tb testing.TB) []malformedCase {
	sparse := mustHex(tb, javaLongs10)
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(sparse)) }
	normal := build(tb, Params{10, 0}, TypeLong, 300).AppendBinary(nil)
	// normal: 08 70 10 ac02 18 02 20 08 8207 8608 18 0a 2a 8008 <1024 registers>
	regs := bytes.Index(normal, []byte{0x2a, 0x80, 0x08}) + 3
	return []malformedCase{
		{"empty", nil, ErrVersion},
		{"theta preamble", []byte{2, 3, 3, 0, 0, 0x1a, 0xcc, 0x93}, ErrCorrupt},
		{"other aggregator", edit(func(b []byte) []byte { b[1] = 100; return b }), ErrVersion},
		{"encoding version 1", append([]byte{0x08, 0x70, 0x10, 0x00}, sparse[6:]...), ErrVersion},
		{"encoding version 3", edit(func(b []byte) []byte { b[5] = 3; return b }), ErrVersion},
		{"no num_values", append([]byte{0x08, 0x70}, sparse[4:]...), ErrCorrupt},
		{"negative num_values", append([]byte{0x08, 0x70, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, sparse[4:]...), ErrCorrupt},
		{"value type 4 (INT64)", edit(func(b []byte) []byte { b[7] = 4; return b }), ErrValueType},
		{"value type 7 (UINT32)", edit(func(b []byte) []byte { b[7] = 7; return b }), ErrValueType},
		{"fields out of order", append([]byte{0x10, 0x05, 0x08, 0x70}, sparse[4:]...), ErrCorrupt},
		{"field repeated", append([]byte{0x08, 0x70, 0x08, 0x70}, sparse[2:]...), ErrCorrupt},
		{"unknown field", append(bytes.Clone(sparse[:8]), append([]byte{0x28, 0x01}, sparse[8:]...)...), ErrCorrupt},
		{"unknown field after the state", append(bytes.Clone(sparse), 0xa8, 0x07, 0x01), ErrCorrupt},
		{"no state", sparse[:8], ErrCorrupt},
		{"state runs past the end", sparse[:len(sparse)-1], ErrCorrupt},
		{"varint runs past the end", []byte{0x08, 0xf0}, ErrCorrupt},
		{"long varint", []byte{0x08, 0xf0, 0x80, 0x00}, ErrCorrupt},
		{"varint over 64 bits", []byte{0x08, 0x70, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, ErrCorrupt},
		{"precision 9", edit(func(b []byte) []byte { b[14] = 9; return b }), ErrParams},
		{"precision 25", edit(func(b []byte) []byte { b[14] = 25; return b }), ErrParams},
		{"sparse precision 26", edit(func(b []byte) []byte { b[16] = 26; return b }), ErrParams},
		{"sparse precision below precision", edit(func(b []byte) []byte { b[16] = 9; return b }), ErrParams},
		{"sparse_size too large", edit(func(b []byte) []byte { b[12] = 6; return b }), ErrCorrupt},
		{"sparse_size too small", edit(func(b []byte) []byte { b[12] = 4; return b }), ErrCorrupt},
		{"sparse value repeated", state(2, 10, 15, sparseData(1, 0)), ErrCorrupt},
		{"sparse index repeated", state(2, 10, 15, sparseData(1<<16|3<<6|1, 1)), ErrCorrupt},
		{"sparse value with padding", state(1, 10, 15, sparseData(1<<15|1)), ErrCorrupt},
		{"sparse index in the wrong form", state(1, 10, 15, sparseData(32)), ErrCorrupt},
		{"rho' of 0", state(1, 10, 15, sparseData(1<<16|3<<6)), ErrCorrupt},
		{"rho' above 65-sp", state(1, 10, 15, sparseData(1<<16|3<<6|51)), ErrCorrupt},
		{"sparse data over 2^p bytes", state(0, 10, 15, append([]byte{0x32, 0x81, 0x08}, make([]byte, 1025)...)), ErrCorrupt},
		{"sparse data without a sparse precision", state(1, 10, 0, sparseData(1)), ErrCorrupt},
		{"data and sparse data", state(0, 10, 15, append(append([]byte{0x2a, 0x80, 0x08}, make([]byte, 1024)...), 0x32, 0x00)), ErrCorrupt},
		{"registers too short", state(0, 10, 0, append([]byte{0x2a, 0xff, 0x07}, make([]byte, 1023)...)), ErrCorrupt},
		{"register above 65-p", func() []byte { b := bytes.Clone(normal); b[regs+7] = 56; return b }(), ErrCorrupt},
	}
}

func TestDecodeMalformed(t *testing.T) {
	for _, tt := range malformed(t) {
		_, err := Decode(tt.in)
		t.Logf("%s: %v", tt.name, err)
		if !errors.Is(err, tt.want) || !wrapsOne(err) {
			t.Errorf("%s: Decode(%x) = %v, want %v", tt.name, tt.in, err, tt.want)
		}
	}
}

// TestDecodeValid: every valid image decodes and is written back byte
// for byte.
func TestDecodeValid(t *testing.T) {
	for _, in := range validImages(t) {
		s, err := Decode(in)
		if err != nil {
			t.Errorf("Decode(%.64x): %v", in, err)
			continue
		}
		if got := s.AppendBinary(nil); !bytes.Equal(got, in) || s.SizeBytes() != len(in) {
			t.Errorf("Decode(%.64x) writes %.64x (size %d)", in, got, s.SizeBytes())
		}
	}
}

// allocBound: registers are copied, sparse values take 4 bytes each and
// every one takes at least a byte of the image.
func allocBound(in []byte) uint64 { return 5*uint64(len(in)) + 4<<10 }

func decodeAllocBytes(in []byte) uint64 {
	Decode(in)
	least := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s, _ := Decode(in)
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(s)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// TestDecodeAllocationBounded: what an image claims (precision 24, a
// large sparse_size) cannot make Decode allocate beyond its length.
func TestDecodeAllocationBounded(t *testing.T) {
	claims := [][]byte{
		{0x08, 0x70, 0x10, 0x00, 0x18, 0x02, 0x82, 0x07, 0x08, 0x10, 0xff, 0xff, 0xff, 0x07, 0x18, 0x18, 0x20, 0x19},
		{0x08, 0x70, 0x10, 0x00, 0x18, 0x02, 0x82, 0x07, 0x07, 0x18, 0x18, 0x20, 0x19, 0x32, 0x00},
	}
	for _, in := range append(claims, validImages(t)...) {
		if got := decodeAllocBytes(in); got > allocBound(in) {
			t.Errorf("Decode(%.32x) allocated %d bytes for %d input bytes", in, got, len(in))
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, b := range validImages(f) {
		f.Add(b)
	}
	for _, tt := range malformed(f) {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if alloc := decodeAllocBytes(in); alloc > allocBound(in) {
			t.Fatalf("Decode(%d bytes) allocated %d bytes", len(in), alloc)
		}
		s, err := Decode(in)
		if err != nil {
			if !wrapsOne(err) {
				t.Fatalf("error %q wraps no single sentinel", err)
			}
			return
		}
		// Accepted: written back, it decodes to the same bytes and
		// estimate, and keeps taking values and merges.
		img := s.AppendBinary(nil)
		again, err := Decode(img)
		if err != nil {
			t.Fatalf("Decode(own bytes %x) = %v", img, err)
		}
		if got := again.AppendBinary(nil); !bytes.Equal(got, img) || again.Estimate() != s.Estimate() {
			t.Fatalf("round trip %x (estimate %d), was %x (%d)", got, again.Estimate(), img, s.Estimate())
		}
		if err := s.AddInt(int64(len(in))); err != nil && !errors.Is(err, ErrValueType) {
			t.Fatalf("add to a decoded sketch: %v", err)
		}
		if _, err := Union(again, s); err != nil && !errors.Is(err, ErrValueType) {
			t.Fatalf("union: %v", err)
		}
	})
}
