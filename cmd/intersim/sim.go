package main

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
)

// genLog2m is the register count every set is hashed at; the grid's
// smaller ones are obtained with hll's Fold, which equals building at the
// smaller size (DESIGN.md, "Register folding").
const genLog2m = 16

// regwidth of every simulated sketch: sketchd's default.
const regwidth = 5

// grid is the experiment: every combination of its lists.
type grid struct {
	sets     []int // numbers of sets intersected: 2 (pairs, both methods) and 3..8
	log2ms   []int
	ratios   []int
	overlaps []float64 // overlap = |∩| / smallest set; 0 = disjoint
	shares   []float64 // k ≥ 3: share of the smallest set's other ids shared by pairs
	runs     int
	small    int // |A|, the smallest set; the largest is ratio·|A|
	seed     uint64
}

// nMethods is the number of estimators compared.
const nMethods = 2

// methods returns the estimators compared, in table order.
func methods() [nMethods]sketch.Method {
	return [nMethods]sketch.Method{sketch.MethodInclusionExclusion, sketch.MethodMLE}
}

// obs is one estimate of one intersection.
type obs struct {
	truth            float64
	est, raw, err    float64
	lower, upper     float64
	reliable, spurio bool
	overlap, ratio   float64 // as estimated
	// width is the bounds' relative width; anyWidth whether every
	// condition of "reliable" but the width's holds, so that the
	// report can judge other width limits (sketch.ReliableWithin).
	width    float64
	anyWidth bool
	// within: the answer said the smallest set lies within the others.
	within bool
}

// obsOf records the answer r for an intersection of size truth.
func obsOf(r sketch.Intersection, truth float64) obs {
	return obs{
		truth: truth, est: r.Estimate, raw: r.RawEstimate, err: r.Error,
		lower: r.Lower, upper: r.Upper, reliable: r.Reliable, spurio: r.Spurious,
		overlap: r.Overlap, ratio: r.CardinalityRatio,
		width: r.RelativeWidth, anyWidth: r.ReliableWithin(math.Inf(1)),
		within: r.Within != "",
	}
}

// reliableWithin is the verdict the answer would have had with bounds
// allowed to span maxWidth of the estimate.
func (o obs) reliableWithin(maxWidth float64) bool {
	return o.anyWidth && o.width <= maxWidth
}

// cellKey names a grid cell: k sets at log2m, the largest ratio times
// the smallest, sharing overlap of the smallest (and, for k ≥ 3, pairs
// sharing share of the rest).
type cellKey struct {
	k, log2m, ratio int
	overlap, share  float64
}

// results holds every observation, per cell and method.
type results map[cellKey]*[nMethods][]obs

func (r results) add(k cellKey, mi int, o obs) {
	c, ok := r[k]
	if !ok {
		c = new([nMethods][]obs)
		r[k] = c
	}
	c[mi] = append(c[mi], o)
}

func (r results) merge(o results) {
	for k, c := range o {
		for mi := range nMethods {
			for _, x := range c[mi] {
				r.add(k, mi, x)
			}
		}
	}
}

// splitmix64 is a small, fast generator of uniformly distributed 64-bit
// hashes (Steele, Lea and Flood's SplitMix64 finaliser over a counter).
type splitmix64 struct{ s uint64 }

