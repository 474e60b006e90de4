package dshll

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

func build(tb testing.TB, p Params, n int) *Sketch {
	tb.Helper()
	s, err := New(p)
	if err != nil {
		tb.Fatal(err)
	}
	for v := range int64(n) {
		s.AddInt(v)
	}
	return s
}

func compact(tb testing.TB, s *Sketch) []byte {
	tb.Helper()
	b, err := s.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func updatable(tb testing.TB, s *Sketch) []byte {
	tb.Helper()
	b, err := s.AppendUpdatable(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// validImages returns compact and updatable images of every mode and
// type.
func validImages(tb testing.TB) [][]byte {
	var out [][]byte
	for typ := HLL4; typ <= HLL8; typ++ {
		for _, n := range []int{0, 1, 7, 30, 300, 20000} {
			s := build(tb, Params{LgK: 8, Type: typ}, n)
			out = append(out, compact(tb, s), updatable(tb, s))
		}
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
	list := compact(tb, build(tb, Params{LgK: 8, Type: HLL4}, 3))
	set := compact(tb, build(tb, Params{LgK: 10, Type: HLL4}, 40))
	setU := updatable(tb, build(tb, Params{LgK: 10, Type: HLL4}, 40))
	h4 := compact(tb, build(tb, Params{LgK: 6, Type: HLL4}, 20000))
	h4U := updatable(tb, build(tb, Params{LgK: 6, Type: HLL4}, 20000))
	h8 := compact(tb, build(tb, Params{LgK: 6, Type: HLL8}, 2000))
	f64 := func(b []byte, at int, v float64) []byte {
		c := bytes.Clone(b)
		binary.LittleEndian.PutUint64(c[at:], math.Float64bits(v))
		return c
	}
	u32 := func(b []byte, at int, v uint32) []byte {
		c := bytes.Clone(b)
		binary.LittleEndian.PutUint32(c[at:], v)
		return c
	}
	return []malformedCase{
		{"nothing", nil, ErrTooShort},
		{"seven bytes", list[:7], ErrTooShort},
		{"version 2", with(list, 1, 2), ErrVersion},
		{"family 3 (theta)", with(list, 2, 3), ErrCorrupt},
		{"lg_k 3", with(list, 3, 3), ErrParams},
		{"lg_k 22", with(list, 3, 22), ErrParams},
		{"lg_k 255", with(h8, 3, 255), ErrParams},
		{"big-endian", with(list, 5, list[5]|flagBigEndian), ErrCorrupt},
		{"unknown flag", with(list, 5, list[5]|64), ErrCorrupt},
		{"mode 3", with(list, 7, 3), ErrCorrupt},
		{"target type 3", with(list, 7, 3<<2), ErrCorrupt},
		{"high mode bits", with(list, 7, 0x10), ErrCorrupt},
		{"list with set preamble", with(list, 0, preIntsSet), ErrCorrupt},
		{"list count beyond the bytes", with(list, 6, 5), ErrTooShort},
		{"list count 200", with(list, 6, 200), ErrCorrupt},
		{"list trailing bytes", append(bytes.Clone(list), 0, 0, 0, 0), ErrCorrupt},
		{"list free coupon", u32(list, listStart, 0), ErrCorrupt},
		{"list repeated coupon", u32(list, listStart+4, binary.LittleEndian.Uint32(list[listStart:])), ErrCorrupt},
		{"set repeated coupon", u32(set, setStart+4, binary.LittleEndian.Uint32(set[setStart:])), ErrCorrupt},
		{"empty flag with coupons", with(list, 5, list[5]|flagEmpty), ErrCorrupt},
		{"set cut", set[:len(set)-4], ErrTooShort},
		{"set count 2^32-1", u32(set, 8, math.MaxUint32), ErrTooShort},
		{"set count zero", u32(set, 8, 0)[:setStart], ErrCorrupt},
		{"set free coupon", u32(set, setStart, 0), ErrCorrupt},
		{"set preamble cut", set[:10], ErrTooShort},
		{"updatable set lg_arr 30", with(setU, 4, 30), ErrCorrupt},
		{"updatable set count off", u32(setU, 8, 39), ErrCorrupt},
		{"hll cut in the preamble", h8[:30], ErrTooShort},
		{"hll cut in the registers", h8[:len(h8)-1], ErrTooShort},
		{"hll trailing bytes", append(bytes.Clone(h8), 0), ErrCorrupt},
		{"hll NaN accumulator", f64(h8, 8, math.NaN()), ErrCorrupt},
		{"hll negative KxQ0", f64(h8, 16, -1), ErrCorrupt},
		{"hll infinite KxQ1", f64(h8, 24, math.Inf(1)), ErrCorrupt},
		{"hll_8 register 64", with(h8, hllStart+3, 64), ErrCorrupt},
		{"hll_8 count at cur_min off", u32(h8, 32, 5), ErrCorrupt},
		{"hll_4 aux token without an aux entry", with(h4, hllStart, h4[hllStart]|15), ErrCorrupt},
		{"hll cur_min 64", with(h4, 6, 64), ErrCorrupt},
		{"hll at cur_min above K", u32(h8, 32, 1<<20), ErrCorrupt},
		{"hll_8 with aux entries", u32(h8, 36, 1), ErrCorrupt},
		{"hll_4 aux count 2^32-1", u32(h4, 36, math.MaxUint32), ErrCorrupt},
		{"hll_4 aux beyond the bytes", u32(h4, 36, 60), ErrTooShort},
		{"hll_4 updatable aux array 2^20", with(h4U, 4, 20), ErrCorrupt},
		{"hll preamble with list mode", with(h8, 7, byte(HLL8)<<2|modeList), ErrCorrupt},
	}
}

// TestDecodeMalformed: each malformed image fails with its sentinel,
// without the library getting to see it fail, and leaves the receiver as
// it was.
func TestDecodeMalformed(t *testing.T) {
	for _, tt := range malformed(t) {
		s := build(t, Params{LgK: 5, Type: HLL8}, 3)
		before := compact(t, s)
		err := s.UnmarshalBinary(tt.in)
		if !errors.Is(err, tt.want) || !wrapsOne(err) {
			t.Errorf("%s: UnmarshalBinary(%.40x) = %v, want %v", tt.name, tt.in, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "the library failed") {
			t.Errorf("%s: the library panicked: %v", tt.name, err)
		}
		if !bytes.Equal(compact(t, s), before) {
			t.Errorf("%s: receiver changed", tt.name)
		}
	}
}

// TestDecodeValid: every mode and type, compact and updatable, decodes
// to the sketch it was written from, in either image.
func TestDecodeValid(t *testing.T) {
	for typ := HLL4; typ <= HLL8; typ++ {
		for _, n := range []int{0, 1, 7, 30, 300, 20000} {
			s := build(t, Params{LgK: 8, Type: typ}, n)
			for _, img := range [][]byte{compact(t, s), updatable(t, s)} {
				d, err := Decode(img)
				if err != nil {
					t.Fatalf("%s n %d: Decode(%.40x) = %v", typ, n, img, err)
				}
				if d.Estimate() != s.Estimate() || d.Params() != s.Params() || d.Mode() != s.Mode() {
					t.Errorf("%s n %d: decoded %v, want %v", typ, n, d, s)
				}
				if !Sniff(img) {
					t.Errorf("%s n %d: Sniff refused its image", typ, n)
				}
			}
		}
	}
}

// allocBound: the library keeps coupons as 8-byte ints in a hash set at
// most 3/4 full that it grows by doubling, so a SET image of n bytes (n/4
// coupons) may take up to 16n bytes; registers cost about what they
// take in the image.
func allocBound(in []byte) uint64 { return 16*uint64(len(in)) + 64<<10 }

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

// TestDecodeAllocationBounded: what an image claims (lg_k, counts, aux
// arrays) cannot make Decode allocate more than a small multiple of its
// length.
func TestDecodeAllocationBounded(t *testing.T) {
	for _, tt := range malformed(t) {
		if got := decodeAllocBytes(tt.in); got > allocBound(tt.in) {
			t.Errorf("%s: Decode allocated %d bytes for %d input bytes", tt.name, got, len(tt.in))
		}
	}
	// The largest valid claim: an HLL_8 image of lg_k 21 carries its 2 MiB.
	big := compact(t, build(t, Params{LgK: 21, Type: HLL8}, 10_000_000/100))
	if got := decodeAllocBytes(big); got > allocBound(big) {
		t.Errorf("lg_k 21: Decode allocated %d bytes for %d input bytes", got, len(big))
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
			if strings.Contains(err.Error(), "the library failed") {
				t.Fatalf("the library panicked on an image the checks passed: %v", err)
			}
			return
		}
		// Accepted: its compact image decodes to the same sketch, which
		// keeps updating and merging.
		img := compact(t, d)
		again, err := Decode(img)
		if err != nil {
			t.Fatalf("Decode(own image %x) = %v", img, err)
		}
		if again.Estimate() != d.Estimate() && !(math.IsNaN(again.Estimate()) && math.IsNaN(d.Estimate())) {
			t.Fatalf("round trip estimate %v, was %v", again.Estimate(), d.Estimate())
		}
		if err := d.AddInt(int64(len(in))); err != nil {
			t.Fatalf("add to a decoded sketch: %v", err)
		}
		if err := again.Merge(d); err != nil && !errors.Is(err, ErrFewerRegisters) {
			t.Fatalf("merge: %v", err)
		}
	})
}

// TestPinnedBytes pins the images of a few sketches, so that an upgrade
// of the library that changes what it writes fails here (the Java tests
// build the same sketches and check their images against Java's).
func TestPinnedBytes(t *testing.T) {
	for _, c := range []struct {
		p    Params
		n    int
		want string // sha256 of the compact image, then of the updatable one
	}{
		{Params{LgK: 12, Type: HLL4}, 0, "0bc11351e49f9b59 e6ac4f52e5350135"},
		{Params{LgK: 12, Type: HLL4}, 5, "c379bc030355ed5a 8fc2c8a0b381c4d9"},
		{Params{LgK: 12, Type: HLL6}, 200, "ff3219b721e01742 5a081556a4182eee"},
		{Params{LgK: 10, Type: HLL4}, 50_000, "ac1661ddc162f9de 46425e9e735db5f4"},
		{Params{LgK: 14, Type: HLL8}, 100_000, "8ae7661a794cff78 8ae7661a794cff78"},
	} {
		s := build(t, c.p, c.n)
		a, b := sha256.Sum256(compact(t, s)), sha256.Sum256(updatable(t, s))
		got := hex.EncodeToString(a[:8]) + " " + hex.EncodeToString(b[:8])
		if got != c.want {
			t.Errorf("%v n %d: images hash to %s, pinned %s", c.p, c.n, got, c.want)
		}
	}
}
