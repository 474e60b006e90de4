package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sketchd/sketchd/internal/cohort"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
)

// The containment mode measures the verdicts where one set lies (nearly)
// inside another, the case an outside audit found thrown away: a small
// set of which a share lies in a large one, the small sketch held
// exactly (EXPLICIT) or in registers, intersected by both methods; and
// funnels whose last step (held exactly) lies partly or wholly inside the
// steps before. For each, how often the answer is spurious, says the
// small set lies within the large one, is reliable, and holds the truth.

// ctCase is one kind of question of the containment mode.
type ctCase struct {
	// pair: small ids of which share lie in the large set; funnel: steps
	// of large and large/2 users (the second inside the first), then
	// small of which share lie in the second.
	funnel       bool
	small, large int
	share        float64
	method       sketch.Method
}

func (c ctCase) String() string {
	if c.funnel {
		return fmt.Sprintf("funnel %d ⊃ %d, last step %d", c.large, c.large/2, c.small)
	}
	return fmt.Sprintf("%d in %d", c.small, c.large)
}

// ctObs is one answer: its truth, and what it said.
type ctObs struct {
	truth, est, lower, upper    float64
	spurious, within, reliable  bool
	explicit                    bool // the small sketch was EXPLICIT
	method                      sketch.Method
	withinName, smallName, text string
}

// ctFlags is the containment mode's experiment.
type ctFlags struct {
	runs, log2m, workers int
	seed                 uint64
	smalls, larges       []int
	shares               []float64
}

// runContainment parses the mode's flags, simulates and writes the report.
func runContainment(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("intersim containment", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f ctFlags
	fs.IntVar(&f.runs, "runs", 30, "independent runs per case")
	fs.IntVar(&f.log2m, "log2m", 14, "register count (log2m) of every sketch")
	fs.Uint64Var(&f.seed, "seed", 1, "random seed")
	fs.IntVar(&f.workers, "workers", runtime.GOMAXPROCS(0), "parallel workers")
	smalls := fs.String("small", "399,1000,20000", "sizes of the small set (the last funnel step); up to the EXPLICIT threshold they are held exactly")
	larges := fs.String("large", "100000,1000000", "sizes of the large set (the funnel's first step)")
	shares := fs.String("shares", "1,0.99,0.9,0.5,0", "shares of the small set inside the large one")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if f.smalls, err = parseList(*smalls, strconv.Atoi); err != nil {
		return fmt.Errorf("-small: %w", err)
	}
	if f.larges, err = parseList(*larges, strconv.Atoi); err != nil {
		return fmt.Errorf("-large: %w", err)
	}
	if f.shares, err = parseList(*shares, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }); err != nil {
		return fmt.Errorf("-shares: %w", err)
	}
	if f.runs < 1 || f.log2m < hll.MinLog2m || f.log2m > hll.MaxLog2m {
		return fmt.Errorf("-runs must be positive and -log2m %d..%d", hll.MinLog2m, hll.MaxLog2m)
	}
	for _, s := range f.shares {
		if !(s >= 0 && s <= 1) {
			return fmt.Errorf("-shares %g outside [0, 1]", s)
		}
	}
	for _, s := range f.smalls {
		for _, l := range f.larges {
			if s < 1 || 2*s > l {
				return errors.New("-small must be positive and at most half of every -large")
			}
		}
	}
	start := time.Now()
	obs, err := simulateContainment(ctx, f)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "intersim containment: %d runs in %s\n", f.runs, time.Since(start).Round(time.Second))
	return reportContainment(stdout, f, obs)
}

// ctCases lists the cases of f, in report order.
func (f ctFlags) ctCases() []ctCase {
	var out []ctCase
	for _, funnel := range []bool{false, true} {
		for _, l := range f.larges {
			for _, s := range f.smalls {
				for _, sh := range f.shares {
					if funnel {
						out = append(out, ctCase{funnel: true, small: s, large: l, share: sh})
						continue
					}
					for _, m := range []sketch.Method{sketch.MethodMLE, sketch.MethodInclusionExclusion} {
						out = append(out, ctCase{small: s, large: l, share: sh, method: m})
					}
				}
			}
		}
	}
	return out
}

// simulateContainment runs every case f.runs times on f.workers
// goroutines.
func simulateContainment(ctx context.Context, f ctFlags) (map[ctCase][]ctObs, error) {
	type job struct {
		c   ctCase
		run int
	}
	jobs := make(chan job)
	out := map[ctCase][]ctObs{}
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range max(f.workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				o, err := containmentRun(f, j.c, j.run)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				out[j.c] = append(out[j.c], o)
				mu.Unlock()
			}
		}()
	}
	var err error
