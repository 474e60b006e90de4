package sketch

import (
	"math"

	"github.com/sketchd/sketchd/internal/hll"
)

// termReplicates holds, for every inclusion–exclusion term of an
// intersection of hll sketches, its value in each replicate of the
// registers (as overlapEstimates holds the unions of an overlap): the
// error of any signed sum of the terms is then measured on the
// replicates, as an overlap's counts are (docs/intersection.md, "The
// error of a count"). Inclusion–exclusion's envelope adds the terms'
// errors as if they were independent; they are not (the unions share
// most of their registers), and where one set lies inside another the
// unions that add it change no register and cancel exactly, so the
// envelope called a subset's exact count "spurious".
type termReplicates struct {
	// vals[j][t] is term t's value in replicate j: the union's estimate
	// on replicate j's registers, or for a term held exactly (an EXPLICIT
	// or EMPTY union) the number of its hashes that fall in replicate j.
	vals [][]float64
	// sigma is HLL's relative error at the registers compared and union
	// the estimate of every operand's union: the floor's.
	sigma, union float64
	// z is Student's t quantile for 99.73% with B − 1 degrees of freedom.
	z float64
}

// newTermReplicates splits the operands' registers (ops folded to log2m)
// into replicates and estimates every term on each. It returns nil when
// log2m leaves too few replicates to measure an error (below log2m 10);
// the envelope is used there.
//
// The unions are built depth first at full size (each from the union of
// the subset without its last member, as unionTerms builds them), and one
// pass over each sums 2^-M and counts the empty registers per replicate:
// the same sums, in the same order, as estimating each replicate's
// registers on their own (sumEstimate), without copying them out.
func newTermReplicates(ops []operand, terms []term, log2m int) *termReplicates {
	b := min(replicateBits, log2m-minReplicateLog2m)
	if b < minReplicates {
		return nil
	}
	k := len(ops)
	p := ops[0].sk.Params()
	p.Log2m = log2m
	for _, op := range ops {
		p.Regwidth = max(p.Regwidth, op.sk.Params().Regwidth)
	}
	regs := make([][]uint8, k)
	for i, op := range ops {
		regs[i] = op.sk.Registers(nil)
	}
	reps := 1 << b
	rp := p
	rp.Log2m -= b
	full := uint64(1)<<k - 1
	r := &termReplicates{vals: make([][]float64, reps), sigma: p.StdError(), z: studentT997[reps]}
	for j := range r.vals {
		r.vals[j] = make([]float64, len(terms))
	}
	byMask := make(map[uint]int, len(terms))
	for t, tm := range terms {
		byMask[tm.mask] = t
		if uint64(tm.mask) == full {
			r.union = tm.card
		}
		if tm.sigma == 0 {
			// Held exactly: its hashes in each replicate.
			for _, h := range tm.hashes {
				r.vals[h&uint64(reps-1)][t]++
			}
		}
	}
	m := 1 << log2m
	level := make([][]uint8, k)
	sums, zeros := make([]float64, reps), make([]int, reps)
	var walk func(start int, mask uint, acc []uint8)
	walk = func(start int, mask uint, acc []uint8) {
		for e := start; e < k; e++ {
			mk := mask | 1<<e
			u := regs[e]
			if acc != nil {
				if level[e] == nil {
					level[e] = make([]uint8, m)
				}
				u = level[e]
				copy(u, acc)
				hll.MaxRegisters(u, regs[e])
			}
			if t := byMask[mk]; terms[t].sigma != 0 {
				replicateSums(u, sums, zeros)
				for j := range reps {
					r.vals[j][t] = hll.SumEstimate(rp, sums[j], zeros[j])
				}
			}
			if e+1 < k {
				walk(e+1, mk, u)
			}
		}
	}
	walk(0, 0, nil)
	return r
}

// replicateSums sets sums[j] to Σ 2^-M and zeros[j] to the number of
// empty registers among the registers u[x] with x mod len(sums) = j, in
// increasing x: one sequential pass, a block of len(sums) registers at a
// time so that each replicate's sum is its own running total.
func replicateSums(u []uint8, sums []float64, zeros []int) {
	clear(sums)
	clear(zeros)
	n := len(sums)
	for base := 0; base+n <= len(u); base += n {
		block := u[base : base+n]
		for j, v := range block {
			w := v & 127
			sums[j] += inversePow2[w]
			if w == 0 {
				zeros[j]++
			}
		}
	}
}

// errorOf is the one-sigma error of the signed sum Σ c_t·term_t whose
// estimate is raw: √(B·s²), s² the sample variance of its B replicate
// values, and never below the floor σ·√(|raw|·U) the union's own error
// sets (overlapEstimates.floor).
func (r *termReplicates) errorOf(c []float64, raw float64) float64 {
	b := float64(len(r.vals))
	xs := make([]float64, len(r.vals))
	mean := 0.0
	for j, v := range r.vals {
		s, mag := 0.0, 0.0
		for t, ct := range c {
			if ct != 0 {
				s += ct * v[t]
				mag += math.Abs(ct * v[t])
			}
		}
		if math.Abs(s) <= roundingFloor*mag {
			s = 0
		}
		xs[j] = s
		mean += s / b
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return max(math.Sqrt(b*ss/(b-1)), r.sigma*math.Sqrt(math.Abs(raw)*max(r.union, 0)))
}

// replicatesFor returns the replicates of an intersection of hll
// operands, or nil when they cannot measure its error: too few registers,
// or every term held exactly (then the answer is exact anyway).
func replicatesFor(ops []operand, terms []term, log2m int) *termReplicates {
	for _, t := range terms {
		if t.sigma != 0 {
			return newTermReplicates(ops, terms, log2m)
		}
	}
	return nil
}

// inclusionExclusionMeasured is inclusionExclusion with the errors of the
// intersection and, for two sketches, of the relative complements, the
// union and the users in one set only measured on replicates, and bounds
// at Student's t quantile for them. Without replicates it is
// inclusionExclusion.
func inclusionExclusionMeasured(ops []operand, terms []term, reps *termReplicates) pairExtras {
	out := inclusionExclusion(ops, terms)
	if reps == nil {
		return out
	}
	out.z = reps.z
	c := make([]float64, len(terms))
	for i, t := range terms {
		c[i] = sign(onesCount(t.mask) + 1)
	}
	out.x.Error = reps.errorOf(c, out.x.Estimate)
	if len(ops) != 2 {
		return out
	}
	// terms are ordered {A}, {B}, {A,B}.
	a, b, u := terms[0], terms[1], terms[2]
	out.aNotB.Error = reps.errorOf([]float64{0, -1, 1}, u.card-b.card)
	out.bNotA.Error = reps.errorOf([]float64{-1, 0, 1}, u.card-a.card)
	out.one = &Bounded{Estimate: max(2*u.card-a.card-b.card, 0), Error: reps.errorOf([]float64{-1, -1, 2}, 2*u.card-a.card-b.card)}
	out.jaccard = jaccardOf(min(max(out.x.Estimate, 0), min(a.card, b.card)), out.x.Error, u.card, u.sigma)
	return out
}

// unionTermExact reports whether a union sketch is held exactly, and its
// hashes if so.
func unionTermExact(u *hll.Sketch) ([]uint64, bool) {
	switch u.Representation() {
	case hll.Empty:
		return nil, true
	case hll.Explicit:
		return u.Explicit()
	}
	return nil, false
}
