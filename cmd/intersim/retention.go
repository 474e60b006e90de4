package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sketchd/sketchd/internal/cohort"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
)

// The retention mode simulates what POST /v1/retention and POST
// /v1/funnel answer, on users whose activity is known, and measures how
// often each cell's bounds hold the truth.
//
// A run has cohorts+offsets periods. Cohort c is the users new in period
// c (their number drawn in [small, 10·small]); each is active again k
// periods later with probability base·k^-decay, base and decay drawn per
// run (base in [0.02, 0.6], decay in [0.2, 1.2]), so overlaps range from
// a fraction of a percent to most of a cohort. Old users (4·small of
// them, from before the first period) are active in each period with a
// probability q drawn in [0.01, 0.3]. The set of a period is everyone
// active in it; cell (i, k) is |period i ∩ period i+k| and its truth is
// counted from the users' activity bitmaps. Funnels (funnelsPerRun a
// run): 4 steps of a population of small·10 users, each step keeping a
// drawn share in [0.05, 0.8] of the previous step's users and adding as
// many again of users who skipped it (they visit the step's page, not
// the funnel).

// retentionFlags is the retention mode's experiment.
type retentionFlags struct {
	runs, cohorts, offsets, small int
	log2ms                        []int
	seed                          uint64
	workers                       int
}

// cellObs is one retention cell or funnel step, estimated and true.
type cellObs struct {
	log2m                    int
	truth, raw, est, err     float64
	lower, upper             float64
	reliable                 bool
	share                    cohort.Ratio // the share of the cohort, or the conversion from the previous step
	shareTruth, overlapTruth float64
}

// runRetention parses the mode's flags, simulates and writes the report.
func runRetention(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("intersim retention", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f retentionFlags
	fs.IntVar(&f.runs, "runs", 40, "independent runs (each one table and five funnels, estimated at each log2m)")
	fs.IntVar(&f.cohorts, "cohorts", 12, "cohorts (rows) per table")
	fs.IntVar(&f.offsets, "offsets", 12, "periods after each cohort (columns)")
	fs.IntVar(&f.small, "small", 20000, "the smallest cohort; cohorts have small..10·small users")
	fs.Uint64Var(&f.seed, "seed", 1, "random seed")
	fs.IntVar(&f.workers, "workers", runtime.GOMAXPROCS(0), "parallel workers")
	log2ms := fs.String("log2m", "12,14", "register counts (log2m), comma separated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if f.log2ms, err = parseList(*log2ms, strconv.Atoi); err != nil {
		return fmt.Errorf("-log2m: %w", err)
	}
	switch {
	case f.runs < 1 || f.small < 1:
		return errors.New("-runs and -small must be positive")
	case f.cohorts < 1 || f.cohorts > cohort.MaxCohorts || f.offsets < 1 || f.offsets > cohort.MaxOffsets || f.cohorts+f.offsets > 64:
		return fmt.Errorf("-cohorts and -offsets must be 1..%d and together at most 64", cohort.MaxCohorts)
	}
	for _, lg := range f.log2ms {
		if lg < 4 || lg > genLog2m {
			return fmt.Errorf("-log2m %d outside 4..%d", lg, genLog2m)
		}
	}
	start := time.Now()
	cells, steps, news, err := simulateRetention(ctx, f)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "intersim retention: %d runs in %s\n", f.runs, time.Since(start).Round(time.Second))
	return reportRetention(stdout, f, cells, steps, news)
}