feed:
	for _, c := range f.ctCases() {
		for run := range f.runs {
			select {
			case jobs <- job{c, run}:
			case <-ctx.Done():
				err = ctx.Err()
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	return out, firstErr
}

// containmentRun answers one case once, with fresh hashes.
func containmentRun(f ctFlags, c ctCase, run int) (ctObs, error) {
	role := 100
	if c.funnel {
		role = 200
	}
	g := seedFor(f.seed, run, c.small^c.large, role+int(100*c.share))
	newSketch := func(hashes []uint64) (*hll.Sketch, error) {
		p := hll.DefaultParams()
		p.Log2m = f.log2m
		s, err := hll.New(p)
		if err != nil {
			return nil, err
		}
		s.AddAll(hashes)
		return s, nil
	}
	large := make([]uint64, c.large)
	for i := range large {
		large[i] = g.next()
	}
	// The small set: its first share·small ids from the large set's
	// (from its second half's, for a funnel: the second step's), the rest
	// fresh.
	in := int(c.share*float64(c.small) + 0.5)
	small := make([]uint64, 0, c.small)
	small = append(small, large[:in]...)
	for range c.small - in {
		small = append(small, g.next())
	}
	smallSk, err := newSketch(small)
	if err != nil {
		return ctObs{}, err
	}
	o := ctObs{truth: float64(in), explicit: smallSk.Representation() == hll.Explicit, method: c.method, smallName: "small"}
	var x sketch.Intersection
	if c.funnel {
		first, err := newSketch(large)
		if err != nil {
			return ctObs{}, err
		}
		second, err := newSketch(large[:c.large/2])
		if err != nil {
			return ctObs{}, err
		}
		steps := []cohort.Set{{Label: "first", Sketch: sketch.NewHLL(first)}, {Label: "second", Sketch: sketch.NewHLL(second)}, {Label: "small", Sketch: sketch.NewHLL(smallSk)}}
		st, err := cohort.Funnel(steps, "")
		if err != nil {
			return ctObs{}, err
		}
		x = *st[2].Intersection
		o.method = x.Method
	} else {
		largeSk, err := newSketch(large)
		if err != nil {
			return ctObs{}, err
		}
		if x, err = sketch.Intersect([]string{"small", "large"}, []*hll.Sketch{smallSk, largeSk}, c.method); err != nil {
			return ctObs{}, err
		}
	}
	o.est, o.lower, o.upper = x.Estimate, x.Lower, x.Upper
	o.spurious, o.within, o.reliable = x.Spurious, x.Within != "", x.Reliable
	o.withinName, o.text = x.Within, x.VerdictText
	return o, nil
}

// ctStats summarises the answers of one case.
type ctStats struct {
	n, spurious, within, reliable, covered, relCovered, explicit int
	medRel                                                       float64
}

func summariseContainment(os []ctObs) ctStats {
	var s ctStats
	var rel []float64
	for _, o := range os {
		s.n++
		in := o.lower <= o.truth && o.truth <= o.upper
		if o.spurious {
			s.spurious++
		}
		// The answer names the small set, never another.
		if o.within && o.withinName == o.smallName && !strings.Contains(o.text, "may not overlap") {
			s.within++
		}
		if o.reliable {
			s.reliable++
			if in {
				s.relCovered++
			}
		}
		if in {
			s.covered++
		}
		if o.explicit {
			s.explicit++
		}
		if o.truth > 0 {
			rel = append(rel, math.Abs(o.est-o.truth)/o.truth)
		}
	}
	s.medRel = quantile(rel, 0.5)
	return s
}

// reportContainment writes the Markdown report.
func reportContainment(w io.Writer, f ctFlags, obs map[ctCase][]ctObs) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Containment: %d runs per case, log2m %d, default hll parameters otherwise (EXPLICIT up to the automatic threshold), seed %d.\n\n", f.runs, f.log2m, f.seed)
	b.WriteString("Per case: the share of the small set inside the large one (of the last funnel step inside the steps before), whether the small sketch was EXPLICIT, the median relative error, and the shares of answers spurious, saying the small set lies within the other (`within`), reliable, and holding the truth in their bounds (all, and reliable ones).\n\n")
	b.WriteString("| case | method | share inside | EXPLICIT | median rel. error | spurious | within | reliable | covered | covered if reliable |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range f.ctCases() {
		os := obs[c]
		if len(os) == 0 {
			continue
		}
		st := summariseContainment(os)
		m := string(c.method)
		if c.funnel {
			m = "funnel (" + string(os[0].method) + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %g | %.0f%% | %s | %.0f%% | %.0f%% | %.0f%% | %.0f%% | %s |\n", c, m, c.share, pct(st.explicit, st.n), relFmt(st.medRel),
			pct(st.spurious, st.n), pct(st.within, st.n), pct(st.reliable, st.n), pct(st.covered, st.n), condFmt(st.relCovered, st.reliable))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
