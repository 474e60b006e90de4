package sketch

import (
	"errors"
	"math"
	"testing"

	"github.com/sketchd/sketchd/internal/airlift"
	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/cpc"
	"github.com/sketchd/sketchd/internal/dshll"
	"github.com/sketchd/sketchd/internal/zeta"
)

// familyOf builds a sketch of params p holding the int ids [lo, hi).
func familyOf(tb testing.TB, p Params, lo, hi int64) Sketch {
	tb.Helper()
	s, err := p.New()
	if err != nil {
		tb.Fatal(err)
	}
	ids := make([]cms.ID, 0, hi-lo)
	for v := lo; v < hi; v++ {
		ids = append(ids, cms.IntID(v))
	}
	b, err := p.Kind().Prepare(IDs(ids))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := s.Apply(b, nil); err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestIntersectFamilyAgainstTruth: for ds_hll, cpc, zeta_hll and airlift_hll sketches of sets
// whose intersection is known, the bounds contain the truth, the estimate
// is within the envelope's reach of it, a disjoint pair is spurious, and
// three sets intersect through their seven unions.
func TestIntersectFamilyAgainstTruth(t *testing.T) {
	for _, p := range []Params{
		DSHLLParams{dshll.Params{LgK: 12, Type: dshll.HLL8}},
		DSHLLParams{dshll.Params{LgK: 14, Type: dshll.HLL4}},
		CPCParams{cpc.Params{LgK: 12}},
		ZetaParams{zeta.ParamsFor(14)},
		AirliftParams{airlift.Params{IndexBits: 14}},
	} {
		a := familyOf(t, p, 0, 200_000)
		b := familyOf(t, p, 100_000, 300_000) // 100,000 in common
		c := familyOf(t, p, 150_000, 160_000) // 10,000 in all three
		far := familyOf(t, p, 1_000_000, 1_200_000)
		x, err := IntersectFamily([]string{"a", "b"}, []Sketch{a, b}, "")
		if err != nil {
			t.Fatal(err)
		}
		if x.Lower > 100_000 || x.Upper < 100_000 || math.Abs(x.Estimate-100_000) > 3*x.Error || x.Spurious || !x.Reliable || x.Jaccard == nil || len(x.Terms) != 3 {
			t.Errorf("%s: a∩b = %+v, want bounds around 100,000", p, x)
		}
		if j := x.Jaccard.Estimate; math.Abs(j-1.0/3) > 0.05 {
			t.Errorf("%s: Jaccard %v, want about 1/3", p, j)
		}
		x3, err := IntersectFamily([]string{"a", "b", "c"}, []Sketch{a, b, c}, MethodInclusionExclusion)
		if err != nil {
			t.Fatal(err)
		}
		if x3.Lower > 10_000 || x3.Upper < 10_000 || len(x3.Terms) != 7 {
			t.Errorf("%s: a∩b∩c = %+v, want bounds around 10,000", p, x3)
		}
		xd, err := IntersectFamily([]string{"a", "far"}, []Sketch{a, far}, "")
		if err != nil {
			t.Fatal(err)
		}
		if !xd.Spurious || xd.Lower > 0 || xd.Reliable {
			t.Errorf("%s: disjoint a∩far = %+v, want spurious with lower bound 0", p, xd)
		}
		if _, err := IntersectFamily([]string{"a", "b"}, []Sketch{a, b}, MethodMLE); !errors.Is(err, ErrMethod) {
			t.Errorf("%s: mle = %v, want ErrMethod", p, err)
		}
	}
	h := familyOf(t, DefaultHLL().Params, 0, 10)
	d := familyOf(t, DSHLLParams{dshll.DefaultParams()}, 0, 10)
	if _, err := IntersectFamily([]string{"h", "d"}, []Sketch{h, d}, ""); KindOf(err) != Conflict {
		t.Errorf("hll with ds_hll = %v, want a conflict", err)
	}
	if _, err := IntersectFamily([]string{"d"}, []Sketch{d}, ""); !errors.Is(err, ErrSketchCount) {
		t.Errorf("one sketch = %v, want ErrSketchCount", err)
	}
}
