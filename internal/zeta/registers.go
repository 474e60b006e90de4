package zeta

import "fmt"

// Registers returns the sketch's normal registers at precision p, from
// 1 to the sketch's normal precision: what a normal sketch of precision p
// of the same values would hold (register j is the largest rhoW of the
// hashes whose top p bits are j; 0 when none). A sparse sketch's values
// are placed as normalizing it places them, then, as a normal sketch's
// registers, lowered to p as ZetaSketch's downgrade lowers them. The
// sketch is not changed. Another p is ErrParams.
func (s *Sketch) Registers(p int) ([]uint8, error) {
	if p < 1 || p > s.p {
		return nil, fmt.Errorf("zeta: registers at precision %d of a sketch of precision %d: %w", p, s.p, ErrParams)
	}
	out := make([]uint8, 1<<p)
	if s.normal {
		switch {
		case s.data == nil:
		case p == s.p:
			copy(out, s.data)
		default:
			downgradeData(out, p, s.data, s.p)
		}
		return out, nil
	}
	e := s.enc()
	for _, vs := range [][]uint32{s.sparse, s.buf} {
		for _, v := range vs {
			i, r := e.normalIndex(v), e.normalRho(v)
			if p < s.p {
				i, r = i>>(s.p-p), downgradeRho(i, r, s.p, p)
			}
			out[i] = max(out[i], r)
		}
	}
	return out, nil
}
