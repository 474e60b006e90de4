package hll

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Estimate returns the cardinality estimate: 0 for EMPTY, the exact count
// for EXPLICIT, and for registers postgresql-hll's multiset_card (HLL
// estimator with its small-range linear counting and large-range
// correction), within ~1e-9 relative of hll_cardinality for the same bytes.
//
// Two documented departures, both where PostgreSQL has no usable number:
//   - regwidth >= 6: PostgreSQL computes 2^L with a 64-bit shift that
//     wraps (L = 2^regwidth - 2 + log2m >= 64), so beyond the linear
//     counting range hll_cardinality is NaN. Here 2^L is computed in
//     floating point (as java-hll does since 1.5.2), giving a finite value.
//   - a raw estimate at or beyond 2^L (registers saturated, which only
//     small regwidths reach) makes the large-range formula NaN in every
//     implementation. Here it returns 2^L·ln(m), the large-range estimate
//     at the point where one register in m is still unsaturated: the
//     registers cannot tell larger cardinalities apart.
//
// UNDEFINED sketches (SQL NULL in PostgreSQL) return NaN.
func (s *Sketch) Estimate() float64 {
	switch s.kind {
	case kindUndefined:
		return math.NaN()
	case kindEmpty:
		return 0
	case kindExplicit:
		return float64(len(s.explicit))
	case kindSparse:
		// Absent registers count 2^0 each; the filled ones in index order.
		sum := float64(s.p.NumRegisters() - len(s.pairs))
		for _, p := range s.pairs {
			sum += pow2neg(int(uint8(p)))
		}
		return registerEstimate(s.p, sum, s.p.NumRegisters()-len(s.pairs))
	}
	return histEstimate(s.p, s.hist)
}

// histEstimate is the estimate of dense registers whose histogram is hist.
func histEstimate(p Params, hist *[128]int) float64 {
	sum := 0.0
	for v, n := range hist {
		if n != 0 {
			sum += float64(n) * pow2neg(v)
		}
	}
	return registerEstimate(p, sum, hist[0])
}

// pow2neg returns 2^-v, exactly, for 0 ≤ v ≤ 1022 (a register value is at
// most 255): the float64 whose exponent field is 1023-v and whose
// mantissa is 0. It is math.Ldexp(1, -v) without its checks, for the
// estimate's loop over every register value; float64(n) * pow2neg(v) is
// math.Ldexp(float64(n), -v) exactly for the counts a histogram holds
// (n < 2^53).
func pow2neg(v int) float64 { return math.Float64frombits(uint64(1023-v) << 52) }

// RegisterEstimate returns the estimate of a sketch at p in register form
// (SPARSE or FULL) whose m registers are the maximum of a and b (b may be
// nil): the same number as Estimate of such a sketch (see Registers). It
// lets a caller that keeps bare registers, a sliding window, count a union
// without building it.
func RegisterEstimate(p Params, a, b []uint8) float64 {
	var hist [128]int
	RegisterHistogram(&hist, a, b)
	return HistogramEstimate(p, &hist)
}

// RegisterHistogram sets hist[v] to the number of registers i with
// max(a[i], b[i]) = v (b may be nil: a alone), values taken modulo 128,
// in one pass. With HistogramEstimate it is RegisterEstimate, for a
// caller that needs the histogram too.
func RegisterHistogram(hist *[128]int, a, b []uint8) {
	if b == nil {
		b = a
	}
	countMax(hist, a, b)
}

// HistogramEstimate returns the estimate of a sketch at p in register
// form whose registers' histogram is hist (hist[v] registers hold v):
// the same number as RegisterEstimate of those registers.
func HistogramEstimate(p Params, hist *[128]int) float64 { return histEstimate(p, hist) }

// countMax sets hist[v] to the number of registers i with max(a[i], b[i])
// = v. Eight registers a word, maximum as in maxBytes; eight counter
// arrays, one per byte of the word, since registers mostly hold a few
// small values and one array would make each increment wait for the last
// one to the same counter.
func countMax(hist *[128]int, a, b []uint8) {
	b = b[:len(a)]
	var c [8][128]int32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		w := maxWord(binary.LittleEndian.Uint64(a[i:]), binary.LittleEndian.Uint64(b[i:]))
		c[0][w&127]++
		c[1][w>>8&127]++
		c[2][w>>16&127]++
		c[3][w>>24&127]++
		c[4][w>>32&127]++
		c[5][w>>40&127]++
		c[6][w>>48&127]++
		c[7][w>>56&127]++
	}
	for ; i < len(a); i++ {
		c[0][max(a[i], b[i])&127]++
	}
	for v := range hist {
		n := 0
		for l := range c {
			n += int(c[l][v])
		}
		hist[v] = n
	}
}

