package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/theta"
)

// The rank mode measures one against many (POST /v1/rank by
// intersection) on audiences shaped like the founding "Also Follows"
// question: a target of -target ids against -candidates audiences whose
// sizes are log-uniform between -min and -max ids. -lookalikes of them
// are true look-alikes, sharing 20% to 80% of the smaller of the two;
// the others are drawn from a universe of -universe users, so they share
// with the target what chance gives (about size × target / universe).
// Each candidate is held as an hll sketch (answered by the joint MLE, the
// rank's default) and as theta sketches, and the top K by estimate is
// held to the exact top K: precision@K (the share of the listed names
// that belong to the true top K), and how often a listed result called
// reliable has bounds that hold its true overlap.

// rkFlags is the rank mode's experiment.
type rkFlags struct {
	runs, target, cands, looks, min, max, log2m, workers int
	universe, sigmas                                     int
	seed                                                 uint64
	tops, lgKs                                           []int
}

// rkObs is one run's answer for one estimator and K.
type rkObs struct {
	hits, listed           int // listed names in the true top K, of listed
	reliable, reliableHeld int // listed results called reliable, and of those whose bounds hold the truth
	held                   int // listed results whose bounds hold the truth
}

type rkKey struct{ est, top int }

// runRank runs the rank mode: "intersim rank [flags]".
func runRank(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("intersim rank", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f rkFlags
	fs.IntVar(&f.runs, "runs", 3, "independent runs (a target and its candidates each)")
	fs.IntVar(&f.target, "target", 300_000, "ids in the target")
	fs.IntVar(&f.cands, "candidates", 10_000, "candidate audiences")
	fs.IntVar(&f.looks, "lookalikes", 50, "candidates that are true look-alikes")
	fs.IntVar(&f.min, "min", 1_000, "the smallest candidate's ids")
	fs.IntVar(&f.max, "max", 1_000_000, "the largest candidate's ids")
	fs.IntVar(&f.universe, "universe", 10_000_000, "users the other candidates are drawn from")
	fs.IntVar(&f.log2m, "log2m", 14, "the hll sketches' log2m")
	fs.IntVar(&f.sigmas, "theta-sigmas", 3, "standard deviations of theta's bounds (1 to 3; a rank uses 3)")
	fs.IntVar(&f.workers, "workers", runtime.GOMAXPROCS(0), "parallel workers")
	fs.Uint64Var(&f.seed, "seed", 1, "random seed")
	tops := fs.String("top", "10,50", "K, comma separated")
	lgKs := fs.String("lgk", "12,14", "theta sketches' lg_k, comma separated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if f.tops, err = parseList(*tops, strconv.Atoi); err != nil {
		return fmt.Errorf("-top: %w", err)
	}
	if f.lgKs, err = parseList(*lgKs, strconv.Atoi); err != nil {
		return fmt.Errorf("-lgk: %w", err)
	}
	switch {
	case f.runs < 1 || f.cands < 1 || f.looks < 0 || f.looks > f.cands:
		return fmt.Errorf("-runs and -candidates must be positive, -lookalikes at most -candidates")
	case f.min < 1 || f.max < f.min || f.target < 1 || f.universe < f.target+f.max:
		return fmt.Errorf("-min, -max and -target must be positive, -max at least -min, -universe at least -target + -max")
	case f.log2m < 10 || f.log2m > 16:
		return fmt.Errorf("-log2m must be 10 to 16")
	case f.sigmas < 1 || f.sigmas > 3:
		return fmt.Errorf("-theta-sigmas must be 1 to 3")
	}
	for _, k := range f.tops {
		if k < 1 || k > f.cands {
			return fmt.Errorf("-top: %d is not in 1..%d", k, f.cands)
		}
	}
	ests := []thEstimator{{name: "hll mle", bytes: hllBytes(f.log2m), meth: sketch.MethodMLE}}
	for _, k := range f.lgKs {
		ests = append(ests, thEstimator{name: fmt.Sprintf("theta lg_k %d", k), bytes: 8 << k, lgK: k})
	}
	obs := map[rkKey][]rkObs{}
	for run := range f.runs {
		if err := ctx.Err(); err != nil {
			return err
		}
		res, err := rankRun(f, ests, run)
		if err != nil {
			return err
		}
		for k, v := range res {
			obs[k] = append(obs[k], v)
		}
	}
	fmt.Fprintf(stdout, "A target of %d ids against %d candidates of %d to %d ids (log-uniform), %d of them look-alikes sharing 20–80%% of the smaller set, the others drawn from %d users; hll at log2m %d (joint MLE), ranked by intersection; %d runs. precision@K: listed names in the exact top K. Bounds: hll's 99.73%%, theta's %d standard deviations.\n\n",
		f.target, f.cands, f.min, f.max, f.looks, f.universe, f.log2m, f.runs, f.sigmas)
	fmt.Fprintf(stdout, "| estimator | bytes a sketch | K | precision@K (per run) | bounds hold | reliable | reliable held |\n|---|---|---|---|---|---|---|\n")
	for ei, e := range ests {
		for ti, k := range f.tops {
			var per []string
			var sum rkObs
			for _, o := range obs[rkKey{ei, ti}] {
				per = append(per, fmt.Sprintf("%.2f", float64(o.hits)/float64(o.listed)))
				sum.hits += o.hits
				sum.listed += o.listed
				sum.held += o.held
				sum.reliable += o.reliable
				sum.reliableHeld += o.reliableHeld
			}
			held := "–"
			if sum.reliable > 0 {
				held = fmt.Sprintf("%d/%d (%.1f%%)", sum.reliableHeld, sum.reliable, 100*float64(sum.reliableHeld)/float64(sum.reliable))
			}
			fmt.Fprintf(stdout, "| %s | %d | %d | %.2f (%s) | %d/%d | %d/%d | %s |\n", e.name, e.bytes, k,
				float64(sum.hits)/float64(sum.listed), strings.Join(per, ", "), sum.held, sum.listed, sum.reliable, sum.listed, held)
		}
	}
	return nil
}

// rkAnswer is one candidate's answer by one estimator.
type rkAnswer struct {
	cand              int
	est, lower, upper float64
	reliable          bool
}

// rankRun draws a target and its candidates, answers every pair by every
// estimator on f.workers goroutines, and holds each estimator's top K to
// the true top K.
func rankRun(f rkFlags, ests []thEstimator, run int) (map[rkKey]rkObs, error) {
	hp := hll.Params{Log2m: f.log2m, Regwidth: 5, Expthresh: -1, Sparse: true}
	g := seedFor(f.seed, run, 0, 1)
	target := make([]uint64, f.target)
	for i := range target {
		target[i] = g.next()
	}
	tHLL, err := hll.New(hp)
	if err != nil {
		return nil, err
	}
	tHLL.AddAll(target)
	tTheta := make([]*theta.Sketch, len(ests))
	for i, e := range ests {
		if e.lgK == 0 {
			continue
		}
		if tTheta[i], err = theta.New(theta.Params{LgK: e.lgK}); err != nil {
			return nil, err
		}
		for _, h := range target {
			tTheta[i].AddHash(h >> 1)
		}
	}
	// Each candidate's size and true overlap with the target.
	rng := rand.New(rand.NewPCG(f.seed, uint64(run)))
	size, truth := make([]int, f.cands), make([]int, f.cands)
	for c := range f.cands {
		size[c] = int(math.Round(float64(f.min) * math.Pow(float64(f.max)/float64(f.min), rng.Float64())))
		if c < f.looks {
			truth[c] = int(math.Round((0.2 + 0.6*rng.Float64()) * float64(min(size[c], f.target))))
		} else {
			truth[c] = binomial(rng, size[c], float64(f.target)/float64(f.universe))
		}
	}
	answers := make([][]rkAnswer, len(ests))
	for i := range answers {
		answers[i] = make([]rkAnswer, f.cands)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range max(f.workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The target's ids a candidate shares, drawn without
			// replacement by Floyd's algorithm from a stream of the
			// candidate's own, so a run does not depend on which worker
			// drew which candidate.
			marked := make([]bool, f.target)
			picked := make([]int, 0, f.target)
			ids := make([]uint64, 0, f.max)
			for c := range next {
				wr := rand.New(rand.NewPCG(f.seed^0x5eed, uint64(run)<<32|uint64(c)))
				picked = picked[:0]
				for j := f.target - truth[c]; j < f.target; j++ {
					r := wr.IntN(j + 1)
					if marked[r] {
						r = j
					}
					marked[r] = true
					picked = append(picked, r)
				}
				ids = ids[:0]
				for _, i := range picked {
					ids = append(ids, target[i])
					marked[i] = false
				}
				cg := seedFor(f.seed, run, c+1, 3)
				for len(ids) < size[c] {
					ids = append(ids, cg.next())
				}
				for ei, e := range ests {
					a, err := rankAnswerOf(e, hp, tHLL, tTheta[ei], ids, f.sigmas)
					if err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
						continue
					}
					a.cand = c
					answers[ei][c] = a
				}
			}
		}()
	}
	for c := range f.cands {
		next <- c
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	// The exact ranking: by true overlap, then by candidate (as the
	// rank breaks ties by name).
	order := make([]int, f.cands)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return truth[b] - truth[a] })
	out := map[rkKey]rkObs{}
	for ei := range ests {
		listed := slices.Clone(answers[ei])
		slices.SortStableFunc(listed, func(a, b rkAnswer) int {
			switch {
			case a.est > b.est:
				return -1
			case a.est < b.est:
				return 1
			}
			return a.cand - b.cand
		})
		for ti, k := range f.tops {
			// Ties at the K-th true overlap: any of them belongs.
			cut := truth[order[k-1]]
			var o rkObs
			for _, a := range listed[:k] {
				o.listed++
				t := float64(truth[a.cand])
				if truth[a.cand] >= cut {
					o.hits++
				}
				in := a.lower <= t && t <= a.upper
				if in {
					o.held++
				}
				if a.reliable {
					o.reliable++
					if in {
						o.reliableHeld++
					}
				}
			}
			out[rkKey{ei, ti}] = o
		}
	}
	return out, nil
}

