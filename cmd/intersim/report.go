package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
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
	fmt.Fprintf(&b, "Grid: %d runs per cell, |A| = %d (the smallest set), largest set = ratio·|A|, sets %s, regwidth %d, seed %d; %s.\n\n",
		g.runs, g.small, joinInts(g.sets), regwidth, g.seed, ran)
	for _, k := range g.sets {
		if k == 2 {
			pairReport(&b, g, res)
		}
	}
	for _, k := range g.sets {
		if k > 2 {
			kReport(&b, g, res, k)
		}
	}
	verdictReport(&b, g, res)
	withinReport(&b, g, res)
	_, err := io.WriteString(w, b.String())
	return err
}

// withinReport writes how often the answers say the smallest set lies
// within the others, by true overlap: the smallest set lies wholly inside
// the others only at overlap 1, so there it should be said, and not
// below.
func withinReport(b *strings.Builder, g grid, res results) {
	b.WriteString("### Containment: answers that say the smallest set lies within the others\n\n")
	b.WriteString("Per number of sets, method and true overlap (pooled over register counts, ratios and shares): the answers, the share that say the smallest set lies within the others (`within`), and the share flagged spurious. The smallest set lies wholly inside the others only at overlap 1.\n\n")
	b.WriteString("| sets | method | overlap | answers | within | spurious |\n|---:|---|---:|---:|---:|---:|\n")
	for _, k := range g.sets {
		for mi, m := range methods() {
			if k > 2 && m != sketch.MethodInclusionExclusion {
				continue
			}
			for _, o := range g.overlaps {
				n, in, sp := 0, 0, 0
				for key, c := range res {
					if key.k != k || key.overlap != o {
						continue
					}
					for _, x := range c[mi] {
						n++
						if x.within {
							in++
						}
						if x.spurio {
							sp++
						}
					}
				}
				if n > 0 {
					fmt.Fprintf(b, "| %d | %s | %g | %d | %.1f%% | %.1f%% |\n", k, m, o, n, pct(in, n), pct(sp, n))
				}
			}
		}
	}
	b.WriteString("\n")
}