// maxCount sets dst to the register-wise maximum of a and b (dst may be
// either) and hist to the histogram of the result, in one pass: a union
// of two register sketches reads each register once, instead of a copy,
// a maximum and a recount.
func maxCount(hist *[128]int, dst, a, b []uint8) {
	a, b = a[:len(dst)], b[:len(dst)]
	var c [8][128]int32
	i := 0
	for ; i+8 <= len(dst); i += 8 {
		w := maxWord(binary.LittleEndian.Uint64(a[i:]), binary.LittleEndian.Uint64(b[i:]))
		binary.LittleEndian.PutUint64(dst[i:], w)
		c[0][w&127]++
		c[1][w>>8&127]++
		c[2][w>>16&127]++
		c[3][w>>24&127]++
		c[4][w>>32&127]++
		c[5][w>>40&127]++
		c[6][w>>48&127]++
		c[7][w>>56&127]++
	}
	for ; i < len(dst); i++ {
		dst[i] = max(a[i], b[i])
		c[0][dst[i]&127]++
	}
	for v := range hist {
		n := 0
		for l := range c {
			n += int(c[l][v])
		}
		hist[v] = n
	}
}

// mergeInto sets dst to the register-wise maximum of dst and src and keeps
// hist, dst's histogram, current. While few registers grow, as when
// merging into a running union or window that holds most of src
// already, only those move in the histogram: a word of eight registers
// none of which grew costs a maximum and a compare. Once more than one
// register in mergeDense has grown, as in a merge of unrelated sketches,
// the rest is merged and counted in one pass (maxCount), which costs the
// same however many grow, and the part already merged is recounted.
func mergeInto(hist *[128]int, dst, src []uint8) {
	src = src[:len(dst)]
	grown, i := 0, 0
	for ; i+8 <= len(dst); i += 8 {
		if i%mergeCheck == 0 && i > 0 && grown*mergeDense > i {
			var head [128]int
			countMax(&head, dst[:i], dst[:i])
			maxCount(hist, dst[i:], dst[i:], src[i:])
			for v, n := range head {
				hist[v] += n
			}
			return
		}
		a := binary.LittleEndian.Uint64(dst[i:])
		w := maxWord(a, binary.LittleEndian.Uint64(src[i:]))
		if w == a {
			continue
		}
		binary.LittleEndian.PutUint64(dst[i:], w)
		for d := a ^ w; d != 0; grown++ {
			sh := uint(bits.TrailingZeros64(d)) &^ 7
			hist[a>>sh&127]--
			hist[w>>sh&127]++
			d &^= 0xff << sh
		}
	}
	for ; i < len(dst); i++ {
		if v := src[i]; v > dst[i] {
			hist[dst[i]&127]--
			hist[v&127]++
			dst[i] = v
		}
	}
}

// mergeCheck is how many registers mergeInto merges between looks at how
// many grew; mergeDense is the share (one in mergeDense) past which it
// counts the rest instead.
const mergeCheck, mergeDense = 512, 16

// MaxRegisters sets dst[i] to max(dst[i], src[i]): the registers of the
// union of two register sketches at the same parameters.
func MaxRegisters(dst, src []uint8) { maxBytes(dst, src) }

// StdError returns the relative standard error of the estimate: 0 for
// EMPTY and EXPLICIT (exact), 1.04/sqrt(m) for registers.
func (s *Sketch) StdError() float64 {
	switch s.kind {
	case kindSparse, kindDense:
		return s.p.StdError()
	case kindUndefined:
		return math.NaN()
	}
	return 0
}

// SumEstimate returns the estimate of a sketch at p in register form whose
// registers M have sum = Σ 2^-M[j] and zeros registers at 0: the number
// Estimate gives for such registers (the same formula, summed by the
// caller). It lets a caller that sums registers its own way, such as a
// small slice of them, skip building a histogram.
func SumEstimate(p Params, sum float64, zeros int) float64 { return registerEstimate(p, sum, zeros) }

// registerEstimate is multiset_card for sum = Σ 2^-M[j] and zeros = #{j:
// M[j] = 0}, with the departures documented on Estimate.
func registerEstimate(p Params, sum float64, zeros int) float64 {
	m := float64(p.NumRegisters())
	e := alphaMM(p.NumRegisters()) / sum
	if zeros != 0 && e < 5.0*m/2.0 {
		return m * math.Log(m/float64(zeros))
	}
	twoL := math.Ldexp(1, 1<<p.Regwidth-2+p.Log2m)
	switch {
	case e <= twoL/30.0:
		return e
	case e < twoL:
		return -twoL * math.Log(1.0-e/twoL)
	}
	return twoL * math.Log(m)
}

// alphaMM is postgresql-hll's gamma_register_count_squared (m > 8), with
// its operation order.
func alphaMM(nregs int) float64 {
	m := float64(nregs)
	switch nregs {
	case 16:
		return 0.673 * m * m
	case 32:
		return 0.697 * m * m
	case 64:
		return 0.709 * m * m
	}
	return (0.7213 / (1.0 + 1.079/m)) * m * m
}
