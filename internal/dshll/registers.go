package dshll

import (
	"encoding/binary"
	"fmt"

	dshll "github.com/apache/datasketches-go/hll"
)

// Registers returns the sketch's registers as a sketch of 2^lgK registers
// of the same ids would hold them, lgK from 4 to the sketch's own lg_k:
// register j is the largest value (a hash's high word's leading zeros
// plus one, 1 to 63; 0 when nothing landed there) of the ids whose hash
// has low bits j. In LIST and SET mode each coupon (its hash's low 26
// bits and its value) is placed at its low lgK bits; in HLL mode the
// registers whose index is j modulo 2^lgK are folded into j (as
// downsample does). An lgK out of range is ErrParams; an image the
// library cannot give is ErrCorrupt.
func (s *Sketch) Registers(lgK int) ([]uint8, error) {
	if lgK < MinLgK || lgK > s.p.LgK {
		return nil, fmt.Errorf("dshll: registers at lg_k %d of a sketch of lg_k %d: %w", lgK, s.p.LgK, ErrParams)
	}
	out := make([]uint8, 1<<lgK)
	mask := 1<<lgK - 1
	if s.Mode() != "HLL" {
		img, err := s.AppendBinary(nil)
		if err != nil || len(img) < listStart {
			return nil, fmt.Errorf("dshll: registers: a compact image of %d bytes (%v): %w", len(img), err, ErrCorrupt)
		}
		start, n := listStart, int(img[6])
		if s.Mode() == "SET" {
			if len(img) < setStart {
				return nil, fmt.Errorf("dshll: registers: a set image of %d bytes: %w", len(img), ErrCorrupt)
			}
			start, n = setStart, int(binary.LittleEndian.Uint32(img[8:]))
		}
		if img[5]&flagEmpty != 0 {
			n = 0
		}
		if len(img) < start+4*n {
			return nil, fmt.Errorf("dshll: registers: %d coupons in a compact image of %d bytes: %w", n, len(img), ErrCorrupt)
		}
		for i := range n {
			c := binary.LittleEndian.Uint32(img[start+4*i:])
			j, v := int(c)&mask, uint8(c>>26)
			out[j] = max(out[j], v)
		}
		return out, nil
	}
	h8, err := s.lib.CopyAs(dshll.TgtHllTypeHll8)
	if err != nil {
		return nil, fmt.Errorf("dshll: registers: %v: %w", err, ErrCorrupt)
	}
	img, err := h8.ToUpdatableSlice()
	if err != nil || len(img) < hllStart+s.p.K() {
		return nil, fmt.Errorf("dshll: registers: an HLL_8 image of %d bytes (%v): %w", len(img), err, ErrCorrupt)
	}
	for i, v := range img[hllStart : hllStart+s.p.K()] {
		out[i&mask] = max(out[i&mask], v)
	}
	return out, nil
}
