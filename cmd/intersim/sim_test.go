package main

import (
	"bytes"
	"context"
	"math/bits"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSketchOfFold checks the simulation's shortcut: registers hashed at
// log2m 16, turned into a sketch and folded by hll, equal the registers
// the same hashes give when hashed at the smaller log2m directly.
func TestSketchOfFold(t *testing.T) {
	t.Parallel()
	g := splitmix64{s: 42}
	hashes := make([]uint64, 300_000)
	for i := range hashes {
		hashes[i] = g.next()
	}
	regs := make([]uint8, 1<<genLog2m)
	for _, h := range hashes {
		addHash(regs, h)
	}
	full, err := sketchOf(regs)
	if err != nil {
		t.Fatal(err)
	}
	if got := full.Registers(nil); !bytes.Equal(got, regs) {
		t.Fatal("sketchOf: registers differ from the ones given")
	}
	for _, lg := range []int{11, 13, 14} {
		folded, err := full.Fold(lg, regwidth)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]uint8, 1<<lg)
		for _, h := range hashes {
			w := h >> lg
			if w == 0 {
				continue
			}
			v := uint8(min(bits.TrailingZeros64(w)+1, 1<<regwidth-1))
			if i := h & (1<<lg - 1); v > want[i] {
				want[i] = v
			}
		}
		if got := folded.Registers(nil); !bytes.Equal(got, want) {
			t.Errorf("log2m %d: folded registers differ from registers built at log2m %d", lg, lg)
		}
	}
}

// TestRunSmallGrid runs a tiny grid end to end.
func TestRunSmallGrid(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	args := []string{"-runs", "2", "-small", "20000", "-ratios", "1,10", "-overlaps", "0.1,1", "-log2m", "11"}
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("run(%v) = %v, stderr %s", args, err, errOut.String())
	}
	for _, want := range []string{"### Summary", "### m = 2048 (log2m 11)", "| 10 | 0.1 | 2000 |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRunBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-runs", "0"},
		{"-log2m", "17"},
		{"-overlaps", "0"},
		{"-ratios", "x"},
	} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), args, &out, &errOut); err == nil {
			t.Errorf("run(%v) = nil error, want one", args)
		}
	}
}

// TestReplay checks that a report replayed from the CSV equals the one
// written by the simulation itself.
func TestReplay(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "obs.csv")
	grid := []string{"-runs", "2", "-small", "5000", "-ratios", "1,3", "-overlaps", "0.2,1", "-log2m", "11,12"}
	var direct, replayed, errOut bytes.Buffer
	if err := run(context.Background(), append(slices.Clone(grid), "-csv", path), &direct, &errOut); err != nil {
		t.Fatalf("run: %v, stderr %s", err, errOut.String())
	}
	if err := run(context.Background(), append(slices.Clone(grid), "-replay", path), &replayed, &errOut); err != nil {
		t.Fatalf("replay: %v, stderr %s", err, errOut.String())
	}
	_, d, _ := strings.Cut(direct.String(), "\n")
	_, r, _ := strings.Cut(replayed.String(), "\n")
	if d != r {
		t.Errorf("replayed report differs:\n%s\nwant:\n%s", r, d)
	}
}

// TestRetentionCoverage simulates retention tables and funnels of known
// truth: every cell's bounds must hold the truth as often as the
// envelope says (±3Δ, at least 97% of the reliable cells, as the
// pairwise simulation measured), the errors must be calibrated (about
// 95% of the raw estimates within 2Δ: neither too narrow nor far too
// wide), and so must the shares and conversions' bounds.
func TestRetentionCoverage(t *testing.T) {
	t.Parallel()
	f := retentionFlags{runs: 3, cohorts: 8, offsets: 8, small: 4000, log2ms: []int{13}, seed: 26, workers: 2}
	cells, steps, news, err := simulateRetention(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	for name, os := range map[string][]cellObs{"retention cells": cells, "funnel steps": steps} {
		c := summariseCells(os)
		if c.n < 40 || c.reliable == 0 {
			t.Fatalf("%s: %d observations, %d reliable", name, c.n, c.reliable)
		}
		if cov := pct(c.relCovered, c.reliable); cov < 97 {
			t.Errorf("%s: the bounds cover %.1f%% of %d reliable ones, want ≥ 97%%", name, cov, c.reliable)
		}
		if cov := pct(c.relShareCovered, c.reliable); cov < 97 {
			t.Errorf("%s: the share bounds cover %.1f%% of %d reliable ones, want ≥ 97%%", name, cov, c.reliable)
		}
		if w := pct(c.within[1], c.n); w < 88 || w > 99.5 {
			t.Errorf("%s: %.1f%% of %d raw estimates within 2Δ, want about 95%%", name, w, c.n)
		}
	}
	var out bytes.Buffer
	if len(news) == 0 {
		t.Error("no new-user cohort cells simulated")
	}
	if err := reportRetention(&out, f, cells, steps, news); err != nil || !strings.Contains(out.String(), "### Retention cells") || !strings.Contains(out.String(), "| 13 | **all** |") {
		t.Errorf("report = %v:\n%s", err, out.String())
	}
}
