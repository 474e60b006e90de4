package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sketchd/sketchd/internal/airlift"
	"github.com/sketchd/sketchd/internal/dshll"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/zeta"
)

// The overlap simulation (-overlap) measures sketch.EstimateOverlap: N
// sets of users drawn with known memberships, every count it gives
// (exactly k, at least k, only here, regions) against the truth.

// ovGrid is the overlap experiment: every combination of its lists.
type ovGrid struct {
	sets       []int
	structures []string
	users      int
	log2ms     []int
	runs       int
	seed       uint64
	// kind is the sketches' type: hll (built at genLog2m and folded to
	// each log2m) or ds_hll, zeta_hll, airlift_hll (built at each).
	kind sketch.Type
}

// structures describes each population, by name.
var structures = map[string]string{
	"dc2":    "data centers: each user in one set (set i twice as likely as set i+1, up to 8×), 2% in 2 to 4 sets",
	"dc5":    "data centers: as dc2, 5% in 2 to 4 sets",
	"dc20":   "data centers: as dc2, 20% in 2 to 4 sets",
	"random": "each user in each set with probability 0.3 (at least one): memberships spread over every k",
	"skew":   "skewed sizes (an outside audit's shape): each user in 1 to 5 sets (75%, 17%, 5%, 2%, 1%), drawn without replacement with weights (i+1)^-1.5 (8 sets: about 60%, 27%, 16%, 11%, 8%, 6%, 5% and 4% of the users); many regions near empty",
	"zipf":   "skewed sizes of another shape: each user in 1 to 6 sets (55%, 20%, 10%, 7%, 5%, 3%), drawn without replacement with weights 1/(i+1)",
}

// skewed describes a skewed population: the chance of a user being in
// 1, 2, … sets (summing to 1) and the weight of set i.
type skewed struct {
	k      []float64
	weight func(i int) float64
}

var skewedStructures = map[string]skewed{
	"skew": {k: []float64{0.75, 0.17, 0.05, 0.02, 0.01}, weight: func(i int) float64 { return 1 / (float64(i+1) * math.Sqrt(float64(i+1))) }},
	"zipf": {k: []float64{0.55, 0.20, 0.10, 0.07, 0.05, 0.03}, weight: func(i int) float64 { return 1 / float64(i+1) }},
}

// dcWeights are the weights of the data-center structures' sets 0, 1, 2
// and 3 or later.
var dcWeights = [4]float64{1, 0.5, 0.25, 0.125}

// dcSpread is the share of users of a data-center structure in 2 to 4
// sets.
func dcSpread(s string) float64 {
	switch s {
	case "dc2":
		return 0.02
	case "dc5":
		return 0.05
	case "dc20":
		return 0.2
	}
	return 0
}

// membership draws the sets (a mask) of one user of structure s.
func membership(s string, n int, g *splitmix64) uint64 {
	unit := func() float64 { return float64(g.next()>>11) / (1 << 53) }
	switch s {
	case "random":
		for {
			var m uint64
			for i := range n {
				if unit() < 0.3 {
					m |= 1 << i
				}
			}
			if m != 0 {
				return m
			}
		}
	}
	// Weights halve from set to set, down to an eighth (a table rather
	// than math.Ldexp: this runs for every user of every simulation).
	weight := func(i int) float64 { return dcWeights[min(i, 3)] }
	k := 1
	if sk, ok := skewedStructures[s]; ok {
		weight = sk.weight
		u := unit()
		for k < len(sk.k) && u >= sk.k[k-1] {
			u -= sk.k[k-1]
			k++
		}
		k = min(k, n)
	} else if unit() < dcSpread(s) {
		k = 2 + int(unit()*float64(min(4, n)-1))
	}
	var m uint64
	for range k {
		total := 0.0
		for i := range n {
			if m&(1<<i) == 0 {
				total += weight(i)
			}
		}
		r := unit() * total
		for i := range n {
			if m&(1<<i) != 0 {
				continue
			}
			if r -= weight(i); r < 0 || i == n-1 {
				m |= 1 << i
				break
			}
		}
	}
	return m
}

