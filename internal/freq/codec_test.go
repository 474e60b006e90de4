package freq

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"testing"

	"github.com/sketchd/sketchd/internal/theta"
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

const fOrdered = flagCompact | flagReadOnly | flagOrdered

func preamble(pre, flags byte) []byte {
	return binary.LittleEndian.AppendUint16([]byte{pre, serialVersion, familyTuple, typeCompact, 0, flags}, theta.SeedHash())
}

type entry struct {
	key   uint64
	count int32
	mode  int // -1: 4-byte summary; else the Java mode byte
}

func exact(flags byte, es ...entry) []byte {
	b := preamble(2, flags)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(es)))
	b = binary.LittleEndian.AppendUint32(b, 0)
	return appendEntries(b, es)
}

func appendEntries(b []byte, es []entry) []byte {
	for _, e := range es {
		b = binary.LittleEndian.AppendUint64(b, e.key)
		b = binary.LittleEndian.AppendUint32(b, uint32(e.count))
		if e.mode >= 0 {
			b = append(b, byte(e.mode))
		}
	}
	return b
}

type malformedCase struct {
	name string
	in   []byte
	want error
}

func malformed() []malformedCase {
	h1, h2 := theta.HashInt(1), theta.HashInt(2)
	lo, hi := min(h1, h2), max(h1, h2)
	good := exact(fOrdered, entry{lo, 2, -1}, entry{hi, 1, -1})
	with := func(i int, v byte) []byte {
		c := bytes.Clone(good)
		c[i] = v
		return c
	}
	est := func(th uint64, es ...entry) []byte {
		b := preamble(3, fOrdered)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(es)))
		b = binary.LittleEndian.AppendUint32(b, 0)
		b = binary.LittleEndian.AppendUint64(b, th)
		return appendEntries(b, es)
	}
	return []malformedCase{
		{"nothing", nil, ErrTooShort},
		{"seven bytes", good[:7], ErrTooShort},
		{"serial version 1", with(1, 1), ErrVersion},
		{"family 3 (theta)", with(2, 3), ErrCorrupt},
		{"type 5 (legacy)", with(3, 5), ErrCorrupt},
		{"big-endian flag", with(5, fOrdered|flagBigEndian), ErrCorrupt},
		{"unknown flag", with(5, fOrdered|32), ErrCorrupt},
		{"not compact", with(5, flagReadOnly), ErrCorrupt},
		{"preamble 4", with(0, 4), ErrCorrupt},
		{"another seed", with(6, 0), ErrParams},
		{"empty with entries", append(preamble(1, fOrdered|flagEmpty), good[16:]...), ErrCorrupt},
		{"preamble cut", good[:12], ErrTooShort},
		{"entries cut", good[:len(good)-1], ErrTooShort},
		{"entries plus one byte", append(bytes.Clone(good), 0), ErrCorrupt},
		{"entries far short", good[:20], ErrTooShort},
		{"count 2^32-1", exact(fOrdered)[:8:8], ErrTooShort},
		{"huge count", func() []byte {
			b := exact(fOrdered)
			binary.LittleEndian.PutUint32(b[8:], math.MaxUint32)
			return b
		}(), ErrTooShort},
		{"width 6", append(exact(fOrdered, entry{lo, 1, 0}), 0), ErrCorrupt},
		{"zero count", exact(fOrdered, entry{lo, 0, -1}), ErrCorrupt},
		{"negative count", exact(fOrdered, entry{lo, -5, -1}), ErrCorrupt},
		{"java mode min", exact(fOrdered, entry{lo, 3, 1}), ErrParams},
		{"zero key", exact(fOrdered, entry{0, 1, -1}, entry{lo, 1, -1}), ErrCorrupt},
		{"unordered in ordered", exact(fOrdered, entry{hi, 1, -1}, entry{lo, 1, -1}), ErrCorrupt},
		{"duplicate in unordered", exact(flagCompact|flagReadOnly, entry{hi, 1, -1}, entry{lo, 1, -1}, entry{hi, 1, -1}), ErrCorrupt},
		{"theta zero", est(0), ErrCorrupt},
		{"key at theta", est(hi, entry{lo, 1, -1}, entry{hi, 1, -1}), ErrCorrupt},
		{"more than lg_k 4 keeps", func() []byte {
			es := make([]entry, 31)
			for i := range es {
				es[i] = entry{uint64(i + 1), 1, -1}
			}
			return exact(fOrdered, es...)
		}(), ErrParams},
	}
}

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
}

