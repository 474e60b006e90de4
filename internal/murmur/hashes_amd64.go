//go:build !purego

package murmur

import (
	"unsafe"

	"github.com/sketchd/sketchd/internal/cpuid"
)

// widest is the widest kernel the processor runs.
func widest() kernel {
	switch {
	case cpuid.AVX512():
		return avx512
	case cpuid.AVX2():
		return avx2
	}
	return portable
}

// int64HashesAVX2 is the portable loop of Int64Hashes four lanes at a
// time in AVX2 registers; len(vs) must be a multiple of 4.
//
//go:noescape
func int64HashesAVX2(vs []uint64)

// int64HashesAVX512 is int64HashesAVX2 eight lanes at a time in AVX-512
// registers, a multiplication one VPMULLQ (AVX2 builds each of three
// 32-bit ones); len(vs) must be a multiple of 8.
//
//go:noescape
func int64HashesAVX512(vs []uint64)

// int64HashesVector hashes the longest prefix of vs the vector kernels
// take, in place, and returns its length (0 without AVX2): eight values a
// step with AVX-512, then four with AVX2.
func int64HashesVector(vs []uint64) int {
	n := 0
	if vector >= avx512 {
		n = len(vs) &^ 7
		int64HashesAVX512(vs[:n])
	}
	if vector >= avx2 {
		m := n + (len(vs)-n)&^3
		int64HashesAVX2(vs[n:m])
		n = m
	}
	return n
}

// int64HashesBigEndianAVX2 is int64HashesAVX2 reading the values as
// big-endian int64s from src (at least 8*len(dst) bytes) into dst;
// len(dst) must be a multiple of 4.
//
//go:noescape
func int64HashesBigEndianAVX2(dst []uint64, src []byte)

// int64HashesBigEndianAVX512 is int64HashesBigEndianAVX2 eight lanes at a
// time; len(dst) must be a multiple of 8.
//
//go:noescape
func int64HashesBigEndianAVX512(dst []uint64, src []byte)

// int64HashesBigEndianVector hashes the longest prefix of dst the vector
// kernels take from src and returns its length (0 without AVX2).
func int64HashesBigEndianVector(dst []uint64, src []byte) int {
	n := 0
	if vector >= avx512 {
		n = len(dst) &^ 7
		int64HashesBigEndianAVX512(dst[:n], src[:8*n])
	}
	if vector >= avx2 {
		m := n + (len(dst)-n)&^3
		int64HashesBigEndianAVX2(dst[n:m], src[8*n:8*m])
		n = m
	}
	return n
}

// spanHashesAVX512 is SpanHashes eight keys a step (each at most 63
// bytes, at least 8 bytes into b); len(vs) must be a multiple of 8.
//
//go:noescape
func spanHashesAVX512(vs []uint64, b *byte)

// spanHashesVector hashes the longest prefix of vs the vector kernel
// takes, in place, and returns its length (0 without AVX-512, or where
// a key is longer than 63 bytes or starts before b's eighth byte).
func spanHashesVector(vs []uint64, b []byte) int {
	if vector < avx512 || len(b) == 0 {
		return 0
	}
	n := len(vs) &^ 7
	for k, span := range vs[:n] {
		start, size := span>>32, span&0xffffffff
		if size > maxSpanKey || start < 8 || start+size > uint64(len(b)) {
			n = k &^ 7
			break
		}
	}
	if n > 0 {
		spanHashesAVX512(vs[:n], unsafe.SliceData(b))
	}
	return n
}
