package sketch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/airlift"
	"github.com/sketchd/sketchd/internal/dshll"
	"github.com/sketchd/sketchd/internal/zeta"
)

// familyBuilders make an empty sketch of each HLL-family kind with
// registers at a precision, and add a user (a random 64-bit value) to
// one as that kind adds an id: DataSketches hashes an integer id itself;
// zeta_hll and airlift_hll take the value as the id's hash.
var familyBuilders = map[Type]struct {
	new func(tb testing.TB, lg int) Sketch
	add func(s Sketch, user uint64)
}{
	TypeDSHLL: {
		new: func(tb testing.TB, lg int) Sketch {
			return mustNew(tb, DSHLLParams{dshll.Params{LgK: lg, Type: dshll.HLL4}})
		},
		add: func(s Sketch, u uint64) { d, _ := DSHLLOf(s); _ = d.AddInt(int64(u)) },
	},
	TypeZetaHLL: {
		new: func(tb testing.TB, lg int) Sketch { return mustNew(tb, ZetaParams{zeta.ParamsFor(lg)}) },
		add: func(s Sketch, u uint64) { z, _ := ZetaOf(s); z.AddHash(u) },
	},
	TypeAirliftHLL: {
		new: func(tb testing.TB, lg int) Sketch { return mustNew(tb, AirliftParams{airlift.Params{IndexBits: lg}}) },
		add: func(s Sketch, u uint64) { a, _ := AirliftOf(s); a.AddHash(u) },
	},
}

func mustNew(tb testing.TB, p Params) Sketch {
	tb.Helper()
	s, err := p.New()
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// buildFamily returns one sketch of kind t per operand, each at its lg,
// holding the groups' users.
func (g groups) buildFamily(tb testing.TB, rng *rand.Rand, t Type, lgs []int) []Sketch {
	tb.Helper()
	b := familyBuilders[t]
	sks := make([]Sketch, len(lgs))
	for i, lg := range lgs {
		sks[i] = b.new(tb, lg)
	}
	masks := make([]uint64, 0, len(g))
	for m := range g {
		masks = append(masks, m)
	}
	slices.Sort(masks)
	for _, m := range masks {
		for _, u := range randomHashes(rng, g[m]) {
			for i := range sks {
				if m&(1<<i) != 0 {
					b.add(sks[i], u)
				}
			}
		}
	}
	return sks
}

// TestOverlapFamilyAgainstTruth: every HLL-family kind with registers
// answers an overlap, every count near the truth and its bounds holding
// it, the exactly-k counts adding up to the union; operands of other
// precisions are folded to the smallest; small sets (a DataSketches LIST
// or SET, a sparse zeta_hll or airlift_hll) count as well.
func TestOverlapFamilyAgainstTruth(t *testing.T) {
	big := groups{0b001: 300_000, 0b010: 200_000, 0b100: 100_000, 0b011: 60_000, 0b101: 30_000, 0b110: 20_000, 0b111: 50_000}
	small := groups{0b001: 300, 0b010: 200, 0b100: 100, 0b011: 60, 0b101: 30, 0b110: 20, 0b111: 50}
	for ti, typ := range []Type{TypeDSHLL, TypeZetaHLL, TypeAirliftHLL} {
		for gi, tc := range []struct {
			name string
			g    groups
			lgs  []int
		}{
			{"large", big, []int{14, 14, 14}},
			{"large, folded", big, []int{14, 12, 14}},
			{"small", small, []int{14, 14, 14}},
		} {
			t.Run(fmt.Sprintf("%s %s", typ, tc.name), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(29, uint64(100+10*ti+gi)))
				sks := tc.g.buildFamily(t, rng, typ, tc.lgs)
				o, err := EstimateOverlap(labelsFor(3), sks, "")
				if err != nil {
					t.Fatal(err)
				}
				lg := slices.Min(tc.lgs)
				if o.Log2m != lg || !o.Complete || len(o.Regions) != 7 {
					t.Fatalf("log2m %d, complete %v, %d regions; want %d, complete, 7", o.Log2m, o.Complete, len(o.Regions), lg)
				}
				if folded := strings.Contains(strings.Join(o.Warnings, " "), "folded"); folded != (lg != slices.Max(tc.lgs)) {
					t.Errorf("warnings %q", o.Warnings)
				}
				union, exactly, atLeast, onlyHere, region := tc.g.truth(3)
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
					// Within 4 errors, and within 25% where the count is
					// large against the union's error.
					if d := math.Abs(f.Estimate - float64(want)); d > 4*f.Error+1 || (want > 20_000 && d > 0.25*float64(want)) {
						t.Errorf("%s = %.0f ± %.0f, truth %d", what, f.Estimate, f.Error, want)
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
				// The union agrees with the kind's own union's estimate
				// within the errors of both.
				if tc.lgs[0] == tc.lgs[1] {
					u, err := sks[0].Kind().Union(sks)
					if err != nil {
						t.Fatal(err)
					}
					var in Info
					u.Describe(&in)
					if d := math.Abs(in.Cardinality - o.Union.Estimate); d > 3*(o.Union.Error+in.StdError*in.Cardinality)+1 {
						t.Errorf("union %.0f ± %.0f, the kind's own %.0f ± %.0f", o.Union.Estimate, o.Union.Error, in.Cardinality, in.StdError*in.Cardinality)
					}
				}
			})
		}
	}
}

// TestOverlapFamilyRefused: kinds without registers, and mixed kinds,
// are Conflicts that say why and name both.
func TestOverlapFamilyRefused(t *testing.T) {
	ds := familyBuilders[TypeDSHLL].new(t, 12)
	z := familyBuilders[TypeZetaHLL].new(t, 12)
	cpcK, err := Lookup(TypeCPC)
	if err != nil {
		t.Fatal(err)
	}
	c := mustNew(t, cpcK.Default())
	tests := []struct {
		name string
		sks  []Sketch
		want []string
	}{
		{"cpc", []Sketch{c, c}, []string{"cpc", "registers", "/v1/intersect"}},
		{"mixed", []Sketch{ds, z}, []string{"ds_hll", "zeta_hll", `"s0"`, `"s1"`}},
		{"hll and airlift", []Sketch{NewHLL(newHLL(t, 12, false)), familyBuilders[TypeAirliftHLL].new(t, 12)}, []string{"hll", "airlift_hll"}},
	}
	for _, tt := range tests {
		_, err := EstimateOverlap(labelsFor(len(tt.sks)), tt.sks, "")
		if KindOf(err) != Conflict {
			t.Errorf("%s: %v (%v), want a Conflict", tt.name, err, KindOf(err))
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tt.name, err, w)
			}
		}
	}
}
