package airlift

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestRegistersAsBuiltAtP: a sketch's registers at fewer index bits are
// those of a dense sketch of that many built from the same hashes,
// whether the sketch is sparse or dense.
func TestRegistersAsBuiltAtP(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 2))
	for _, n := range []int{0, 100, 100_000} {
		hs := make([]uint64, n)
		for i := range hs {
			hs[i] = rng.Uint64()
		}
		big, err := New(Params{12})
		if err != nil {
			t.Fatal(err)
		}
		big.AddHashes(hs)
		if wantDense := n >= 100_000; big.Dense() != wantDense {
			t.Fatalf("%d hashes: dense %v", n, big.Dense())
		}
		for _, p := range []int{12, 8, 4} {
			small, err := New(Params{p})
			if err != nil {
				t.Fatal(err)
			}
			small.AddHashes(hs)
			small.toDense()
			got, err := big.Registers(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, small.regs) {
				t.Errorf("%d hashes: registers at %d differ from a sketch built at %d", n, p, p)
			}
		}
	}
	s, _ := New(Params{12})
	for _, p := range []int{3, 13} {
		if _, err := s.Registers(p); err == nil {
			t.Errorf("Registers(%d) of a 12-bit sketch: no error", p)
		}
	}
}
