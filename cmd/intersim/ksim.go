package main

import (
	"fmt"
	"math"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
)

// sizesFor returns the sizes of k sets from small to ratio·small, spaced
// geometrically: set i holds small·ratio^(i/(k−1)) ids.
func sizesFor(k, small, ratio int) []int {
	out := make([]int, k)
	for i := range out {
		out[i] = int(math.Round(float64(small) * math.Pow(float64(ratio), float64(i)/float64(k-1))))
	}
	out[0] = small
	return out
}

// kunit simulates one run of k ≥ 3 sets at one cardinality ratio. The
// sets have sizes sizesFor(k, small, ratio). For each overlap o and pair
// share p, o·small ids are in every set (the intersection, the truth),
// every pair of sets has c = p·(small − o·small)/(k−1) ids of its own
// (in exactly those two sets), and each set fills up with ids of its own.
// Every set but the smallest holds size − small ids that do not change
// with o and p; they are drawn once per unit, so cells of a unit are
// correlated and units independent, as in unit.
func (g grid) kunit(run, k, ri int) (results, error) {
	ratio := g.ratios[ri]
	sizes := sizesFor(k, g.small, ratio)
	base := make([][]uint8, k)
	for i := 1; i < k; i++ {
		base[i] = make([]uint8, 1<<genLog2m)
		gen := seedFor(g.seed, run, ri, 16*k+i)
		for range sizes[i] - g.small {
			addHash(base[i], gen.next())
		}
	}
	regs := make([][]uint8, k)
	for i := range regs {
		regs[i] = make([]uint8, 1<<genLog2m)
	}
	names := make([]string, k)
	for i := range names {
		names[i] = fmt.Sprintf("s%d", i)
	}
	out := results{}
	gen := seedFor(g.seed, run, ri, 16*k)
	for _, o := range g.overlaps {
		for _, p := range g.shares {
			core := int(o*float64(g.small) + 0.5)
			chunk := int(p*float64(g.small-core)/float64(k-1) + 0.5)
			for i := range regs {
				if base[i] != nil {
					copy(regs[i], base[i])
				} else {
					clear(regs[i])
				}
			}
			drawSets(&gen, k, g.small, core, chunk, func(mask uint64, h uint64) {
				for i := range regs {
					if mask&(1<<i) != 0 {
						addHash(regs[i], h)
					}
				}
			})
			full := make([]*hll.Sketch, k)
			for i := range full {
				var err error
				if full[i], err = sketchOf(regs[i]); err != nil {
					return nil, err
				}
			}
			for _, lg := range g.log2ms {
				at := make([]*hll.Sketch, k)
				for i := range at {
					var err error
					if at[i], err = full[i].Fold(lg, regwidth); err != nil {
						return nil, err
					}
				}
				r, err := sketch.Intersect(names, at, sketch.MethodInclusionExclusion)
				if err != nil {
					return nil, fmt.Errorf("run %d k %d ratio %d overlap %g share %g log2m %d: %w", run, k, ratio, o, p, lg, err)
				}
				out.add(cellKey{k, lg, ratio, o, p}, 0, obsOf(r, float64(core)))
			}
		}
	}
	return out, nil
}

// drawSets draws the part of k sets that changes with the cell: core ids
// in every set, chunk ids in each pair of sets alone, and ids of each set
// alone until it holds small of them. add receives each id with the sets
// it is in (bit i: set i).
func drawSets(gen *splitmix64, k, small, core, chunk int, add func(mask, h uint64)) {
	all := uint64(1)<<k - 1
	for range core {
		add(all, gen.next())
	}
	for i := range k {
		for j := i + 1; j < k; j++ {
			for range chunk {
				add(1<<i|1<<j, gen.next())
			}
		}
		for range small - core - (k-1)*chunk {
			add(1<<i, gen.next())
		}
	}
}