func (g *splitmix64) next() uint64 {
	g.s += 0x9e3779b97f4a7c15
	z := g.s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// seedFor derives an independent stream for one (run, ratio, role).
func seedFor(seed uint64, run, ratio, role int) splitmix64 {
	g := splitmix64{s: seed}
	g.s ^= uint64(run)<<32 | uint64(ratio)<<8 | uint64(role)
	g.next()
	return splitmix64{s: g.next()}
}

// addHash raises the register that h sets, by the storage format's rule.
func addHash(regs []uint8, h uint64) {
	const top = 1<<regwidth - 1
	w := h >> genLog2m
	if w == 0 {
		return
	}
	v := uint8(min(bits.TrailingZeros64(w)+1, top))
	i := h & (1<<genLog2m - 1)
	if v > regs[i] {
		regs[i] = v
	}
}

// sketchOf builds a FULL hll sketch holding registers regs (at genLog2m)
// by adding, for each register, one hash that sets exactly its value.
func sketchOf(regs []uint8) (*hll.Sketch, error) {
	s, err := hll.New(hll.Params{Log2m: genLog2m, Regwidth: regwidth, Expthresh: 0, Sparse: false})
	if err != nil {
		return nil, err
	}
	for i, v := range regs {
		if v > 0 {
			s.AddHash(uint64(1)<<(genLog2m+int(v)-1) | uint64(i))
		}
	}
	return s, nil
}

// unit simulates one run of one cardinality ratio: a larger set B of
// ratio·small random hashes, and for every overlap o a smaller set A made
// of the first o·small hashes of B and (1-o)·small fresh ones. B is shared
// by the overlaps of the unit, so cells of one unit are correlated; units
// are independent.
func (g grid) unit(run, ri int) (results, error) {
	ratio := g.ratios[ri]
	nb, na := ratio*g.small, g.small
	bRegs := make([]uint8, 1<<genLog2m)
	shared := make([]uint64, na) // B's first hashes: the candidates for A∩B
	gb := seedFor(g.seed, run, ri, 1)
	for i := range nb {
		h := gb.next()
		if i < na {
			shared[i] = h
		}
		addHash(bRegs, h)
	}
	fresh := make([]uint64, na)
	ga := seedFor(g.seed, run, ri, 2)
	for i := range fresh {
		fresh[i] = ga.next()
	}
	bFull, err := sketchOf(bRegs)
	if err != nil {
		return nil, err
	}
	bAt := make(map[int]*hll.Sketch, len(g.log2ms))
	for _, lg := range g.log2ms {
		if bAt[lg], err = bFull.Fold(lg, regwidth); err != nil {
			return nil, err
		}
	}
	out := results{}
	aRegs := make([]uint8, 1<<genLog2m)
	for _, o := range g.overlaps {
		nx := int(o*float64(na) + 0.5)
		clear(aRegs)
		for _, h := range shared[:nx] {
			addHash(aRegs, h)
		}
		for _, h := range fresh[:na-nx] {
			addHash(aRegs, h)
		}
		aFull, err := sketchOf(aRegs)
		if err != nil {
			return nil, err
		}
		for _, lg := range g.log2ms {
			a, err := aFull.Fold(lg, regwidth)
			if err != nil {
				return nil, err
			}
			for mi, m := range methods() {
				r, err := sketch.Intersect([]string{"a", "b"}, []*hll.Sketch{a, bAt[lg]}, m)
				if err != nil {
					return nil, fmt.Errorf("run %d ratio %d overlap %g log2m %d %s: %w", run, ratio, o, lg, m, err)
				}
				out.add(cellKey{2, lg, ratio, o, 0}, mi, obsOf(r, float64(nx)))
			}
		}
	}
	return out, nil
}

// stats summarises one cell for one method.
type stats struct {
	n              int
	medRel, p95Rel float64 // relative error of the clamped estimate
	coverage       float64 // share with truth in [lower, upper]
	reliable       int     // observations flagged reliable
	relCovered     int     // … of which covered
	relRight       int     // … of which covered and within tolerance
	spurious       float64 // share flagged spurious
	p95Norm        float64 // 95th percentile of |raw-truth|/Δ
	medWidth       float64 // median relative width of the bounds
}

// rightTolerance: a reliable answer is "right" when the truth is inside
// [lower, upper] and the clamped estimate is within this relative error.
const rightTolerance = 0.5

func summarise(os []obs) stats {
	s := stats{n: len(os)}
	rel := make([]float64, 0, len(os))
	norm := make([]float64, 0, len(os))
	widths := make([]float64, 0, len(os))
	covered, spur := 0, 0
	for _, o := range os {
		d := o.est - o.truth
		if d < 0 {
			d = -d
		}
		r := d
		if o.truth > 0 {
			r = d / o.truth
		}
		rel = append(rel, r)
		dr := o.raw - o.truth
		if dr < 0 {
			dr = -dr
		}
		if o.err > 0 {
			norm = append(norm, dr/o.err)
		} else if dr > 0 {
			norm = append(norm, 1e9)
		} else {
			norm = append(norm, 0)
		}
		widths = append(widths, o.width)
		in := o.lower <= o.truth && o.truth <= o.upper
		if in {
			covered++
		}
		if o.spurio {
			spur++
		}
		if o.reliable {
			s.reliable++
			if in {
				s.relCovered++
				if r <= rightTolerance {
					s.relRight++
				}
			}
		}
	}
	s.medRel, s.p95Rel = quantile(rel, 0.5), quantile(rel, 0.95)
	s.p95Norm = quantile(norm, 0.95)
	s.medWidth = quantile(widths, 0.5)
	if s.n > 0 {
		s.coverage = float64(covered) / float64(s.n)
		s.spurious = float64(spur) / float64(s.n)
	}
	return s
}

// quantile returns the q-quantile of xs (nearest rank); it sorts xs.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := int(q*float64(len(xs))+0.5) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}
