package hll

import (
	"fmt"
	"math/bits"
)

// Fold returns a copy of s with log2m registers of regwidth bits, log2m at
// most s's. A hash's register index is its low log2m bits and its value 1 +
// the trailing zeros of the bits above, so folding p -> q keeps index
// j mod 2^q, and the p-q dropped index bits become the low bits of the
// value's input: if they hold a 1 the value is 1 + their trailing zeros,
// else the old value + (p-q). Values are then capped at 2^regwidth-1 and the
// maximum kept per target register. The result equals the sketch built at
// q from the same ids, except where a cap saturated (a value at the old cap
// only gives a lower bound) and for hashes whose bits above p are all zero
// (they set no register at p but would at q; probability 2^-(64-p)).
//
// EXPLICIT sketches keep their exact hashes (promoting if the new capacity
// is smaller); EMPTY and UNDEFINED stay so. Expthresh, the sparse setting
// and the SPARSE/FULL rule are kept. A log2m above s's, or parameters out of
// range, fail with ErrParams.
func (s *Sketch) Fold(log2m, regwidth int) (*Sketch, error) {
	p := s.p
	p.Log2m, p.Regwidth = log2m, regwidth
	if log2m > s.p.Log2m {
		return nil, fmt.Errorf("hll: cannot fold log2m=%d up to %d: %w", s.p.Log2m, log2m, ErrParams)
	}
	if err := (Params{Log2m: p.Log2m, Regwidth: p.Regwidth, Expthresh: AutoExpthresh}).Validate(); err != nil {
		return nil, err
	}
	out := newSketch(p, s.kind)
	out.maxSparse = s.maxSparse
	switch s.kind {
	case kindUndefined, kindEmpty:
		return out, nil
	case kindExplicit:
		hs := make([]uint64, len(s.explicit))
		for i, h := range s.explicit {
			hs[i] = uint64(h)
		}
		if out.p.ExplicitCapacity() > 0 {
			out.kind = kindExplicit
		} else {
			out.kind = kindSparse
		}
		out.AddHashes(hs, hs[:0])
		return out, nil
	}
	drop := uint(s.p.Log2m - log2m)
	mask := uint32(1)<<log2m - 1
	fold := func(i uint32, v uint8) (uint32, uint8) {
		if d := i >> log2m; d != 0 {
			v = uint8(bits.TrailingZeros32(d)) + 1
		} else {
			v += uint8(drop)
		}
		return i & mask, min(v, out.max)
	}
	if s.kind == kindSparse {
		out.pairs = make([]uint32, 0, len(s.pairs))
		for _, pr := range s.pairs {
			out.setRegister(fold(pr>>8, uint8(pr)))
		}
		return out, nil
	}
	out.kind = kindSparse
	out.densify()
	for i, v := range s.regs {
		if v != 0 {
			out.setDense(fold(uint32(i), v))
		}
	}
	return out, nil
}
