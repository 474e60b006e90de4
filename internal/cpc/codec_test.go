package cpc

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
)

var sentinels = []error{ErrTooShort, ErrVersion, ErrParams, ErrCorrupt}

func wrapsOne(err error) bool {
	n := 0
	for _, s := range sentinels {
		if errors.Is(err, s) {
			n++
		}
	}
	return n == 1
}

func build(tb testing.TB, lgK, n int) *Sketch {
	tb.Helper()
	s, err := New(Params{LgK: lgK})
	if err != nil {
		tb.Fatal(err)
	}
	for v := range int64(n) {
		s.AddInt(v)
	}
	return s
}

func image(tb testing.TB, s *Sketch) []byte {
	tb.Helper()
	b, err := s.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// flavors are ids counts that put a lg_k 8 sketch in each flavor.
var flavors = []int{0, 1, 10, 60, 200, 1500, 20000}

func validImages(tb testing.TB) [][]byte {
	var out [][]byte
	for _, n := range flavors {
		s := build(tb, 8, n)
		out = append(out, image(tb, s))
		u, err := Union(Params{LgK: 8}, s) // merged formats
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, image(tb, u))
	}
	return out
}

type malformedCase struct {
	name string
	in   []byte
	want error
}

func malformed(tb testing.TB) []malformedCase {
	with := func(b []byte, i int, v byte) []byte {
		c := bytes.Clone(b)
		c[i] = v
		return c
	}
	u32 := func(b []byte, at int, v uint32) []byte {
		c := bytes.Clone(b)
		binary.LittleEndian.PutUint32(c[at:], v)
		return c
	}
	f64 := func(b []byte, at int, v float64) []byte {
		c := bytes.Clone(b)
		binary.LittleEndian.PutUint64(c[at:], math.Float64bits(v))
		return c
	}
	empty := image(tb, build(tb, 8, 0))
	sparse := image(tb, build(tb, 8, 10))     // format 3: HIP sparse
	sliding := image(tb, build(tb, 8, 20000)) // format 7: HIP sliding with surprising values
	return []malformedCase{
		{"nothing", nil, ErrTooShort},
		{"seven bytes", empty[:7], ErrTooShort},
		{"version 2", with(empty, 1, 2), ErrVersion},
		{"family 7 (hll)", with(empty, 2, 7), ErrCorrupt},
		{"lg_k 3", with(empty, 3, 3), ErrParams},
		{"lg_k 27", with(empty, 3, 27), ErrParams},
		{"another seed", with(sparse, 6, 0), ErrParams},
		{"big-endian", with(sparse, 5, sparse[5]|flagBigEndian), ErrCorrupt},
		{"not compressed", with(sparse, 5, sparse[5]&^flagCompressed), ErrCorrupt},
		{"unknown flag", with(sparse, 5, sparse[5]|64), ErrCorrupt},
		{"wrong preamble size", with(sparse, 0, 9), ErrCorrupt},
		{"first column 64", with(sparse, 4, 64), ErrCorrupt},
		{"empty with trailing bytes", append(bytes.Clone(empty), 0, 0, 0, 0), ErrCorrupt},
		{"sparse cut", sparse[:len(sparse)-4], ErrTooShort},
		{"sparse trailing word", append(bytes.Clone(sparse), 0, 0, 0, 0), ErrCorrupt},
		{"sparse zero coupons", u32(sparse, 8, 0), ErrCorrupt},
		{"sparse 2^32-1 coupons", u32(sparse, 8, math.MaxUint32), ErrCorrupt},
		{"sparse coupons the stream cannot hold", u32(sparse, 8, 100), ErrCorrupt},
		{"sparse stream length 2^32-1", u32(sparse, 12, math.MaxUint32), ErrTooShort},
		{"HIP flag off in a HIP format", with(sparse, 5, sparse[5]&^flagHIP), ErrCorrupt},
		{"NaN KxP", f64(sparse, 16, math.NaN()), ErrCorrupt},
		{"negative accumulator", f64(sparse, 24, -1), ErrCorrupt},
		{"sliding cut", sliding[:len(sliding)-1], ErrTooShort},
		{"sliding window of 1 word", u32(sliding, 36, 1), ErrCorrupt},
		{"sliding window claims 2^30 words", u32(sliding, 36, 1<<30), ErrTooShort},
		{"sliding 2^32-1 surprising values", u32(sliding, 12, math.MaxUint32), ErrCorrupt},
		{"sliding with too few coupons", u32(sliding, 8, 3), ErrCorrupt},
		{"garbage in the window", func() []byte {
			c := bytes.Clone(sliding)
			for i := 40; i < len(c); i++ {
				c[i] = 0xff
			}
			return c
		}(), ErrCorrupt},
	}
}

