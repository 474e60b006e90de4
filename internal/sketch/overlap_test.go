package sketch

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/hll"
)

// groups is a population of users by membership: groups[mask] users are
// in exactly the operands of mask.
type groups map[uint64]int

// build returns n sketches at log2m holding the groups' users (fresh
// random hashes), and the truth: users by membership.
func (g groups) build(tb testing.TB, rng *rand.Rand, n, log2m int, explicit bool) []*hll.Sketch {
	tb.Helper()
	sks := make([]*hll.Sketch, n)
	for i := range sks {
		sks[i] = newHLL(tb, log2m, explicit)
	}
	masks := make([]uint64, 0, len(g))
	for m := range g {
		masks = append(masks, m)
	}
	slices.Sort(masks)
	for _, m := range masks {
		for _, h := range randomHashes(rng, g[m]) {
			for i := range n {
				if m&(1<<i) != 0 {
					sks[i].AddHash(h)
				}
			}
		}
	}
	return sks
}

// truth returns the true counts of the groups' population.
func (g groups) truth(n int) (union int, exactly, atLeast, onlyHere []int, region map[uint64]int) {
	exactly = make([]int, n+1)
	onlyHere = make([]int, n)
	region = map[uint64]int{}
	for m, c := range g {
		union += c
		exactly[bits.OnesCount64(m)] += c
		region[m] += c
		if bits.OnesCount64(m) == 1 {
			onlyHere[bits.TrailingZeros64(m)] += c
		}
	}
	atLeast = make([]int, n+2)
	for k := n; k >= 1; k-- {
		atLeast[k] = atLeast[k+1] + exactly[k]
	}
	return union, exactly, atLeast, onlyHere, region
}

func asSketches(hs []*hll.Sketch) []Sketch {
	out := make([]Sketch, len(hs))
	for i, h := range hs {
		out[i] = NewHLL(h)
	}
	return out
}

func labelsFor(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("s%d", i)
	}
	return out
}

// TestOverlapExact: operands held as exact lists of hashes give exact
// counts of every kind, equal to counting the hashes.
func TestOverlapExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 1))
	g := groups{0b001: 40, 0b010: 30, 0b100: 20, 0b011: 11, 0b101: 7, 0b110: 5, 0b111: 3}
	hs := g.build(t, rng, 3, 14, true)
	for _, h := range hs {
		if h.Representation() != hll.Explicit {
			t.Fatalf("fixture is %v, want EXPLICIT", h.Representation())
		}
	}
	o, err := EstimateOverlap(labelsFor(3), asSketches(hs), "")
	if err != nil {
		t.Fatal(err)
	}
	union, exactly, atLeast, onlyHere, region := g.truth(3)
	check := func(what string, f Figure, want int) {
		t.Helper()
		if f.Estimate != float64(want) || f.Error != 0 || f.Lower != f.Estimate || f.Upper != f.Estimate || f.Verdict != VerdictExact {
			t.Errorf("%s = %+v, want exactly %d", what, f, want)
		}
	}
	check("union", o.Union, union)
	for k := 1; k <= 3; k++ {
		check(fmt.Sprintf("exactly %d", k), o.Exactly[k-1], exactly[k])
		check(fmt.Sprintf("at least %d", k), o.AtLeast[k-1], atLeast[k])
	}
	for i := range 3 {
		check(fmt.Sprintf("only in %d", i), o.OnlyHere[i], onlyHere[i])
	}
	if len(o.Regions) != 7 {
		t.Fatalf("%d regions, want 7", len(o.Regions))
	}
	for _, r := range o.Regions {
		mask := uint64(0)
		for _, m := range r.Members {
			var i int
			fmt.Sscanf(m, "s%d", &i)
			mask |= 1 << i
		}
		check(fmt.Sprint(r.Members), r.Figure, region[mask])
	}
	if !o.Complete {
		t.Error("an exact overlap is complete")
	}
}

