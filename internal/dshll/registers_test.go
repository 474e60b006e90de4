package dshll

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestRegistersAsBuiltAtLgK: a sketch's registers at a smaller lg_k are
// those of an HLL-mode sketch of that lg_k built from the same ids, in
// every mode and target type.
func TestRegistersAsBuiltAtLgK(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 3))
	for _, typ := range []Type{HLL4, HLL6, HLL8} {
		for _, n := range []int{0, 5, 300, 50_000} {
			ids := make([]int64, n)
			for i := range ids {
				ids[i] = rng.Int64()
			}
			big, err := New(Params{LgK: 12, Type: typ})
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				if err := big.AddInt(id); err != nil {
					t.Fatal(err)
				}
			}
			// A sketch of 16 registers is in HLL mode past a few ids.
			small, err := New(Params{LgK: 4, Type: HLL8})
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				if err := small.AddInt(id); err != nil {
					t.Fatal(err)
				}
			}
			if n >= 300 && small.Mode() != "HLL" {
				t.Fatalf("%d ids at lg_k 4: mode %s", n, small.Mode())
			}
			want, err := small.Registers(4)
			if err != nil {
				t.Fatal(err)
			}
			got, err := big.Registers(4)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s, %d ids (%s): registers at lg_k 4 %v, built at 4 %v", typ, n, big.Mode(), got, want)
			}
			if n == 50_000 {
				// The whole register array matches HLL_8's at lg_k 12.
				own, err := big.Registers(12)
				if err != nil {
					t.Fatal(err)
				}
				h8, err := Union(Params{LgK: 12, Type: HLL8}, big)
				if err != nil {
					t.Fatal(err)
				}
				img, err := h8.AppendUpdatable(nil)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(own, img[hllStart:hllStart+1<<12]) {
					t.Errorf("%s: registers at lg_k 12 differ from the HLL_8 image's", typ)
				}
			}
		}
	}
	s, _ := New(DefaultParams())
	for _, lg := range []int{3, DefaultParams().LgK + 1} {
		if _, err := s.Registers(lg); err == nil {
			t.Errorf("Registers(%d): no error", lg)
		}
	}
}
