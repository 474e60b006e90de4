// Command intersim measures sketchd's intersection estimators
// (inclusion–exclusion and the joint maximum-likelihood estimator) on
// random sets of known overlap: the median and 95th-percentile relative
// error, the coverage of the [lower, upper] envelope and how often the
// "reliable" verdict is right, over a grid of overlaps, cardinality ratios
// and register counts, for pairs and for 3 to 8 sets; and how the verdict's
// width limit trades reliable answers for their coverage. It prints
// Markdown tables and draws PNG plots for docs/intersection.md.
//
// With "retention" first it simulates retention tables and funnels on
// users of known activity instead, and measures how often the cells'
// bounds hold the truth (retention.go); with "containment" first, sets
// lying partly or wholly inside others, and what the answers say of them
// (containment.go); with "theta" first, small overlaps held as hll and
// as theta sketches, to say which estimator a ranking should use
// (theta.go); with "rank" first, one target against thousands of
// audiences, and how well the top K by estimate matches the true top K
// (rank.go).
//
// Usage:
//
//	go run ./cmd/intersim -runs 100 -small 1000000 -img docs/img > results.md
//	go run ./cmd/intersim -sets 3,4,8 -runs 100 -small 100000 -ratios 1,10,100 > k.md
//	go run ./cmd/intersim -overlap -sets 2,3,4,8,16,64 -log2m 11,14 -runs 40 > overlap.md
//	go run ./cmd/intersim retention -runs 40 > retention.md
//	go run ./cmd/intersim containment -runs 30 > containment.md
//	go run ./cmd/intersim theta -runs 30 > theta.md
//	go run ./cmd/intersim rank -runs 3 > rank.md
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sketchd/sketchd/internal/sketch"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "intersim:", err)
		os.Exit(1)
	}
}