// ovKey names a cell of the overlap grid.
type ovKey struct {
	n, log2m  int
	structure string
}

// ovObs is one count against its truth. kind is "union", "exactly",
// "at_least", "only_here" or "region"; k is the k, operand index or
// region mask.
//
// floored reports that the error of a count of three or more sets is the
// floor the union's error sets (σ·√(|raw|·U), docs/intersection.md), not
// the replicates' spread.
type ovObs struct {
	kind                       string
	k                          uint64
	truth, est, err, low, high float64
	verdict                    sketch.Verdict
	floored                    bool
}

// ovUnit simulates one run of every (structure, n) at every log2m.
func (g ovGrid) ovUnit(run, ni int) (map[ovKey][]ovObs, error) {
	n := g.sets[ni]
	out := map[ovKey][]ovObs{}
	for si, s := range g.structures {
		gen := seedFor(g.seed, run, ni, 64+si)
		regs := make([][]uint8, n)
		for i := range regs {
			regs[i] = make([]uint8, 1<<genLog2m)
		}
		byMask := map[uint64]int{}
		var drawn []ovUser // users, for kinds built at each log2m
		for range g.users {
			m := membership(s, n, &gen)
			byMask[m]++
			h := gen.next()
			if g.kind != sketch.TypeHLL {
				drawn = append(drawn, ovUser{m, h})
				continue
			}
			for i := range n {
				if m&(1<<i) != 0 {
					addHash(regs[i], h)
				}
			}
		}
		full := make([]sketch.Sketch, n)
		fullH := make([]*hll.Sketch, n)
		for i := range regs {
			if g.kind != sketch.TypeHLL {
				break
			}
			var err error
			if fullH[i], err = sketchOf(regs[i]); err != nil {
				return nil, err
			}
		}
		labels := make([]string, n)
		for i := range labels {
			labels[i] = fmt.Sprint("s", i)
		}
		truth := ovTruth(byMask, n)
		for _, lg := range g.log2ms {
			if g.kind == sketch.TypeHLL {
				for i, h := range fullH {
					f, err := h.Fold(lg, regwidth)
					if err != nil {
						return nil, err
					}
					full[i] = sketch.NewHLL(f)
				}
			} else {
				var err error
				if full, err = buildKind(g.kind, lg, n, drawn); err != nil {
					return nil, err
				}
			}
			o, err := sketch.EstimateOverlap(labels, full, "")
			if err != nil {
				return nil, fmt.Errorf("run %d n %d %s log2m %d: %w", run, n, s, lg, err)
			}
			key := ovKey{n, lg, s}
			add := func(kind string, k uint64, f sketch.Figure) {
				// The floor applies to errors measured on replicates: the
				// counts of three or more sets (two take the
				// intersection's estimator).
				floor := math.Sqrt(math.Abs(f.RawEstimate)*o.Union.Estimate) * 1.04 / math.Sqrt(float64(int(1)<<o.Log2m))
				out[key] = append(out[key], ovObs{kind: kind, k: k, truth: truth(kind, k), est: f.Estimate, err: f.Error, low: f.Lower, high: f.Upper, verdict: f.Verdict,
					floored: o.Sets > 2 && ovGroups(ovObs{kind: kind, k: k}) != "union" && f.Error > 0 && f.Error <= floor*(1+1e-9)})
			}
			add("union", 0, o.Union)
			for k, f := range o.Exactly {
				add("exactly", uint64(k+1), f)
			}
			for k, f := range o.AtLeast {
				add("at_least", uint64(k+1), f)
			}
			for i, f := range o.OnlyHere {
				add("only_here", uint64(i), f)
			}
			for _, r := range o.Regions {
				var m uint64
				for _, name := range r.Members {
					i, _ := strconv.Atoi(strings.TrimPrefix(name, "s"))
					m |= 1 << i
				}
				add("region", m, r.Figure)
			}
		}
	}
	return out, nil
}

