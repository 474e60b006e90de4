package hll

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

var sentinels = []error{ErrTooShort, ErrVersion, ErrParams, ErrCorrupt, ErrIncompatible}

func wrapsSentinel(err error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// malformed are inputs Decode must refuse, with the sentinel it must wrap.
var malformed = []struct {
	name string
	in   []byte
	want error
}{
	{"empty", nil, ErrTooShort},
	{"two bytes", []byte{0x11, 0x8b}, ErrTooShort},
	{"version 0", []byte{0x01, 0x8b, 0x7f}, ErrVersion},
	{"version 2", []byte{0x21, 0x8b, 0x7f}, ErrVersion},
	{"type 5", []byte{0x15, 0x8b, 0x7f}, ErrCorrupt},
	{"type 15", []byte{0x1f, 0x8b, 0x7f}, ErrCorrupt},
	{"log2m 31 claims 2^31 registers", []byte{0x14, 0x9f, 0x7f}, ErrParams},
	{"log2m 3", []byte{0x11, 0x83, 0x7f}, ErrParams},
	{"log2m 18", []byte{0x11, 0x92, 0x7f}, ErrParams},
	{"regwidth 8", []byte{0x11, 0xeb, 0x3f}, ErrParams},
	{"empty with a body", []byte{0x11, 0x8b, 0x7f, 0x00}, ErrCorrupt},
	{"undefined with a body", []byte{0x10, 0x8b, 0x7f, 0x00}, ErrCorrupt},
	{"empty with expthresh 2^20", []byte{0x11, 0x8b, 0x55}, ErrParams},
	{"explicit with expthresh 2^15", []byte{0x12, 0x8b, 0x50, 0, 0, 0, 0, 0, 0, 0, 1}, ErrParams},
	{"explicit not a multiple of 8", []byte{0x12, 0x8b, 0x7f, 1, 2, 3}, ErrCorrupt},
	{"explicit descending", append([]byte{0x12, 0x8b, 0x7f}, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1), ErrCorrupt},
	{"explicit duplicate", append([]byte{0x12, 0x8b, 0x7f}, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2), ErrCorrupt},
	{"explicit unsigned order", append([]byte{0x12, 0x8b, 0x7f}, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 0, 0, 0, 0, 0), ErrCorrupt},
	{"explicit over 16383 elements", explicitOf(16384), ErrCorrupt},
	// log2m 11, regwidth 5: 16-bit words.
	{"sparse descending", []byte{0x13, 0x8b, 0x40, 0x00, 0x41, 0x00, 0x21}, ErrCorrupt},
	{"sparse duplicate index", []byte{0x13, 0x8b, 0x40, 0x00, 0x21, 0x00, 0x22}, ErrCorrupt},
	{"sparse zero value", []byte{0x13, 0x8b, 0x40, 0x00, 0x20}, ErrCorrupt},
	{"sparse stray byte", []byte{0x13, 0x8b, 0x40, 0x00, 0x21, 0x00}, ErrCorrupt},
	// log2m 12, regwidth 5: one 17-bit word and 7 padding bits that must be zero.
	{"sparse nonzero padding", []byte{0x13, 0x8c, 0x40, 0xaf, 0xe1, 0x81}, ErrCorrupt},
	{"full without body", []byte{0x14, 0x8b, 0x7f}, ErrTooShort},
	{"full log2m 17 with one byte", []byte{0x14, 0x91, 0x7f, 0x00}, ErrTooShort},
	{"full one byte short", append([]byte{0x14, 0x8b, 0x7f}, make([]byte, 1279)...), ErrTooShort},
	{"full one byte long", append([]byte{0x14, 0x8b, 0x7f}, make([]byte, 1281)...), ErrCorrupt},
}

func explicitOf(n int) []byte {
	b := []byte{0x12, 0x91, 0x7f}
	for i := range n {
		b = append(b, 0, 0, 0, 0, 0, byte(i>>16), byte(i>>8), byte(i))
	}
	return b
}

func TestDecodeMalformed(t *testing.T) {
	for _, tt := range malformed {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode(tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Decode(%x) = %v, %v; want an error wrapping %v", abbrevBytes(tt.in), got, err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "hll: ") {
				t.Errorf("error %q does not say where it comes from", err)
			}
			// A failed UnmarshalBinary leaves the receiver unchanged.
			s := mustNew(t, DefaultParams())
			s.AddInt64(1)
			before := bytesOf(t, s)
			if err := s.UnmarshalBinary(tt.in); err == nil {
				t.Fatal("UnmarshalBinary succeeded")
			}
			if !bytes.Equal(bytesOf(t, s), before) {
				t.Error("failed UnmarshalBinary changed the receiver")
			}
		})
	}
}

func abbrevBytes(b []byte) []byte {
	if len(b) > 24 {
		return b[:24]
	}
	return b
}

// TestDecodeAcceptsQuirks covers inputs other writers produce that are valid.
func TestDecodeAcceptsQuirks(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   []byte
	}{
		{"sparse with no words (java-hll, PostgreSQL after a zero hash)", []byte{0x13, 0x8b, 0x40}},
		{"sparse phantom word in the padding", []byte{0x13, 0x04, 0x40, 0x09, 0xc0}},
		{"explicit with no elements", []byte{0x12, 0x8b, 0x7f}},
		{"cutoff bit 7 set", []byte{0x11, 0x8b, 0xff}},
		{"full with expthresh code 40", append([]byte{0x14, 0x84, 0x68}, make([]byte, 10)...)},
	} {
		if _, err := Decode(tt.in); err != nil {
			t.Errorf("%s: Decode(%x) = %v", tt.name, tt.in, err)
		}
	}
	// log2m 4, regwidth 1: 5-bit words; 0x09c0 = 00001 00111 00000 0 holds
	// (0,1), (3,1) and a phantom (0,0) word in the padding, which must not
	// clear register 0 (go-hll's reader does: it re-encodes this as 13044001c0).
	in := []byte{0x13, 0x04, 0x40, 0x09, 0xc0}
	s, _ := Decode(in)
	if got := s.Registers(nil); got[0] != 1 || got[3] != 1 || s.filled() != 2 {
		t.Errorf("phantom word: registers %v, want registers 0 and 3 set", got)
	}
	if got := bytesOf(t, s); !bytes.Equal(got, in) {
		t.Errorf("phantom word: re-encoded as %x, want %x", got, in)
	}
}

