package sketch

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/hll"
)

// newHLL returns an EMPTY sketch; explicit chooses the automatic EXPLICIT
// threshold, otherwise sets go straight to registers.
func newHLL(tb testing.TB, log2m int, explicit bool) *hll.Sketch {
	tb.Helper()
	p := hll.Params{Log2m: log2m, Regwidth: 5, Expthresh: 0, Sparse: true}
	if explicit {
		p.Expthresh = hll.AutoExpthresh
	}
	s, err := hll.New(p)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// fill adds every hash of every list to s and returns it.
func fill(s *hll.Sketch, lists ...[]uint64) *hll.Sketch {
	for _, l := range lists {
		for _, h := range l {
			s.AddHash(h)
		}
	}
	return s
}

func TestIntersectErrors(t *testing.T) {
	a := fill(newHLL(t, 10, false), randomHashes(rand.New(rand.NewPCG(1, 1)), 100))
	undefined, err := hll.Decode([]byte{0x10, 0x8e, 0x7f})
	if err != nil {
		t.Fatal(err)
	}
	if undefined.Representation() != hll.Undefined {
		t.Fatalf("decoded %v, want UNDEFINED", undefined.Representation())
	}
	nine := slices.Repeat([]*hll.Sketch{a}, 9)
	nineNames := slices.Repeat([]string{"a"}, 9)
	tests := []struct {
		name     string
		names    []string
		sketches []*hll.Sketch
		method   Method
		want     error // nil: an internal error, not an *Error
	}{
		{"one sketch", []string{"a"}, []*hll.Sketch{a}, "", ErrSketchCount},
		{"none", nil, nil, "", ErrSketchCount},
		{"nine sketches", nineNames, nine, MethodInclusionExclusion, ErrSketchCount},
		{"unknown method", []string{"a", "b"}, []*hll.Sketch{a, a}, "jaccard", ErrMethod},
		{"mle with three", []string{"a", "b", "c"}, []*hll.Sketch{a, a, a}, MethodMLE, ErrMethod},
		{"undefined", []string{"a", "u"}, []*hll.Sketch{a, undefined}, "", ErrUndefined},
		{"names mismatch", []string{"a"}, []*hll.Sketch{a, a}, "", nil},
		{"nil sketch", []string{"a", "b"}, []*hll.Sketch{a, nil}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Intersect(tt.names, tt.sketches, tt.method)
			if err == nil {
				t.Fatal("Intersect: nil error, want one")
			}
			if tt.want == nil {
				if k := KindOf(err); k != Internal {
					t.Errorf("KindOf(%v) = %v, want internal", err, k)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("Intersect error %v, want %v", err, tt.want)
			}
			if k := KindOf(err); k != Invalid {
				t.Errorf("KindOf(%v) = %v, want invalid", err, k)
			}
		})
	}
}

func TestParseMethod(t *testing.T) {
	for _, s := range []string{"", "mle", "inclusion_exclusion"} {
		if m, err := ParseMethod(s); err != nil || string(m) != s {
			t.Errorf("ParseMethod(%q) = %q, %v; want %q, nil", s, m, err, s)
		}
	}
	if _, err := ParseMethod("MLE"); !errors.Is(err, ErrMethod) || KindOf(err) != Invalid {
		t.Errorf("ParseMethod(MLE) error %v, want invalid ErrMethod", err)
	}
	if DefaultMethod(2) != MethodMLE || DefaultMethod(3) != MethodInclusionExclusion {
		t.Errorf("DefaultMethod(2), (3) = %q, %q; want mle, inclusion_exclusion", DefaultMethod(2), DefaultMethod(3))
	}
}

func TestIntersectExplicitExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	common, onlyA, onlyB, onlyC := randomHashes(rng, 300), randomHashes(rng, 500), randomHashes(rng, 200), randomHashes(rng, 100)
	a := fill(newHLL(t, 14, true), common, onlyA)
	b := fill(newHLL(t, 13, true), common, onlyB) // another log2m: hashes stay exact
	c := fill(newHLL(t, 14, true), common[:100], onlyC)
	for _, s := range []*hll.Sketch{a, b, c} {
		if s.Representation() != hll.Explicit {
			t.Fatalf("fixture is %v, want EXPLICIT", s.Representation())
		}
	}
	for _, m := range []Method{MethodInclusionExclusion, MethodMLE} {
		r, err := Intersect([]string{"a", "b"}, []*hll.Sketch{a, b}, m)
		if err != nil {
			t.Fatal(err)
		}
		if r.Estimate != 300 || r.RawEstimate != 300 || r.Error != 0 || r.Lower != 300 || r.Upper != 300 {
			t.Errorf("%s: estimate %g raw %g ± %g [%g, %g], want exactly 300", m, r.Estimate, r.RawEstimate, r.Error, r.Lower, r.Upper)
		}
		if !r.Reliable || r.Spurious || len(r.Warnings) != 0 {
			t.Errorf("%s: reliable %v spurious %v warnings %q, want exact and quiet", m, r.Reliable, r.Spurious, r.Warnings)
		}
		if *r.ANotB != (Bounded{Estimate: 500, Lower: 500, Upper: 500}) || *r.BNotA != (Bounded{Estimate: 200, Lower: 200, Upper: 200}) {
			t.Errorf("%s: a_not_b %+v b_not_a %+v, want 500 and 200 exactly", m, *r.ANotB, *r.BNotA)
		}
		if want := 300.0 / 1000; math.Abs(r.Jaccard.Estimate-want) > 1e-12 || r.Jaccard.Error != 0 {
			t.Errorf("%s: jaccard %+v, want %g exactly", m, *r.Jaccard, want)
		}
		if r.Log2m != 13 || r.Overlap != 300.0/500 || r.CardinalityRatio != 800.0/500 {
			t.Errorf("%s: log2m %d overlap %g ratio %g, want 13, 0.6, 1.6", m, r.Log2m, r.Overlap, r.CardinalityRatio)
		}
	}
	r, err := Intersect([]string{"a", "b", "c"}, []*hll.Sketch{a, b, c}, "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Estimate != 100 || r.Error != 0 || r.Method != MethodInclusionExclusion || r.Jaccard != nil {
		t.Errorf("three EXPLICIT: estimate %g ± %g method %s jaccard %v, want exactly 100 by inclusion_exclusion, no jaccard", r.Estimate, r.Error, r.Method, r.Jaccard)
	}
}