// rankAnswerOf answers the target and a candidate of ids by e, as POST
// /v1/rank by intersection does: hll by sketch.Intersect with e's method,
// theta by DataSketches' set intersection judged by sketch.JudgeTheta.
func rankAnswerOf(e thEstimator, hp hll.Params, tHLL *hll.Sketch, tTheta *theta.Sketch, ids []uint64, sigmas int) (rkAnswer, error) {
	if e.lgK == 0 {
		c, err := hll.New(hp)
		if err != nil {
			return rkAnswer{}, err
		}
		c.AddAll(ids)
		x, err := sketch.Intersect([]string{"target", "candidate"}, []*hll.Sketch{tHLL, c}, e.meth)
		if err != nil {
			return rkAnswer{}, err
		}
		return rkAnswer{est: x.Estimate, lower: x.Lower, upper: x.Upper,
			reliable: x.Verdict == sketch.VerdictReliable || x.Verdict == sketch.VerdictExact}, nil
	}
	c, err := theta.New(theta.Params{LgK: e.lgK})
	if err != nil {
		return rkAnswer{}, err
	}
	for _, h := range ids {
		c.AddHash(h >> 1)
	}
	x, err := theta.Intersect(tTheta, c)
	if err != nil {
		return rkAnswer{}, err
	}
	est := x.Estimate()
	lo, _ := x.LowerBound(sigmas)
	hi, _ := x.UpperBound(sigmas)
	v, _, _ := sketch.JudgeTheta(est, lo, hi, x.Retained(), x.Theta() >= 1 && lo == hi)
	return rkAnswer{est: est, lower: lo, upper: hi, reliable: v == sketch.VerdictReliable || v == sketch.VerdictExact}, nil
}

// binomial draws Binomial(n, p) for small p by the normal approximation
// above 50 expected successes and by counting geometric gaps below.
func binomial(rng *rand.Rand, n int, p float64) int {
	mean := float64(n) * p
	if mean > 50 {
		x := math.Round(mean + math.Sqrt(mean*(1-p))*rng.NormFloat64())
		return int(min(max(x, 0), float64(n)))
	}
	k, i := 0, 0
	lq := math.Log1p(-p)
	for {
		i += 1 + int(math.Log(1-rng.Float64())/lq)
		if i > n {
			return k
		}
		k++
	}
}
