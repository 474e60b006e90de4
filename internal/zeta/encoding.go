package zeta

import "math/bits"

// rhoW is 1 + the number of leading zeros of the low n bits of v, or
// n + 1 when they are all zero.
func rhoW(v uint64, n int) uint8 {
	w := v << (64 - n)
	if w == 0 {
		return uint8(n + 1)
	}
	return uint8(bits.LeadingZeros64(w) + 1)
}

// rhoW32 is rhoW of a 32-bit value's low n bits.
func rhoW32(v uint32, n int) uint8 {
	if n == 0 {
		return 1
	}
	w := v << (32 - n)
	if w == 0 {
		return uint8(n + 1)
	}
	return uint8(bits.LeadingZeros32(w) + 1)
}

// enc is the sparse encoding at normal precision p and sparse precision
// sp. A sparse value is either the sparse index itself (sp bits), when
// its low sp-p bits are not all zero, or flag | normal index << 6 |
// rhoW' (the sparse rhoW, 6 bits), flag = 1 << max(sp, p+6).
type enc struct{ p, sp int }

func (e enc) flag() uint32 { return 1 << max(e.sp, e.p+6) }

// encodeHash is the sparse value of a hash.
func (e enc) encodeHash(h uint64) uint32 {
	return e.encode(uint32(h>>(64-e.sp)), rhoW(h, 64-e.sp))
}

func (e enc) encode(sparseIndex uint32, sparseRho uint8) uint32 {
	if sparseIndex&(1<<(e.sp-e.p)-1) != 0 {
		return sparseIndex
	}
	return e.flag() | (sparseIndex>>(e.sp-e.p))<<6 | uint32(sparseRho)
}

// sparseIndex and sparseRho decode a value (sparseRho is 0 when the
// value does not carry it).
func (e enc) sparseIndex(v uint32) uint32 {
	if v&e.flag() == 0 {
		return v
	}
	return ((v ^ e.flag()) >> 6) << (e.sp - e.p)
}

func (e enc) sparseRho(v uint32) uint8 {
	if v&e.flag() == 0 {
		return 0
	}
	return uint8(v & 63)
}

// normalIndex and normalRho decode a value at the normal precision.
func (e enc) normalIndex(v uint32) uint32 {
	if v&e.flag() == 0 {
		return v >> (e.sp - e.p)
	}
	return (v ^ e.flag()) >> 6
}

func (e enc) normalRho(v uint32) uint8 {
	if v&e.flag() == 0 {
		return rhoW32(v, e.sp-e.p)
	}
	return uint8(v&63) + uint8(e.sp-e.p)
}

// key identifies a value's sparse index: values with the same key are
// the same register, the larger one kept.
func (e enc) key(v uint32) uint32 {
	if v&e.flag() == 0 {
		return v
	}
	return v >> 6
}

// downgradeRho is the rhoW of an index's prefix of targetP bits, from
// its rhoW at sourceP bits (ZetaSketch's Encoding.downgradeRhoW).
func downgradeRho(index uint32, rho uint8, sourceP, targetP int) uint8 {
	if sourceP == targetP {
		return rho
	}
	suffix := index << (32 - sourceP + targetP)
	if suffix == 0 {
		return rho + uint8(sourceP-targetP)
	}
	return uint8(1 + bits.LeadingZeros32(suffix))
}

// downgrade re-encodes v for the target encoding (lower or equal
// precisions).
func (e enc) downgrade(v uint32, t enc) uint32 {
	idx := e.sparseIndex(v)
	rho := e.sparseRho(v)
	return t.encode(idx>>(e.sp-t.sp), downgradeRho(idx, rho, e.sp, t.sp))
}

// valid reports whether v is a value this encoding writes.
func (e enc) valid(v uint32) bool {
	f := e.flag()
	if v < f {
		return v < 1<<e.sp && v&(1<<(e.sp-e.p)-1) != 0
	}
	r := v ^ f
	rho := r & 63
	return r>>6 < 1<<e.p && rho >= 1 && int(rho) <= 65-e.sp
}
