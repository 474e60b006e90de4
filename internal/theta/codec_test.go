package theta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
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

func mustNew(tb testing.TB, p Params) *Sketch {
	tb.Helper()
	s, err := New(p)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func encode(tb testing.TB, s *Sketch) []byte {
	tb.Helper()
	b, err := s.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// le assembles a little-endian encoding: bytes as given, uint16 and uint32
// and uint64 values at their width.
func le(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch v := p.(type) {
		case byte:
			b = append(b, v)
		case []byte:
			b = append(b, v...)
		case uint16:
			b = binary.LittleEndian.AppendUint16(b, v)
		case uint32:
			b = binary.LittleEndian.AppendUint32(b, v)
		case uint64:
			b = binary.LittleEndian.AppendUint64(b, v)
		default:
			panic("le: unsupported part")
		}
	}
	return b
}

func preamble(pre, flags byte) []byte {
	return le(pre, byte(serialVersion), byte(familyCompact), byte(0), byte(0), flags, SeedHash())
}

const (
	fOrdered = flagCompact | flagReadOnly | flagOrdered
	fEmpty   = fOrdered | flagEmpty
)

// TestSeedHash: the seed hash of 9001 is 0x93cc, the value the library
// writes in every sketch (checked against it by the interop tests).
func TestSeedHash(t *testing.T) {
	if got := SeedHash(); got != 0x93cc {
		t.Errorf("SeedHash() = %#x, want 0x93cc", got)
	}
}

// TestDecodeJavaForms: the empty and single-item forms Java writes (seed
// hash 0 when empty; the single-item flag) decode, and re-encode in the
// C++/Python form.
func TestDecodeJavaForms(t *testing.T) {
	javaEmpty := []byte{1, 3, 3, 0, 0, 0x1e, 0, 0}
	s, err := DecodeParams(javaEmpty, DefaultParams())
	if err != nil {
		t.Fatalf("Decode(Java empty) = %v", err)
	}
	if !s.IsEmpty() || s.Estimate() != 0 {
		t.Errorf("Java empty decoded as %v", s)
	}
	if got, want := encode(t, s), preamble(1, fEmpty); !bytes.Equal(got, want) {
		t.Errorf("Java empty re-encoded as %x, want %x", got, want)
	}
	h := HashInt(42)
	javaSingle := le(preamble(1, fOrdered|flagSingleItem), h)
	s, err = DecodeParams(javaSingle, DefaultParams())
	if err != nil {
		t.Fatalf("Decode(Java single item) = %v", err)
	}
	one := mustNew(t, DefaultParams())
	one.AddInt(42)
	if got, want := encode(t, s), encode(t, one); !bytes.Equal(got, want) || s.Estimate() != 1 {
		t.Errorf("Java single item re-encoded as %x (estimate %v), want %x", got, s.Estimate(), want)
	}
	// An unordered exact sketch (Java's compact(false)) is sorted.
	a, b := HashInt(1), HashInt(2)
	unordered := le(preamble(2, flagCompact|flagReadOnly), uint32(2), uint32(0), max(a, b), min(a, b))
	s, err = DecodeParams(unordered, DefaultParams())
	if err != nil {
		t.Fatalf("Decode(unordered) = %v", err)
	}
	two := mustNew(t, DefaultParams())
	two.AddInt(1)
	two.AddInt(2)
	if got, want := encode(t, s), encode(t, two); !bytes.Equal(got, want) {
		t.Errorf("unordered re-encoded as %x, want %x", got, want)
	}
}

type malformedCase struct {
	name string
	in   []byte
	want error
}

func malformed() []malformedCase {
	h1, h2 := HashInt(1), HashInt(2)
	lo, hi := min(h1, h2), max(h1, h2)
	exact := func(flags byte, hs ...uint64) []byte {
		b := le(preamble(2, flags), uint32(len(hs)), uint32(0))
		for _, h := range hs {
			b = le(b, h)
		}
		return b
	}
	est := func(theta uint64, hs ...uint64) []byte {
		b := le(preamble(3, fOrdered), uint32(len(hs)), uint32(0), theta)
		for _, h := range hs {
			b = le(b, h)
		}
		return b
	}
	withByte := func(b []byte, i int, v byte) []byte {
		c := bytes.Clone(b)
		c[i] = v
		return c
	}
	good := exact(fOrdered, lo, hi)
	cases := []malformedCase{
		{"nothing", nil, ErrTooShort},
		{"seven bytes", good[:7], ErrTooShort},
		{"serial version 5", withByte(good, 1, 5), ErrVersion},
		{"serial version 1", withByte(good, 1, 1), ErrVersion},
		{"family 2 (update sketch) with 2 preamble longs", withByte(good, 2, 2), ErrCorrupt},
		{"family 9 (tuple sketch)", withByte(good, 2, 9), ErrCorrupt},
		{"big-endian flag", withByte(good, 5, fOrdered|flagBigEndian), ErrCorrupt},
		{"unknown flag", withByte(good, 5, fOrdered|64), ErrCorrupt},
		{"not compact", withByte(good, 5, flagReadOnly|flagOrdered), ErrCorrupt},
		{"preamble 0", withByte(good, 0, 0), ErrCorrupt},
		{"preamble 4", withByte(good, 0, 4), ErrCorrupt},
		{"another seed", withByte(good, 6, 0x00), ErrParams},
		{"empty with another seed", le(preamble(1, fEmpty)[:6], uint16(0x1234)), ErrParams},
		{"empty with preamble 2", exact(fEmpty), ErrCorrupt},
		{"empty with trailing bytes", le(preamble(1, fEmpty), uint64(lo)), ErrCorrupt},
		{"single item cut", le(preamble(1, fOrdered), uint32(1)), ErrTooShort},
		{"single item with trailing bytes", le(preamble(1, fOrdered), lo, hi), ErrCorrupt},
		{"single item zero hash", le(preamble(1, fOrdered), uint64(0)), ErrCorrupt},
		{"single item hash above 2^63", le(preamble(1, fOrdered), uint64(1<<63)), ErrCorrupt},
		{"single-item flag with preamble 2", exact(fOrdered|flagSingleItem, lo), ErrCorrupt},
		{"preamble 2 cut", good[:12], ErrTooShort},
		{"count beyond the bytes", le(preamble(2, fOrdered), uint32(3), uint32(0), lo, hi), ErrTooShort},
		{"count 2^32-1", le(preamble(2, fOrdered), uint32(math.MaxUint32), uint32(0)), ErrTooShort},
		{"trailing hash", le(good, uint64(12345)), ErrCorrupt},
		{"unordered in an ordered sketch", exact(fOrdered, hi, lo), ErrCorrupt},
		{"duplicate in an ordered sketch", exact(fOrdered, lo, lo), ErrCorrupt},
		{"duplicate in an unordered sketch", exact(flagCompact|flagReadOnly, lo, hi, lo), ErrCorrupt},
		{"zero hash", exact(fOrdered, 0, lo), ErrCorrupt},
		{"preamble 3 cut", est(1 << 62)[:20], ErrTooShort},
		{"theta zero", est(0), ErrCorrupt},
		{"theta above 2^63-1", est(1 << 63), ErrCorrupt},
		{"hash at theta", est(hi, lo, hi), ErrCorrupt},
		{"more hashes than lg_k 4 keeps", func() []byte {
			hs := make([]uint64, 31)
			for i := range hs {
				hs[i] = uint64(i + 1)
			}
			return exact(fOrdered, hs...)
		}(), ErrParams},
	}
	return append(cases, malformedCompressed()...)
}

// TestDecodeMalformed: each malformed input fails with its sentinel and
// leaves the receiver unchanged.
func TestDecodeMalformed(t *testing.T) {
	for _, tt := range malformed() {
		s := mustNew(t, Params{LgK: 4})
		s.AddInt(7)
		before := encode(t, s)
		err := s.UnmarshalBinary(tt.in)
		if !errors.Is(err, tt.want) || !wrapsOne(err) {
			t.Errorf("%s: UnmarshalBinary(%x) = %v, want %v", tt.name, tt.in, err, tt.want)
		}
		if got := encode(t, s); !bytes.Equal(got, before) {
			t.Errorf("%s: receiver changed to %x", tt.name, got)
		}
	}
	if _, err := DecodeParams(preamble(1, fEmpty), Params{LgK: 27}); !errors.Is(err, ErrParams) {
		t.Errorf("Decode with lg_k 27 = %v, want ErrParams", err)
	}
}

// TestDecodeLimits: a sketch holding exactly MaxRetained hashes decodes,
// keeps updating and re-encodes; one more is refused.
func TestDecodeLimits(t *testing.T) {
	p := Params{LgK: 4}
	hs := make([]uint64, p.MaxRetained())
	for i := range hs {
		hs[i] = uint64(i+1) << 40
	}
	b := le(preamble(2, fOrdered), uint32(len(hs)), uint32(0))
	for _, h := range hs {
		b = le(b, h)
	}
	s, err := DecodeParams(b, p)
	if err != nil {
		t.Fatalf("Decode(%d hashes at lg_k 4) = %v", len(hs), err)
	}
	if got := encode(t, s); !bytes.Equal(got, b) {
		t.Errorf("re-encoded as %x, want %x", got, b)
	}
	s.AddHash(1) // one more than the table holds: a rebuild to k = 16
	if s.Retained() != 16 || s.Theta64() != hs[15] {
		t.Errorf("after the rebuild: %v, want 16 retained and theta %#x", s, hs[15])
	}
}

// TestDecodeAllocationBounded: whatever the preamble claims, Decode
// allocates at most a small multiple of the input's length.
func TestDecodeAllocationBounded(t *testing.T) {
	for _, tt := range malformed() {
		if got := decodeAllocBytes(tt.in); got > allocBound(tt.in) {
			t.Errorf("%s: Decode allocated %d bytes for %d input bytes", tt.name, got, len(tt.in))
		}
	}
}

func allocBound(in []byte) uint64 { return 2*uint64(len(in)) + 1024 }

// decodeAllocBytes measures the heap Decode allocates for in: the least of
// a few runs, after a warm-up call.
func decodeAllocBytes(in []byte) uint64 {
	p := Params{LgK: MaxLgK}
	DecodeParams(in, p)
	least := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s, _ := DecodeParams(in, p)
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(s)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// validEncodings returns sketches of every form, encoded.
func validEncodings(tb testing.TB) [][]byte {
	var out [][]byte
	for _, n := range []int{0, 1, 2, 30, 31, 100, 5000} {
		s := mustNew(tb, Params{LgK: 4})
		for i := range n {
			s.AddInt(int64(i))
		}
		out = append(out, encode(tb, s), s.AppendCompressed(nil))
	}
	out = append(out, updateTable(5, 6, 0, 3, 1, MaxTheta, HashInt(1), HashInt(2), HashInt(3)))
	return out
}

func FuzzDecode(f *testing.F) {
	for _, b := range validEncodings(f) {
		f.Add(b)
	}
	for _, tt := range malformed() {
		f.Add(tt.in)
	}
	f.Add([]byte{1, 3, 3, 0, 0, 0x1e, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		if alloc := decodeAllocBytes(in); alloc > allocBound(in) {
			t.Fatalf("Decode(%d bytes) allocated %d bytes", len(in), alloc)
		}
		if d, err := Decode(in); err != nil && !wrapsOne(err) {
			t.Fatalf("Decode: error %q wraps no single sentinel", err)
		} else if err == nil && d.Params() != ParamsOf(in) {
			t.Fatalf("Decode used %v, ParamsOf says %v", d.Params(), ParamsOf(in))
		}
		s := mustNew(t, Params{LgK: 5})
		s.AddInt(42)
		before := encode(t, s)
		if err := s.UnmarshalBinary(in); err != nil {
			if !wrapsOne(err) {
				t.Fatalf("error %q wraps no single sentinel", err)
			}
			if !bytes.Equal(encode(t, s), before) {
				t.Fatal("receiver changed by a failed UnmarshalBinary")
			}
			return
		}
		// Accepted: the canonical encoding decodes to itself.
		canon := encode(t, s)
		again, err := DecodeParams(canon, s.Params())
		if err != nil {
			t.Fatalf("Decode(canonical %x) = %v", canon, err)
		}
		if !bytes.Equal(encode(t, again), canon) || again.Estimate() != s.Estimate() {
			t.Fatal("canonical encoding does not round-trip")
		}
		if lb, _ := s.LowerBound(2); !(lb <= s.Estimate()) {
			t.Fatalf("lower bound %v above the estimate %v", lb, s.Estimate())
		}
		s.AddInt(int64(len(in)))
		s.Union(again)
		if _, err := DecodeParams(encode(t, s), s.Params()); err != nil {
			t.Fatalf("after an update and a union: %v", err)
		}
	})
}

// TestDecodeParamsOf: AppendStored keeps lg_k, which Decode restores; the
// libraries' bytes (0 in byte 3) decode at lg_k 12, or larger when they
// hold more hashes than 12 keeps; Sniff claims theta bytes only.
func TestDecodeParamsOf(t *testing.T) {
	for _, lgK := range []int{MinLgK, 7, 12, 15} {
		for _, n := range []int{0, 1, 5, 100000} {
			s := buildRange(t, lgK, 0, n)
			stored := s.AppendStored(nil)
			d, err := Decode(stored)
			if err != nil {
				t.Fatalf("lg_k %d n %d: Decode(stored) = %v", lgK, n, err)
			}
			if d.Params().LgK != lgK || !bytes.Equal(encode(t, d), encode(t, s)) {
				t.Errorf("lg_k %d n %d: stored bytes decoded as %v", lgK, n, d)
			}
			plain, err := Decode(encode(t, s))
			if err != nil {
				t.Fatal(err)
			}
			pl := plain.Params()
			if pl.LgK < DefaultLgK || pl.MaxRetained() < s.Retained() || (pl.LgK > DefaultLgK && (Params{LgK: pl.LgK - 1}).MaxRetained() >= s.Retained()) {
				t.Errorf("lg_k %d n %d: library bytes (%d hashes) decoded at lg_k %d", lgK, n, s.Retained(), pl.LgK)
			}
			if !Sniff(stored) || !Sniff(encode(t, s)) {
				t.Errorf("lg_k %d n %d: Sniff refused a theta sketch", lgK, n)
			}
		}
	}
	// More hashes than lg_k 12 keeps: the smallest lg_k that keeps them.
	s := buildRange(t, 14, 0, 1_000_000)
	d, err := Decode(encode(t, s))
	if err != nil || d.Params().LgK != 14 || d.Retained() != s.Retained() || s.Retained() <= (Params{LgK: 13}).MaxRetained() {
		t.Errorf("Decode of %d hashes: %v, %v; want lg_k 14", s.Retained(), d, err)
	}
	for _, b := range [][]byte{nil, {0x14, 0x8e, 0x7f}, {2, 3, 9, 1, 0, 0x1a, 0xcc, 0x93}, {3, 4, 3, 0, 0, 0x1e, 0xcc, 0x93}, {0xc2, 3, 2, 12, 5, 0, 0xcc, 0x93}} {
		if Sniff(b) {
			t.Errorf("Sniff(%x) = true", b)
		}
	}
}
