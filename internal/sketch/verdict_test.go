package sketch

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/hll"
)

// TestThreeWayWideIsNotReliable reproduces a reported answer: a 3-way
// intersection of 31,330 ± 4,905 (bounds 16,616 to 46,044, a 2.8× span)
// was called reliable because its overlap and size ratio were inside the
// cutoff table, which was measured for two sets. Three sketches of
// 137,000 ids at log2m 14 sharing 31,000 give such an envelope; their
// verdict must come from the width of the bounds.
func TestThreeWayWideIsNotReliable(t *testing.T) {
	t.Parallel()
	const n, shared = 137_000, 31_000
	rng := rand.New(rand.NewPCG(22, 5))
	core := randomHashes(rng, shared)
	sks := make([]*hll.Sketch, 3)
	for i := range sks {
		sks[i] = fill(newHLL(t, 14, false), core, randomHashes(rng, n-shared))
	}
	r, err := Intersect([]string{"a", "b", "c"}, sks, "")
	if err != nil {
		t.Fatal(err)
	}
	// The fixture is the reported case: an envelope of about ±4,900
	// around about 31,000, within the pairs' cutoffs for 16,384 registers,
	// and bounds that hold the truth.
	minOverlap, maxRatio, _ := cutoffs(14)
	if r.Error < 4400 || r.Error > 5400 || r.RelativeWidth < 0.8 || r.RelativeWidth > 1.1 ||
		r.Overlap < minOverlap || r.CardinalityRatio > maxRatio || r.Spurious || r.Lower > shared || r.Upper < shared {
		t.Fatalf("fixture: %.0f ± %.0f [%.0f, %.0f] width %.2f overlap %.2f ratio %.2f spurious %v; want the reported envelope around %d",
			r.Estimate, r.Error, r.Lower, r.Upper, r.RelativeWidth, r.Overlap, r.CardinalityRatio, r.Spurious, shared)
	}
	if r.Reliable || r.Verdict != VerdictNotReliable {
		t.Errorf("reliable %v verdict %q for bounds [%.0f, %.0f] (%.0f%% of the estimate), want not reliable",
			r.Reliable, r.Verdict, r.Lower, r.Upper, 100*r.RelativeWidth)
	}
	if !strings.HasPrefix(r.VerdictText, "Not reliable.") || !strings.Contains(r.VerdictText, "span") {
		t.Errorf("verdict text %q, want it to say the bounds are too wide", r.VerdictText)
	}
	if w := strings.Join(r.Warnings, "\n"); !strings.Contains(w, "an answer is reliable only when they span at most 50%") {
		t.Errorf("warnings %q lack the width rule", w)
	}
	// Cutoff warnings were measured for pairs and are not given for three.
	if w := strings.Join(r.Warnings, "\n"); strings.Contains(w, "trustworthy") {
		t.Errorf("warnings %q apply the pairs' cutoffs to three sets", w)
	}
	if r.ReliableWithin(1.2) != true || r.ReliableWithin(MaxRelativeWidth) != r.Reliable {
		t.Errorf("ReliableWithin(1.2) = %v, ReliableWithin(%g) = %v; want true and Reliable (%v)",
			r.ReliableWithin(1.2), MaxRelativeWidth, r.ReliableWithin(MaxRelativeWidth), r.Reliable)
	}

	// Three sets sharing most of their ids are narrow enough to be
	// reliable, and the verdict says so.
	core = randomHashes(rng, 400_000)
	for i := range sks {
		sks[i] = fill(newHLL(t, 14, false), core, randomHashes(rng, 20_000))
	}
	r, err = Intersect([]string{"a", "b", "c"}, sks, "")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Reliable || r.Verdict != VerdictReliable || r.RelativeWidth > MaxRelativeWidth || !strings.HasPrefix(r.VerdictText, "Reliable.") {
		t.Errorf("%.0f ± %.0f [%.0f, %.0f] width %.2f: reliable %v verdict %q %q, want reliable",
			r.Estimate, r.Error, r.Lower, r.Upper, r.RelativeWidth, r.Reliable, r.Verdict, r.VerdictText)
	}
}

