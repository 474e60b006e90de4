package sketch

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sketchd/sketchd/internal/hll"
)

// simObs is one intersection estimate against its truth.
type simObs struct {
	truth    float64
	r        Intersection
	smallest float64 // smaller singleton term
}

// TestIntersectSimulation is the small-scale version of cmd/intersim: real
// hll sketches built from random hashes, two register counts, a few
// ratios and overlaps (disjoint included), both methods. It asserts the
// bars of docs/intersection.md:
//   - the clamped estimate is always within [0, smallest set] and inside
//     [lower, upper];
//   - disjoint sets are flagged spurious (at least 95% of pairs; the
//     simulation sees 100%);
//   - where reliable is true the envelope covers at least 95% of the truths;
//   - the MLE's median relative error is below inclusion–exclusion's in
//     most cells.
func TestIntersectSimulation(t *testing.T) {
	const (
		runs  = 12
		small = 10000
	)
	log2ms := []int{11, 12}
	ratios := []int{1, 4, 10}
	overlaps := []float64{0, 0.02, 0.1, 0.3, 0.6, 1}
	methods := []Method{MethodInclusionExclusion, MethodMLE}
	type key struct {
		log2m, ratio int
		overlap      float64
		method       Method
	}
	cells := map[key][]simObs{}
	rng := rand.New(rand.NewPCG(11, 13))
	for range runs {
		for _, ratio := range ratios {
			b := newHLL(t, 13, false)
			bHashes := randomHashes(rng, ratio*small)
			fill(b, bHashes)
			fresh := randomHashes(rng, small)
			for _, o := range overlaps {
				nx := int(o * small)
				a := fill(newHLL(t, 13, false), bHashes[:nx], fresh[:small-nx])
				for _, lg := range log2ms {
					fa, err := a.Fold(lg, 5)
					if err != nil {
						t.Fatal(err)
					}
					fb, err := b.Fold(lg, 5)
					if err != nil {
						t.Fatal(err)
					}
					for _, m := range methods {
						r, err := Intersect([]string{"a", "b"}, []*hll.Sketch{fa, fb}, m)
						if err != nil {
							t.Fatal(err)
						}
						k := key{lg, ratio, o, m}
						cells[k] = append(cells[k], simObs{truth: float64(nx), r: r, smallest: min(r.Terms[0].Cardinality, r.Terms[1].Cardinality)})
					}
				}
			}
		}
	}

	type tally struct{ disjoint, spurious, reliable, covered int }
	tallies := map[Method]*tally{}
	for _, m := range methods {
		tallies[m] = &tally{}
	}
	mleBetter, compared := 0, 0
	for _, lg := range log2ms {
		for _, ratio := range ratios {
			for _, o := range overlaps {
				var med [2]float64
				for mi, m := range methods {
					obs := cells[key{lg, ratio, o, m}]
					rel := make([]float64, 0, len(obs))
					tl := tallies[m]
					for _, ob := range obs {
						r := ob.r
						if r.Estimate < 0 || r.Estimate > ob.smallest || r.Lower > r.Estimate || r.Estimate > r.Upper {
							t.Errorf("log2m %d ratio %d overlap %g %s: estimate %g outside [0, %g] or [%g, %g]", lg, ratio, o, m, r.Estimate, ob.smallest, r.Lower, r.Upper)
						}
						if ob.truth == 0 {
							tl.disjoint++
							if r.Spurious {
								tl.spurious++
							}
							continue
						}
						rel = append(rel, math.Abs(r.Estimate-ob.truth)/ob.truth)
						if r.Reliable {
							tl.reliable++
							if r.Lower <= ob.truth && ob.truth <= r.Upper {
								tl.covered++
							}
						}
					}
					if len(rel) > 0 {
						slices.Sort(rel)
						med[mi] = rel[len(rel)/2]
					}
				}
				if o > 0 {
					compared++
					if med[1] < med[0] {
						mleBetter++
					}
				}
			}
		}
	}
	for _, m := range methods {
		tl := tallies[m]
		t.Logf("%s: %d/%d disjoint pairs spurious, %d/%d reliable answers covered", m, tl.spurious, tl.disjoint, tl.covered, tl.reliable)
		if tl.spurious*100 < tl.disjoint*95 {
			t.Errorf("%s: %d of %d disjoint pairs flagged spurious, want at least 95%%", m, tl.spurious, tl.disjoint)
		}
		if tl.reliable < 50 {
			t.Errorf("%s: only %d reliable answers, want at least 50 to judge coverage", m, tl.reliable)
		}
		if tl.covered*100 < tl.reliable*95 {
			t.Errorf("%s: envelope covered %d of %d reliable answers, want at least 95%%", m, tl.covered, tl.reliable)
		}
	}
	t.Logf("MLE median relative error below inclusion–exclusion's in %d of %d cells", mleBetter, compared)
	if mleBetter*2 <= compared {
		t.Errorf("MLE better in %d of %d cells, want most", mleBetter, compared)
	}
}

// TestIntersectSimulationSets is the small-scale version of cmd/intersim
// -sets 3,4: three and four sketches of random hashes sharing a known
// core, two register counts. It asserts the verdict's bars in
// docs/intersection.md: no disjoint core passes as reliable, every
// reliable answer's bounds span at most MaxRelativeWidth of its estimate,
// and at least 95% of reliable answers' bounds hold the truth.
func TestIntersectSimulationSets(t *testing.T) {
	const (
		runs  = 6
		small = 20000
	)
	rng := rand.New(rand.NewPCG(11, 17))
	reliable, covered, disjointReliable, answers := 0, 0, 0, 0
	for _, k := range []int{3, 4} {
		names := []string{"a", "b", "c", "d"}[:k]
		for range runs {
			for _, ratio := range []int{1, 4} {
				for _, o := range []float64{0, 0.1, 0.5, 1} {
					core := randomHashes(rng, int(o*small))
					sets := make([]*hll.Sketch, k)
					for i := range sets {
						size := small
						if i == k-1 {
							size = ratio * small
						}
						sets[i] = fill(newHLL(t, 13, false), core, randomHashes(rng, size-len(core)))
					}
					for _, lg := range []int{11, 13} {
						folded := make([]*hll.Sketch, k)
						for i, s := range sets {
							f, err := s.Fold(lg, 5)
							if err != nil {
								t.Fatal(err)
							}
							folded[i] = f
						}
						r, err := Intersect(names, folded, "")
						if err != nil {
							t.Fatal(err)
						}
						answers++
						truth := float64(len(core))
						if r.Reliable != (r.Verdict == VerdictReliable) || r.Reliable && r.RelativeWidth > MaxRelativeWidth {
							t.Errorf("k=%d log2m %d ratio %d overlap %g: reliable %v verdict %q width %.2f", k, lg, ratio, o, r.Reliable, r.Verdict, r.RelativeWidth)
						}
						if !r.Reliable {
							continue
						}
						if truth == 0 {
							disjointReliable++
							continue
						}
						reliable++
						if r.Lower <= truth && truth <= r.Upper {
							covered++
						}
					}
				}
			}
		}
	}
	t.Logf("%d answers: %d reliable, %d of them covered; %d disjoint cores reliable", answers, reliable, covered, disjointReliable)
	if disjointReliable > 0 {
		t.Errorf("%d answers for sets with nothing in common were reliable", disjointReliable)
	}
	if reliable < 20 {
		t.Errorf("only %d reliable answers, want at least 20 to judge coverage", reliable)
	}
	if covered*100 < reliable*95 {
		t.Errorf("bounds covered %d of %d reliable answers, want at least 95%%", covered, reliable)
	}
}