func TestIntersectEmpty(t *testing.T) {
	full := fill(newHLL(t, 12, false), randomHashes(rand.New(rand.NewPCG(3, 3)), 50000))
	for _, m := range []Method{MethodInclusionExclusion, MethodMLE} {
		r, err := Intersect([]string{"full", "empty"}, []*hll.Sketch{full, newHLL(t, 12, true)}, m)
		if err != nil {
			t.Fatal(err)
		}
		if r.Estimate != 0 || r.Error != 0 || !r.Spurious || !r.Reliable || r.Overlap != 0 || r.CardinalityRatio != 0 {
			t.Errorf("%s: %+v, want exactly 0, spurious, reliable, overlap and ratio 0", m, r)
		}
		if r.BNotA.Estimate != 0 || r.ANotB.Estimate != r.Terms[0].Cardinality || r.ANotB.Error == 0 {
			t.Errorf("%s: a_not_b %+v b_not_a %+v, want the full set's term with its error, and 0", m, *r.ANotB, *r.BNotA)
		}
	}
}

// TestIntersectTerms checks the union terms: their number, order, names,
// and that inclusion–exclusion's raw estimate is their signed sum.
func TestIntersectTerms(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	common := randomHashes(rng, 20000)
	names := []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"}
	var sks []*hll.Sketch
	for range names {
		sks = append(sks, fill(newHLL(t, 11, false), common, randomHashes(rng, 10000)))
	}
	for _, k := range []int{2, 3, 8} {
		r, err := Intersect(names[:k], sks[:k], MethodInclusionExclusion)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Terms) != 1<<k-1 {
			t.Fatalf("k=%d: %d terms, want %d", k, len(r.Terms), 1<<k-1)
		}
		sum, seen := 0.0, map[string]bool{}
		for i, term := range r.Terms {
			if i > 0 && len(term.Sketches) < len(r.Terms[i-1].Sketches) {
				t.Errorf("k=%d: term %d %v after a larger one", k, i, term.Sketches)
			}
			key := strings.Join(term.Sketches, ",")
			if seen[key] || !slices.IsSorted(term.Sketches) {
				t.Errorf("k=%d: term %v repeated or out of input order", k, term.Sketches)
			}
			seen[key] = true
			if len(term.Sketches)%2 == 1 {
				sum += term.Cardinality
			} else {
				sum -= term.Cardinality
			}
		}
		if math.Abs(sum-r.RawEstimate) > 1e-6*math.Abs(sum) {
			t.Errorf("k=%d: raw estimate %g, signed sum of terms %g", k, r.RawEstimate, sum)
		}
		if got := r.Terms[0].Sketches; len(got) != 1 || got[0] != "s0" {
			t.Errorf("k=%d: first term %v, want [s0]", k, got)
		}
		if got := r.Terms[len(r.Terms)-1].Sketches; !slices.Equal(got, names[:k]) {
			t.Errorf("k=%d: last term %v, want all sketches", k, got)
		}
		// The common part is 20000 of each set: the envelope must hold it.
		if r.Lower > 20000 || r.Upper < 20000 {
			t.Errorf("k=%d: [%g, %g] misses the true 20000 (estimate %g ± %g)", k, r.Lower, r.Upper, r.Estimate, r.Error)
		}
	}
}

