package murmur

// vector is the widest kernel the processor runs; tests lower it to run
// the narrower ones and the portable loop on the same machine.
var vector = widest()

// kernel is a way to hash a block of integer ids: the portable loop, or
// a vector kernel of a width (hashes_amd64.s).
type kernel int

const (
	portable kernel = iota
	avx2            // four lanes a step (AVX2)
	avx512          // eight lanes a step (AVX-512 F, DQ and BW)
)

func (k kernel) String() string {
	switch k {
	case avx2:
		return "AVX2"
	case avx512:
		return "AVX-512"
	}
	return "portable"
}