// TestOverlapLattice: every union the lattice holds is the union of the
// operands its subset leaves out, built directly.
func TestOverlapLattice(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 2))
	const n = 6
	sets := make([]*hll.Sketch, n)
	regs := make([][]uint8, n)
	for i := range sets {
		sets[i] = fill(newHLL(t, 10, false), randomHashes(rng, 500*(i+1)))
		regs[i] = sets[i].Registers(nil)
	}
	for _, depth := range []int{1, 3, n - 1} {
		masks, card := unionLattice(regs, sets[0].Params(), depth, true)
		if len(masks) != latticeSize(n, depth) || len(card) != len(masks) {
			t.Fatalf("depth %d: %d unions, want %d", depth, len(masks), latticeSize(n, depth))
		}
		seen := map[uint64]bool{}
		for i, d := range masks {
			var in []*hll.Sketch
			for j, s := range sets {
				if d&(1<<j) == 0 {
					in = append(in, s)
				}
			}
			u, err := hll.Union(in...)
			if err != nil {
				t.Fatal(err)
			}
			want := debiased(u, u.Estimate())
			if math.Abs(card[i]-want) > 1e-9*want || bits.OnesCount64(d) > depth || seen[d] {
				t.Errorf("depth %d: union without %06b = %g, want %g (once)", depth, d, card[i], want)
			}
			seen[d] = true
		}
	}
}

// TestOverlapReplicates checks the claim the errors rest on: the
// registers whose index ends in the bits j are the registers of a sketch,
// with that many fewer index bits, of exactly the hashes that end in j
// (shifted right by those bits).
func TestOverlapReplicates(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 3))
	const log2m, b = 12, 3
	hashes := randomHashes(rng, 40000)
	all := fill(newHLL(t, log2m, false), hashes).Registers(nil)
	for j := range uint64(1 << b) {
		sub := newHLL(t, log2m-b, false)
		for _, h := range hashes {
			if h&(1<<b-1) == j {
				sub.AddHash(h >> b)
			}
		}
		want := sub.Registers(nil)
		for k := range want {
			if got := all[k<<b|int(j)]; got != want[k] {
				t.Fatalf("replicate %d register %d = %d, the sketch of its hashes has %d", j, k, got, want[k])
			}
		}
		// A replicate's estimate is hll's for those registers.
		if got, want := sumEstimate(sub.Params(), want, nil), sub.Estimate(); got != want {
			t.Errorf("replicate %d: sumEstimate %v, hll's estimate %v", j, got, want)
		}
	}
}

// TestOverlapAgainstTruth: three register sketches of known membership;
// every count's bounds hold the truth and the counts add up.
func TestOverlapAgainstTruth(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 4))
	g := groups{0b001: 300_000, 0b010: 200_000, 0b100: 100_000, 0b011: 60_000, 0b101: 30_000, 0b110: 20_000, 0b111: 50_000}
	hs := g.build(t, rng, 3, 14, false)
	o, err := EstimateOverlap(labelsFor(3), asSketches(hs), "")
	if err != nil {
		t.Fatal(err)
	}
	union, exactly, atLeast, onlyHere, region := g.truth(3)
	covered, total := 0, 0
	check := func(what string, f Figure, want int) {
		t.Helper()
		total++
		if f.Lower <= float64(want) && float64(want) <= f.Upper {
			covered++
		} else {
			t.Logf("%s: %.0f ± %.0f [%.0f, %.0f] misses %d", what, f.Estimate, f.Error, f.Lower, f.Upper, want)
		}
		if f.Error <= 0 || f.Estimate < f.Lower || f.Estimate > f.Upper {
			t.Errorf("%s = %+v: want an error and the estimate inside its bounds", what, f)
		}
		if rel := math.Abs(f.Estimate-float64(want)) / float64(want); rel > 0.25 {
			t.Errorf("%s = %.0f, truth %d: %.0f%% off", what, f.Estimate, want, 100*rel)
		}
	}
	check("union", o.Union, union)
	for k := 1; k <= 3; k++ {
		check(fmt.Sprintf("exactly %d", k), o.Exactly[k-1], exactly[k])
		check(fmt.Sprintf("at least %d", k), o.AtLeast[k-1], atLeast[k])
	}
	for i := range 3 {
		check(fmt.Sprintf("only in %d", i), o.OnlyHere[i], onlyHere[i])
	}
	for i, r := range o.Regions {
		check(fmt.Sprint(r.Members), r.Figure, region[regionMasks(3)[i]])
	}
	if covered < total-1 {
		t.Errorf("bounds hold %d of %d truths, want all but at most one", covered, total)
	}
	sum := 0.0
	for _, f := range o.Exactly {
		sum += f.RawEstimate
	}
	if math.Abs(sum-o.Union.RawEstimate) > 1e-6*o.Union.RawEstimate {
		t.Errorf("exactly-k counts add up to %g, the union is %g", sum, o.Union.RawEstimate)
	}
	if !o.Complete || o.Unions != 7 || o.Depth != 2 || len(o.Regions) != 7 {
		t.Errorf("complete %v, %d unions, depth %d, %d regions; want complete, 7, 2, 7", o.Complete, o.Unions, o.Depth, len(o.Regions))
	}
	if got := o.Regions[3].Members; !slices.Equal(got, []string{"s0", "s1"}) {
		t.Errorf("fourth region is %v, want the first pair", got)
	}
}

