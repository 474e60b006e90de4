package freq

import (
	"maps"
	"slices"
	"testing"

	"github.com/sketchd/sketchd/internal/theta"
)

// TestEntries checks that Entries gives each user's hash, ascending, with
// the impressions added for it, in a sketch built by adds, by a union, and
// by decoding the encoding.
func TestEntries(t *testing.T) {
	want := map[uint64]uint32{}
	a, _ := New(DefaultParams())
	b, _ := New(DefaultParams())
	for i := range 500 {
		id := int64(i % 173)
		if i%2 == 0 {
			a.AddInt(id)
		} else {
			b.AddInt(id)
		}
		want[theta.HashInt(id)]++
	}
	a.Union(b)
	enc, _ := a.MarshalBinary()
	dec, err := Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*Sketch{"union": a, "decoded": dec} {
		hs, counts := s.Entries()
		if len(hs) != len(counts) || !slices.IsSorted(hs) {
			t.Fatalf("%s: %d hashes and %d counts, sorted %v", name, len(hs), len(counts), slices.IsSorted(hs))
		}
		got := map[uint64]uint32{}
		for i, h := range hs {
			got[h] = counts[i]
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: entries differ from the impressions added (%d users, want %d)", name, len(got), len(want))
		}
	}
}
