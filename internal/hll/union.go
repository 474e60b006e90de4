package hll

import (
	"encoding/binary"
	"fmt"
)

// Union replaces s with the union of s and o, keeping s's parameters: the
// result is the sketch s would be had o's ids been added to it directly.
// If o has more registers or another regwidth it is folded to s's log2m
// and regwidth first (values capped if s's are narrower); if o has fewer
// registers
// the union would lose s's precision, so it fails with ErrIncompatible
// and s is unchanged (use the Union function, which folds to the smallest).
//
// With equal parameters the result equals postgresql-hll's hll_union:
// UNDEFINED on either side gives UNDEFINED, EMPTY is the identity,
// EXPLICIT elements are added one by one (promoting when needed) and
// registers take the maximum.
func (s *Sketch) Union(o *Sketch) error {
	if o.p.Log2m < s.p.Log2m {
		return fmt.Errorf("hll: union of log2m=%d into log2m=%d would drop registers: %w", o.p.Log2m, s.p.Log2m, ErrIncompatible)
	}
	if o.p.Log2m != s.p.Log2m || o.p.Regwidth != s.p.Regwidth {
		f, err := o.Fold(s.p.Log2m, s.p.Regwidth)
		if err != nil {
			return err
		}
		o = f
	}
	s.union(o)
	return nil
}

// union merges o, which has s's log2m and regwidth, into s.
func (s *Sketch) union(o *Sketch) {
	switch {
	case s.kind == kindUndefined:
		return
	case o.kind == kindUndefined:
		s.reset(kindUndefined)
		return
	case o.kind == kindEmpty:
		return
	case o.kind == kindExplicit:
		// Into EMPTY, EXPLICIT or registers alike: add the elements.
		if s.kind == kindEmpty {
			s.kind = kindExplicit
			if s.p.ExplicitCapacity() == 0 {
				s.kind = kindSparse
			}
		}
		hs := make([]uint64, len(o.explicit))
		for i, h := range o.explicit {
			hs[i] = uint64(h)
		}
		s.AddHashes(hs, hs[:0])
		return
	}
	// o holds registers. An EXPLICIT or EMPTY s becomes a copy of them
	// with its own elements added.
	if s.kind == kindEmpty || s.kind == kindExplicit {
		elems := s.explicit
		s.explicit = nil
		s.copyRegisters(o)
		for _, h := range elems {
			s.addRegister(uint64(h))
		}
		return
	}
	if o.kind == kindSparse && s.kind == kindSparse && len(s.pairs)+len(o.pairs) < s.p.NumRegisters()/4 {
		s.pairs = mergePairs(s.pairs, o.pairs)
		return
	}
	s.densify()
	if o.kind == kindSparse {
		for _, p := range o.pairs {
			s.setDense(p>>8, uint8(p))
		}
		return
	}
	mergeInto(s.hist, s.regs, o.regs)
}

func (s *Sketch) reset(k kind) {
	s.kind = k
	s.explicit, s.pairs, s.regs, s.hist = nil, nil, nil, nil
}

// copyRegisters makes s a register sketch equal to o's registers.
func (s *Sketch) copyRegisters(o *Sketch) {
	s.reset(o.kind)
	if o.kind == kindSparse {
		s.pairs = append([]uint32(nil), o.pairs...)
		return
	}
	s.regs = append([]uint8(nil), o.regs...)
	h := *o.hist
	s.hist = &h
}

// mergePairs returns the per-index maximum of two sorted pair lists.
func mergePairs(a, b []uint32) []uint32 {
	out := make([]uint32, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch ai, bj := a[i]>>8, b[j]>>8; {
		case ai < bj:
			out = append(out, a[i])
			i++
		case ai > bj:
			out = append(out, b[j])
			j++
		default:
			out = append(out, max(a[i], b[j])) // same index: the larger value wins
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// maxBytes sets dst[i] = max(dst[i], src[i]), eight registers a word and
// four words an iteration. Register values are below 128, so per byte
// (a|0x80)-b never borrows across bytes and its top bit says a >= b.
func maxBytes(dst, src []uint8) {
	n := len(dst) &^ 31
	src = src[:len(dst)]
	for i := 0; i < n; i += 32 {
		d, s := dst[i:i+32:i+32], src[i:i+32:i+32]
		a0, b0 := binary.LittleEndian.Uint64(d[0:]), binary.LittleEndian.Uint64(s[0:])
		a1, b1 := binary.LittleEndian.Uint64(d[8:]), binary.LittleEndian.Uint64(s[8:])
		a2, b2 := binary.LittleEndian.Uint64(d[16:]), binary.LittleEndian.Uint64(s[16:])
		a3, b3 := binary.LittleEndian.Uint64(d[24:]), binary.LittleEndian.Uint64(s[24:])
		binary.LittleEndian.PutUint64(d[0:], maxWord(a0, b0))
		binary.LittleEndian.PutUint64(d[8:], maxWord(a1, b1))
		binary.LittleEndian.PutUint64(d[16:], maxWord(a2, b2))
		binary.LittleEndian.PutUint64(d[24:], maxWord(a3, b3))
	}
	for i := n; i < len(dst); i++ {
		dst[i] = max(dst[i], src[i])
	}
}

// maxWord is the bytewise maximum of two words of register values (< 128).
func maxWord(a, b uint64) uint64 {
	const hi = 0x8080808080808080
	ge := ((a | hi) - b) & hi // top bit of each byte: a >= b
	mask := ge - ge>>7        // 0x7f where a >= b...
	mask |= ge                // ...0xff with the top bit
	return a&mask | b&^mask
}

// Union returns a new sketch holding the union of sketches, which may
// differ in parameters: the result has the smallest log2m (larger ones are
// folded down), the widest regwidth (narrower ones widen, losing nothing),
// and the first sketch's expthresh, sparse setting and SPARSE/FULL rule.
// With no sketches it fails with ErrParams.
func Union(sketches ...*Sketch) (*Sketch, error) {
	if len(sketches) == 0 {
		return nil, fmt.Errorf("hll: union of no sketches: %w", ErrParams)
	}
	p := sketches[0].p
	for _, s := range sketches[1:] {
		p.Log2m = min(p.Log2m, s.p.Log2m)
		p.Regwidth = max(p.Regwidth, s.p.Regwidth)
	}
	out := newSketch(p, kindEmpty)
	out.maxSparse = sketches[0].maxSparse
	dense := make([]*Sketch, 0, len(sketches))
	for _, s := range sketches {
		if s.p.Log2m != p.Log2m || s.p.Regwidth != p.Regwidth {
			f, err := s.Fold(p.Log2m, p.Regwidth)
			if err != nil {
				return nil, err
			}
			s = f
		}
		if s.kind == kindDense {
			dense = append(dense, s) // merged below with one histogram pass
			continue
		}
		out.union(s)
	}
	if len(dense) == 0 {
		return out, nil
	}
	var first *Sketch
	if len(dense) == 1 {
		first = dense[0].Clone()
	} else {
		// Any between the first and the last are merged into new
		// registers uncounted; the last is merged as the result is
		// counted, in one pass.
		first = newSketch(p, kindDense)
		first.regs = make([]uint8, len(dense[0].regs))
		first.hist = new([128]int)
		a, last := dense[0].regs, len(dense)-1
		if last > 1 {
			copy(first.regs, a)
			for _, d := range dense[1:last] {
				maxBytes(first.regs, d.regs)
			}
			a = first.regs
		}
		maxCount(first.hist, first.regs, a, dense[last].regs)
	}
	first.p, first.maxSparse = out.p, out.maxSparse
	first.union(out)
	return first, nil
}