func TestIntersectFoldsAndWarns(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	common := randomHashes(rng, 5000)
	a := fill(newHLL(t, 14, false), common, randomHashes(rng, 5000))
	b := fill(newHLL(t, 11, false), common, randomHashes(rng, 500000))
	r, err := Intersect([]string{"a", "b"}, []*hll.Sketch{a, b}, MethodMLE)
	if err != nil {
		t.Fatal(err)
	}
	if r.Log2m != 11 || r.Reliable {
		t.Errorf("log2m %d reliable %v, want 11 and unreliable", r.Log2m, r.Reliable)
	}
	all := strings.Join(r.Warnings, "\n")
	for _, want := range []string{"folded to 2048 registers", "times the smallest", "fewer than the 8192"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
}

func TestCutoffs(t *testing.T) {
	tests := []struct {
		log2m        int
		overlap      float64
		ratio        float64
		extrapolated bool
	}{
		{13, 0.05, 10, false},
		{14, 0.05, 20, false},
		{15, 0.05, 30, false},
		{16, 0.05, 100, false},
		{17, 0.05, 100, false},
		{12, 0.05 * math.Sqrt2, 5, true},
		{11, 0.1, 2.5, true},
		{4, 0.05 * math.Sqrt(512), 10.0 / 512, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.log2m), func(t *testing.T) {
			o, r, e := cutoffs(tt.log2m)
			if math.Abs(o-tt.overlap) > 1e-12 || math.Abs(r-tt.ratio) > 1e-12 || e != tt.extrapolated {
				t.Errorf("cutoffs(%d) = %g, %g, %v; want %g, %g, %v", tt.log2m, o, r, e, tt.overlap, tt.ratio, tt.extrapolated)
			}
		})
	}
}

// TestDebiased checks that removing the raw estimator's bias brings the
// mean estimate at n = 3m, where postgresql-hll's estimate runs about 1%
// high, back to the truth, and leaves linear counting alone.
func TestDebiased(t *testing.T) {
	const log2m, runs = 11, 60
	rng := rand.New(rand.NewPCG(6, 6))
	n := 3 << log2m
	var pg, fixed float64
	for range runs {
		s := fill(newHLL(t, log2m, false), randomHashes(rng, n))
		est := s.Estimate()
		d := debiased(s, est)
		pg += (est/float64(n) - 1) / runs
		fixed += (d/float64(n) - 1) / runs
	}
	// The mean of 60 runs has a standard error of 0.3%.
	if pg < 0.005 {
		t.Errorf("postgresql-hll's mean relative error at 3m = %.4f, want the known ~+1%% bias", pg)
	}
	if math.Abs(fixed) > 0.0065 {
		t.Errorf("debiased mean relative error at 3m = %.4f, want within 0.65%%", fixed)
	}
	small := fill(newHLL(t, log2m, false), randomHashes(rng, 1<<log2m))
	if d := debiased(small, small.Estimate()); d != small.Estimate() {
		t.Errorf("debiased in the linear counting range = %g, want the estimate %g unchanged", d, small.Estimate())
	}
}