// ovUser is a drawn user: its sets and its value (a hash, or an id).
type ovUser struct{ mask, value uint64 }

// ovKinds are the kinds -kind takes, with the precisions each has.
var ovKinds = map[sketch.Type][2]int{
	sketch.TypeHLL:        {4, genLog2m},
	sketch.TypeDSHLL:      {4, genLog2m},
	sketch.TypeZetaHLL:    {10, genLog2m},
	sketch.TypeAirliftHLL: {4, genLog2m},
}

// buildKind builds n sketches of kind at precision lg holding the users
// of each set, as the kind adds them: a ds_hll sketch hashes the value as
// an integer id (DataSketches' own hash); zeta_hll and airlift_hll take
// it as the id's hash.
func buildKind(kind sketch.Type, lg, n int, users []ovUser) ([]sketch.Sketch, error) {
	var p sketch.Params
	switch kind {
	case sketch.TypeDSHLL:
		p = sketch.DSHLLParams{Params: dshll.Params{LgK: lg, Type: dshll.HLL4}}
	case sketch.TypeZetaHLL:
		p = sketch.ZetaParams{Params: zeta.ParamsFor(lg)}
	case sketch.TypeAirliftHLL:
		p = sketch.AirliftParams{Params: airlift.Params{IndexBits: lg}}
	default:
		return nil, fmt.Errorf("kind %s is not built here", kind)
	}
	sks := make([]sketch.Sketch, n)
	hashes := make([][]uint64, n)
	for _, u := range users {
		for i := range n {
			if u.mask&(1<<i) != 0 {
				hashes[i] = append(hashes[i], u.value)
			}
		}
	}
	for i := range sks {
		s, err := p.New()
		if err != nil {
			return nil, err
		}
		switch kind {
		case sketch.TypeDSHLL:
			d, _ := sketch.DSHLLOf(s)
			for _, h := range hashes[i] {
				if err := d.AddInt(int64(h)); err != nil {
					return nil, err
				}
			}
		case sketch.TypeZetaHLL:
			z, _ := sketch.ZetaOf(s)
			z.AddHashes(hashes[i])
		case sketch.TypeAirliftHLL:
			a, _ := sketch.AirliftOf(s)
			a.AddHashes(hashes[i])
		}
		sks[i] = s
	}
	return sks, nil
}

// ovTruth returns the true value of every count of a population.
func ovTruth(byMask map[uint64]int, n int) func(kind string, k uint64) float64 {
	return func(kind string, k uint64) float64 {
		t := 0
		for m, c := range byMask {
			pc := uint64(bits.OnesCount64(m))
			switch {
			case kind == "union",
				kind == "exactly" && pc == k,
				kind == "at_least" && pc >= k,
				kind == "only_here" && m == 1<<k,
				kind == "region" && m == k:
				t += c
			}
		}
		return float64(t)
	}
}

// runOverlap simulates the overlap grid and writes its report.
func runOverlap(ctx context.Context, g ovGrid, workers int, stdout io.Writer) error {
	if g.runs < 1 || g.users < 1 {
		return errors.New("-runs and -users must be positive")
	}
	for _, n := range g.sets {
		if n < sketch.MinOverlap || n > sketch.MaxOverlap {
			return fmt.Errorf("-sets %d outside %d..%d", n, sketch.MinOverlap, sketch.MaxOverlap)
		}
	}
	for _, s := range g.structures {
		if _, ok := structures[s]; !ok {
			return fmt.Errorf("-structures: unknown %q", s)
		}
	}
	lim, ok := ovKinds[g.kind]
	if !ok {
		return fmt.Errorf("-kind: %q is not hll, ds_hll, zeta_hll or airlift_hll", g.kind)
	}
	for _, lg := range g.log2ms {
		if lg < lim[0] || lg > lim[1] {
			return fmt.Errorf("-log2m %d outside %d..%d for %s", lg, lim[0], lim[1], g.kind)
		}
	}
	type job struct{ run, ni int }
	jobs := make(chan job)
	var mu sync.Mutex
	all := map[ovKey][]ovObs{}
	var firstErr error
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				r, err := g.ovUnit(j.run, j.ni)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				for k, v := range r {
					all[k] = append(all[k], v...)
				}
				mu.Unlock()
			}
		}()
	}
	var err error
