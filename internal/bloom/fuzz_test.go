package bloom

import (
	"errors"
	"testing"
)

// FuzzDecode checks that no input panics, every error wraps a sentinel and
// leaves the receiver unchanged, a decoded filter encodes back to the same
// bytes, and memory stays within the input's length.
func FuzzDecode(f *testing.F) {
	for _, c := range malformed() {
		f.Add(c.b)
	}
	for _, p := range []Params{{Bits: 64, Hashes: 1}, {Bits: 1024, Hashes: 5, ExpectedItems: 100, FPP: 0.05}} {
		g, _ := New(p)
		f.Add(g.AppendBinary(nil))
		g.Add(1)
		g.Add(1 << 63)
		f.Add(g.AppendBinary(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrTooShort) && !errors.Is(err, ErrVersion) && !errors.Is(err, ErrParams) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode error wraps no sentinel: %v", err)
			}
			var g Filter
			if g.UnmarshalBinary(b) == nil || g.words != nil {
				t.Fatal("a failed UnmarshalBinary changed its receiver")
			}
			return
		}
		if len(b) != d.SizeBytes() {
			t.Fatalf("decoded %d bytes into a filter of %d", len(b), d.SizeBytes())
		}
		if string(d.AppendBinary(nil)) != string(b) {
			t.Fatal("decode then encode differs")
		}
		// Every position of a found item is set: adding it is not new.
		for h := range uint64(64) {
			if d.Contains(h*0x9E3779B97F4A7C15) && d.Clone().Add(h*0x9E3779B97F4A7C15) {
				t.Fatal("an item found is reported new")
			}
		}
	})
}
