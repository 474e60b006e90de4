// Command intersim measures sketchd's intersection estimators
// (inclusion–exclusion and the joint maximum-likelihood estimator) on
// random sets of known overlap: the median and 95th-percentile relative
// error, the coverage of the [lower, upper] envelope and how often the
// "reliable" flag is right, over a grid of overlaps, cardinality ratios
// and register counts. It prints Markdown tables and draws PNG plots for
// docs/intersection.md.
//
// With "retention" first it simulates retention tables and funnels on
// users of known activity instead, and measures how often the cells'
// bounds hold the truth (retention.go).
//
// Usage:
//
//	go run ./cmd/intersim -runs 100 -small 1000000 -img docs/img > results.md
//	go run ./cmd/intersim retention -runs 40 > retention.md
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
	"strconv"
	"strings"
	"sync"
	"time"
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
// funnels instead (runRetention).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "retention" {
		return runRetention(ctx, args[1:], stdout, stderr)
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
	img := fs.String("img", "", "directory for PNG plots (none if empty)")
	dump := fs.String("csv", "", "file to write every observation to as CSV (none if empty)")
	replay := fs.String("replay", "", "read the observations from a CSV written by -csv instead of simulating (grid flags must match)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	g := grid{runs: *runs, small: *small, seed: *seed}
	var err error
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
	fmt.Fprintf(stderr, "intersim: %d runs x %d ratios in %s\n", g.runs, len(g.ratios), elapsed.Round(time.Second))
	if *dump != "" {
		if err := writeCSV(*dump, res); err != nil {
			return err
		}
	}
	if *img != "" {
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

// simulate runs every (run, ratio) unit on workers goroutines.
func simulate(ctx context.Context, g grid, workers int) (results, error) {
	type job struct{ run, ri int }
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
				r, err := g.unit(j.run, j.ri)
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
	for ri := len(g.ratios) - 1; ri >= 0; ri-- {
		for run := range g.runs {
			select {
			case jobs <- job{run, ri}:
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
