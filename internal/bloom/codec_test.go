package bloom

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestEncodingLayout builds the bytes of a small filter by hand from
// doc.go's table and compares: a 64-bit filter with one hash puts an item
// hashed to h at position ⌊h·64/2^64⌋, the top six bits of h.
func TestEncodingLayout(t *testing.T) {
	f, err := New(Params{Bits: 128, Hashes: 1})
	if err != nil {
		t.Fatal(err)
	}
	f.Add(0)                            // position 0
	f.Add(0xFE00000000000000)           // ⌊0xFE.. · 128 / 2^64⌋ = 127
	f.Add(0x1200000000000000)           // position 9
	want := "b1" + "00" + "01" + "00" + // version, flags, hashes, reserved
		"0000000000000080" + // 128 bits
		"0000000000000000" + "0000000000000000" + // not stated
		"0000000000000003" + // 3 bits set
		"0102000000000000" + "0000000000000080" // positions 0 and 9; 127
	if got := hex.EncodeToString(f.AppendBinary(nil)); got != want {
		t.Errorf("encoding\n got %s\nwant %s", got, want)
	}
	p, _ := ParamsFor(1000, 0.01)
	g, _ := New(p)
	b := g.AppendBinary(nil)
	if got, want := binary.BigEndian.Uint64(b[12:]), uint64(1000); got != want {
		t.Errorf("expected items field %d, want %d", got, want)
	}
	if got := math.Float64frombits(binary.BigEndian.Uint64(b[20:])); got != 0.01 {
		t.Errorf("rate field %v, want 0.01", got)
	}
	if len(b) != 36+p.Bits/8 || g.SizeBytes() != len(b) {
		t.Errorf("%d bytes (SizeBytes %d) for %d bits", len(b), g.SizeBytes(), p.Bits)
	}
}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 100, 5000} {
		p, _ := ParamsFor(2000, 0.02)
		f, _ := New(p)
		for range n {
			f.Add(r.Uint64())
		}
		b := f.AppendBinary(nil)
		d, err := Decode(b)
		if err != nil {
			t.Fatalf("%d items: %v", n, err)
		}
		if string(d.AppendBinary(nil)) != string(b) || d.Params() != p || d.BitsSet() != f.BitsSet() {
			t.Errorf("%d items: round trip differs", n)
		}
		var u Filter
		if err := u.UnmarshalBinary(b); err != nil || u.BitsSet() != f.BitsSet() {
			t.Errorf("%d items: UnmarshalBinary: %v", n, err)
		}
	}
}

// malformed lists encodings each breaking one rule of doc.go, with the
// sentinel the violation gives.
func malformed() []struct {
	name string
	b    []byte
	want error
} {
	good := func() []byte {
		p, _ := ParamsFor(100, 0.01)
		f, _ := New(p)
		f.Add(42)
		f.Add(43)
		return f.AppendBinary(nil)
	}
	set := func(off int, v byte) []byte { b := good(); b[off] = v; return b }
	put := func(off int, v uint64) []byte { b := good(); binary.BigEndian.PutUint64(b[off:], v); return b }
	return []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrTooShort},
		{"header cut", good()[:35], ErrTooShort},
		{"array cut", good()[:len(good())-1], ErrTooShort},
		{"trailing byte", append(good(), 0), ErrCorrupt},
		{"version 2", set(0, 0xB2), ErrVersion},
		{"not a filter", set(0, 0x11), ErrVersion},
		{"flags", set(1, 1), ErrCorrupt},
		{"reserved", set(3, 1), ErrCorrupt},
		{"no hashes", set(2, 0), ErrParams},
		{"33 hashes", set(2, 33), ErrParams},
		{"bits not a multiple of 64", put(4, 1000), ErrParams},
		{"bits over the limit", put(4, MaxBits+64), ErrParams},
		{"bits huge", put(4, 1<<62), ErrParams},
		{"bits zero", put(4, 0), ErrParams},
		{"items without rate", put(20, 0), ErrCorrupt},
		{"rate without items", put(12, 0), ErrCorrupt},
		{"items above int64", put(12, 1<<63), ErrCorrupt},
		{"rate NaN", put(20, math.Float64bits(math.NaN())), ErrParams},
		{"rate above 0.5", put(20, math.Float64bits(0.75)), ErrParams},
		{"bits set wrong", put(28, 3), ErrCorrupt},
		{"bit flipped", func() []byte { b := good(); b[40] ^= 0x10; return b }(), ErrCorrupt},
	}
}

func TestDecodeMalformed(t *testing.T) {
	for _, c := range malformed() {
		_, err := Decode(c.b)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: Decode = %v, want %v", c.name, err, c.want)
		}
		f, _ := New(Params{Bits: 64, Hashes: 2})
		f.Add(7)
		before := f.AppendBinary(nil)
		if err := f.UnmarshalBinary(c.b); err == nil || string(f.AppendBinary(nil)) != string(before) {
			t.Errorf("%s: UnmarshalBinary = %v and changed the receiver", c.name, err)
		}
	}
}

// TestDecodeAllocation checks that a header claiming the largest filter
// over a short input allocates nothing of that size.
func TestDecodeAllocation(t *testing.T) {
	b := make([]byte, 36)
	b[0], b[2] = 0xB1, 3
	binary.BigEndian.PutUint64(b[4:], MaxBits)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 100 {
		if _, err := Decode(b); !errors.Is(err, ErrTooShort) {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 100*1024 {
		t.Errorf("100 decodes of a 36-byte header claiming %d bits allocated %d bytes", MaxBits, got)
	}
}
