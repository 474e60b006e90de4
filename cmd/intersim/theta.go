package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"sync"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/theta"
)

// The theta mode answers "for small overlaps, which estimator should a
// ranking use?": the same pairs are held as hll sketches (intersected by
// the joint MLE and by inclusion–exclusion, as POST /v1/intersection and
// /v1/rank do) and as theta sketches (DataSketches' set intersection,
// judged by sketch.JudgeTheta as both routes judge it), and each answer
// is held to the truth. A pair is a target of -target ids and a
// candidate of ratio × target ids, sharing overlap × target of them.

// thFlags is the theta mode's experiment.
type thFlags struct {
	runs, target, log2m, workers int
	seed                         uint64
	ratios                       []int
	overlaps                     []float64
	lgKs                         []int
}

// thEstimator names one estimator of the comparison.
type thEstimator struct {
	name  string
	bytes int // the memory of one sketch, about
	lgK   int // theta's, 0 for hll
	meth  sketch.Method
}

// thObs is one answer held to its truth.
type thObs struct {
	relErr            float64 // |estimate − truth| / truth
	covered, reliable bool
}

// runTheta runs the theta mode: "intersim theta [flags]".
func runTheta(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("intersim theta", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f thFlags
	fs.IntVar(&f.runs, "runs", 30, "independent runs per cell")
	fs.IntVar(&f.target, "target", 100_000, "ids in the target")
	fs.IntVar(&f.log2m, "log2m", 14, "the hll sketches' log2m")
	fs.IntVar(&f.workers, "workers", runtime.GOMAXPROCS(0), "parallel workers")
	fs.Uint64Var(&f.seed, "seed", 1, "random seed")
	ratios := fs.String("ratios", "1,10", "candidate size / target size")
	overlaps := fs.String("overlaps", "0.001,0.005,0.01,0.05,0.2,0.5", "shared ids / target size")
	lgKs := fs.String("lgk", "12,14", "theta sketches' lg_k, comma separated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if f.ratios, err = parseList(*ratios, strconv.Atoi); err != nil {
		return fmt.Errorf("-ratios: %w", err)
	}
	if f.overlaps, err = parseList(*overlaps, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }); err != nil {
		return fmt.Errorf("-overlaps: %w", err)
	}
	if f.lgKs, err = parseList(*lgKs, strconv.Atoi); err != nil {
		return fmt.Errorf("-lgk: %w", err)
	}
	if f.runs < 1 || f.target < 100 || f.log2m < 10 || f.log2m > 16 {
		return fmt.Errorf("-runs must be positive, -target at least 100, -log2m 10 to 16")
	}
	for _, o := range f.overlaps {
		if o <= 0 || o > 1 {
			return fmt.Errorf("-overlaps: %v is not in (0, 1]", o)
		}
	}
	ests := []thEstimator{
		{name: "hll mle", bytes: hllBytes(f.log2m), meth: sketch.MethodMLE},
		{name: "hll inclusion–exclusion", bytes: hllBytes(f.log2m), meth: sketch.MethodInclusionExclusion},
	}
	for _, k := range f.lgKs {
		ests = append(ests, thEstimator{name: fmt.Sprintf("theta lg_k %d", k), bytes: 8 << k, lgK: k})
	}
	obs, err := simulateTheta(ctx, f, ests)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Target %d ids; hll at log2m %d; %d runs per cell. Relative error |estimate − truth| / truth (median, 95th percentile), the share of answers whose bounds hold the truth (hll: 99.73%% bounds; theta: two standard deviations), and the share called reliable with how many of those the bounds hold.\n\n",
		f.target, f.log2m, f.runs)
	for qi, q := range f.ratios {
		fmt.Fprintf(stdout, "#### Candidate %d× the target\n\n", q)
		fmt.Fprintf(stdout, "| overlap | shared ids | estimator | bytes | median error | p95 error | bounds hold | reliable | reliable held |\n|---|---|---|---|---|---|---|---|---|\n")
		for oi, o := range f.overlaps {
			for ei, e := range ests {
				cell := obs[thKey{qi, oi, ei}]
				var errs []float64
				covered, reliable, relCovered := 0, 0, 0
				for _, x := range cell {
					errs = append(errs, x.relErr)
					if x.covered {
						covered++
					}
					if x.reliable {
						reliable++
						if x.covered {
							relCovered++
						}
					}
				}
				n := len(cell)
				held := "–"
				if reliable > 0 {
					held = fmt.Sprintf("%d/%d", relCovered, reliable)
				}
				fmt.Fprintf(stdout, "| %g | %d | %s | %d | %.1f%% | %.1f%% | %.0f%% | %.0f%% | %s |\n", o, int(o*float64(f.target)), e.name, e.bytes,
					100*quantile(errs, 0.5), 100*quantile(errs, 0.95), 100*float64(covered)/float64(n), 100*float64(reliable)/float64(n), held)
			}
		}
		fmt.Fprintln(stdout)
	}
	return nil
}

