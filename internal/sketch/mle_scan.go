package sketch

import (
	"sync"

	"github.com/sketchd/sketchd/internal/hll"
)

// pairScan is one pass over the registers of two FULL sketches at the
// same parameters: how many register positions hold each pair of values.
// Everything the joint MLE of the pair needs comes from it: the joint
// statistic, each sketch's histogram and the union's, so that an
// intersection of two FULL sketches by the MLE reads their registers
// once, where building the union term and the statistic apart read them
// three times and allocated the union. One against many (POST /v1/rank)
// runs this for every candidate.
type pairScan struct {
	p hll.Params
	// joint[va<<6|vb] counts the positions where the first sketch's
	// register holds va and the second's vb.
	joint [64 * 64]int32
	vmax  int // the highest register value either sketch holds
	// ra and rb hold the registers while they are counted.
	ra, rb []uint8
}

// pairScanOn lets a test compare the scan with the general path.
var pairScanOn = true

// pairScans keeps scans (16 KiB of counts and the registers' buffers)
// for the next pair.
var pairScans = sync.Pool{New: func() any { return new(pairScan) }}

// release returns s to the pool; s is not used after.
func (s *pairScan) release() { pairScans.Put(s) }

// newPairScan scans a and b, or returns nil when the pair is not two
// FULL sketches at equal parameters with registers below 64 (regwidth
// up to 6): those take the general path.
func newPairScan(a, b operand) *pairScan {
	pa, pb := a.sk.Params(), b.sk.Params()
	if !pairScanOn || a.explicit != nil || b.explicit != nil || a.sk.Representation() != hll.Full || b.sk.Representation() != hll.Full ||
		pa != pb || pa.Regwidth > 6 {
		return nil
	}
	var ha, hb [128]int
	if !a.sk.Histogram(&ha) || !b.sk.Histogram(&hb) {
		return nil
	}
	vmax := 0
	for v := 127; v >= 0; v-- {
		if ha[v] != 0 || hb[v] != 0 {
			vmax = v
			break
		}
	}
	if vmax >= 64 {
		return nil
	}
	s := pairScans.Get().(*pairScan)
	s.p, s.vmax = pa, vmax
	clear(s.joint[:])
	s.ra, s.rb = a.sk.Registers(s.ra), b.sk.Registers(s.rb)
	ra, rb := s.ra, s.rb[:len(s.ra)]
	for i, va := range ra {
		s.joint[int(va&63)<<6|int(rb[i]&63)]++
	}
	return s
}

// unionHistogram returns the histogram of the union's registers, the
// maximum of the two at each position.
func (s *pairScan) unionHistogram() (hist [128]int) {
	for va := 0; va <= s.vmax; va++ {
		row := s.joint[va<<6 : va<<6+s.vmax+1]
		for vb, n := range row {
			hist[max(va, vb)] += int(n)
		}
	}
	return hist
}

// terms returns the three union terms of the pair, as unionTerms does:
// each sketch alone, then their union, whose estimate is the one its
// registers give (the histogram's, as hll's Estimate computes it).
func (s *pairScan) terms(ops []operand) []term {
	hist := s.unionHistogram()
	card := hll.HistogramEstimate(s.p, &hist)
	return []term{
		{mask: 1, names: []string{ops[0].name}, card: ops[0].card, sigma: ops[0].sigma},
		{mask: 2, names: []string{ops[1].name}, card: ops[1].card, sigma: ops[1].sigma},
		{mask: 3, names: []string{ops[0].name, ops[1].name}, card: debiasedHistogram(s.p, card, &hist), sigma: s.p.StdError()},
	}
}

// counts returns the register pair counts of pairCounts, each register
// capped at top.
func (s *pairScan) counts(top uint8) (c [5][256]int) {
	t := int(top)
	for va := 0; va <= s.vmax; va++ {
		ka := min(va, t)
		row := s.joint[va<<6 : va<<6+s.vmax+1]
		for vb, n := range row {
			if n == 0 {
				continue
			}
			kb, v := min(vb, t), int(n)
			switch {
			case ka < kb:
				c[0][ka] += v
				c[3][kb] += v
			case ka > kb:
				c[1][ka] += v
				c[2][kb] += v
			default:
				c[4][ka] += v
			}
		}
	}
	return c
}

// mle is mlePair for the scanned pair.
func (s *pairScan) mle(a, b operand) pairExtras {
	mod := newRegisterModel(s.p.Log2m, s.p.Regwidth)
	st := jointStatsFromCounts(s.counts(uint8(mod.q+1)), mod)
	return fromJoint(st.maximize(), min(a.card, b.card))
}
