package airlift

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"runtime"
	"testing"
)

var sentinels = []error{ErrCorrupt, ErrVersion, ErrParams, ErrPrecision}

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

// Bytes written by airlift's stats library (TestPinnedBytes).
const (
	javaSparse12 = "020c0300800344008063df28802008de" // 4,096 buckets, BIGINT 0, 1, 2
	javaDense4   = "03040063252351442201130000"       // 16 buckets, BIGINT 0..39 and VARCHAR 'user-1'
)

// TestPinnedBytes pins sketchd's bytes, estimates and hashes to airlift's,
// so that they are checked without a JVM too.
func TestPinnedBytes(t *testing.T) {
	s, _ := New(DefaultParams())
	for v := range int64(3) {
		s.AddInt(v)
	}
	d, _ := New(Params{4})
	for v := range int64(40) {
		d.AddInt(v)
	}
	d.AddString("user-1")
	for _, c := range []struct {
		name string
		s    *Sketch
		want string
		est  int64
	}{{"sparse", s, javaSparse12, 3}, {"dense", d, javaDense4, 42}} {
		if got := hex.EncodeToString(c.s.AppendBinary(nil)); got != c.want {
			t.Errorf("%s: bytes %s, airlift's %s", c.name, got, c.want)
		}
		if c.s.Estimate() != c.est || c.s.SizeBytes() != len(c.want)/2 {
			t.Errorf("%s: estimate %d size %d, want %d %d", c.name, c.s.Estimate(), c.s.SizeBytes(), c.est, len(c.want)/2)
		}
	}
	if HashInt(42) != 0xb6acc39989d27df8 || HashString("user-1") != 0x61accd4b12ff3576 {
		t.Errorf("hashes %#x %#x, airlift's 0xb6acc39989d27df8 0x61accd4b12ff3576", HashInt(42), HashString("user-1"))
	}
}

func filled(tb testing.TB, p, n int) *Sketch {
	s, err := New(Params{p})
	if err != nil {
		tb.Fatal(err)
	}
	for v := range n {
		s.AddInt(int64(v))
	}
	return s
}

// withOverflow is a dense 16-bucket sketch whose bucket 3 holds 20 above
// a baseline of 0: an overflow of 5.
func withOverflow() []byte {
	b := []byte{tagDenseV2, 4, 0, 0x01, 0x1f, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11}
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint16(b, 3)
	return append(b, 5)
}

func validImages(tb testing.TB) [][]byte {
	var out [][]byte
	for _, c := range []struct{ p, n int }{{12, 0}, {12, 3}, {12, 600}, {4, 0}, {4, 40}, {16, 9000}, {10, 100_000}} {
		out = append(out, filled(tb, c.p, c.n).AppendBinary(nil))
	}
	return append(out, mustHex(tb, javaSparse12), mustHex(tb, javaDense4), withOverflow())
}

type malformedCase struct {
	name string
	in   []byte
	want error
}

