package hll

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMaxBytes checks the word-at-a-time maximum against the definition,
// for every length from 0 to 100 (chunks and tails) and every value a
// register can hold (0..127).
func TestMaxBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for n := range 101 {
		for range 20 {
			dst, src := make([]uint8, n), make([]uint8, n)
			for i := range n {
				dst[i], src[i] = uint8(r.IntN(128)), uint8(r.IntN(128))
			}
			want := make([]uint8, n)
			for i := range n {
				want[i] = max(dst[i], src[i])
			}
			maxBytes(dst, src)
			if string(dst) != string(want) {
				t.Fatalf("len %d: maxBytes = %v, want %v", n, dst, want)
			}
		}
	}
}

func BenchmarkMaxBytes(b *testing.B) {
	dst := make([]uint8, 16384)
	src := make([]uint8, 16384)
	for i := range src {
		src[i] = uint8(i*7) % 31
		dst[i] = uint8(i*13) % 29
	}
	b.SetBytes(16384)
	for b.Loop() {
		maxBytes(dst, src)
	}
}

// TestPow2Neg: the estimate's 2^-v is math.Ldexp's, bit for bit, for
// every exponent it can be given and counts up to 2^53.
func TestPow2Neg(t *testing.T) {
	for v := range 1023 {
		for _, n := range []float64{1, 3, 12345, 1 << 20, 1<<53 - 1} {
			if got, want := n*pow2neg(v), math.Ldexp(n, -v); got != want {
				t.Fatalf("%g * pow2neg(%d) = %g, want %g", n, v, got, want)
			}
		}
	}
}