// TestDebiasedContinuous: the correction changes smoothly with the load,
// with no step where it used to stop (16m). A step moved the unions on
// one side of it by 1.4e-4 of their size and left the others, which an
// overlap's signed sums of many unions turned into users that were not
// there (TestOverlapNearEmptyRegions).
func TestDebiasedContinuous(t *testing.T) {
	const log2m = 14
	m := 1 << log2m
	rng := rand.New(rand.NewPCG(16, 16))
	s := newHLL(t, log2m, false)
	prev, prevLoad := 0.0, 0.0
	for load := 8.0; load <= 40; load += 0.5 {
		for s.Estimate() < load*float64(m) {
			s.AddHash(rng.Uint64())
		}
		est := s.Estimate()
		d := debiased(s, est)
		ratio := d / est
		// The raw estimate runs 1.2e-4 to 1.4e-4 low at these loads
		// and 16,384 registers (postgresql-hll's α_m); the correction
		// adds it back.
		if ratio < 1+1e-4 || ratio > 1+1.6e-4 {
			t.Errorf("load %.1f: debiased/estimate = 1%+.2e, want 1 + 1.0e-4 to 1.6e-4", est/float64(m), ratio-1)
		}
		if prev != 0 && math.Abs(ratio-prev) > 2e-5 {
			t.Errorf("debiased/estimate steps from 1%+.2e at load %.2f to 1%+.2e at load %.2f", prev-1, prevLoad, ratio-1, est/float64(m))
		}
		prev, prevLoad = ratio, est/float64(m)
	}
}

// TestMembership checks the EXPLICIT-against-registers estimator: its
// envelope covers the truth, and it is as precise as Ertl's estimator on
// the EXPLICIT sketch's materialised registers (within 5%), whether or not
// the EXPLICIT set is large enough for its hashes to share registers.
func TestMembership(t *testing.T) {
	tests := []struct {
		name                 string
		log2m                int
		expthresh            int64
		common, onlyE, onlyR int
		maxRatioToRegisters  float64
	}{
		{"sparse explicit", 14, hll.AutoExpthresh, 400, 800, 100000, 1.05},
		{"dense explicit", 11, 8192, 1500, 3000, 100000, 1.05},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const runs = 40
			rng := rand.New(rand.NewPCG(7, uint64(i)))
			covered := 0
			var errMember, errRegs float64
			truth := float64(tt.common)
			for range runs {
				common := randomHashes(rng, tt.common)
				e, err := hll.New(hll.Params{Log2m: tt.log2m, Regwidth: 5, Expthresh: tt.expthresh, Sparse: true})
				if err != nil {
					t.Fatal(err)
				}
				fill(e, common, randomHashes(rng, tt.onlyE))
				if e.Representation() != hll.Explicit {
					t.Fatalf("fixture is %v, want EXPLICIT", e.Representation())
				}
				r := fill(newHLL(t, tt.log2m, false), common, randomHashes(rng, tt.onlyR))
				res, err := Intersect([]string{"r", "e"}, []*hll.Sketch{r, e}, MethodMLE)
				if err != nil {
					t.Fatal(err)
				}
				if res.Lower <= truth && truth <= res.Upper {
					covered++
				}
				errMember += math.Abs(res.Estimate-truth) / runs
				est, err := jointMLE(r.Registers(nil), e.Registers(nil), tt.log2m, 5)
				if err != nil {
					t.Fatal(err)
				}
				errRegs += math.Abs(est.x-truth) / runs
				if want := float64(tt.common+tt.onlyE) - res.Estimate; res.BNotA.Estimate != want {
					t.Errorf("b_not_a (the EXPLICIT side) = %g, want %g", res.BNotA.Estimate, want)
				}
			}
			t.Logf("mean absolute error: per-hash likelihood %.1f, Ertl on registers %.1f; covered %d of %d", errMember, errRegs, covered, runs)
			if covered < runs*95/100 {
				t.Errorf("envelope covered %d of %d, want at least 95%%", covered, runs)
			}
			if errMember > tt.maxRatioToRegisters*errRegs {
				t.Errorf("mean absolute error %.1f, Ertl on registers %.1f: want at most %.2f times", errMember, errRegs, tt.maxRatioToRegisters)
			}
		})
	}
}
