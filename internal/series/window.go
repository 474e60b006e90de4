package series

import (
	"fmt"
	"time"

	"github.com/sketchd/sketchd/internal/sketch"
)

// MaxPoints is the default bound on the points of one timeseries
// (Budget.MaxPoints).
const MaxPoints = 10_000

// Point is one point of a timeseries: the step [Start, End) it stands for
// and the trailing window [WindowFrom, End) its value is taken over.
type Point struct {
	Start, End time.Time
	WindowFrom time.Time
	// First and Last index the elements (Timeseries.Elements) the window
	// holds: [First, Last).
	First, Last int
}

// Timeseries plans a rolling line: one point per step from from to to,
// each over the trailing window that ends with its step, answered from
// the buckets of one level (the coarsest whose edges match every window),
// which a sliding-window union visits once each.
type Timeseries struct {
	Level    Level
	Elements []Key
	Points   []Point
	Warnings []string
}

// Timeseries plans the points of [from, to) by step with window. step and
// window must fit a kept level's buckets exactly; from must be a bucket
// start of that level. It plans within a budget of its own (NewBudget's
// defaults).
func (s *Spec) Timeseries(from, to time.Time, step, window Duration, now time.Time) (Timeseries, error) {
	return s.TimeseriesWithin(from, to, step, window, now, NewBudget(0, 0))
}

// TimeseriesWithin is Timeseries spending b: more points than b allows,
// or windows spanning more buckets than it has left, are Unprocessable,
// found before either is laid out in full.
func (s *Spec) TimeseriesWithin(from, to time.Time, step, window Duration, now time.Time, b *Budget) (Timeseries, error) {
	if !to.After(from) {
		return Timeseries{}, sketch.Errorf(sketch.Invalid, "to (%s) must be after from (%s)", stamp(to), stamp(from))
	}
	from = from.In(s.loc)
	var pts []Point
	for t := from; t.Before(to); {
		end, wf := s.step(t, step, window)
		if !end.After(t) {
			return Timeseries{}, sketch.Errorf(sketch.Invalid, "step %s does not advance", step)
		}
		if !wf.Before(end) {
			return Timeseries{}, sketch.Errorf(sketch.Invalid, "window %s is empty", window)
		}
		if len(pts) == b.MaxPoints {
			return Timeseries{}, sketch.Errorf(sketch.Unprocessable, "more than %d points; a line may have at most %d (the server's -max-series-points): use a larger step or a shorter range", b.MaxPoints, b.MaxPoints)
		}
		pts = append(pts, Point{Start: t, End: end, WindowFrom: wf})
		t = end
	}
	ts := Timeseries{Points: pts}
	// The coarsest kept level every window edge is a bucket start of.
	var level Level
	for i := len(s.Levels) - 1; i >= 0 && level == 0; i-- {
		l := s.Levels[i].Level
		ok := true
		for _, p := range pts {
			if !l.Aligned(p.WindowFrom, s.loc) || !l.Aligned(p.End, s.loc) {
				ok = false
				break
			}
		}
		if ok {
			level = l
		}
	}
	if level == 0 {
		return Timeseries{}, sketch.Errorf(sketch.Invalid, "from, step %s and window %s must fall on the bucket edges of a level the series keeps (%s)", step, window, s.levelNames())
	}
	ts.Level = level
	first := pts[0].WindowFrom
	before := b.Used()
	for t := first; t.Before(pts[len(pts)-1].End); t = level.Next(t, s.loc) {
		if !b.spend() {
			return Timeseries{}, b.tooManyBuckets(before, fmt.Sprintf("the line's windows [%s, %s) span", stamp(first), stamp(pts[len(pts)-1].End)), level.String()+" buckets")
		}
		ts.Elements = append(ts.Elements, Key{level, t})
	}
	j := 0
	for i := range pts {
		for j < len(ts.Elements) && ts.Elements[j].Start.Before(pts[i].WindowFrom) {
			j++
		}
		pts[i].First = j
		k := j
		for k < len(ts.Elements) && ts.Elements[k].Start.Before(pts[i].End) {
			k++
		}
		pts[i].Last = k
	}
	if cut := s.Cutoff(level, now); level.Next(first, s.loc).Compare(cut) <= 0 {
		ts.Warnings = append(ts.Warnings, fmt.Sprintf("%s buckets before %s have expired: points whose window reaches before then miss that data", level, stamp(level.Start(cut, s.loc))))
	}
	return ts, nil
}

