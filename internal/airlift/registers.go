package airlift

import (
	"fmt"
	"math/bits"
)

// Registers returns the sketch's dense registers at p index bits, from
// MinIndexBits to the sketch's own: what a dense sketch of p index bits
// of the same hashes would hold (register j is the largest value, one
// plus the leading zeros after the top p bits, of the hashes whose top p
// bits are j; 0 when none). Sparse entries are placed as turning dense
// places them (at any p: they keep 26 bits of each hash); dense registers
// of more index bits are folded: register i goes to i >> (own − p), its
// value one plus the leading zeros of the index bits dropped, or its own
// value plus their number when they are all zero. The sketch is not
// changed. Another p is ErrParams.
func (s *Sketch) Registers(p int) ([]uint8, error) {
	if p < MinIndexBits || p > s.p {
		return nil, fmt.Errorf("airlift: registers at %d index bits of a sketch of %d: %w", p, s.p, ErrParams)
	}
	out := make([]uint8, 1<<p)
	if !s.dense {
		s.eachBucket(p, s.entries, func(bucket uint32, value uint8) { out[bucket] = max(out[bucket], value) })
		return out, nil
	}
	d := s.p - p
	for i, v := range s.regs {
		if v == 0 {
			continue
		}
		low := uint32(i) & (1<<d - 1)
		nv := v + uint8(d)
		if low != 0 {
			nv = uint8(bits.LeadingZeros32(low<<(32-d)) + 1)
		}
		j := i >> d
		out[j] = max(out[j], nv)
	}
	return out, nil
}
