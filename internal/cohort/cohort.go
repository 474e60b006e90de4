package cohort

import (
	"fmt"
	"math"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
)

// Limits on the work of one question.
const (
	// MaxCohorts bounds the cohorts (rows) of a retention table and
	// MaxOffsets the periods after each (columns): at most 3,600 cells,
	// each one intersection of two sketches, over at most 120 periods.
	MaxCohorts = 60
	MaxOffsets = 60
	// MinSteps and MaxSteps bound a funnel's steps, as an intersection's
	// sketches are bounded.
	MinSteps = sketch.MinIntersect
	MaxSteps = sketch.MaxIntersect
)

// Set is one operand: a sketch and the label answers name it by.
type Set struct {
	Label  string
	Sketch sketch.Sketch
}

// Size is a set's estimated size: Estimate with its one-sigma Error (0
// when exact) and bounds BoundsZ errors either side, Lower clipped at 0.
type Size struct {
	Estimate, Error, Lower, Upper float64
}

// Ratio is a share or a conversion: Estimate in [0, 1] with its
// one-sigma Error and bounds (see the package doc). Reliable is true when
// every intersection it is made of is reliable.
type Ratio struct {
	Estimate, Error, Lower, Upper float64
	Reliable                      bool
}

// Cell is one cell of a retention table: of the cohort's users (active
// in its period), those active again Offset periods later.
type Cell struct {
	Offset int
	// Intersection is |cohort ∩ active Offset periods later| with its
	// envelope, bounds and verdict (Reliable, Warnings), as
	// POST /v1/intersection answers it.
	Intersection sketch.Intersection
	// Share is the intersection over the cohort's size.
	Share Ratio
}

// Row is one cohort of a retention table.
type Row struct {
	// Label names the cohort's period (its set's label).
	Label string
	Size  Size
	// Cells are the offsets 1.. that have a period, in order.
	Cells []Cell
}

// Table is a retention table.
type Table struct {
	Rows []Row
}

// Retention computes the table of cohorts rows over periods (the sets
// active in consecutive periods, oldest first): row i is the cohort of
// periods[i], and its cell k (1 ≤ k ≤ offsets) intersects periods[i]
// with periods[i+k], when that period is given. A trailing period may be
// missing (not begun): the cells that need it are left out, which gives
// the table its triangle. method is as for sketch.Intersect ("" for the
// default, the MLE for pairs).
//
// Errors: cohorts outside 1..MaxCohorts, offsets outside 1..MaxOffsets,
// or fewer periods than cohorts, are Invalid; sketches of mixed kinds, or
// of a kind outside the HLL family, are Conflicts; an intersection's own
// errors are returned as they are.
func Retention(periods []Set, cohorts, offsets int, method sketch.Method) (Table, error) {
	if cohorts < 1 || cohorts > MaxCohorts {
		return Table{}, sketch.Errorf(sketch.Invalid, "cohorts must be 1 to %d, not %d", MaxCohorts, cohorts)
	}
	if offsets < 1 || offsets > MaxOffsets {
		return Table{}, sketch.Errorf(sketch.Invalid, "periods must be 1 to %d, not %d", MaxOffsets, offsets)
	}
	if len(periods) < cohorts {
		return Table{}, sketch.Errorf(sketch.Invalid, "%d cohorts need at least %d periods, got %d", cohorts, cohorts, len(periods))
	}
	if err := sameFamily(periods); err != nil {
		return Table{}, err
	}
	t := Table{Rows: make([]Row, cohorts)}
	for i := range cohorts {
		size := sizeOf(periods[i].Sketch)
		row := Row{Label: periods[i].Label, Size: size}
		for k := 1; k <= offsets && i+k < len(periods); k++ {
			x, err := intersect([]Set{periods[i], periods[i+k]}, method)
			if err != nil {
				return Table{}, err
			}
			row.Cells = append(row.Cells, Cell{Offset: k, Intersection: x, Share: ratio(x.Estimate, x.Error, size.Estimate, size.Error, x.Reliable)})
		}
		t.Rows[i] = row
	}
	return t, nil
}

// Step is one step of a funnel: the users of every step so far.
type Step struct {
	Label string
	// Reach is |S1 ∩ … ∩ Sk|: for the first step the set's size, for the
	// others the intersection's estimate, error and bounds.
	Reach Size
	// Intersection is the intersection of the steps so far, with its
	// envelope and verdict; nil for the first step.
	Intersection *sketch.Intersection
	// Reliable is the intersection's verdict (true for the first step,
	// a set's plain estimate).
	Reliable bool
	// Conversion is Reach over the previous step's reach, Overall over
	// the first step's; nil for the first step.
	Conversion, Overall *Ratio
	// Warnings are the intersection's, and a note when the estimates are
	// not nested (this step's above the previous one's).
	Warnings []string
}

