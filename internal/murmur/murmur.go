// Package murmur computes MurmurHash3 x64_128 the way postgresql-hll's
// hll_hash_* functions do (seed zero-extended into both halves, key bytes
// hashed as given), with a specialised path for 8-byte keys.
//
// Every key is hashed by the algorithm written out here, with no state
// between calls: Int64, with no 16-byte block and an 8-byte tail, reduces
// to one mix of the key and the finalisation. Tests and fuzz targets check
// Int64 and Bytes against github.com/spaolacci/murmur3, a general-purpose
// implementation, on every key length and seed, and the PostgreSQL tests
// compare whole sketches with postgresql-hll's.
package murmur

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
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
	return finish(h1, h2, 8)
}

// Bytes returns MurmurHash3_x64_128 of b with the given seed: h1 is
// postgresql-hll's hll_hash_bytea(b, seed) and, for UTF-8 text,
// hll_hash_text.
//
// It is the algorithm written out for one call: 16-byte blocks, then the
// tail read as two little-endian words, then the finaliser, with no
// streaming state, no call per block and no copy of the tail (a
// general-purpose digest spends more on those than on the multiplies for
// keys the size of a UUID).
func Bytes(b []byte, seed uint32) (h1, h2 uint64) {
	h1, h2 = uint64(seed), uint64(seed)
	n := len(b)
	p := b
	for len(p) >= 16 {
		k1 := binary.LittleEndian.Uint64(p)
		k2 := binary.LittleEndian.Uint64(p[8:])
		p = p[16:]
		h1 ^= bits.RotateLeft64(k1*c1, 31) * c2
		h1 = bits.RotateLeft64(h1, 27) + h2
		h1 = h1*5 + 0x52dce729
		h2 ^= bits.RotateLeft64(k2*c2, 33) * c1
		h2 = bits.RotateLeft64(h2, 31) + h1
		h2 = h2*5 + 0x38495ab5
	}
	if r := len(p); r > 0 {
		// The tail's r bytes as two little-endian words, read with loads
		// inside the key: the last eight bytes shifted down where the key
		// has eight, overlapping 4-byte loads or three bytes where not.
		var k1, k2 uint64
		switch {
		case r > 8:
			k1 = binary.LittleEndian.Uint64(p)
			k2 = binary.LittleEndian.Uint64(b[n-8:]) >> (uint(16-r) * 8)
		case n >= 8:
			k1 = binary.LittleEndian.Uint64(b[n-8:]) >> (uint(8-r) * 8)
		case r >= 4:
			k1 = uint64(binary.LittleEndian.Uint32(p)) | uint64(binary.LittleEndian.Uint32(p[r-4:]))<<(uint(r-4)*8)
		default:
			k1 = uint64(p[0]) | uint64(p[r/2])<<(uint(r/2)*8) | uint64(p[r-1])<<(uint(r-1)*8)
		}
		if r > 8 {
			h2 ^= bits.RotateLeft64(k2*c2, 33) * c1
		}
		h1 ^= bits.RotateLeft64(k1*c1, 31) * c2
	}
	return finish(h1, h2, uint64(n))
}

// finish is MurmurHash3_x64_128's finalisation of the state h1, h2 after a
// key of n bytes.
func finish(h1, h2, n uint64) (uint64, uint64) {
	h1 ^= n
	h2 ^= n
	h1 += h2
	h2 += h1
	h1 = fmix64(h1)
	h2 = fmix64(h2)
	h1 += h2
	h2 += h1
	return h1, h2
}

// String is Bytes over the bytes of s, without copying them.
func String(s string, seed uint32) (h1, h2 uint64) {
	return Bytes(unsafe.Slice(unsafe.StringData(s), len(s)), seed)
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

// maxSpanKey is the longest key the vector kernel of SpanHashes takes:
// three blocks and a tail.
const maxSpanKey = 63

// SpanHashes replaces each span of vs, a key's place in b (its start
// << 32 | its length), by its h1 of Bytes with seed 0 (postgresql-hll's
// hll_hash_text for UTF-8 text). Where the processor has AVX-512, eight
// keys of up to 63 bytes go through the blocks, the tail and the
// finaliser at once in vector registers; the rest take Bytes.
func SpanHashes(vs []uint64, b []byte) {
	n := spanHashesVector(vs, b)
	for k := n; k < len(vs); k++ {
		start := int(vs[k] >> 32)
		vs[k], _ = Bytes(b[start:start+int(uint32(vs[k]))], 0)
	}
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
