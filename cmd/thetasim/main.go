// Command thetasim measures theta-sketch intersections against HLL's
// joint maximum-likelihood estimator at about equal memory, on random sets
// of known overlap: the median and 95th-percentile relative error of each,
// and how often each one's two-sigma interval covers the truth (theta:
// DataSketches' binomial bounds at 2 standard deviations; HLL: estimate ±
// 2 × its one-sigma error). It prints a Markdown table for docs/theta.md.
//
// Sets are drawn as random 64-bit hashes (both sketch kinds take a hash
// directly), so that sets of 10^8 elements take seconds: B has ratio·|A|
// elements, and for each overlap o, A is the first o·|A| hashes of B plus
// fresh ones, so |A∩B| = o·|A| exactly.
//
// Usage:
//
//	go run ./cmd/thetasim -runs 50 -small 100000 > results.md
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/theta"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "thetasim:", err)
		os.Exit(1)
	}
}

type obs struct {
	thetaErr, hllErr     float64 // relative errors
	thetaCover, hllCover bool
	thetaWidth, hllWidth float64 // interval width / truth
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("thetasim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runs := fs.Int("runs", 50, "independent runs per cell")
	small := fs.Int("small", 100_000, "size of the smaller set A")
	lgK := fs.Int("lgk", 12, "theta lg_k")
	log2m := fs.Int("log2m", 16, "HLL log2m (regwidth 5)")
	seed := fs.Uint64("seed", 1, "random seed")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "parallel workers")
	ratiosFlag := fs.String("ratios", "1,10,100,1000", "cardinality ratios |B|/|A|")
	overlapsFlag := fs.String("overlaps", "0.001,0.01,0.05,0.1,0.5,1", "overlaps |A∩B|/|A|")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ratios, err := parseList(*ratiosFlag, strconv.Atoi)
	if err != nil {
		return err
	}
	overlaps, err := parseList(*overlapsFlag, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
	if err != nil {
		return err
	}
	tp := theta.Params{LgK: *lgK}
	hp := hll.Params{Log2m: *log2m, Regwidth: 5, Expthresh: 0, Sparse: false}
	if err := tp.Validate(); err != nil {
		return err
	}
	start := time.Now()
	// res[ratio][overlap] collects one obs per run.
	res := make([][][]obs, len(ratios))
	for i := range res {
		res[i] = make([][]obs, len(overlaps))
	}
	type job struct{ ri, run int }
	jobs := make(chan job)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	for range max(*workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				o, err := simulate(*seed, j.ri, j.run, ratios[j.ri], *small, overlaps, tp, hp)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				for oi := range o {
					res[j.ri][oi] = append(res[j.ri][oi], o[oi])
				}
				mu.Unlock()
			}
		}()
	}
	for ri := range ratios {
		for r := range *runs {
			jobs <- job{ri, r}
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	thetaBytes := theta.MaxSizeBytes(theta.Params{LgK: *lgK}) - 8*(tp.MaxRetained()-tp.K())
	fmt.Fprintf(stdout, "Grid: %d runs per cell, |A| = %d, |B| = ratio·|A|; theta lg_k %d (k = %d, %d bytes once estimating) vs HLL log2m %d regwidth 5 (%d bytes), MLE; seed %d; ran in %s.\n\n",
		*runs, *small, *lgK, tp.K(), thetaBytes, *log2m, (1<<*log2m)*5/8, *seed, time.Since(start).Round(time.Second))
	fmt.Fprintln(stdout, "| ratio | overlap | \\|A∩B\\| | theta median | theta p95 | theta 2σ covers | HLL MLE median | HLL MLE p95 | HLL ±2Δ covers |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|---|")
	var tc, hc, n int
	for ri, ratio := range ratios {
		for oi, ov := range overlaps {
			o := res[ri][oi]
			te, he := make([]float64, len(o)), make([]float64, len(o))
			tcov, hcov := 0, 0
			for i, x := range o {
				te[i], he[i] = x.thetaErr, x.hllErr
				if x.thetaCover {
					tcov++
				}
				if x.hllCover {
					hcov++
				}
			}
			tc, hc, n = tc+tcov, hc+hcov, n+len(o)
			fmt.Fprintf(stdout, "| %d | %g | %d | %s | %s | %.1f%% | %s | %s | %.1f%% |\n", ratio, ov, int(ov*float64(*small)),
				pct(quantile(te, 0.5)), pct(quantile(te, 0.95)), 100*float64(tcov)/float64(len(o)),
				pct(quantile(he, 0.5)), pct(quantile(he, 0.95)), 100*float64(hcov)/float64(len(o)))
		}
	}
	fmt.Fprintf(stdout, "\nOver all %d observations: theta's 2σ bounds covered %.1f%%, HLL MLE's ±2Δ %.1f%%.\n",
		n, 100*float64(tc)/float64(n), 100*float64(hc)/float64(n))
	return nil
}

func pct(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%.0f×", v)
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

func quantile(v []float64, q float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// simulate builds B and, for each overlap, A, and intersects both kinds.
func simulate(seed uint64, ri, run, ratio, small int, overlaps []float64, tp theta.Params, hp hll.Params) ([]obs, error) {
	r := rand.New(rand.NewPCG(seed, uint64(ri)<<32|uint64(run)))
	nb := ratio * small
	tb, _ := theta.New(tp)
	hb, err := hll.New(hp)
	if err != nil {
		return nil, err
	}
	shared := make([]uint64, small) // B's first |A| hashes, the pool of common ones
	for i := range nb {
		h := r.Uint64()
		if i < small {
			shared[i] = h
		}
		tb.AddHash(h >> 1)
		hb.AddHash(h)
	}
	out := make([]obs, len(overlaps))
	for oi, ov := range overlaps {
		c := int(ov * float64(small))
		ta, _ := theta.New(tp)
		ha, _ := hll.New(hp)
		for i := range small {
			h := r.Uint64()
			if i < c {
				h = shared[i]
			}
			ta.AddHash(h >> 1)
			ha.AddHash(h)
		}
		in, err := theta.Intersect(ta, tb)
		if err != nil {
			return nil, err
		}
		lo, _ := in.LowerBound(2)
		hi, _ := in.UpperBound(2)
		hr, err := sketch.Intersect([]string{"a", "b"}, []*hll.Sketch{ha, hb}, sketch.MethodMLE)
		if err != nil {
			return nil, err
		}
		truth := float64(c)
		out[oi] = obs{
			thetaErr:   math.Abs(in.Estimate()-truth) / truth,
			hllErr:     math.Abs(hr.Estimate-truth) / truth,
			thetaCover: lo <= truth && truth <= hi,
			hllCover:   math.Abs(hr.RawEstimate-truth) <= 2*hr.Error,
			thetaWidth: (hi - lo) / truth,
			hllWidth:   4 * hr.Error / truth,
		}
	}
	return out, nil
}

func parseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		v, err := parse(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q: %w", f, err)
		}
		out = append(out, v)
	}
	return out, nil
}