// TestDecodeJavaForms: Java writes tuple sketches unordered, without the
// ordered flag, with 5-byte summaries; its empty sketch is 8 bytes.
func TestDecodeJavaForms(t *testing.T) {
	h1, h2 := theta.HashInt(1), theta.HashInt(2)
	java := exact(flagCompact|flagReadOnly, entry{max(h1, h2), 4, 0}, entry{min(h1, h2), 1, 0})
	s, err := DecodeParams(java, DefaultParams())
	if err != nil {
		t.Fatalf("Decode(Java form) = %v", err)
	}
	want := mustNew(t, DefaultParams())
	for range 4 {
		want.AddHash(max(h1, h2), 1)
	}
	want.AddHash(min(h1, h2), 1)
	if !bytes.Equal(encode(t, s), encode(t, want)) {
		t.Errorf("Java form decoded as %x, want %x", encode(t, s), encode(t, want))
	}
	empty, err := DecodeParams(append(preamble(1, flagCompact|flagReadOnly|flagEmpty)[:6], 0, 0), DefaultParams())
	if err != nil || !empty.IsEmpty() {
		t.Errorf("Decode(Java empty) = %v, %v", empty, err)
	}
}

func TestDecodeAllocationBounded(t *testing.T) {
	for _, tt := range malformed() {
		if got := decodeAllocBytes(tt.in); got > allocBound(tt.in) {
			t.Errorf("%s: Decode allocated %d bytes for %d input bytes", tt.name, got, len(tt.in))
		}
	}
}

// allocBound: the table is at most four times the entries (half full at
// worst) of 12 bytes each, for entries of at least 12 input bytes.
func allocBound(in []byte) uint64 { return 8*uint64(len(in)) + 4096 }

func decodeAllocBytes(in []byte) uint64 {
	p := Params{LgK: theta.MaxLgK}
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

func FuzzDecode(f *testing.F) {
	for _, n := range []int{0, 1, 2, 40, 500} {
		s := mustNew(f, Params{LgK: 4})
		for i := range n {
			s.AddInt(int64(i % 37))
		}
		f.Add(encode(f, s))
		f.Add(s.AppendJava(nil))
	}
	for _, tt := range malformed() {
		f.Add(tt.in)
	}
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
		canon := encode(t, s)
		for _, form := range [][]byte{canon, s.AppendJava(nil)} {
			again, err := DecodeParams(form, s.Params())
			if err != nil || !bytes.Equal(encode(t, again), canon) {
				t.Fatalf("canonical form %x does not round-trip: %v", form, err)
			}
		}
		r, err := s.FrequencyReport(5, 2)
		if err != nil {
			t.Fatal(err)
		}
		users := 0.0
		for _, c := range r.Classes {
			users += c.Users.Estimate
			if !(c.Users.Lower <= c.Users.Estimate && c.Users.Estimate <= c.Users.Upper) {
				t.Fatalf("class %d users %+v not ordered", c.K, c.Users)
			}
		}
		if math.Abs(users-r.Reach.Estimate) > 1e-6*math.Max(1, users) {
			t.Fatalf("classes sum to %v users, reach %v", users, r.Reach.Estimate)
		}
		s.AddInt(int64(len(in)))
		s.Union(s.Clone())
		if _, err := DecodeParams(encode(t, s), s.Params()); err != nil {
			t.Fatalf("after an update and a union: %v", err)
		}
	})
}

// TestDecodeParamsOf: AppendStored keeps lg_k in byte 4, which Decode
// restores with every count; library bytes decode at lg_k 12 or the
// smallest that keeps them; Sniff claims tuple bytes only.
func TestDecodeParamsOf(t *testing.T) {
	for _, lgK := range []int{theta.MinLgK, 9, 12, 14} {
		for _, users := range []int{0, 1, 40, 30000} {
			s := mustNew(t, Params{LgK: lgK})
			for _, id := range impressions(uint64(users), users, 20) {
				s.AddInt(id)
			}
			stored := s.AppendStored(nil)
			d, err := Decode(stored)
			if err != nil {
				t.Fatalf("lg_k %d: Decode(stored) = %v", lgK, err)
			}
			if d.Params().LgK != lgK || !bytes.Equal(encode(t, d), encode(t, s)) {
				t.Errorf("lg_k %d users %d: stored bytes decoded as %v", lgK, users, d)
			}
			plain, err := Decode(encode(t, s))
			if err != nil {
				t.Fatal(err)
			}
			pl := plain.Params()
			if pl.LgK < theta.DefaultLgK || pl.MaxRetained() < s.Retained() || (pl.LgK > theta.DefaultLgK && (Params{LgK: pl.LgK - 1}).MaxRetained() >= s.Retained()) {
				t.Errorf("lg_k %d users %d: library bytes (%d entries) decoded at lg_k %d", lgK, users, s.Retained(), pl.LgK)
			}
			if !Sniff(stored) || !Sniff(s.AppendJava(nil)) {
				t.Errorf("lg_k %d users %d: Sniff refused a tuple sketch", lgK, users)
			}
		}
	}
	for _, b := range [][]byte{nil, {0x14, 0x8e, 0x7f}, {2, 3, 3, 0, 0, 0x1a, 0xcc, 0x93}, {2, 3, 9, 5, 0, 0x1a, 0xcc, 0x93}} {
		if Sniff(b) {
			t.Errorf("Sniff(%x) = true", b)
		}
	}
}