// run parses args, simulates the grid and writes the report to stdout;
// "retention" as the first argument simulates retention tables and
// funnels instead (runRetention), "containment" sets inside others
// (runContainment).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "retention" {
		return runRetention(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "containment" {
		return runContainment(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "theta" {
		return runTheta(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "rank" {
		return runRank(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("intersim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runs := fs.Int("runs", 100, "independent runs per cell")
	small := fs.Int("small", 1_000_000, "size of the smaller set")
	seed := fs.Uint64("seed", 1, "random seed")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "parallel workers")
	log2ms := fs.String("log2m", "11,13,14,16", "register counts (log2m), comma separated")
	ratios := fs.String("ratios", "1,2,10,100,1000", "cardinality ratios |B|/|A|")
	overlaps := fs.String("overlaps", "0.0001,0.001,0.01,0.05,0.1,0.2,0.5,1", "overlaps |A∩B|/|A|")
	sets := fs.String("sets", "2", "numbers of sets intersected, comma separated: 2 (pairs, both methods) and 3..8 (inclusion–exclusion)")
	shares := fs.String("shares", "0,0.5", "for 3 or more sets: share of the smallest set's ids outside the intersection that pairs of sets share")
	img := fs.String("img", "", "directory for PNG plots (none if empty)")
	dump := fs.String("csv", "", "file to write every observation to as CSV (none if empty)")
	replay := fs.String("replay", "", "read the observations from a CSV written by -csv instead of simulating (grid flags must match)")
	overlap := fs.Bool("overlap", false, "simulate POST /v1/overlap's counts instead of intersections (-sets up to 64, -structures, -users, -log2m, -runs, -seed)")
	structs := fs.String("structures", "dc2,dc5,dc20,random", "with -overlap: populations, comma separated (dc2, dc5, dc20, random, skew, zipf)")
	users := fs.Int("users", 1_000_000, "with -overlap: users in the union")
	kind := fs.String("kind", "hll", "with -overlap: the sketches' type (hll, ds_hll, zeta_hll, airlift_hll)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	g := grid{runs: *runs, small: *small, seed: *seed}
	var err error
	if g.sets, err = parseList(*sets, strconv.Atoi); err != nil {
		return fmt.Errorf("-sets: %w", err)
	}
	if *overlap {
		og := ovGrid{sets: g.sets, structures: strings.Split(*structs, ","), users: *users, runs: *runs, seed: *seed, kind: sketch.Type(*kind)}
		if og.log2ms, err = parseList(*log2ms, strconv.Atoi); err != nil {
			return fmt.Errorf("-log2m: %w", err)
		}
		start := time.Now()
		if err := runOverlap(ctx, og, max(*workers, 1), stdout); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "intersim: overlap grid in %s\n", time.Since(start).Round(time.Second))
		return nil
	}
	if g.shares, err = parseList(*shares, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }); err != nil {
		return fmt.Errorf("-shares: %w", err)
	}
	if g.log2ms, err = parseList(*log2ms, strconv.Atoi); err != nil {
		return fmt.Errorf("-log2m: %w", err)
	}
	if g.ratios, err = parseList(*ratios, strconv.Atoi); err != nil {
		return fmt.Errorf("-ratios: %w", err)
	}
	if g.overlaps, err = parseList(*overlaps, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }); err != nil {
		return fmt.Errorf("-overlaps: %w", err)
	}
	if err := g.validate(); err != nil {
		return err
	}
	// Disjoint pairs ride along to measure the spurious flag.
	g.overlaps = append([]float64{0}, g.overlaps...)

	start := time.Now()
	var res results
	if *replay != "" {
		res, err = readCSV(*replay)
	} else {
		res, err = simulate(ctx, g, max(*workers, 1))
	}
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	fmt.Fprintf(stderr, "intersim: %d runs x %d ratios x %d set counts in %s\n", g.runs, len(g.ratios), len(g.sets), elapsed.Round(time.Second))
	if *dump != "" {
		if err := writeCSV(*dump, res); err != nil {
			return err
		}
	}
	if *img != "" && slices.Contains(g.sets, 2) {
		if err := plotAll(*img, g, res); err != nil {
			return err
		}
	}
	ran := "ran in " + elapsed.Round(time.Second).String()
	if *replay != "" {
		ran = "replayed from " + *replay
	}
	return report(stdout, g, res, ran)
}

// validate refuses grids the simulation cannot build.
func (g grid) validate() error {
	if g.runs < 1 || g.small < 1 {
		return errors.New("-runs and -small must be positive")
	}
	for _, k := range g.sets {
		if k < sketch.MinIntersect || k > sketch.MaxIntersect {
			return fmt.Errorf("-sets %d outside %d..%d", k, sketch.MinIntersect, sketch.MaxIntersect)
		}
	}
	for _, p := range g.shares {
		if !(p >= 0 && p <= 1) {
			return fmt.Errorf("-shares %g outside [0, 1]", p)
		}
	}
	for _, lg := range g.log2ms {
		if lg < 4 || lg > genLog2m {
			return fmt.Errorf("-log2m %d outside 4..%d", lg, genLog2m)
		}
	}
	for _, r := range g.ratios {
		if r < 1 || r > 1_000_000 {
			return fmt.Errorf("-ratios %d outside 1..1000000", r)
		}
	}
	for _, o := range g.overlaps {
		if !(o > 0 && o <= 1) {
			return fmt.Errorf("-overlaps %g outside (0, 1]", o)
		}
	}
	return nil
}

// simulate runs every (set count, run, ratio) unit on workers goroutines.
func simulate(ctx context.Context, g grid, workers int) (results, error) {
	type job struct{ k, run, ri int }
	jobs := make(chan job)
	var mu sync.Mutex
	all := results{}
	var firstErr error
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				var r results
				var err error
				if j.k == 2 {
					r, err = g.unit(j.run, j.ri)
				} else {
					r, err = g.kunit(j.run, j.k, j.ri)
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err == nil {
					all.merge(r)
				}
				mu.Unlock()
			}
		}()
	}
	var err error
feed:
	// Largest ratios first: they take longest.
	for _, k := range g.sets {
		for ri := len(g.ratios) - 1; ri >= 0; ri-- {
			for run := range g.runs {
				select {
				case jobs <- job{k, run, ri}:
				case <-ctx.Done():
					err = ctx.Err()
					break feed
				}
			}
		}
	}
	close(jobs)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	return all, firstErr
}

// parseList splits a comma-separated list.
func parseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for f := range strings.SplitSeq(s, ",") {
		v, err := parse(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