func TestDecodeMalformed(t *testing.T) {
	for _, tt := range malformed(t) {
		s := build(t, 5, 3)
		before := image(t, s)
		err := s.UnmarshalBinary(tt.in)
		if !errors.Is(err, tt.want) || !wrapsOne(err) {
			t.Errorf("%s: UnmarshalBinary(%.40x) = %v, want %v", tt.name, tt.in, err, tt.want)
		}
		if !bytes.Equal(image(t, s), before) {
			t.Errorf("%s: receiver changed", tt.name)
		}
	}
}

// TestDecodeValid: every flavor, HIP and merged, decodes to the sketch
// it was written from.
func TestDecodeValid(t *testing.T) {
	for _, img := range validImages(t) {
		d, err := Decode(img)
		if err != nil {
			t.Fatalf("Decode(%.40x) = %v", img, err)
		}
		if got := image(t, d); !bytes.Equal(got, img) {
			t.Errorf("re-encoded as %.40x, was %.40x", got, img)
		}
		if !Sniff(img) {
			t.Errorf("Sniff refused %.16x", img)
		}
	}
}

func allocBound(in []byte) uint64 { return 32*uint64(len(in)) + 64<<10 }

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

func TestDecodeAllocationBounded(t *testing.T) {
	for _, tt := range malformed(t) {
		if got := decodeAllocBytes(tt.in); got > allocBound(tt.in) {
			t.Errorf("%s: Decode allocated %d bytes for %d input bytes", tt.name, got, len(tt.in))
		}
	}
	for _, img := range validImages(t) {
		if got := decodeAllocBytes(img); got > allocBound(img) {
			t.Errorf("valid %.16x: Decode allocated %d bytes for %d input bytes", img, got, len(img))
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
		d, err := Decode(in)
		if err != nil {
			if !wrapsOne(err) {
				t.Fatalf("error %q wraps no single sentinel", err)
			}
			return
		}
		img := image(t, d)
		again, err := Decode(img)
		if err != nil {
			t.Fatalf("Decode(own image %x) = %v", img, err)
		}
		if again.Estimate() != d.Estimate() {
			t.Fatalf("round trip estimate %v, was %v", again.Estimate(), d.Estimate())
		}
		if err := d.AddInt(int64(len(in))); err != nil {
			t.Fatalf("add: %v", err)
		}
		if err := again.Merge(d); err != nil && !errors.Is(err, ErrFewerRows) {
			t.Fatalf("merge: %v", err)
		}
		if _, err := again.MarshalBinary(); err != nil {
			t.Fatalf("image after a merge: %v", err)
		}
	})
}

// TestLibraryFailureIsCorrupt: the recover in Decode turns a failure of
// the library on a stream that passed the preamble checks into ErrCorrupt
// naming it (the garbage window above takes that path or the library's
// own error).
func TestLibraryFailureIsCorrupt(t *testing.T) {
	for _, tt := range malformed(t) {
		if tt.name != "garbage in the window" {
			continue
		}
		_, err := Decode(tt.in)
		if !errors.Is(err, ErrCorrupt) || !strings.HasPrefix(err.Error(), "cpc: ") {
			t.Errorf("Decode(garbage window) = %v", err)
		}
	}
}

// TestPinnedBytes pins images so that a library upgrade that changes
// what it writes fails here (TestJavaInterop checks builds like these
// against Java's bytes).
func TestPinnedBytes(t *testing.T) {
	for _, c := range []struct {
		lgK, n int
		want   string
	}{
		{11, 0, "8209bf627abdfc1b"}, {11, 5, "ed09b6350e9b1b42"}, {11, 300, "3c333370b8f56f99"},
		{11, 5000, "f8920cb7da17d4fa"}, {11, 100_000, "6938eae5f17703e8"},
	} {
		sum := sha256.Sum256(image(t, build(t, c.lgK, c.n)))
		if got := hex.EncodeToString(sum[:8]); got != c.want {
			t.Errorf("lg_k %d n %d: image hashes to %s, pinned %s", c.lgK, c.n, got, c.want)
		}
	}
}
