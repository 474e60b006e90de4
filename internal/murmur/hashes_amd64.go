//go:build !purego

package murmur

import "github.com/sketchd/sketchd/internal/cpuid"

// hasAVX2 says whether the processor runs int64HashesAVX2; tests turn it
// off to run the portable path on the same machine.
var hasAVX2 = cpuid.AVX2()

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
