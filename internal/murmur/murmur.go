// Package murmur computes MurmurHash3 x64_128 the way postgresql-hll's
// hll_hash_* functions do (seed zero-extended into both halves, key bytes
// hashed as given), with a specialised path for 8-byte keys.
//
// Byte-slice keys delegate to github.com/spaolacci/murmur3, which does not
// allocate when its input does not escape. An int64 hashed through that
// package needs a fresh 8-byte buffer per call (an allocation and about
// twice the time), so Int64 computes the same function directly: with no
// 16-byte block and an 8-byte tail, the algorithm reduces to one mix of the
// key and the finalisation. Tests and a fuzz target check Int64 against
// spaolacci/murmur3 over the little-endian bytes of the value.
package murmur

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/spaolacci/murmur3"
)

const (
	c1 = 0x87c37b91114253d5
	c2 = 0x4cf5ad432745937f
)

// Int64 returns MurmurHash3_x64_128 of the 8 little-endian bytes of v with
// the given seed: h1 is postgresql-hll's hll_hash_bigint(v, seed).
func Int64(v int64, seed uint32) (h1, h2 uint64) {
	h1, h2 = uint64(seed), uint64(seed)
	k1 := uint64(v) * c1
	k1 = bits.RotateLeft64(k1, 31) * c2
	h1 ^= k1
	h1 ^= 8
	h2 ^= 8
	h1 += h2
	h2 += h1
	h1 = fmix64(h1)
	h2 = fmix64(h2)
	h1 += h2
	h2 += h1
	return h1, h2
}

// Bytes returns MurmurHash3_x64_128 of b with the given seed: h1 is
// postgresql-hll's hll_hash_bytea(b, seed) and, for UTF-8 text,
// hll_hash_text.
func Bytes(b []byte, seed uint32) (h1, h2 uint64) {
	return murmur3.Sum128WithSeed(b, seed)
}

// String is Bytes over the bytes of s, without copying them.
func String(s string, seed uint32) (h1, h2 uint64) {
	return murmur3.Sum128WithSeed(unsafe.Slice(unsafe.StringData(s), len(s)), seed)
}

func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// Int64Hashes replaces each value of vs, an int64's bits, by its h1 of
// Int64 with seed 0 (postgresql-hll's hll_hash_bigint). Where the
// processor has AVX2, four values go through the multiplies at once in
// vector registers (int64HashesAVX2, BenchmarkInt64Hashes); the rest, and
// every value elsewhere, take the portable loop, which writes the hash out
// in its body (as a function it is too big for the compiler to inline,
// and a call per value spills the loop's state around it).
func Int64Hashes(vs []uint64) {
	int64HashesPortable(vs[int64HashesVector(vs):])
}

// Int64HashesBigEndian sets dst[i] to the hash Int64Hashes gives the
// big-endian int64 at src[8*i:] (an application/octet-stream id body),
// for every i of dst; src must hold at least 8*len(dst) bytes. With AVX2
// the bytes are swapped in the vector registers, so the values are read
// and the hashes written in one pass.
func Int64HashesBigEndian(dst []uint64, src []byte) {
	_ = src[:8*len(dst)]
	n := int64HashesBigEndianVector(dst, src)
	for i := n; i < len(dst); i++ {
		dst[i] = binary.BigEndian.Uint64(src[8*i:])
	}
	int64HashesPortable(dst[n:])
}

// int64HashesPortable is Int64Hashes without vector instructions.
func int64HashesPortable(vs []uint64) {
	for i, v := range vs {
		// Int64's h1 with the seed folded in: it enters the finaliser as
		// (k1^8)+8 and h2 as that plus 8.
		k1 := bits.RotateLeft64(v*c1, 31) * c2
		f1 := (k1 ^ 8) + 8
		f2 := f1 + 8
		f1 ^= f1 >> 33
		f2 ^= f2 >> 33
		f1 *= 0xff51afd7ed558ccd
		f2 *= 0xff51afd7ed558ccd
		f1 ^= f1 >> 33
		f2 ^= f2 >> 33
		f1 *= 0xc4ceb9fe1a85ec53
		f2 *= 0xc4ceb9fe1a85ec53
		f1 ^= f1 >> 33
		f2 ^= f2 >> 33
		vs[i] = f1 + f2
	}
}