// TestDecodeAllocationBounded: whatever the header claims, Decode allocates
// at most a small multiple of the input's length.
func TestDecodeAllocationBounded(t *testing.T) {
	for _, tt := range malformed {
		if len(tt.in) > 64 {
			continue
		}
		if got := decodeAllocBytes(tt.in); got > allocBound(tt.in) {
			t.Errorf("%s: Decode allocated %d bytes for %d input bytes", tt.name, got, len(tt.in))
		}
	}
	// The largest sparse body that stays sparse in memory, and a valid
	// empty SPARSE at log2m 17: both must stay small.
	for _, in := range [][]byte{{0x13, 0x91, 0x40}, {0x11, 0x91, 0x7f}} {
		if got := decodeAllocBytes(in); got > allocBound(in) {
			t.Errorf("Decode(%x) allocated %d bytes", in, got)
		}
	}
}

func allocBound(in []byte) uint64 { return 16*uint64(len(in)) + 4096 }

// decodeAllocBytes measures the heap Decode allocates for in: the least of
// a few runs (TotalAlloc also counts other goroutines' occasional
// allocations), after a warm-up call so one-time initialisation (fmt's
// caches) is not counted.
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

func FuzzDecode(f *testing.F) {
	for _, tt := range malformed {
		f.Add(tt.in)
	}
	seeds, _ := filepath.Glob("testdata/postgresql-hll/cumulative_*.csv")
	for _, path := range seeds {
		for i, row := range readCSV(f, path, ',') {
			if i%16 == 0 {
				f.Add(unhex(f, row[len(row)-1]))
			}
		}
	}
	for _, row := range readCSV(f, "testdata/js-hll/test_data_v1.csv", '|') {
		f.Add(unhex(f, row[0]))
	}
	if _, err := os.Stat("testdata"); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s := mustNew(t, DefaultParams())
		s.AddInt64(42)
		before := bytesOf(t, s)
		if alloc := decodeAllocBytes(in); alloc > allocBound(in) {
			t.Fatalf("Decode(%d bytes) allocated %d bytes", len(in), alloc)
		}
		err := s.UnmarshalBinary(in)
		checkAgrees(t, in, s, err)
		if err != nil {
			if !wrapsSentinel(err) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			if !bytes.Equal(bytesOf(t, s), before) {
				t.Fatal("failed UnmarshalBinary changed the receiver")
			}
			return
		}
		// Decoded sketches re-encode stably and behave.
		once := bytesOf(t, s)
		d, err := Decode(once)
		if err != nil {
			t.Fatalf("re-decoding %x: %v", once, err)
		}
		if twice := bytesOf(t, d); !bytes.Equal(once, twice) {
			t.Fatalf("unstable round trip: %x then %x", once, twice)
		}
		if len(once) != s.SizeBytes() {
			t.Fatalf("SizeBytes() = %d, encoding has %d", s.SizeBytes(), len(once))
		}
		_ = s.Estimate()
		s.AddInt64(7)
		if f, err := s.Fold(MinLog2m, 5); err == nil {
			_ = f.Estimate()
		}
	})
}

// checkAgrees fails t unless Check(in) gives what UnmarshalBinary gave:
// its error (err), or the parameters of s, and UNDEFINED exactly when s
// is. (Other representations may differ: Check gives the stored one, and
// a decoded sketch picks its own, a SPARSE body with many registers set
// decoding to a dense sketch.)
func checkAgrees(t *testing.T, in []byte, s *Sketch, err error) {
	t.Helper()
	rep, p, cerr := Check(in)
	switch {
	case (err == nil) != (cerr == nil):
		t.Fatalf("Check(%x) = %v, Decode: %v", in, cerr, err)
	case err != nil:
		if err.Error() != cerr.Error() {
			t.Fatalf("Check(%x) = %q, Decode: %q", in, cerr, err)
		}
	case (rep == Undefined) != (s.Representation() == Undefined) || p != s.Params():
		t.Fatalf("Check(%x) = %s %+v, Decode: %s %+v", in, rep, p, s.Representation(), s.Params())
	}
}

// TestCheckAllocatesNothingForFull: checking a FULL sketch unpacks no
// register (the point of Check: a backup checks every stored value).
func TestCheckAllocatesNothingForFull(t *testing.T) {
	s := mustNew(t, Params{Log2m: 14, Regwidth: 5, Expthresh: -1, Sparse: true})
	for i := range int64(200000) {
		s.AddInt64(i)
	}
	b := bytesOf(t, s)
	if rep, _, err := Check(b); err != nil || rep != Full {
		t.Fatalf("Check = %s, %v; want FULL", rep, err)
	}
	if n := testing.AllocsPerRun(20, func() { _, _, _ = Check(b) }); n != 0 {
		t.Errorf("Check of a FULL sketch made %v allocations, want 0", n)
	}
}
