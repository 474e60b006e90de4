package cohort_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/cohort"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/theta"
)

// setOf is an HLL (log2m 14) of the ids in [lo, hi).
func setOf(tb testing.TB, label string, lo, hi int64) cohort.Set {
	tb.Helper()
	h, err := hll.New(hll.DefaultParams())
	if err != nil {
		tb.Fatal(err)
	}
	for v := lo; v < hi; v++ {
		h.AddInt64(v)
	}
	return cohort.Set{Label: label, Sketch: sketch.NewHLL(h)}
}

// TestRetentionExact: EXPLICIT sets give exact cells and shares, the
// table is a triangle when later periods are missing, and each cell is
// the intersection sketch.Intersect answers for its pair.
func TestRetentionExact(t *testing.T) {
	// Period p holds ids [100p, 100p+300): consecutive periods share 200,
	// two apart 100, three apart none.
	var periods []cohort.Set
	for p := range 4 {
		periods = append(periods, setOf(t, fmt.Sprintf("p%d", p), int64(100*p), int64(100*p+300)))
	}
	tb, err := cohort.Retention(periods, 3, 3, "")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{{200, 100, 0}, {200, 100}, {200}}
	for i, row := range tb.Rows {
		if row.Label != periods[i].Label || row.Size.Estimate != 300 || row.Size.Error != 0 {
			t.Errorf("row %d: %+v", i, row)
		}
		if len(row.Cells) != len(want[i]) {
			t.Fatalf("row %d has %d cells, want %d (a triangle)", i, len(row.Cells), len(want[i]))
		}
		for k, c := range row.Cells {
			if c.Offset != k+1 || c.Intersection.Estimate != want[i][k] || c.Share.Estimate != want[i][k]/300 || c.Share.Error != 0 {
				t.Errorf("cell (%d, %d) = %+v, want %v of 300", i, k+1, c, want[i][k])
			}
			h0, _ := sketch.HLLOf(periods[i].Sketch)
			h1, _ := sketch.HLLOf(periods[i+k+1].Sketch)
			x, err := sketch.Intersect([]string{periods[i].Label, periods[i+k+1].Label}, []*hll.Sketch{h0, h1}, "")
			if err != nil || x.Reliable != c.Intersection.Reliable || x.Estimate != c.Intersection.Estimate || c.Share.Reliable != x.Reliable {
				t.Errorf("cell (%d, %d) verdict %v, estimate %v; Intersect says %v, %v", i, k+1, c.Intersection.Reliable, c.Intersection.Estimate, x.Reliable, x.Estimate)
			}
		}
	}
}

// TestRetentionRegisters: on sets that hold registers the cells' bounds
// hold the truth and the share's error follows from the intersection's
// and the cohort's.
func TestRetentionRegisters(t *testing.T) {
	periods := []cohort.Set{setOf(t, "a", 0, 200000), setOf(t, "b", 100000, 300000), setOf(t, "c", 150000, 400000)}
	tb, err := cohort.Retention(periods, 2, 2, sketch.MethodMLE)
	if err != nil {
		t.Fatal(err)
	}
	truth := [][]float64{{100000, 50000}, {150000}}
	for i, row := range tb.Rows {
		if math.Abs(row.Size.Estimate-200000+float64(i)*0) > 0.05*200000 || row.Size.Error <= 0 || row.Size.Lower >= row.Size.Estimate {
			t.Errorf("row %d size %+v", i, row.Size)
		}
		for k, c := range row.Cells {
			x := c.Intersection
			if x.Lower > truth[i][k] || x.Upper < truth[i][k] || !x.Reliable {
				t.Errorf("cell (%d, %d) = [%v, %v] reliable %v, truth %v", i, k+1, x.Lower, x.Upper, x.Reliable, truth[i][k])
			}
			s := c.Share
			wantErr := math.Sqrt(math.Pow(x.Error/row.Size.Estimate, 2) + math.Pow(s.Estimate*row.Size.Error/row.Size.Estimate, 2))
			if math.Abs(s.Estimate-x.Estimate/row.Size.Estimate) > 1e-12 || math.Abs(s.Error-wantErr) > 1e-12 ||
				s.Lower > truth[i][k]/200000 || s.Upper < truth[i][k]/200000 {
				t.Errorf("cell (%d, %d) share %+v, truth %v", i, k+1, s, truth[i][k]/200000)
			}
		}
	}
}