// TestPairWidthRule checks the width rule on two sketches: inside the
// cutoffs, an answer whose bounds are wider than MaxRelativeWidth is not
// reliable (2048 registers, 15% overlap: the MLE's bounds span about 70%
// of the estimate), while a narrow one is.
func TestPairWidthRule(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(22, 6))
	tests := []struct {
		name          string
		log2m         int
		shared, alone int
		reliable      bool
	}{
		{"wide", 11, 30_000, 170_000, false},
		{"narrow", 14, 150_000, 50_000, true},
	}
	for _, tt := range tests {
		core := randomHashes(rng, tt.shared)
		a := fill(newHLL(t, tt.log2m, false), core, randomHashes(rng, tt.alone))
		b := fill(newHLL(t, tt.log2m, false), core, randomHashes(rng, tt.alone))
		r, err := Intersect([]string{"a", "b"}, []*hll.Sketch{a, b}, MethodMLE)
		if err != nil {
			t.Fatal(err)
		}
		minOverlap, maxRatio, _ := cutoffs(tt.log2m)
		if r.Overlap < minOverlap || r.CardinalityRatio > maxRatio || r.Spurious {
			t.Fatalf("%s: fixture overlap %.3f ratio %.2f spurious %v, want inside the cutoffs", tt.name, r.Overlap, r.CardinalityRatio, r.Spurious)
		}
		if r.Reliable != tt.reliable || (r.RelativeWidth <= MaxRelativeWidth) != tt.reliable {
			t.Errorf("%s: %.0f [%.0f, %.0f] width %.2f: reliable %v (%s), want %v",
				tt.name, r.Estimate, r.Lower, r.Upper, r.RelativeWidth, r.Reliable, r.Verdict, tt.reliable)

		}
		if want := map[bool]Verdict{true: VerdictReliable, false: VerdictNotReliable}[tt.reliable]; r.Verdict != want {
			t.Errorf("%s: verdict %q, want %q", tt.name, r.Verdict, want)
		}
	}
}

// TestVerdictOfExactAndSpurious: exact answers say so (even an exactly
// empty one, which is also spurious), spurious ones too.
func TestVerdictOfExactAndSpurious(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(22, 7))
	empty := newHLL(t, 14, true)
	a := fill(newHLL(t, 14, false), randomHashes(rng, 100_000))
	b := fill(newHLL(t, 14, false), randomHashes(rng, 100_000))
	r, err := Intersect([]string{"a", "e"}, []*hll.Sketch{a, empty}, "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != VerdictExact || !r.Reliable || !strings.HasPrefix(r.VerdictText, "Exact.") {
		t.Errorf("with an empty set: verdict %q reliable %v %q, want exact", r.Verdict, r.Reliable, r.VerdictText)
	}
	r, err = Intersect([]string{"a", "b", "c"}, []*hll.Sketch{a, b, fill(newHLL(t, 14, false), randomHashes(rng, 100_000))}, "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != VerdictSpurious || r.Reliable || !strings.HasPrefix(r.VerdictText, "Spurious.") {
		t.Errorf("disjoint sets: verdict %q reliable %v %q, want spurious", r.Verdict, r.Reliable, r.VerdictText)
	}
}

func TestRelativeWidthAndCountText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ est, lo, hi, want float64 }{
		{100, 80, 120, 0.4},
		{5, 5, 5, 0},
		{0, 0, 0, 0},
		{0, 0, 10, math.Inf(1)},
	} {
		if got := RelativeWidth(tt.est, tt.lo, tt.hi); got != tt.want {
			t.Errorf("RelativeWidth(%g, %g, %g) = %g, want %g", tt.est, tt.lo, tt.hi, got, tt.want)
		}
	}
	for x, want := range map[float64]string{0: "0", 999.5: "1,000", 16616.2: "16,616", -1234567: "-1,234,567", 100: "100"} {
		if got := countText(x); got != want {
			t.Errorf("countText(%g) = %q, want %q", x, got, want)
		}
	}
}
