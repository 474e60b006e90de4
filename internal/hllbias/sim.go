package hllbias

import (
	"math"
	"math/bits"
)

// MinPrecision and MaxPrecision bound the precisions the table covers:
// airlift's HyperLogLog takes 4..16 index bits, ZetaSketch corrects the
// bias at normal precisions up to 18 (above, its raw estimate stands).
const (
	MinPrecision = 4
	MaxPrecision = 18
)

// blockSize is the number of trials summed together before the blocks'
// sums are added in order: the unit that makes the means independent of
// the number of goroutines that computed them.
const blockSize = 256

// Trials is the number of simulated sketches at precision p: 2^26/m
// (5·2^26 hashes inserted per precision), and 2^17 below precision 7,
// where a trial is short. The mean raw estimate's relative standard
// error, 1.04/√(m·T), is then 1.3e-4 from precision 7 up (7e-4 at 4).
func Trials(p int) int {
	if p < 7 {
		return 1 << 17
	}
	return 1 << 26 >> p
}

// Grid returns the true cardinalities at which the simulation records
// the raw estimate for precision p: every n from 0 to 5m when that is at
// most 200 steps, else 201 points 0, 5m/200, ..., 5m (rounded down).
func Grid(p int) []int {
	top := 5 << p
	steps := min(top, 200)
	g := make([]int, steps+1)
	for k := range g {
		g[k] = k * top / steps
	}
	return g
}

// Point is one grid point of the table: a true cardinality N and the
// mean over the trials of H = m²/Σ 2^-register (the raw estimate is α·H).
type Point struct {
	N int
	H float64
}

// Simulate runs trials trials at precision p (see the package doc) and
// returns the grid with the mean H at each point. The result depends only
// on p and trials. It runs in the calling goroutine; genbias, which
// simulates every precision, runs the blocks on every core and combines
// them with Means, to the same bits.
func Simulate(p, trials int) []Point {
	sums := make([][]float64, Blocks(trials))
	for b := range sums {
		sums[b] = SimulateBlock(p, trials, b)
	}
	return Means(p, trials, sums)
}

// Blocks is the number of blocks trials trials are simulated in.
func Blocks(trials int) int { return (trials + blockSize - 1) / blockSize }

// SimulateBlock runs block b of trials trials at precision p and returns
// the sum of H over its trials at each point of Grid(p).
func SimulateBlock(p, trials, b int) []float64 {
	grid := Grid(p)
	regs := make([]uint8, 1<<p)
	s := make([]float64, len(grid))
	for t := b * blockSize; t < min(trials, (b+1)*blockSize); t++ {
		trial(p, t, regs, grid, s)
	}
	return s
}

// Means is the grid of precision p with the mean H at each point, from
// the sums of every block in order (SimulateBlock's results, sums[b]
// block b's).
func Means(p, trials int, sums [][]float64) []Point {
	grid := Grid(p)
	pts := make([]Point, len(grid))
	for k, n := range grid {
		total := 0.0
		for _, s := range sums {
			total += s[k]
		}
		pts[k] = Point{N: n, H: total / float64(trials)}
	}
	return pts
}

// trial inserts grid[len(grid)-1] random hashes into regs (cleared
// first) and adds H at each grid point to sum. Σ 2^-register is kept
// exactly, as a 128-bit count of 2^-65.
func trial(p, t int, regs []uint8, grid []int, sum []float64) {
	clear(regs)
	m := float64(len(regs))
	// hi·2^64 + lo = Σ 2^(65-register): every register starts at 0.
	hi, lo := uint64(len(regs))<<1, uint64(0)
	state := splitmix(uint64(p)<<32 | uint64(t))
	n := 0
	for k, target := range grid {
		for ; n < target; n++ {
			state += golden
			h := mix(state)
			idx := h >> (64 - p)
			v := uint8(65 - p)
			if w := h << p; w != 0 {
				v = uint8(bits.LeadingZeros64(w) + 1)
			}
			if old := regs[idx]; v > old {
				regs[idx] = v
				hi, lo = sub(hi, lo, 65-int(old))
				hi, lo = add(hi, lo, 65-int(v))
			}
		}
		s := math.Ldexp(float64(hi), -1) + math.Ldexp(float64(lo), -65)
		sum[k] += m * m / s
	}
}

// add returns hi·2^64+lo + 2^e, for e in 0..65.
func add(hi, lo uint64, e int) (uint64, uint64) {
	if e >= 64 {
		return hi + 1<<(e-64), lo
	}
	lo, c := bits.Add64(lo, 1<<e, 0)
	return hi + c, lo
}

// sub returns hi·2^64+lo - 2^e, for e in 0..65.
func sub(hi, lo uint64, e int) (uint64, uint64) {
	if e >= 64 {
		return hi - 1<<(e-64), lo
	}
	lo, b := bits.Sub64(lo, 1<<e, 0)
	return hi - b, lo
}

// golden is SplitMix64's increment.
const golden = 0x9e3779b97f4a7c15

// mix is SplitMix64's output function.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// splitmix returns the state a trial's generator starts from.
func splitmix(seed uint64) uint64 { return mix(seed + golden) }