// TestOverlapBounded: the unions built are bounded; beyond the bound the
// answer says which k it counts.
func TestOverlapBounded(t *testing.T) {
	tests := []struct {
		n, log2m, depth int
		complete        bool
	}{
		// At 1,024 registers the unions' count binds: every subset
		// of 12 operands (4,095 unions), subsets leaving out up to 6
		// of 13 (4,096), up to 2 of 64 (2,081).
		{12, 10, 11, true},
		{13, 10, 6, false},
		{64, 10, 2, false},
		// At 131,072 the register reads bind: 65 unions for 64.
		{64, 17, 1, false},
		{5, 17, 4, true},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%d sets at log2m %d", tt.n, tt.log2m), func(t *testing.T) {
			// A source of its own: parallel subtests drawing from one
			// would race and draw other data from run to run.
			rng := rand.New(rand.NewPCG(29, uint64(50+i)))
			hs := make([]*hll.Sketch, tt.n)
			common := randomHashes(rng, 300)
			for i := range hs {
				hs[i] = fill(newHLL(t, tt.log2m, false), common, randomHashes(rng, 2000))
			}
			o, err := EstimateOverlap(labelsFor(tt.n), asSketches(hs), "")
			if err != nil {
				t.Fatal(err)
			}
			if o.Depth != tt.depth || o.Complete != tt.complete || o.Unions != latticeSize(tt.n, tt.depth) ||
				o.Unions > MaxOverlapUnions || o.Unions<<tt.log2m > OverlapWork {
				t.Errorf("depth %d complete %v with %d unions; want depth %d complete %v within the bounds", o.Depth, o.Complete, o.Unions, tt.depth, tt.complete)
			}
			wantExactly, wantAtLeast := tt.depth, tt.depth+1
			if tt.complete {
				wantExactly, wantAtLeast = tt.n, tt.n
			}
			if len(o.Exactly) != wantExactly || len(o.AtLeast) != wantAtLeast || len(o.OnlyHere) != tt.n {
				t.Errorf("%d exactly, %d at least, %d only-here counts; want %d, %d, %d", len(o.Exactly), len(o.AtLeast), len(o.OnlyHere), wantExactly, wantAtLeast, tt.n)
			}
			if w := strings.Join(o.Warnings, "\n"); tt.complete == strings.Contains(w, "register reads") {
				t.Errorf("warnings %q", w)
			}
			// Each set has 2000 users of its own: the bounds hold that
			// in all but a few sets (they are 99.7% bounds; the
			// simulation in docs/intersection.md measures them).
			missed := 0
			for i, f := range o.OnlyHere {
				if f.Lower > 2000 || f.Upper < 2000 {
					missed++
					t.Logf("only in %d: [%.0f, %.0f] misses 2000", i, f.Lower, f.Upper)
				}
			}
			if missed > max(1, tt.n/20) {
				t.Errorf("%d of %d only-here bounds miss the truth", missed, tt.n)
			}
		})
	}
}

func TestOverlapErrors(t *testing.T) {
	a := NewHLL(fill(newHLL(t, 10, false), randomHashes(rand.New(rand.NewPCG(1, 1)), 100)))
	undefined, err := hll.Decode([]byte{0x10, 0x8e, 0x7f})
	if err != nil {
		t.Fatal(err)
	}
	theta, err := Lookup(TypeTheta)
	if err != nil {
		t.Fatal(err)
	}
	th, err := theta.Default().New()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		sks    []Sketch
		kind   ErrorKind
		target error
	}{
		{"one", []Sketch{a}, Invalid, ErrOverlapCount},
		{"65", slices.Repeat([]Sketch{a}, 65), Invalid, ErrOverlapCount},
		{"undefined", []Sketch{a, NewHLL(undefined)}, Invalid, ErrUndefined},
		{"theta", []Sketch{th, th}, Conflict, nil},
		{"mixed", []Sketch{a, th}, Conflict, nil},
	}
	for _, tt := range tests {
		_, err := EstimateOverlap(labelsFor(len(tt.sks)), tt.sks, "")
		if KindOf(err) != tt.kind || tt.target != nil && !errors.Is(err, tt.target) {
			t.Errorf("%s: %v (%v), want %v %v", tt.name, err, KindOf(err), tt.kind, tt.target)
		}
	}
}

