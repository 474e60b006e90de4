package sketch

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sketchd/sketchd/internal/hll"
)

// A joint table is what Intersect's one-pass MLE of two FULL sketches
// reads of their registers (pairScan): how many register positions hold
// each pair of values. A database with the sketchd_hll extension
// (pg/sketchd_hll) computes it where the candidate's row lives, so that a
// rank on PostgreSQL or Citus receives about a kilobyte a candidate
// rather than its registers, and PairJoint's Intersect gives from it
// exactly the answer Intersect gives from the two sketches.
//
// The encoding (sketchd_hll_joint's, pg/sketchd_hll/sketchd_hll.c):
//
//	byte 0    jointVersion
//	byte 1    vmax, the highest register value either sketch holds
//	then, for each pair of values (va, vb) held by at least one position,
//	in ascending order of va<<6 | vb:
//	  2 bytes  va<<6 | vb, big-endian
//	  uvarint  how many positions hold it
const jointVersion = 1

// maxJointLog2m is the largest log2m sketchd_hll_joint reads.
const maxJointLog2m = 20

// ErrJointIneligible: the pair is not two FULL sketches at the same
// parameters that Intersect's one-pass MLE reads (registers of at most
// six bits, the MLE), so the candidate must be read itself.
var ErrJointIneligible = errors.New("sketch: the pair is not one the joint table answers")

// Joint is a decoded joint table for sketches at p.
type Joint struct {
	p     hll.Params
	vmax  int
	joint [64 * 64]int32
}

// DecodeJoint reads a joint table of two sketches at p. It checks that
// the counts add up to the number of registers, that no value exceeds
// vmax or what p's registers hold, and that some pair reaches vmax: an
// error names what is wrong.
func DecodeJoint(b []byte, p hll.Params) (*Joint, error) {
	if p.Regwidth < 1 || p.Regwidth > 6 || p.Log2m < hll.MinLog2m || p.Log2m > maxJointLog2m {
		return nil, fmt.Errorf("sketch: joint table for log2m %d regwidth %d: %w", p.Log2m, p.Regwidth, ErrJointIneligible)
	}
	if len(b) < 2 {
		return nil, fmt.Errorf("sketch: joint table of %d bytes, shorter than its 2-byte header", len(b))
	}
	if b[0] != jointVersion {
		return nil, fmt.Errorf("sketch: joint table version %d, want %d", b[0], jointVersion)
	}
	j := &Joint{p: p, vmax: int(b[1])}
	top := 1<<p.Regwidth - 1
	if j.vmax > top {
		return nil, fmt.Errorf("sketch: joint table's vmax %d exceeds what %d-bit registers hold", j.vmax, p.Regwidth)
	}
	m := int64(p.NumRegisters())
	var total int64
	last, reached := -1, false
	for off := 2; off < len(b); {
		if off+2 > len(b) {
			return nil, fmt.Errorf("sketch: joint table cut at byte %d, inside a pair", off)
		}
		cell := int(binary.BigEndian.Uint16(b[off:]))
		va, vb := cell>>6, cell&63
		if cell <= last || va > j.vmax || vb > j.vmax {
			return nil, fmt.Errorf("sketch: joint table's pair (%d, %d) at byte %d is out of order or above vmax %d", va, vb, off, j.vmax)
		}
		n, k := binary.Uvarint(b[off+2:])
		if k <= 0 || n == 0 || n > uint64(m) {
			return nil, fmt.Errorf("sketch: joint table's count at byte %d is not a count of 1 to %d positions", off+2, m)
		}
		last, off = cell, off+2+k
		reached = reached || va == j.vmax || vb == j.vmax
		total += int64(n)
		if total > m {
			return nil, fmt.Errorf("sketch: joint table counts more than the %d registers", m)
		}
		j.joint[cell] = int32(n)
	}
	if total != m {
		return nil, fmt.Errorf("sketch: joint table counts %d positions of %d registers", total, m)
	}
	if !reached {
		return nil, fmt.Errorf("sketch: joint table's vmax %d is held by no register", j.vmax)
	}
	return j, nil
}

