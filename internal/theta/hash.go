package theta

import (
	"unsafe"

	"github.com/sketchd/sketchd/internal/murmur"
)

// Seed is DataSketches' default update seed. Sketches hashed with another
// seed cannot be combined, and the format records a 16-bit hash of it.
const Seed = 9001

// MaxTheta is theta as a 64-bit integer when the sketch is exact: hashes
// are 63-bit, so every hash is below it. Java keeps hashes in signed longs.
const MaxTheta = 1<<63 - 1

// SeedHash is the 16-bit seed hash DataSketches writes in every sketch made
// with Seed: the low 16 bits of the first half of MurmurHash3_x64_128 of
// the seed's 8 little-endian bytes, with hash seed 0.
func SeedHash() uint16 {
	h1, _ := murmur.Int64(Seed, 0)
	return uint16(h1)
}

// HashInt returns the hash DataSketches' update(long) (Java), update(int64_t)
// (C++) and update(int) (Python) compute for v: the first half of
// MurmurHash3_x64_128 over v's 8 little-endian bytes with seed 9001,
// shifted right one bit so that it is a non-negative Java long.
func HashInt(v int64) uint64 {
	h1, _ := murmur.Int64(v, Seed)
	return h1 >> 1
}

// HashString returns the hash DataSketches' update(String) computes for a
// non-empty s: MurmurHash3_x64_128 of its UTF-8 bytes (Go strings are
// bytes; the caller checks they are UTF-8), seed 9001, first half shifted
// right one bit. The libraries ignore an empty string; see AddString.
func HashString(s string) uint64 {
	h1, _ := murmur.String(s, Seed)
	return h1 >> 1
}

// HashBytes is HashString over b, as update(byte[]) computes it.
func HashBytes(b []byte) uint64 {
	return HashString(unsafe.String(unsafe.SliceData(b), len(b)))
}