// pairReport writes the tables of the pairs grid (both methods).
func pairReport(b *strings.Builder, g grid, res results) {
	ms := methods()
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
				key := cellKey{2, lg, r, o, 0}
				c := res[key]
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
							worst[mi].cov, worst[mi].key = cv, key
						}
					}
				}
				if st[1].medRel < st[0].medRel {
					mleBetter++
				}
			}
		}
	}
	fmt.Fprintf(b, "### Summary: two sets\n\n")
	fmt.Fprintf(b, "- The MLE's median relative error is lower than inclusion–exclusion's in %d of %d cells.\n", mleBetter, cells)
	for mi, m := range ms {
		p := pool[mi]
		fmt.Fprintf(b, "- %s: envelope covers %.1f%% of all %d observations; %d (%.1f%%) flagged reliable, of which %.2f%% covered and %.2f%% right (covered and within %.0f%% relative error)",
			m, pct(p.cov, p.n), p.n, p.rel, pct(p.rel, p.n), pct(p.relCov, p.rel), pct(p.relRight, p.rel), 100*rightTolerance)
		if worst[mi].cov <= 1 {
			k := worst[mi].key
			fmt.Fprintf(b, "; worst cell with ≥%d reliable answers: %.1f%% covered (log2m %d, ratio %d, overlap %g)", minReliableObs, 100*worst[mi].cov, k.log2m, k.ratio, k.overlap)
		}
		fmt.Fprintf(b, ".\n")
	}
	b.WriteString("\n")

	// Disjoint pairs: the spurious flag.
	fmt.Fprintf(b, "### Disjoint sets (overlap 0): share flagged spurious\n\n| log2m |")
	for _, r := range g.ratios {
		fmt.Fprintf(b, " ratio %d IE / MLE |", r)
	}
	b.WriteString("\n|---|")
	for range g.ratios {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, lg := range g.log2ms {
		fmt.Fprintf(b, "| %d |", lg)
		for _, r := range g.ratios {
			c := res[cellKey{2, lg, r, 0, 0}]
			if c == nil {
				b.WriteString(" – |")
				continue
			}
			fmt.Fprintf(b, " %.0f%% / %.0f%% |", 100*summarise(c[0]).spurious, 100*summarise(c[1]).spurious)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")

	// One table per register count.
	for _, lg := range g.log2ms {
		fmt.Fprintf(b, "### m = %d (log2m %d)\n\n", 1<<lg, lg)
		b.WriteString("| ratio | overlap | \\|A∩B\\| | IE median | IE p95 | MLE median | MLE p95 | IE covered | MLE covered | IE reliable | MLE reliable | IE covered if reliable | MLE covered if reliable | IE p95 \\|err\\|/Δ | MLE p95 \\|err\\|/Δ |\n")
		b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range g.ratios {
			for _, o := range g.overlaps[1:] {
				c := res[cellKey{2, lg, r, o, 0}]
				if c == nil {
					continue
				}
				ie, ml := summarise(c[0]), summarise(c[1])
				truth := 0.0
				if len(c[0]) > 0 {
					truth = c[0][0].truth
				}
				fmt.Fprintf(b, "| %d | %g | %.0f | %s | %s | %s | %s | %.0f%% | %.0f%% | %.0f%% | %.0f%% | %s | %s | %.2f | %.2f |\n",
					r, o, truth, relFmt(ie.medRel), relFmt(ie.p95Rel), relFmt(ml.medRel), relFmt(ml.p95Rel),
					100*ie.coverage, 100*ml.coverage, pct(ie.reliable, ie.n), pct(ml.reliable, ml.n),
					condFmt(ie.relCovered, ie.reliable), condFmt(ml.relCovered, ml.reliable), ie.p95Norm, ml.p95Norm)
			}
		}
		b.WriteString("\n")
	}
}

// kReport writes the tables of k ≥ 3 sets (inclusion–exclusion).
func kReport(b *strings.Builder, g grid, res results, k int) {
	var all []obs
	worst, worstKey := 2.0, cellKey{}
	for key, c := range res {
		if key.k != k || key.overlap == 0 {
			continue
		}
		all = append(all, c[0]...)
		if st := summarise(c[0]); st.reliable >= minReliableObs {
			if cv := float64(st.relCovered) / float64(st.reliable); cv < worst || cv == worst && keyLess(key, worstKey) {
				worst, worstKey = cv, key
			}
		}
	}
	st := summarise(all)
	fmt.Fprintf(b, "### Summary: %d sets\n\n", k)
	fmt.Fprintf(b, "Sizes |A|·ratio^(i/%d) for i = 0..%d; the intersection is overlap·|A|; each pair of sets also shares share·(|A| − intersection)/%d ids of its own.\n\n", k-1, k-1, k-1)
	fmt.Fprintf(b, "- inclusion_exclusion: envelope covers %.1f%% of all %d observations; %d (%.1f%%) flagged reliable, of which %.2f%% covered and %.2f%% right (covered and within %.0f%% relative error)",
		100*st.coverage, st.n, st.reliable, pct(st.reliable, st.n), pct(st.relCovered, st.reliable), pct(st.relRight, st.reliable), 100*rightTolerance)
	if worst <= 1 {
		fmt.Fprintf(b, "; worst cell with ≥%d reliable answers: %.1f%% covered (log2m %d, ratio %d, overlap %g, share %g)", minReliableObs, 100*worst, worstKey.log2m, worstKey.ratio, worstKey.overlap, worstKey.share)
	}
	b.WriteString(".\n\n")

	fmt.Fprintf(b, "#### %d sets, no common ids (overlap 0): share flagged spurious\n\n| log2m |", k)
	for _, r := range g.ratios {
		for _, p := range g.shares {
			fmt.Fprintf(b, " ratio %d share %g |", r, p)
		}
	}
	b.WriteString("\n|---|")
	for range len(g.ratios) * len(g.shares) {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, lg := range g.log2ms {
		fmt.Fprintf(b, "| %d |", lg)
		for _, r := range g.ratios {
			for _, p := range g.shares {
				c := res[cellKey{k, lg, r, 0, p}]
				if c == nil {
					b.WriteString(" – |")
					continue
				}
				fmt.Fprintf(b, " %.0f%% |", 100*summarise(c[0]).spurious)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")

	for _, lg := range g.log2ms {
		fmt.Fprintf(b, "#### %d sets, m = %d (log2m %d)\n\n", k, 1<<lg, lg)
		b.WriteString("| ratio | share | overlap | \\|∩\\| | median | p95 | covered | median width | reliable | covered if reliable | p95 \\|err\\|/Δ |\n")
		b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range g.ratios {
			for _, p := range g.shares {
				for _, o := range g.overlaps[1:] {
					c := res[cellKey{k, lg, r, o, p}]
					if c == nil || len(c[0]) == 0 {
						continue
					}
					s := summarise(c[0])
					fmt.Fprintf(b, "| %d | %g | %g | %.0f | %s | %s | %.0f%% | %s | %.0f%% | %s | %.2f |\n",
						r, p, o, c[0][0].truth, relFmt(s.medRel), relFmt(s.p95Rel), 100*s.coverage, widthFmt(s.medWidth),
						pct(s.reliable, s.n), condFmt(s.relCovered, s.reliable), s.p95Norm)
				}
			}
		}
		b.WriteString("\n")
	}
}

// widthLimits are the limits on the bounds' relative width the verdict
// report compares; +Inf is no limit (only the other conditions).
func widthLimits() []float64 {
	return []float64{0.25, 0.5, 0.75, 1, 1.5, 2, math.Inf(1)}
}

// verdictReport shows, per number of sets and method, how the width
// limit of the reliable verdict trades the share of reliable answers for
// their coverage.
func verdictReport(b *strings.Builder, g grid, res results) {
	b.WriteString("### Verdicts: the width limit\n\n")
	fmt.Fprintf(b, "An answer is reliable when its bounds span at most the limit times its estimate (and, for two sets, the cutoffs hold); sketchd uses %g. "+
		"Per limit: the share of answers (intersections not empty) flagged reliable; the share of those whose truth lies in [lower, upper]; the worst such share in a cell with at least %d reliable answers; "+
		"and the 95th percentile of the reliable answers' relative error.\n\n", sketch.MaxRelativeWidth, minReliableObs)
	b.WriteString("| sets | method | width limit | reliable | covered if reliable | worst cell | p95 relative error if reliable |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|\n")
	for _, k := range g.sets {
		for mi, m := range methods() {
			if k > 2 && mi > 0 {
				continue
			}
			for _, lim := range widthLimits() {
				n, rel, cov := 0, 0, 0
				var errs []float64
				worst := 2.0
				for key, c := range res {
					if key.k != k || key.overlap == 0 {
						continue
					}
					cr, cc := 0, 0
					for _, o := range c[mi] {
						n++
						if !o.reliableWithin(lim) {
							continue
						}
						cr++
						errs = append(errs, math.Abs(o.est-o.truth)/o.truth)
						if o.lower <= o.truth && o.truth <= o.upper {
							cc++
						}
					}
					rel, cov = rel+cr, cov+cc
					if cr >= minReliableObs {
						worst = min(worst, float64(cc)/float64(cr))
					}
				}
				if n == 0 {
					continue
				}
				limit := "none"
				if !math.IsInf(lim, 1) {
					limit = fmt.Sprintf("%g", lim)
				}
				if lim == sketch.MaxRelativeWidth {
					limit = "**" + limit + "**"
				}
				worstText := "–"
				if worst <= 1 {
					worstText = fmt.Sprintf("%.1f%%", 100*worst)
				}
				p95 := "–"
				if len(errs) > 0 {
					p95 = relFmt(quantile(errs, 0.95))
				}
				fmt.Fprintf(b, "| %d | %s | %s | %.1f%% | %s | %s | %s |\n", k, m, limit, pct(rel, n), condFmt2(cov, rel), worstText, p95)
			}
		}
	}
	b.WriteString("\n")
}

// keyLess orders cells, so reports do not depend on map order.
func keyLess(a, b cellKey) bool {
	return fmt.Sprint(a) < fmt.Sprint(b)
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// widthFmt prints a relative width as a percentage.
func widthFmt(w float64) string {
	if math.IsInf(w, 0) {
		return "∞"
	}
	return fmt.Sprintf("%.0f%%", 100*w)
}

// condFmt2 prints a conditional share with two decimals, or "–".
func condFmt2(a, n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f%% (%d)", pct(a, n), n)
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
	b.WriteString("sets,log2m,ratio,overlap,share,method,truth,estimate,raw,error,lower,upper,reliable,spurious,est_overlap,est_ratio,width,any_width,within\n")
	ms := methods()
	for k, c := range res {
		for mi, m := range ms {
			for _, o := range c[mi] {
				fmt.Fprintf(&b, "%d,%d,%d,%g,%g,%s,%g,%g,%g,%g,%g,%g,%t,%t,%g,%g,%g,%t,%t\n", k.k, k.log2m, k.ratio, k.overlap, k.share, m,
					o.truth, o.est, o.raw, o.err, o.lower, o.upper, o.reliable, o.spurio, o.overlap, o.ratio, o.width, o.anyWidth, o.within)
			}
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// readCSV reads the observations written by writeCSV (files of before
// the within column read as never within).
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
		if len(r) != 18 && len(r) != 19 {
			return nil, fmt.Errorf("%s: line %d: %d fields, want 19", path, i+2, len(r))
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
		k.k, k.log2m, k.ratio, k.overlap, k.share = int(num(r[0])), int(num(r[1])), int(num(r[2])), num(r[3]), num(r[4])
		o.truth, o.est, o.raw, o.err, o.lower, o.upper = num(r[6]), num(r[7]), num(r[8]), num(r[9]), num(r[10]), num(r[11])
		o.reliable, o.spurio = r[12] == "true", r[13] == "true"
		o.overlap, o.ratio, o.width = num(r[14]), num(r[15]), num(r[16])
		o.anyWidth = r[17] == "true"
		o.within = len(r) > 18 && r[18] == "true"
		if perr != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, i+2, perr)
		}
		mi := slices.Index(ms[:], sketch.Method(r[5]))
		if mi < 0 {
			return nil, fmt.Errorf("%s: line %d: unknown method %q", path, i+2, r[5])
		}
		res.add(k, mi, o)
	}
	return res, nil
}
