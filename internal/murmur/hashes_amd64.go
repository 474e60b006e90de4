//go:build !purego

package murmur

// hasAVX2 says whether the processor runs int64HashesAVX2; tests turn it
// off to run the portable path on the same machine.
var hasAVX2 = detectAVX2()

// detectAVX2 asks the processor (CPUID) whether it has AVX2 and the
// operating system (XGETBV) whether it saves the YMM registers. The
// package reads the processor itself: it depends on the standard library
// and murmur3 only.
func detectAVX2() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const osxsave, avx = 1 << 27, 1 << 28
	if ecx1&osxsave == 0 || ecx1&avx == 0 {
		return false
	}
	const xmmYmm = 1<<1 | 1<<2
	if xgetbv0()&xmmYmm != xmmYmm {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0
}

// cpuid runs CPUID with EAX=leaf, ECX=sub.
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// xgetbv0 returns the low half of XCR0 (XGETBV with ECX=0); call it only
// where CPUID says OSXSAVE.
func xgetbv0() uint32

// int64HashesAVX2 is the portable loop of Int64Hashes four lanes at a
// time in AVX2 registers; len(vs) must be a multiple of 4.
//
//go:noescape
func int64HashesAVX2(vs []uint64)

// int64HashesVector hashes the longest prefix of vs the vector kernel
// takes, in place, and returns its length (0 without AVX2).
func int64HashesVector(vs []uint64) int {
	if !hasAVX2 {
		return 0
	}
	n := len(vs) &^ 3
	int64HashesAVX2(vs[:n])
	return n
}

// int64HashesBigEndianAVX2 is int64HashesAVX2 reading the values as
// big-endian int64s from src (at least 8*len(dst) bytes) into dst;
// len(dst) must be a multiple of 4.
//
//go:noescape
func int64HashesBigEndianAVX2(dst []uint64, src []byte)

// int64HashesBigEndianVector hashes the longest prefix of dst the vector
// kernel takes from src and returns its length (0 without AVX2).
func int64HashesBigEndianVector(dst []uint64, src []byte) int {
	if !hasAVX2 {
		return 0
	}
	n := len(dst) &^ 3
	int64HashesBigEndianAVX2(dst[:n], src[:8*n])
	return n
}
