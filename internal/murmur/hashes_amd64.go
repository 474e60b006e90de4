//go:build !purego

package murmur

import "golang.org/x/sys/cpu"

// hasAVX2 says whether the processor runs int64HashesAVX2; tests turn it
// off to run the portable path on the same machine.
var hasAVX2 = cpu.X86.HasAVX2

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