// Funnel computes a funnel of MinSteps to MaxSteps ordered steps: step k
// reaches the users in all of steps 1..k, estimated by intersecting them
// (the MLE for two sets, inclusion–exclusion for more, unless method
// says), with conversions from the previous step and from the first.
// Errors are as for Retention; a step count outside the bounds is
// Invalid.
func Funnel(steps []Set, method sketch.Method) ([]Step, error) {
	if len(steps) < MinSteps || len(steps) > MaxSteps {
		return nil, sketch.Errorf(sketch.Invalid, "a funnel takes %d to %d steps, got %d", MinSteps, MaxSteps, len(steps))
	}
	if err := sameFamily(steps); err != nil {
		return nil, err
	}
	out := make([]Step, len(steps))
	first := sizeOf(steps[0].Sketch)
	out[0] = Step{Label: steps[0].Label, Reach: first, Reliable: true, Warnings: []string{}}
	for k := 1; k < len(steps); k++ {
		m := method
		if m == sketch.MethodMLE && k+1 > 2 {
			m = "" // the MLE takes pairs: the default for more
		}
		x, err := intersect(steps[:k+1], m)
		if err != nil {
			return nil, err
		}
		prev := out[k-1]
		st := Step{
			Label: steps[k].Label, Intersection: &x, Reliable: x.Reliable,
			Reach:    Size{Estimate: x.Estimate, Error: x.Error, Lower: x.Lower, Upper: x.Upper},
			Warnings: append([]string{}, x.Warnings...),
		}
		conv := ratio(x.Estimate, x.Error, prev.Reach.Estimate, prev.Reach.Error, x.Reliable && prev.Reliable)
		all := ratio(x.Estimate, x.Error, first.Estimate, first.Error, x.Reliable)
		st.Conversion, st.Overall = &conv, &all
		if prev.Reach.Estimate > 0 && x.Estimate > prev.Reach.Estimate {
			st.Warnings = append(st.Warnings, fmt.Sprintf("this step's estimate (%.0f) exceeds the previous step's (%.0f), though it counts a subset of its users: the conversion is shown as 1; read both with their errors", x.Estimate, prev.Reach.Estimate))
		}
		out[k] = st
	}
	return out, nil
}

// intersect estimates the intersection of sets of one HLL-family kind.
func intersect(sets []Set, method sketch.Method) (sketch.Intersection, error) {
	labels := make([]string, len(sets))
	sks := make([]sketch.Sketch, len(sets))
	for i, s := range sets {
		labels[i], sks[i] = s.Label, s.Sketch
	}
	if _, ok := sketch.HLLOf(sks[0]); ok {
		hs := make([]*hll.Sketch, len(sks))
		for i, sk := range sks {
			hs[i], _ = sketch.HLLOf(sk)
		}
		return sketch.Intersect(labels, hs, method)
	}
	return sketch.IntersectFamily(labels, sks, method)
}

// sameFamily checks that every set is of one kind of the HLL family.
func sameFamily(sets []Set) error {
	labels := make([]string, len(sets))
	sks := make([]sketch.Sketch, len(sets))
	for i, s := range sets {
		if s.Sketch == nil {
			return fmt.Errorf("cohort: set %q has no sketch", s.Label)
		}
		labels[i], sks[i] = s.Label, s.Sketch
	}
	if err := sketch.SameKind(labels, sks); err != nil {
		return err
	}
	switch t := sks[0].Kind().Type; t {
	case sketch.TypeHLL, sketch.TypeDSHLL, sketch.TypeCPC:
		return nil
	default:
		return sketch.Errorf(sketch.Conflict, "retention and funnels take hll, ds_hll or cpc sketches, whose intersections carry the error envelope and verdict; %s is a %s sketch", quote(labels[0]), t)
	}
}

// sizeOf is a set's estimate with its standard error and bounds.
func sizeOf(sk sketch.Sketch) Size {
	var in sketch.Info
	sk.Describe(&in)
	n := finite(in.Cardinality)
	e := finite(in.StdError * n)
	return Size{Estimate: n, Error: e, Lower: max(0, n-sketch.BoundsZ*e), Upper: n + sketch.BoundsZ*e}
}

// ratio is x/y (x counts a subset of y) with the error of a ratio of
// independent estimates, bounds BoundsZ errors either side, all in
// [0, 1]; 0 with no error when y is 0.
func ratio(x, ex, y, ey float64, reliable bool) Ratio {
	if y <= 0 {
		return Ratio{Reliable: reliable}
	}
	r := x / y
	e := math.Hypot(ex/y, r*ey/y)
	clamp := func(v float64) float64 { return min(max(v, 0), 1) }
	return Ratio{Estimate: clamp(r), Error: e, Lower: clamp(r - sketch.BoundsZ*e), Upper: clamp(r + sketch.BoundsZ*e), Reliable: reliable}
}

// finite maps NaN and ±Inf (an UNDEFINED sketch's estimate) to 0.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

func quote(s string) string { return fmt.Sprintf("%q", s) }