// Run is the line's elements as one run, as a read looks them up.
func (ts Timeseries) Run() Run {
	n := len(ts.Elements)
	if n == 0 {
		return Run{Level: ts.Level}
	}
	return Run{Level: ts.Level, First: ts.Elements[0].Start, Last: ts.Elements[n-1].Start, Count: n}
}

// step returns the end of the step from t and the start of the window
// that ends with it. Where step and window are whole calendar units
// (P1D, P7D, P1M), both are taken on the wall clock the step reaches, as
// PostgreSQL steps dates: the window reaches back from the date the step
// ended on, even where that date was skipped and its start is the next
// one's (Kiritimati's 1994-12-31: December's P1M window is December, and
// the 30th's P1D window is the 30th).
func (s *Spec) step(t time.Time, step, window Duration) (end, windowFrom time.Time) {
	if !step.calendar() || step.clockTime() || !window.calendar() || window.clockTime() {
		end = step.AddTo(t, 1)
		return end, window.AddTo(end, -1)
	}
	w := shift(clock(t, s.loc, 1), step.Years, step.Months, 7*step.Weeks+step.Days)
	return wall(w, s.loc), wall(shift(w, -window.Years, -window.Months, -(7*window.Weeks+window.Days)), s.loc)
}

func (s *Spec) levelNames() string {
	out := ""
	for i, l := range s.Levels {
		if i > 0 {
			out += ", "
		}
		out += l.Level.String()
	}
	return out
}

// Window is a sliding-window union (two stacks): Push adds the newest
// element, Pop drops the oldest, Value is the union of what is inside.
// Each element takes part in a constant number of unions over its life,
// so a line of n points costs O(n + elements) unions, not O(n·window).
// union(a, b) returns a new value and must treat a zero T as empty.
type Window[T any] struct {
	union   func(a, b T) T
	into    func(dst T, own bool, src T) (T, bool)
	front   []T // aggregates: front[i] is the union of front elements i.. (oldest at the end)
	back    []T // elements in arrival order
	backAgg T
	ownAgg  bool // into said the window owns backAgg
	zero    T
}

// NewWindow returns an empty window over union.
func NewWindow[T any](union func(a, b T) T) *Window[T] { return &Window[T]{union: union} }

// MergeInto lets the union of the pushed elements grow in place. into(dst,
// own, src) returns the union of dst and src, and whether the window owns
// it (no one else holds it); it may change dst only when own is set. It
// returns w.
func (w *Window[T]) MergeInto(into func(dst T, own bool, src T) (T, bool)) *Window[T] {
	w.into = into
	return w
}

// Push adds the newest element.
func (w *Window[T]) Push(v T) {
	w.back = append(w.back, v)
	if w.into != nil {
		w.backAgg, w.ownAgg = w.into(w.backAgg, w.ownAgg, v)
		return
	}
	w.backAgg = w.union(w.backAgg, v)
}

// Pop drops the oldest element; the window must not be empty.
func (w *Window[T]) Pop() {
	if len(w.front) == 0 {
		agg := w.zero
		for i := len(w.back) - 1; i >= 0; i-- {
			agg = w.union(w.back[i], agg)
			w.front = append(w.front, agg)
		}
		w.back, w.backAgg, w.ownAgg = w.back[:0], w.zero, false
	}
	w.front = w.front[:len(w.front)-1]
}

// Len is the number of elements inside.
func (w *Window[T]) Len() int { return len(w.front) + len(w.back) }

// Value is the union of the elements inside.
func (w *Window[T]) Value() T {
	older, newer := w.Parts()
	return w.union(older, newer)
}

// Parts returns the two values whose union is Value (a zero T for a side
// that is empty), for a caller that needs only a number of the union and
// can compute it without building the union. They belong to the window.
func (w *Window[T]) Parts() (older, newer T) {
	if len(w.front) == 0 {
		return w.zero, w.backAgg
	}
	return w.front[len(w.front)-1], w.backAgg
}
