package zeta

import (
	"encoding/binary"
	"math/bits"
)

// Fingerprint2011 is Geoff Pike's 64-bit fingerprint2011 of b, as Guava's
// Hashing.fingerprint2011() computes it (ZetaSketch's Hash.of), written
// from its description and checked against Guava by the Java tests.
func Fingerprint2011(b []byte) uint64 {
	n := len(b)
	var r uint64
	switch {
	case n <= 32:
		r = murmur64(b, k0^k1^k2)
	case n <= 64:
		r = hash33to64(b)
	default:
		r = fullFingerprint(b)
	}
	u, v := uint64(k0), uint64(k0)
	if n >= 8 {
		u = le64(b)
	}
	if n >= 9 {
		v = le64(b[n-8:])
	}
	r = hash128to64(r+v, u)
	if r == 0 || r == 1 {
		r += ^uint64(1)
	}
	return r
}

// HashInt is the hash of an INT64 id: the fingerprint of its eight
// little-endian bytes (Guava's hashLong; ZetaSketch's add(long)).
func HashInt(v int64) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	return Fingerprint2011(b[:])
}

// HashString is the hash of a STRING id: the fingerprint of its UTF-8
// bytes (ZetaSketch's add(String)).
func HashString(s string) uint64 { return Fingerprint2011([]byte(s)) }

// Primes between 2^63 and 2^64, the algorithm's constants.
const (
	k0 = 0xa5b85c5e198ed849
	k1 = 0x8d58ac26afe12e47
	k2 = 0xc47b6e9e3a970ed3
	k3 = 0xc6a4a7935bd1e995
)

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

func shiftMix(v uint64) uint64 { return v ^ v>>47 }

func rotr(v uint64, k int) uint64 { return bits.RotateLeft64(v, -k) }

func hash128to64(high, low uint64) uint64 {
	a := (low ^ high) * k3
	a ^= a >> 47
	b := (high ^ a) * k3
	b ^= b >> 47
	return b * k3
}

// murmur64 is MurmurHash64A with the given seed (lengths up to 32).
func murmur64(b []byte, seed uint64) uint64 {
	n := len(b)
	h := seed ^ uint64(n)*k3
	aligned := n &^ 7
	for i := 0; i < aligned; i += 8 {
		h ^= shiftMix(le64(b[i:])*k3) * k3
		h *= k3
	}
	if rest := n & 7; rest != 0 {
		var d uint64
		for i := rest - 1; i >= 0; i-- {
			d = d<<8 | uint64(b[aligned+i])
		}
		h ^= d
		h *= k3
	}
	h = shiftMix(h) * k3
	return shiftMix(h)
}

func hash33to64(b []byte) uint64 {
	n := len(b)
	z := le64(b[24:])
	a := le64(b) + (uint64(n)+le64(b[n-16:]))*k0
	c := rotr(a, 37)
	bb := rotr(a+z, 52)
	a += le64(b[8:])
	c += rotr(a, 7)
	a += le64(b[16:])
	vf := a + z
	vs := bb + rotr(a, 31) + c
	a = le64(b[16:]) + le64(b[n-32:])
	z = le64(b[n-8:])
	bb = rotr(a+z, 52)
	c = rotr(a, 37)
	a += le64(b[n-24:])
	c += rotr(a, 7)
	a += le64(b[n-16:])
	wf := a + z
	ws := bb + rotr(a, 31) + c
	r := shiftMix((vf+ws)*k2 + (wf+vs)*k0)
	return shiftMix(r*k0+vs) * k2
}

// weak32 is the weak hash of the 32 bytes at b with two seeds.
func weak32(b []byte, a, s uint64) (uint64, uint64) {
	p1, p2, p3, p4 := le64(b), le64(b[8:]), le64(b[16:]), le64(b[24:])
	a += p1
	s = rotr(s+a+p4, 51)
	c := a
	a += p2
	a += p3
	s += rotr(a, 23)
	return a + p4, s + c
}

func fullFingerprint(b []byte) uint64 {
	n := len(b)
	x := le64(b)
	y := le64(b[n-16:]) ^ k1
	z := le64(b[n-56:]) ^ k0
	v0, v1 := weak32(b[n-64:], uint64(n), y)
	w0, w1 := weak32(b[n-32:], uint64(n)*k1, k0)
	z += shiftMix(v1) * k1
	x = rotr(z+x, 39) * k1
	y = rotr(y, 33) * k1
	for off, left := 0, (n-1)&^63; left != 0; off, left = off+64, left-64 {
		x = rotr(x+y+v0+le64(b[off+16:]), 37) * k1
		y = rotr(y+v1+le64(b[off+48:]), 42) * k1
		x ^= w1
		y ^= v0
		z = rotr(z^w0, 33)
		v0, v1 = weak32(b[off:], v1*k1, x+w0)
		w0, w1 = weak32(b[off+32:], z+w1, y)
		z, x = x, z
	}
	return hash128to64(hash128to64(v0, w0)+shiftMix(y)*k1+z, hash128to64(v1, w1)+x)
}