// simulateRetention runs every run on f.workers goroutines.
func simulateRetention(ctx context.Context, f retentionFlags) (cells, steps, news []cellObs, err error) {
	runs := make(chan int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range max(f.workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for run := range runs {
				c, s, n, e := retentionRun(f, run)
				mu.Lock()
				cells, steps, news = append(cells, c...), append(steps, s...), append(news, n...)
				if e != nil && err == nil {
					err = e
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for run := range f.runs {
		select {
		case runs <- run:
		case <-ctx.Done():
			break feed
		}
	}
	close(runs)
	wg.Wait()
	if err == nil {
		err = ctx.Err()
	}
	return cells, steps, news, err
}

// retentionRun simulates one table and one funnel and estimates them at
// every log2m.
func retentionRun(f retentionFlags, run int) (cells, steps, news []cellObs, err error) {
	rng := rand.New(rand.NewPCG(f.seed, uint64(run)))
	hashes := seedFor(f.seed, run, 0, 7)
	T := f.cohorts + f.offsets
	base, decay, q := 0.02+0.58*rng.Float64(), 0.2+rng.Float64(), 0.01+0.29*rng.Float64()
	regs := make([][]uint8, T)
	for j := range regs {
		regs[j] = make([]uint8, 1<<genLog2m)
	}
	both := make([][]float64, T)  // both[i][j]: users active in i and j
	fresh := make([][]float64, T) // fresh[i][j]: … and in none of the lookback periods before i
	for i := range both {
		both[i], fresh[i] = make([]float64, T), make([]float64, T)
	}
	user := func(mask uint64) {
		h := hashes.next()
		for j := range T {
			if mask&(1<<j) == 0 {
				continue
			}
			addHash(regs[j], h)
			isNew := j >= lookback && mask&(uint64(1)<<lookback-1)<<(j-lookback) == 0
			for k := j; k < T; k++ {
				if mask&(1<<k) != 0 {
					both[j][k]++
					if isNew {
						fresh[j][k]++
					}
				}
			}
		}
	}
	for range 4 * f.small { // old users
		var m uint64
		for j := range T {
			if rng.Float64() < q {
				m |= 1 << j
			}
		}
		if m != 0 {
			user(m)
		}
	}
	for c := range T { // cohort c: new in period c
		n := f.small + rng.IntN(9*f.small+1)
		for range n {
			m := uint64(1) << c
			for k := 1; c+k < T; k++ {
				if rng.Float64() < base*math.Pow(float64(k), -decay) {
					m |= 1 << (c + k)
				}
			}
			user(m)
		}
	}
	full := make([]*hll.Sketch, T)
	for j := range T {
		if full[j], err = sketchOf(regs[j]); err != nil {
			return nil, nil, nil, err
		}
	}
	for _, lg := range f.log2ms {
		periods := make([]cohort.Set, T)
		for j := range T {
			h, err := full[j].Fold(lg, regwidth)
			if err != nil {
				return nil, nil, nil, err
			}
			periods[j] = cohort.Set{Label: "p" + strconv.Itoa(j), Sketch: sketch.NewHLL(h)}
		}
		if news, err = newCohorts(periods, full, lg, f, both, fresh, news); err != nil {
			return nil, nil, nil, err
		}
		tb, err := cohort.Retention(periods, f.cohorts, f.offsets, "")
		if err != nil {
			return nil, nil, nil, fmt.Errorf("run %d log2m %d: %w", run, lg, err)
		}
		for i, row := range tb.Rows {
			for _, c := range row.Cells {
				x, truth := c.Intersection, both[i][i+c.Offset]
				cells = append(cells, cellObs{
					log2m: lg, truth: truth, raw: x.RawEstimate, est: x.Estimate, err: x.Error, lower: x.Lower, upper: x.Upper,
					reliable: x.Reliable, share: c.Share, shareTruth: truth / both[i][i], overlapTruth: truth / min(both[i][i], both[i+c.Offset][i+c.Offset]),
				})
			}
		}
	}
	for fi := range funnelsPerRun {
		s, err := funnelRun(f, run, fi, rng)
		if err != nil {
			return nil, nil, nil, err
		}
		steps = append(steps, s...)
	}
	return cells, steps, news, nil
}

// funnelsPerRun is how many funnels a run simulates.
const funnelsPerRun = 5

// lookback is how many periods before a cohort's a "new" user was not
// seen in.
const lookback = 7

// newCohorts estimates the cells of "new in period i" cohorts, the users
// active in i and in none of the lookback periods H before it, as the
// difference of two intersections: |A_i ∩ A_{i+k}| − |A_i ∩ H ∩ A_{i+k}|,
// with the error √(Δ₁² + Δ₂²). sketchd does not offer it; the simulation
// measures how wide that error is (docs/series.md).
func newCohorts(periods []cohort.Set, full []*hll.Sketch, lg int, f retentionFlags, both, fresh [][]float64, out []cellObs) ([]cellObs, error) {
	for i := lookback; i < f.cohorts; i++ {
		h, err := full[i-lookback].Fold(lg, regwidth)
		if err != nil {
			return nil, err
		}
		for j := i - lookback + 1; j < i; j++ {
			p, err := full[j].Fold(lg, regwidth)
			if err != nil {
				return nil, err
			}
			if err := h.Union(p); err != nil {
				return nil, err
			}
		}
		a, _ := sketch.HLLOf(periods[i].Sketch)
		for k := 1; k <= f.offsets && i+k < len(periods); k++ {
			b, _ := sketch.HLLOf(periods[i+k].Sketch)
			x1, err := sketch.Intersect([]string{"a", "b"}, []*hll.Sketch{a, b}, "")
			if err != nil {
				return nil, err
			}
			x2, err := sketch.Intersect([]string{"a", "h", "b"}, []*hll.Sketch{a, h, b}, "")
			if err != nil {
				return nil, err
			}
			d, e := x1.RawEstimate-x2.RawEstimate, math.Hypot(x1.Error, x2.Error)
			out = append(out, cellObs{
				log2m: lg, truth: fresh[i][i+k], raw: d, est: d, err: e, lower: d - sketch.BoundsZ*e, upper: d + sketch.BoundsZ*e,
				reliable: d > sketch.BoundsZ*e, overlapTruth: fresh[i][i+k] / both[i][i],
			})
		}
	}
	return out, nil
}

// funnelRun simulates one 4-step funnel and estimates it at every log2m.
func funnelRun(f retentionFlags, run, fi int, rng *rand.Rand) ([]cellObs, error) {
	const nSteps = 4
	hashes := seedFor(f.seed, run, fi, 9)
	regs := make([][]uint8, nSteps)
	for k := range regs {
		regs[k] = make([]uint8, 1<<genLog2m)
	}
	reach := make([]float64, nSteps)
	in := make([]uint64, 10*f.small) // the funnel's users, by hash
	for i := range in {
		in[i] = hashes.next()
	}
	for k := range nSteps {
		if k > 0 {
			keep := 0.05 + 0.75*rng.Float64()
			kept := in[:0]
			for _, h := range in {
				if rng.Float64() < keep {
					kept = append(kept, h)
				}
			}
			in = kept
			for range len(in) { // as many again who skipped the funnel
				addHash(regs[k], hashes.next())
			}
		}
		reach[k] = float64(len(in))
		for _, h := range in {
			addHash(regs[k], h)
		}
	}
	var out []cellObs
	for _, lg := range f.log2ms {
		sets := make([]cohort.Set, nSteps)
		for k := range nSteps {
			full, err := sketchOf(regs[k])
			if err != nil {
				return nil, err
			}
			h, err := full.Fold(lg, regwidth)
			if err != nil {
				return nil, err
			}
			sets[k] = cohort.Set{Label: "s" + strconv.Itoa(k), Sketch: sketch.NewHLL(h)}
		}
		st, err := cohort.Funnel(sets, "")
		if err != nil {
			return nil, fmt.Errorf("run %d log2m %d funnel: %w", run, lg, err)
		}
		for k := 1; k < nSteps; k++ {
			x := st[k].Intersection
			out = append(out, cellObs{
				log2m: lg, truth: reach[k], raw: x.RawEstimate, est: x.Estimate, err: x.Error, lower: x.Lower, upper: x.Upper,
				reliable: x.Reliable, share: *st[k].Conversion, shareTruth: reach[k] / reach[k-1], overlapTruth: reach[k] / reach[k-1],
			})
		}
	}
	return out, nil
}

// coverage summarises observations.
type coverage struct {
	n, reliable                   int
	covered, relCovered           int
	shareCovered, relShareCovered int
	within                        [3]int // |raw - truth| ≤ 1, 2, 3 errors
	shareWithin                   [3]int
}

func summariseCells(os []cellObs) coverage {
	var c coverage
	for _, o := range os {
		c.n++
		in := o.lower <= o.truth && o.truth <= o.upper
		sin := o.share.Lower <= o.shareTruth && o.shareTruth <= o.share.Upper
		if in {
			c.covered++
		}
		if sin {
			c.shareCovered++
		}
		if o.reliable {
			c.reliable++
			if in {
				c.relCovered++
			}
			if sin {
				c.relShareCovered++
			}
		}
		for z := range 3 {
			if math.Abs(o.raw-o.truth) <= float64(z+1)*o.err {
				c.within[z]++
			}
			if math.Abs(o.share.Estimate-o.shareTruth) <= float64(z+1)*o.share.Error {
				c.shareWithin[z]++
			}
		}
	}
	return c
}

// reportRetention writes the Markdown report.
func reportRetention(w io.Writer, f retentionFlags, cells, steps, news []cellObs) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Retention: %d runs, %d cohorts × %d periods each, cohorts of %d to %d new users plus %d old ones, regwidth %d, seed %d.\n\n",
		f.runs, f.cohorts, f.offsets, f.small, 10*f.small, 4*f.small, regwidth, f.seed)
	table := func(title string, os []cellObs, what string) {
		fmt.Fprintf(&b, "### %s\n\n", title)
		fmt.Fprintf(&b, "| log2m | overlap | %s | reliable | bounds cover | … of reliable | within 1Δ / 2Δ / 3Δ | %s bounds cover (reliable) | %s within 1σ / 2σ / 3σ |\n", what, shareWord(what), shareWord(what))
		b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
		for _, lg := range f.log2ms {
			for _, bin := range overlapBins {
				var sel []cellObs
				for _, o := range os {
					if o.log2m == lg && o.overlapTruth >= bin.lo && o.overlapTruth < bin.hi {
						sel = append(sel, o)
					}
				}
				if len(sel) == 0 {
					continue
				}
				c := summariseCells(sel)
				fmt.Fprintf(&b, "| %d | %s | %d | %.1f%% | %.2f%% | %s | %.1f / %.1f / %.2f%% | %s | %.1f / %.1f / %.2f%% |\n",
					lg, bin.name, c.n, pct(c.reliable, c.n), pct(c.covered, c.n), pctOf(c.relCovered, c.reliable),
					pct(c.within[0], c.n), pct(c.within[1], c.n), pct(c.within[2], c.n),
					pctOf(c.relShareCovered, c.reliable), pct(c.shareWithin[0], c.n), pct(c.shareWithin[1], c.n), pct(c.shareWithin[2], c.n))
			}
			c := summariseCells(filterLog2m(os, lg))
			fmt.Fprintf(&b, "| %d | **all** | %d | %.1f%% | %.2f%% | %s | %.1f / %.1f / %.2f%% | %s | %.1f / %.1f / %.2f%% |\n",
				lg, c.n, pct(c.reliable, c.n), pct(c.covered, c.n), pctOf(c.relCovered, c.reliable),
				pct(c.within[0], c.n), pct(c.within[1], c.n), pct(c.within[2], c.n),
				pctOf(c.relShareCovered, c.reliable), pct(c.shareWithin[0], c.n), pct(c.shareWithin[1], c.n), pct(c.shareWithin[2], c.n))
		}
		b.WriteString("\n")
	}
	table("Retention cells", cells, "cells")
	table("Funnel steps 2–4", steps, "steps")
	newCohortReport(&b, f, news)
	b.WriteString("Overlap is the cell's true intersection over the smaller of its two sets (for funnel steps, the true conversion). " +
		"The bounds are the intersection's [lower, upper] (±3Δ); a normal error would put 68.3 / 95.4 / 99.7% of the raw estimates within 1, 2 and 3 envelopes. " +
		"Shares (conversions) are checked against the true share of the cohort (of the previous step).\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// overlapBins group cells by their true overlap.
var overlapBins = []struct {
	name   string
	lo, hi float64
}{{"< 1%", 0, 0.01}, {"1–5%", 0.01, 0.05}, {"5–20%", 0.05, 0.2}, {"≥ 20%", 0.2, 2}}

func shareWord(what string) string {
	if what == "steps" {
		return "conversion"
	}
	return "share"
}

func filterLog2m(os []cellObs, lg int) []cellObs {
	var out []cellObs
	for _, o := range os {
		if o.log2m == lg {
			out = append(out, o)
		}
	}
	return out
}

// pctOf is pct as text, "–" when there is nothing to divide.
func pctOf(a, n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f%%", pct(a, n))
}

// newCohortReport writes what the difference-of-intersections estimator
// of new-user cohorts gives: how wide its error is against the truth.
func newCohortReport(b *strings.Builder, f retentionFlags, news []cellObs) {
	fmt.Fprintf(b, "### New-user cohorts (not offered): |A_i ∩ A_{i+k}| − |A_i ∩ H ∩ A_{i+k}|, H the %d periods before\n\n", lookback)
	b.WriteString("| log2m | cells | median truth / cohort | median 3Δ / truth | 3Δ below the truth | median \\|estimate − truth\\| / truth | bounds cover | within 1Δ / 2Δ / 3Δ |\n|---|---|---|---|---|---|---|---|\n")
	for _, lg := range f.log2ms {
		sel := filterLog2m(news, lg)
		if len(sel) == 0 {
			continue
		}
		var share, width, miss []float64
		narrow := 0
		for _, o := range sel {
			share = append(share, o.overlapTruth)
			if o.truth > 0 {
				width = append(width, sketch.BoundsZ*o.err/o.truth)
				miss = append(miss, math.Abs(o.est-o.truth)/o.truth)
			}
			if sketch.BoundsZ*o.err < o.truth {
				narrow++
			}
		}
		c := summariseCells(sel)
		fmt.Fprintf(b, "| %d | %d | %.2f%% | %.3g | %.1f%% | %.3g | %.2f%% | %.1f / %.1f / %.2f%% |\n", lg, c.n, 100*quantile(share, 0.5), quantile(width, 0.5), pct(narrow, c.n), quantile(miss, 0.5), pct(c.covered, c.n),
			pct(c.within[0], c.n), pct(c.within[1], c.n), pct(c.within[2], c.n))
	}
	b.WriteString("\n")
}