// TestOverlapIdenticalUnions: when leaving operands out changes no
// register (every set is the same), the counts of users in fewer than all
// of them are sums of equal unions with signs that cancel. They must be 0
// and spurious, not the rounding left over from sums of large binomials
// times the union, with bounds that exclude 0. Under the race detector
// the two largest (12 sets at log2m 14, 4,096 unions, and 64 sets) are
// left to the normal build (scripts/test runs it); 12 sets at log2m 11 and 5
// at 14 still run.
func TestOverlapIdenticalUnions(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 6))
	for _, tt := range []struct{ n, log2m int }{{12, 11}, {12, 14}, {5, 14}, {64, 14}} {
		h := fill(newHLL(t, tt.log2m, false), randomHashes(rng, 300_000))
		if raceEnabled && tt.log2m == 14 && tt.n >= 12 {
			t.Logf("%d sets at log2m %d: left to the normal build under the race detector", tt.n, tt.log2m)
			continue
		}
		hs := make([]*hll.Sketch, tt.n)
		for i := range hs {
			hs[i] = h
		}
		o, err := EstimateOverlap(labelsFor(tt.n), asSketches(hs), "")
		if err != nil {
			t.Fatal(err)
		}
		zero := func(what string, f Figure) {
			t.Helper()
			if f.RawEstimate != 0 || f.Estimate != 0 || f.Lower != 0 || f.Verdict != VerdictSpurious {
				t.Errorf("%d sets at log2m %d: %s = %+v, want 0, spurious", tt.n, tt.log2m, what, f)
			}
		}
		for k, f := range o.Exactly {
			if k+1 < tt.n {
				zero(fmt.Sprintf("exactly %d", k+1), f)
			}
		}
		for i, f := range o.OnlyHere {
			zero(fmt.Sprintf("only in %d", i), f)
		}
		if o.Complete {
			if f := o.Exactly[tt.n-1]; math.Abs(f.Estimate-o.Union.Estimate) > 1e-6*o.Union.Estimate {
				t.Errorf("%d sets: exactly %d = %v, want the union %v", tt.n, tt.n, f.Estimate, o.Union.Estimate)
			}
		}
	}
}

// skewedGroups draws users of an outside audit's population: each in 1 to
// 5 of n sets (75%, 17%, 5%, 2%, 1% of the users), the sets drawn without
// replacement with weights (i+1)^-1.5. For 8 sets and 300,000 users they
// hold about 181k, 81k, 48k, 32k, 24k, 18k, 14.5k and 12k, and many
// regions are empty or nearly so.
func skewedGroups(rng *rand.Rand, n, users int) groups {
	g := groups{}
	for range users {
		u, k := rng.Float64(), 1
		for _, c := range []float64{0.75, 0.92, 0.97, 0.99} {
			if u >= c {
				k++
			}
		}
		var m uint64
		for range min(k, n) {
			total := 0.0
			for i := range n {
				if m&(1<<i) == 0 {
					total += math.Pow(float64(i+1), -1.5)
				}
			}
			r := rng.Float64() * total
			for i := range n {
				if m&(1<<i) != 0 {
					continue
				}
				if r -= math.Pow(float64(i+1), -1.5); r < 0 || i == n-1 {
					m |= 1 << i
					break
				}
			}
		}
		g[m]++
	}
	return g
}

