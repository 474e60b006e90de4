//go:build !purego

package murmur

import (
	"slices"
	"testing"
)

// TestAVX512Kernel checks that the eight-lane kernel takes the blocks of
// eight where the processor runs it, and the four-lane one the four after
// them, and says so where it does not run (TestInt64Hashes checks every
// kernel's values).
func TestAVX512Kernel(t *testing.T) {
	if widest() < avx512 {
		t.Skip("this processor does not run the AVX-512 kernel (AVX-512 F, DQ and BW): the AVX2 kernel and the portable loop were checked")
	}
	vs := make([]uint64, 15)
	for i := range vs {
		vs[i] = uint64(i) * 0x9e3779b97f4a7c15
	}
	withVector(avx512, func() {
		if n := int64HashesVector(slices.Clone(vs)); n != 12 {
			t.Errorf("the vector kernels took %d of 15 values, want 12 (8 in AVX-512, 4 in AVX2)", n)
		}
		got := slices.Clone(vs[:8])
		int64HashesAVX512(got)
		for i, v := range vs[:8] {
			if want, _ := reference(int64(v), 0); got[i] != want {
				t.Errorf("int64HashesAVX512: [%d] = %#x, want %#x", i, got[i], want)
			}
		}
	})
}