// TestFunnel: reach, conversions from the previous step and the first,
// exact on EXPLICIT sets; a step whose estimate exceeds the previous one
// says so.
func TestFunnel(t *testing.T) {
	// 1000 ids; 600 of them; 300 of those; 50 of those.
	steps := []cohort.Set{setOf(t, "visit", 0, 1000), setOf(t, "signup", 0, 600), setOf(t, "trial", 300, 600), setOf(t, "buy", 550, 600)}
	got, err := cohort.Funnel(steps, "")
	if err != nil {
		t.Fatal(err)
	}
	reach := []float64{1000, 600, 300, 50}
	for k, st := range got {
		if st.Label != steps[k].Label || st.Reach.Estimate != reach[k] || !st.Reliable {
			t.Errorf("step %d = %+v, want reach %v", k, st, reach[k])
		}
		if k == 0 {
			if st.Conversion != nil || st.Intersection != nil {
				t.Errorf("the first step has a conversion or an intersection: %+v", st)
			}
			continue
		}
		if st.Conversion.Estimate != reach[k]/reach[k-1] || st.Overall.Estimate != reach[k]/1000 || st.Conversion.Error != 0 {
			t.Errorf("step %d conversions %+v, %+v; want %v and %v", k, *st.Conversion, *st.Overall, reach[k]/reach[k-1], reach[k]/1000)
		}
	}
	// Registers: 200,000 visits, half sign up, a fifth of those buy.
	big := []cohort.Set{setOf(t, "visit", 0, 200000), setOf(t, "signup", 0, 100000), setOf(t, "buy", 80000, 100000)}
	got, err = cohort.Funnel(big, "")
	if err != nil {
		t.Fatal(err)
	}
	if got[1].Intersection.Method != sketch.MethodMLE || got[2].Intersection.Method != sketch.MethodInclusionExclusion {
		t.Errorf("methods %s, %s; want the MLE for two steps, inclusion-exclusion for three", got[1].Intersection.Method, got[2].Intersection.Method)
	}
	for k, want := range []float64{0.5, 0.2} {
		c := got[k+1].Conversion
		if c.Error <= 0 || c.Lower > want || c.Upper < want {
			t.Errorf("conversion to step %d = %+v, truth %v", k+2, *c, want)
		}
	}
	// Not nested: a "later" step with more users than the one before.
	odd, err := cohort.Funnel([]cohort.Set{setOf(t, "a", 0, 1000), setOf(t, "b", 0, 1000), setOf(t, "c", 0, 1000)}, "")
	if err != nil {
		t.Fatal(err)
	}
	if odd[2].Conversion.Estimate != 1 {
		t.Errorf("identical steps convert at %v, want 1", odd[2].Conversion.Estimate)
	}
}