func malformed(tb testing.TB) []malformedCase {
	sparse := mustHex(tb, javaSparse12)
	dense := withOverflow()
	edit := func(b []byte, f func(b []byte)) []byte { c := bytes.Clone(b); f(c); return c }
	return []malformedCase{
		{"empty", nil, ErrCorrupt},
		{"tag alone", []byte{2}, ErrCorrupt},
		{"SPARSE_V1", []byte{0, 12, 0, 0}, ErrVersion},
		{"DENSE_V1", []byte{1, 4, 0}, ErrVersion},
		{"tag 9", []byte{9, 12, 0, 0}, ErrVersion},
		{"index bits 3", []byte{2, 3, 0, 0}, ErrParams},
		{"index bits 17", []byte{2, 17, 0, 0}, ErrParams},
		{"sparse without a count", sparse[:3], ErrCorrupt},
		{"sparse count too large", edit(sparse, func(b []byte) { b[2] = 4 }), ErrCorrupt},
		{"sparse trailing bytes", append(bytes.Clone(sparse), 0), ErrCorrupt},
		{"sparse count over 32767", append([]byte{2, 12, 0xff, 0xff}, make([]byte, 4*0xffff)...), ErrCorrupt},
		{"sparse entries out of order", edit(sparse, func(b []byte) { copy(b[4:8], sparse[8:12]); copy(b[8:12], sparse[4:8]) }), ErrCorrupt},
		{"sparse bucket repeated", edit(sparse, func(b []byte) { copy(b[8:12], sparse[4:8]) }), ErrCorrupt},
		{"sparse zeros above 38", edit(sparse, func(b []byte) { b[4] |= 39 }), ErrCorrupt},
		{"dense too short", dense[:10], ErrCorrupt},
		{"dense overflow count too large", edit(dense, func(b []byte) { b[11] = 2 }), ErrCorrupt},
		{"dense overflow for a bucket below 15", edit(dense, func(b []byte) { b[13] = 2 }), ErrCorrupt},
		{"dense overflow bucket out of range", edit(dense, func(b []byte) { b[13] = 16 }), ErrCorrupt},
		{"dense overflow of 0", edit(dense, func(b []byte) { b[15] = 0 }), ErrCorrupt},
		{"dense register above 65-p", edit(dense, func(b []byte) { b[15] = 60 }), ErrCorrupt},
		{"dense baseline above 65-p", edit(dense, func(b []byte) { b[2] = 62 }), ErrCorrupt},
		{"dense baseline below every register", edit(dense, func(b []byte) { b[3] = 0x11 }), ErrCorrupt},
		{"dense overflows out of order", func() []byte {
			b := []byte{tagDenseV2, 4, 0, 0x0f, 0xf1, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11}
			b = binary.LittleEndian.AppendUint16(b, 2)
			b = binary.LittleEndian.AppendUint16(b, 2)
			b = binary.LittleEndian.AppendUint16(b, 1)
			return append(b, 1, 1)
		}(), ErrCorrupt},
	}
}

func TestDecodeMalformed(t *testing.T) {
	for _, tt := range malformed(t) {
		_, err := Decode(tt.in)
		if !errors.Is(err, tt.want) || !wrapsOne(err) {
			t.Errorf("%s: Decode(%.32x) = %v, want %v", tt.name, tt.in, err, tt.want)
		}
	}
}

// TestDecodeValid: every valid image decodes and is written back byte for
// byte.
func TestDecodeValid(t *testing.T) {
	for _, in := range validImages(t) {
		s, err := Decode(in)
		if err != nil {
			t.Errorf("Decode(%.32x): %v", in, err)
			continue
		}
		if got := s.AppendBinary(nil); !bytes.Equal(got, in) || s.SizeBytes() != len(in) {
			t.Errorf("Decode(%.32x) writes %.32x (size %d)", in, got, s.SizeBytes())
		}
	}
	if s, _ := Decode(withOverflow()); s.regs[3] != 20 || s.regs[0] != 0 || s.regs[2] != 1 {
		t.Errorf("overflow decoded to registers %v", s.regs)
	}
}

// allocBound: dense registers take twice their packed bytes, sparse
// entries what they take in the image.
func allocBound(in []byte) uint64 { return 3*uint64(len(in)) + 1<<10 }

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

// TestDecodeAllocationBounded: what an image claims (16 index bits, 32767
// entries) cannot make Decode allocate beyond its length.
func TestDecodeAllocationBounded(t *testing.T) {
	claims := [][]byte{{3, 16, 0, 0, 0}, {2, 16, 0xff, 0x7f}, {2, 4, 0xff, 0x7f, 1, 2, 3, 4}}
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
		// Accepted: it is written back as it came (Decode takes only what
		// airlift writes), and keeps taking values and merges.
		if got := s.AppendBinary(nil); !bytes.Equal(got, in) {
			t.Fatalf("Decode(%x) writes %x", in, got)
		}
		again, _ := Decode(in)
		s.AddHashes([]uint64{uint64(len(in)) * 0x9e3779b97f4a7c15})
		if err := again.Merge(s); err != nil {
			t.Fatalf("merge: %v", err)
		}
	})
}
