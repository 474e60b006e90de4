package main

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// dist is how ids are drawn from the id space [0, space).
type dist int

const (
	distUniform    dist = iota // every id equally likely
	distZipf                   // id 0 most frequent, P(k) ∝ (1+k)^-s
	distSequential             // batch b holds ids b·n … b·n+n-1, wrapping at space
)

// parseDist maps a -dist value to a dist.
func parseDist(s string) (dist, error) {
	switch s {
	case "uniform":
		return distUniform, nil
	case "zipf":
		return distZipf, nil
	case "sequential":
		return distSequential, nil
	}
	return 0, fmt.Errorf("-dist %q: want uniform, zipf or sequential", s)
}

func (d dist) String() string {
	switch d {
	case distZipf:
		return "zipf"
	case distSequential:
		return "sequential"
	}
	return "uniform"
}

// idGen fills batches of ids. Each worker owns one (it holds a random
// source); filling never allocates.
type idGen struct {
	dist  dist
	space uint64
	rng   *rand.Rand
	zipf  *rand.Zipf
}

// newIDGen returns a generator over [0, space) seeded by (seed, stream), so
// workers given different streams draw different ids and a run with the same
// seed repeats. zipfS must be > 1 for distZipf (checked by the caller).
func newIDGen(d dist, space uint64, zipfS float64, seed, stream uint64) *idGen {
	g := &idGen{dist: d, space: space, rng: rand.New(rand.NewPCG(seed, stream))}
	if d == distZipf {
		g.zipf = rand.NewZipf(g.rng, zipfS, 1, space-1)
	}
	return g
}

// fill writes len(dst) ids into dst. batch is the index of the batch being
// built; only distSequential uses it, so that batch b holds the ids
// b·len(dst) … b·len(dst)+len(dst)-1 modulo the space, whichever worker
// builds it.
func (g *idGen) fill(dst []int64, batch uint64) {
	switch g.dist {
	case distSequential:
		hi, lo := bits.Mul64(batch, uint64(len(dst)))
		cur := bits.Rem64(hi, lo, g.space)
		for i := range dst {
			dst[i] = int64(cur)
			cur++
			if cur == g.space {
				cur = 0
			}
		}
	case distZipf:
		for i := range dst {
			dst[i] = int64(g.zipf.Uint64())
		}
	default:
		for i := range dst {
			dst[i] = int64(g.rng.Uint64N(g.space))
		}
	}
}