// hllBytes is the size of a FULL hll sketch of regwidth 5.
func hllBytes(log2m int) int { return 3 + 5<<log2m/8 }

type thKey struct{ ratio, overlap, est int }

// simulateTheta draws every (run, ratio) pair family and answers each
// overlap by each estimator.
func simulateTheta(ctx context.Context, f thFlags, ests []thEstimator) (map[thKey][]thObs, error) {
	type job struct{ run, ratio int }
	jobs := make(chan job)
	out := map[thKey][]thObs{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	for range max(f.workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				res, err := thetaRun(f, ests, j.run, j.ratio)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				for k, v := range res {
					out[k] = append(out[k], v...)
				}
				mu.Unlock()
			}
		}()
	}
	for run := range f.runs {
		for qi := range f.ratios {
			if ctx.Err() != nil {
				break
			}
			jobs <- job{run, qi}
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return out, ctx.Err()
}

// thetaRun draws one candidate and, for each overlap, a target sharing
// its first overlap × target hashes, and answers each by each estimator.
func thetaRun(f thFlags, ests []thEstimator, run, qi int) (map[thKey][]thObs, error) {
	q := f.ratios[qi]
	hp := hll.Params{Log2m: f.log2m, Regwidth: 5, Expthresh: -1, Sparse: true}
	g := seedFor(f.seed, run, q, 1)
	cand := make([]uint64, q*f.target)
	for i := range cand {
		cand[i] = g.next()
	}
	cHLL, err := hll.New(hp)
	if err != nil {
		return nil, err
	}
	cHLL.AddAll(cand)
	cTheta := make([]*theta.Sketch, len(ests))
	for i, e := range ests {
		if e.lgK == 0 {
			continue
		}
		if cTheta[i], err = theta.New(theta.Params{LgK: e.lgK}); err != nil {
			return nil, err
		}
		for _, h := range cand {
			cTheta[i].AddHash(h >> 1)
		}
	}
	out := map[thKey][]thObs{}
	for oi, o := range f.overlaps {
		shared := int(o * float64(f.target))
		tg := seedFor(f.seed, run, q, 2+oi)
		tHLL, err := hll.New(hp)
		if err != nil {
			return nil, err
		}
		target := make([]uint64, f.target)
		copy(target, cand[:shared])
		for i := shared; i < f.target; i++ {
			target[i] = tg.next()
		}
		tHLL.AddAll(target)
		truth := float64(shared)
		for ei, e := range ests {
			var est, lo, hi float64
			var v sketch.Verdict
			if e.lgK == 0 {
				x, err := sketch.Intersect([]string{"target", "candidate"}, []*hll.Sketch{tHLL, cHLL}, e.meth)
				if err != nil {
					return nil, err
				}
				est, lo, hi, v = x.Estimate, x.Lower, x.Upper, x.Verdict
			} else {
				tt, err := theta.New(theta.Params{LgK: e.lgK})
				if err != nil {
					return nil, err
				}
				for _, h := range target {
					tt.AddHash(h >> 1)
				}
				x, err := theta.Intersect(tt, cTheta[ei])
				if err != nil {
					return nil, err
				}
				est = x.Estimate()
				lo, _ = x.LowerBound(2)
				hi, _ = x.UpperBound(2)
				v, _, _ = sketch.JudgeTheta(est, lo, hi, x.Retained(), x.Theta() >= 1 && lo == hi)
			}
			out[thKey{qi, oi, ei}] = append(out[thKey{qi, oi, ei}], thObs{
				relErr:   math.Abs(est-truth) / truth,
				covered:  lo <= truth && truth <= hi,
				reliable: v == sketch.VerdictReliable || v == sketch.VerdictExact,
			})
		}
	}
	return out, nil
}