// EncodeJoint returns the joint table of a and b as sketchd_hll_joint
// writes it, and false for a pair it answers NULL for: the reference the
// extension is tested against.
func EncodeJoint(a, b *hll.Sketch) ([]byte, bool) {
	if !jointEligible(a) || !jointEligible(b) || a.Params() != b.Params() {
		return nil, false
	}
	ra, rb := a.Registers(nil), b.Registers(nil)
	var joint [64 * 64]int32
	vmax := 0
	for i, va := range ra {
		joint[int(va)<<6|int(rb[i])]++
		vmax = max(vmax, int(va), int(rb[i]))
	}
	out := []byte{jointVersion, byte(vmax)}
	for cell, n := range joint {
		if n != 0 {
			out = binary.BigEndian.AppendUint16(out, uint16(cell))
			out = binary.AppendUvarint(out, uint64(n))
		}
	}
	return out, true
}

// jointEligible reports whether s is a sketch whose pairs a joint table
// answers: FULL, with registers of at most six bits, log2m at most
// maxJointLog2m.
func jointEligible(s *hll.Sketch) bool {
	if s == nil {
		return false
	}
	p := s.Params()
	return s.Representation() == hll.Full && p.Regwidth <= 6 && p.Log2m <= maxJointLog2m
}

// JointTarget reports whether target's pairs with candidates at its
// parameters can be answered from joint tables with method.
func JointTarget(target *hll.Sketch, method Method) bool {
	if method == "" {
		method = DefaultMethod(2)
	}
	return method == MethodMLE && jointEligible(target)
}

// candidateHistogram returns the histogram of the candidate's (the
// second sketch's) registers.
func (j *Joint) candidateHistogram() (hist [128]int) {
	for va := 0; va <= j.vmax; va++ {
		for vb, n := range j.joint[va<<6 : va<<6+j.vmax+1] {
			hist[vb] += int(n)
		}
	}
	return hist
}

// candidate returns the operand Intersect builds of the candidate, a
// FULL sketch at j.p whose registers' histogram is hist: its count and
// error as newOperand computes them (a decoded FULL sketch's estimate is
// its histogram's). ok is false when the candidate is not one Intersect
// would keep FULL, as sketchd_hll_joint also checks.
func (j *Joint) candidate(name string, hist *[128]int) (op operand, ok bool) {
	m := j.p.NumRegisters()
	filled := m - hist[0]
	if j.p.Sparse && filled*(j.p.Log2m+j.p.Regwidth) < m*j.p.Regwidth {
		return operand{}, false
	}
	est := hll.HistogramEstimate(j.p, hist)
	return operand{name: name, card: debiasedHistogram(j.p, est, hist), sigma: j.p.StdError()}, true
}

// CandidateAnswer is the candidate's own answer by e (what Describe
// gives of it).
func (j *Joint) CandidateAnswer(e hll.Estimator) hll.Answer {
	hist := j.candidateHistogram()
	return hll.HistogramAnswer(j.p, &hist, e)
}

// JointPair is a target and a candidate known by their joint table,
// with the operands Intersect builds of them, computed once for both the
// ceiling and the intersection.
type JointPair struct {
	ops    []operand
	j      *Joint
	method Method
}

// PairJoint prepares the comparison of target with the candidate whose
// joint table with it is j, by method ("" its default), names naming
// them. It fails with ErrJointIneligible when Intersect would not take
// its one-pass MLE for the pair (JointTarget false, other parameters, a
// candidate that is not FULL), and the caller reads the candidate.
func PairJoint(names []string, target *hll.Sketch, j *Joint, method Method) (*JointPair, error) {
	if len(names) != 2 {
		return nil, fmt.Errorf("sketch: intersect joint: %d names for 2 sketches", len(names))
	}
	if method == "" {
		method = DefaultMethod(2)
	}
	if !JointTarget(target, method) || target.Params() != j.p {
		return nil, ErrJointIneligible
	}
	hist := j.candidateHistogram()
	cand, ok := j.candidate(names[1], &hist)
	if !ok {
		return nil, ErrJointIneligible
	}
	t, err := newOperand(names[0], target, j.p.Log2m)
	if err != nil {
		return nil, err
	}
	return &JointPair{ops: []operand{t, cand}, j: j, method: method}, nil
}

// Ceiling is IntersectCeiling for the pair: no estimate of Intersect
// exceeds it.
func (p *JointPair) Ceiling() float64 { return min(p.ops[0].card, p.ops[1].card) }

// Intersect is Intersect(names, [target, candidate], method) for the
// pair: the same answer, to the bit.
func (p *JointPair) Intersect() Intersection {
	s := pairScans.Get().(*pairScan)
	defer s.release()
	s.p, s.vmax, s.joint = p.j.p, p.j.vmax, p.j.joint
	return intersectScanned(p.ops, s, p.method, false)
}