// TestOverlapNearEmptyRegions reproduces an outside audit: 8 sets of
// skewed sizes at log2m 14, 300,000 users. Regions with no user (or one)
// were counted as 35 to 109 users with errors of 1 to 4 (15 to 50 errors
// off), and called reliable. The estimate came from unions on either side
// of the load where the bias correction stopped, and the error from
// replicates that do not see it. Now no count may lie more than 6 errors
// from its truth, every reliable count of fewer than 100 users must hold
// it, and the bounds must hold about as many truths as they claim.
func TestOverlapNearEmptyRegions(t *testing.T) {
	const n, log2m, users = 8, 14, 300_000
	covered, total, within2, errored := 0, 0, 0, 0
	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 14))
		g := skewedGroups(rng, n, users)
		o, err := EstimateOverlap(labelsFor(n), asSketches(g.build(t, rng, n, log2m, false)), "")
		if err != nil {
			t.Fatal(err)
		}
		union, exactly, atLeast, onlyHere, region := g.truth(n)
		check := func(what string, f Figure, want int) {
			t.Helper()
			truth := float64(want)
			total++
			in := f.Lower <= truth && truth <= f.Upper
			if in {
				covered++
			}
			if f.Error > 0 {
				errored++
				if math.Abs(f.Estimate-truth) <= 2*f.Error {
					within2++
				}
			}
			// Student's t with 31 degrees of freedom leaves beyond 6
			// errors one count in a million.
			if f.Error > 0 && math.Abs(f.RawEstimate-truth) > 6*f.Error {
				t.Errorf("seed %d: %s holds %d users, counted %.1f ± %.2f with bounds [%.1f, %.1f] (%s): %.0f errors off",
					seed, what, want, f.RawEstimate, f.Error, f.Lower, f.Upper, f.Verdict, math.Abs(f.RawEstimate-truth)/f.Error)
			}
			if want < 100 && f.Verdict == VerdictReliable && !in {
				t.Errorf("seed %d: %s holds %d users, counted %.1f ± %.2f with bounds [%.1f, %.1f], reliable", seed, what, want, f.Estimate, f.Error, f.Lower, f.Upper)
			}
		}
		check("the union", o.Union, union)
		for k := 1; k <= n; k++ {
			check(fmt.Sprintf("exactly %d", k), o.Exactly[k-1], exactly[k])
			check(fmt.Sprintf("at least %d", k), o.AtLeast[k-1], atLeast[k])
		}
		for i := range n {
			check(fmt.Sprintf("only %d", i), o.OnlyHere[i], onlyHere[i])
		}
		for i, r := range o.Regions {
			check(fmt.Sprint("region ", r.Members), r.Figure, region[regionMasks(n)[i]])
		}
	}
	cov, w2 := 100*float64(covered)/float64(total), 100*float64(within2)/float64(errored)
	t.Logf("bounds hold %d of %d truths (%.2f%%); %.1f%% of %d estimates within two errors", covered, total, cov, w2, errored)
	// 2,520 counts at the documented 99.5%: a binomial standard error of
	// 0.14%; 99% is three below. Within two errors: 94.6% for Student's t
	// with 31 degrees of freedom, 92% allows for the counts of a run not
	// being independent.
	if cov < 99 {
		t.Errorf("bounds hold %.2f%% of the truths, want at least 99%%", cov)
	}
	if w2 < 92 {
		t.Errorf("%.1f%% of estimates within two errors of the truth, want at least 92%%", w2)
	}
}

// TestOverlapAgreesWithIntersection: the users in all of three register
// sketches are one number on both routes: the overlap's region of all
// and Intersect's inclusion–exclusion sum the same unions and measure
// their error on the same replicates, with the same floor.
func TestOverlapAgreesWithIntersection(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 3))
	g := groups{0b001: 50_000, 0b010: 30_000, 0b100: 10_000, 0b011: 5_000, 0b111: 20_000}
	for _, log2m := range []int{11, 14} {
		hs := g.build(t, rng, 3, log2m, false)
		o, err := EstimateOverlap(labelsFor(3), asSketches(hs), "")
		if err != nil {
			t.Fatal(err)
		}
		x, err := Intersect(labelsFor(3), hs, "")
		if err != nil {
			t.Fatal(err)
		}
		all := o.Regions[len(o.Regions)-1].Figure
		if math.Abs(all.RawEstimate-x.RawEstimate) > 1e-6*x.RawEstimate || math.Abs(all.Error-x.Error) > 1e-9*x.Error ||
			math.Abs(all.Lower-x.Lower) > 1e-6*x.RawEstimate || all != o.AtLeast[2] {
			t.Errorf("log2m %d: region of all %.3f ± %.3f [%.1f, %.1f], intersection %.3f ± %.3f [%.1f, %.1f]; want the same",
				log2m, all.RawEstimate, all.Error, all.Lower, all.Upper, x.RawEstimate, x.Error, x.Lower, x.Upper)
		}
	}
}