feed:
	for ni := len(g.sets) - 1; ni >= 0; ni-- {
		for run := range g.runs {
			select {
			case jobs <- job{run, ni}:
			case <-ctx.Done():
				err = ctx.Err()
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	if err != nil {
		return err
	}
	if firstErr != nil {
		return firstErr
	}
	return ovReport(stdout, g, all)
}

// ovStats summarises observations of one kind of count. within2 counts
// the estimates within two errors of the truth, among the counts with an
// error (measured: errored).
type ovStats struct {
	n, covered, reliable, relCovered int
	errored, within2, floored        int
	medRel, p95Norm, meanZ           float64
}

func ovSummarise(os []ovObs) ovStats {
	var s ovStats
	var rel, norm []float64
	for _, o := range os {
		s.n++
		in := o.low <= o.truth && o.truth <= o.high
		if in {
			s.covered++
		}
		if o.err > 0 {
			s.errored++
			if math.Abs(o.est-o.truth) <= 2*o.err {
				s.within2++
			}
		}
		if o.floored {
			s.floored++
		}
		if o.verdict == sketch.VerdictReliable || o.verdict == sketch.VerdictExact {
			s.reliable++
			if in {
				s.relCovered++
			}
		}
		if o.truth > 0 {
			rel = append(rel, math.Abs(o.est-o.truth)/o.truth)
		}
		if o.err > 0 {
			norm = append(norm, math.Abs(o.est-o.truth)/o.err)
			s.meanZ += (o.est - o.truth) / o.err
		}
	}
	if len(norm) > 0 {
		s.meanZ /= float64(len(norm))
	}
	s.medRel, s.p95Norm = quantile(rel, 0.5), quantile(norm, 0.95)
	return s
}

// ovGroups are the kinds of count the report tells apart.
func ovGroups(o ovObs) string {
	switch {
	case o.kind == "exactly" && o.k == 1:
		return "exactly 1"
	case o.kind == "exactly":
		return "exactly k ≥ 2"
	case o.kind == "at_least" && o.k == 2:
		return "at least 2"
	case o.kind == "at_least" && o.k > 2:
		return "at least k ≥ 3"
	case o.kind == "at_least":
		return "union"
	}
	return strings.ReplaceAll(o.kind, "_", " ")
}

var ovGroupOrder = []string{"union", "exactly 1", "at least 2", "exactly k ≥ 2", "at least k ≥ 3", "only here", "region"}

// The summary's pooled groups: every count, and the counts of fewer than
// ovNearEmptyTruth users.
const (
	ovAll            = "all counts"
	ovNearEmpty      = "truth under 100"
	ovNearEmptyTruth = 100
)

// ovGroupsOf lists the summary groups an observation belongs to: its
// kind of count, all counts, and the near-empty ones.
func ovGroupsOf(o ovObs) []string {
	g := []string{ovGroups(o), ovAll}
	if o.truth < ovNearEmptyTruth {
		g = append(g, ovNearEmpty)
	}
	return g
}

// ovReport writes the overlap tables: per cell and kind of count, the
// coverage of the bounds, the share flagged reliable and their coverage,
// the median relative error and the calibration of the error.
func ovReport(w io.Writer, g ovGrid, all map[ovKey][]ovObs) error {
	var b strings.Builder
	if g.kind == sketch.TypeHLL {
		fmt.Fprintf(&b, "Overlap grid: %d runs per cell, %d users, sets %s, log2m %s, regwidth %d, seed %d.\n\n",
			g.runs, g.users, joinInts(g.sets), joinInts(g.log2ms), regwidth, g.seed)
	} else {
		fmt.Fprintf(&b, "Overlap grid of %s sketches: %d runs per cell, %d users, sets %s, log2m %s, seed %d.\n\n",
			g.kind, g.runs, g.users, joinInts(g.sets), joinInts(g.log2ms), g.seed)
	}
	for _, s := range g.structures {
		fmt.Fprintf(&b, "- %s: %s\n", s, structures[s])
	}
	b.WriteString("\n### Summary: overlap counts\n\n")
	b.WriteString("Pooled over the grid, per kind of count: the share of bounds that hold the truth, the share of estimates within two errors of the truth (of those with an error; Student's t with 31 degrees of freedom gives 94.6%), the share of counts flagged reliable, the share of those whose bounds hold the truth, and the worst such share in a cell with at least 20 reliable counts; *floor* is the share of counts of three or more sets whose error is the floor the union's error sets rather than the replicates' spread. *All counts* pools every kind; *truth under 100* are the counts, of any kind, of fewer than 100 users (near-empty regions among them).\n\n")
	b.WriteString("| count | observations | covered | within 2σ | floor | reliable | covered if reliable | worst cell |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	byGroup := map[string][]ovObs{}
	worst := map[string]float64{}
	keys := make([]ovKey, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b ovKey) int {
		if a.n != b.n {
			return a.n - b.n
		}
		if a.structure != b.structure {
			return strings.Compare(a.structure, b.structure)
		}
		return a.log2m - b.log2m
	})
	for _, k := range keys {
		cell := map[string][]ovObs{}
		for _, o := range all[k] {
			for _, grp := range ovGroupsOf(o) {
				byGroup[grp] = append(byGroup[grp], o)
				cell[grp] = append(cell[grp], o)
			}
		}
		for grp, os := range cell {
			if st := ovSummarise(os); st.reliable >= minReliableObs {
				cv := float64(st.relCovered) / float64(st.reliable)
				if w, ok := worst[grp]; !ok || cv < w {
					worst[grp] = cv
				}
			}
		}
	}
	for _, grp := range append(slices.Clone(ovGroupOrder), ovAll, ovNearEmpty) {
		os := byGroup[grp]
		if len(os) == 0 {
			continue
		}
		st := ovSummarise(os)
		wt := "–"
		if w, ok := worst[grp]; ok {
			wt = fmt.Sprintf("%.1f%%", 100*w)
		}
		fmt.Fprintf(&b, "| %s | %d | %.2f%% | %s | %.1f%% | %.1f%% | %s | %s |\n", grp, st.n, pct(st.covered, st.n), condFmt2(st.within2, st.errored), pct(st.floored, st.n), pct(st.reliable, st.n), condFmt2(st.relCovered, st.reliable), wt)
	}
	b.WriteString("\n### Overlap counts per cell\n\n")
	b.WriteString("| sets | structure | log2m | count | median rel. error | p95 \\|err\\|/Δ | mean err/Δ | covered | within 2σ | reliable | covered if reliable |\n|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, k := range keys {
		cell := map[string][]ovObs{}
		for _, o := range all[k] {
			cell[ovGroups(o)] = append(cell[ovGroups(o)], o)
		}
		for _, grp := range ovGroupOrder {
			os := cell[grp]
			if len(os) == 0 {
				continue
			}
			st := ovSummarise(os)
			within := "–"
			if st.errored > 0 {
				within = fmt.Sprintf("%.0f%%", pct(st.within2, st.errored))
			}
			fmt.Fprintf(&b, "| %d | %s | %d | %s | %s | %.2f | %+.2f | %.1f%% | %s | %.0f%% | %s |\n", k.n, k.structure, k.log2m, grp,
				relFmt(st.medRel), st.p95Norm, st.meanZ, pct(st.covered, st.n), within, pct(st.reliable, st.n), condFmt(st.relCovered, st.reliable))
		}
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
