package zeta

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestRegistersAsBuiltAtP: a sketch's registers at a lower precision are
// those of a normal sketch of that precision built from the same hashes,
// whether the sketch is sparse or normal.
func TestRegistersAsBuiltAtP(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 1))
	for _, n := range []int{0, 100, 100_000} {
		hs := make([]uint64, n)
		for i := range hs {
			hs[i] = rng.Uint64()
		}
		big, err := New(ParamsFor(14))
		if err != nil {
			t.Fatal(err)
		}
		big.AddHashes(hs)
		if wantNormal := n >= 100_000; big.Normal() != wantNormal {
			t.Fatalf("%d hashes: normal %v", n, big.Normal())
		}
		for _, p := range []int{14, 12, 10} {
			small, err := New(Params{p, 0})
			if err != nil {
				t.Fatal(err)
			}
			small.AddHashes(hs)
			want := small.data
			if want == nil {
				want = make([]byte, 1<<p)
			}
			got, err := big.Registers(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%d hashes: registers at %d differ from a sketch built at %d", n, p, p)
			}
		}
	}
	s, _ := New(ParamsFor(12))
	for _, p := range []int{0, 13} {
		if _, err := s.Registers(p); err == nil {
			t.Errorf("Registers(%d) of a precision 12 sketch: no error", p)
		}
	}
}
