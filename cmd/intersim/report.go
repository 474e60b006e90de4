package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/sketchd/sketchd/internal/sketch"
)

// minReliableObs: a cell's coverage among reliable answers is judged only
// with at least this many of them.
const minReliableObs = 20

// report writes the Markdown tables and the summary.
// ran says how the observations were obtained.
func report(w io.Writer, g grid, res results, ran string) error {
	var b strings.Builder
	ms := methods()
	fmt.Fprintf(&b, "Grid: %d runs per cell, |A| = %d, |B| = ratio·|A|, regwidth %d, seed %d; %s.\n\n",
		g.runs, g.small, regwidth, g.seed, ran)

	// Summary first.
	cells, mleBetter := 0, 0
	type pooled struct{ rel, relCov, relRight, n, cov int }
	var pool [nMethods]pooled
	var worst [nMethods]struct {
		cov float64
		key cellKey
	}
	for mi := range nMethods {
		worst[mi].cov = 2
	}
	for _, lg := range g.log2ms {
		for _, r := range g.ratios {
			for _, o := range g.overlaps[1:] {
				c := res[cellKey{lg, r, o}]
				if c == nil {
					continue
				}
				cells++
				var st [nMethods]stats
				for mi := range nMethods {
					st[mi] = summarise(c[mi])
					p := &pool[mi]
					p.n += st[mi].n
					p.cov += int(st[mi].coverage*float64(st[mi].n) + 0.5)
					p.rel += st[mi].reliable
					p.relCov += st[mi].relCovered
					p.relRight += st[mi].relRight
					if st[mi].reliable >= minReliableObs {
						if cv := float64(st[mi].relCovered) / float64(st[mi].reliable); cv < worst[mi].cov {
							worst[mi].cov, worst[mi].key = cv, cellKey{lg, r, o}
						}
					}
				}
				if st[1].medRel < st[0].medRel {
					mleBetter++
				}
			}
		}
	}
	fmt.Fprintf(&b, "### Summary\n\n")
	fmt.Fprintf(&b, "- The MLE's median relative error is lower than inclusion–exclusion's in %d of %d cells.\n", mleBetter, cells)
	for mi, m := range ms {
		p := pool[mi]
		fmt.Fprintf(&b, "- %s: envelope covers %.1f%% of all %d observations; %d (%.1f%%) flagged reliable, of which %.2f%% covered and %.2f%% right (covered and within %.0f%% relative error)",
			m, pct(p.cov, p.n), p.n, p.rel, pct(p.rel, p.n), pct(p.relCov, p.rel), pct(p.relRight, p.rel), 100*rightTolerance)
		if worst[mi].cov <= 1 {
			k := worst[mi].key
			fmt.Fprintf(&b, "; worst cell with ≥%d reliable answers: %.1f%% covered (log2m %d, ratio %d, overlap %g)", minReliableObs, 100*worst[mi].cov, k.log2m, k.ratio, k.overlap)
		}
		fmt.Fprintf(&b, ".\n")
	}
	b.WriteString("\n")

	// Disjoint pairs: the spurious flag.
	fmt.Fprintf(&b, "### Disjoint sets (overlap 0): share flagged spurious\n\n| log2m |")
	for _, r := range g.ratios {
		fmt.Fprintf(&b, " ratio %d IE / MLE |", r)
	}
	b.WriteString("\n|---|")
	for range g.ratios {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, lg := range g.log2ms {
		fmt.Fprintf(&b, "| %d |", lg)
		for _, r := range g.ratios {
			c := res[cellKey{lg, r, 0}]
			if c == nil {
				b.WriteString(" – |")
				continue
			}
			fmt.Fprintf(&b, " %.0f%% / %.0f%% |", 100*summarise(c[0]).spurious, 100*summarise(c[1]).spurious)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")

	// One table per register count.
	for _, lg := range g.log2ms {
		fmt.Fprintf(&b, "### m = %d (log2m %d)\n\n", 1<<lg, lg)
		b.WriteString("| ratio | overlap | \\|A∩B\\| | IE median | IE p95 | MLE median | MLE p95 | IE covered | MLE covered | IE reliable | MLE reliable | IE covered if reliable | MLE covered if reliable | IE p95 \\|err\\|/Δ | MLE p95 \\|err\\|/Δ |\n")
		b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range g.ratios {
			for _, o := range g.overlaps[1:] {
				c := res[cellKey{lg, r, o}]
				if c == nil {
					continue
				}
				ie, ml := summarise(c[0]), summarise(c[1])
				truth := 0.0
				if len(c[0]) > 0 {
					truth = c[0][0].truth
				}
				fmt.Fprintf(&b, "| %d | %g | %.0f | %s | %s | %s | %s | %.0f%% | %.0f%% | %.0f%% | %.0f%% | %s | %s | %.2f | %.2f |\n",
					r, o, truth, relFmt(ie.medRel), relFmt(ie.p95Rel), relFmt(ml.medRel), relFmt(ml.p95Rel),
					100*ie.coverage, 100*ml.coverage, pct(ie.reliable, ie.n), pct(ml.reliable, ml.n),
					condFmt(ie.relCovered, ie.reliable), condFmt(ml.relCovered, ml.reliable), ie.p95Norm, ml.p95Norm)
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func pct(a, n int) float64 {
	if n == 0 {
		return 0
	}
	return 100 * float64(a) / float64(n)
}

// relFmt prints a relative error as a percentage.
func relFmt(r float64) string {
	switch {
	case r >= 10:
		return fmt.Sprintf("%.0f×", r)
	case r >= 1:
		return fmt.Sprintf("%.0f%%", 100*r)
	}
	return fmt.Sprintf("%.2g%%", 100*r)
}

// condFmt prints a conditional share, or "–" without observations.
func condFmt(a, n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%% (%d)", pct(a, n), n)
}

// writeCSV writes every observation, one line each.
func writeCSV(path string, res results) error {
	var b strings.Builder
	b.WriteString("log2m,ratio,overlap,method,truth,estimate,raw,error,lower,upper,reliable,spurious,est_overlap,est_ratio\n")
	ms := methods()
	for k, c := range res {
		for mi, m := range ms {
			for _, o := range c[mi] {
				fmt.Fprintf(&b, "%d,%d,%g,%s,%g,%g,%g,%g,%g,%g,%t,%t,%g,%g\n", k.log2m, k.ratio, k.overlap, m,
					o.truth, o.est, o.raw, o.err, o.lower, o.upper, o.reliable, o.spurio, o.overlap, o.ratio)
			}
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// readCSV reads the observations written by writeCSV.
func readCSV(path string) (results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s: empty", path)
	}
	res := results{}
	ms := methods()
	for i, r := range recs[1:] {
		if len(r) != 14 {
			return nil, fmt.Errorf("%s: line %d: %d fields, want 14", path, i+2, len(r))
		}
		var k cellKey
		var o obs
		var perr error
		num := func(s string) float64 {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil && perr == nil {
				perr = err
			}
			return v
		}
		k.log2m, k.ratio, k.overlap = int(num(r[0])), int(num(r[1])), num(r[2])
		o.truth, o.est, o.raw, o.err, o.lower, o.upper = num(r[4]), num(r[5]), num(r[6]), num(r[7]), num(r[8]), num(r[9])
		o.reliable, o.spurio = r[10] == "true", r[11] == "true"
		o.overlap, o.ratio = num(r[12]), num(r[13])
		if perr != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, i+2, perr)
		}
		mi := slices.Index(ms[:], sketch.Method(r[3]))
		if mi < 0 {
			return nil, fmt.Errorf("%s: line %d: unknown method %q", path, i+2, r[3])
		}
		res.add(k, mi, o)
	}
	return res, nil
}