func TestRefusals(t *testing.T) {
	a, b := setOf(t, "a", 0, 10), setOf(t, "b", 0, 10)
	th, err := sketch.ThetaParams{Params: theta.Params{LgK: 12}}.New()
	if err != nil {
		t.Fatal(err)
	}
	cm, err := sketch.CMSParams{Params: cms.Params{Width: 64, Depth: 2}}.New()
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		err  error
		want sketch.ErrorKind
	}{
		"no cohorts":         {err: second(cohort.Retention([]cohort.Set{a, b}, 0, 1, "")), want: sketch.Invalid},
		"too many cohorts":   {err: second(cohort.Retention([]cohort.Set{a, b}, cohort.MaxCohorts+1, 1, "")), want: sketch.Invalid},
		"too many offsets":   {err: second(cohort.Retention([]cohort.Set{a, b}, 1, cohort.MaxOffsets+1, "")), want: sketch.Invalid},
		"too few periods":    {err: second(cohort.Retention([]cohort.Set{a, b}, 3, 1, "")), want: sketch.Invalid},
		"theta periods":      {err: second(cohort.Retention([]cohort.Set{{Label: "t", Sketch: th}, {Label: "u", Sketch: th}}, 1, 1, "")), want: sketch.Conflict},
		"mixed kinds":        {err: second(cohort.Funnel([]cohort.Set{a, {Label: "c", Sketch: cm}}, "")), want: sketch.Conflict},
		"one step":           {err: second(cohort.Funnel([]cohort.Set{a}, "")), want: sketch.Invalid},
		"nine steps":         {err: second(cohort.Funnel([]cohort.Set{a, a, a, a, a, a, a, a, a}, "")), want: sketch.Invalid},
		"unknown method":     {err: second(cohort.Funnel([]cohort.Set{a, b}, "median")), want: sketch.Invalid},
		"cms funnel":         {err: second(cohort.Funnel([]cohort.Set{{Label: "c", Sketch: cm}, {Label: "d", Sketch: cm}}, "")), want: sketch.Conflict},
		"mle of a retention": {err: second(cohort.Retention([]cohort.Set{a, b}, 1, 1, sketch.MethodMLE)), want: 0},
	} {
		if c.want == 0 {
			if c.err != nil {
				t.Errorf("%s: %v", name, c.err)
			}
			continue
		}
		if got := sketch.KindOf(c.err); got != c.want {
			t.Errorf("%s: %v is %v, want %v", name, c.err, got, c.want)
		}
		if c.want == sketch.Conflict && !strings.Contains(c.err.Error(), "sketch") {
			t.Errorf("%s: %v names no sketch", name, c.err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// TestFunnelStepWithin reproduces an outside audit: a funnel step whose
// every user had reached the steps before (a conversion of exactly 100%)
// was "399 ± 2,354 … Spurious … the sets may not overlap at all. Do not
// act on it" in 20 of 20 funnels, while the step's own sketch listed
// "399 exact". Three steps: 100,000 users, 50,000 of them, then 399 of
// those held exactly (EXPLICIT). The third step's reach is an
// intersection of three sets by inclusion–exclusion, whose unions with
// the last step change no register; its error is now measured, not added
// up as if independent. The step must not be spurious, its bounds must
// hold 399, and its words must say the step lies within the others;
// with only 100 of the 399 in the earlier steps it must not say so,
// and its bounds must hold 100. So must a two-step funnel (the MLE).
func TestFunnelStepWithin(t *testing.T) {
	for _, c := range []struct {
		name   string
		steps  []cohort.Set
		reach  float64
		within bool
	}{
		{"all of step 3 in the earlier steps", []cohort.Set{setOf(t, "visit", 0, 100_000), setOf(t, "cart", 0, 50_000), setOf(t, "buy", 10_000, 10_399)}, 399, true},
		{"a quarter of step 3 in the earlier steps", []cohort.Set{setOf(t, "visit", 0, 100_000), setOf(t, "cart", 0, 50_000), setOf(t, "buy", 49_900, 50_299)}, 100, false},
		{"all of step 2 in step 1", []cohort.Set{setOf(t, "visit", 0, 100_000), setOf(t, "buy", 10_000, 10_399)}, 399, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, err := cohort.Funnel(c.steps, "")
			if err != nil {
				t.Fatal(err)
			}
			last := st[len(st)-1]
			x := last.Intersection
			t.Logf("%.0f ± %.1f [%.0f, %.0f] %s within %q: %s", x.Estimate, x.Error, x.Lower, x.Upper, x.Verdict, x.Within, x.VerdictText)
			if x.Lower > c.reach || x.Upper < c.reach {
				t.Errorf("bounds [%.0f, %.0f] miss the step's %.0f users", x.Lower, x.Upper, c.reach)
			}
			label := c.steps[len(c.steps)-1].Label
			if c.within {
				if x.Spurious || x.Verdict == sketch.VerdictSpurious || x.Within != label ||
					!strings.Contains(x.VerdictText, "All of "+label+" is within") || strings.Contains(x.VerdictText, "may not overlap") {
					t.Errorf("verdict %s, within %q: %q; want the step within the earlier ones, in words", x.Verdict, x.Within, x.VerdictText)
				}
			} else if x.Within != "" || strings.Contains(x.VerdictText, "within") {
				t.Errorf("within %q: %q; want no claim that the step lies within the others", x.Within, x.VerdictText)
			}
		})
	}
}
