package series

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/series/zonetest"
)

// TestZonesAgainstPostgreSQL sweeps zones (a fast subset; every zone of
// Go's embedded tz database with SKETCHD_ZONE_SWEEP=all) and checks, in
// every year where Go's and PostgreSQL's tz data agree, against the local
// days PostgreSQL's clock gives (zonetest):
//   - day, week and month edges: Next from one edge to the next, and
//     Start of instants around every edge and offset change;
//   - calendar steps between day starts (P1D, P7D, P1M, P1Y, P400D back
//     and forth) against PostgreSQL's date arithmetic;
//   - daily, weekly and monthly rolling lines (points, windows, and the
//     buckets that answer them) from day, week, month and hour levels;
//   - range plans over whole days, weeks and months: no widening, no
//     warning, one bucket where the level is kept.
func TestZonesAgainstPostgreSQL(t *testing.T) {
	o := zonetest.Connect(t)
	compared := 0
	for _, c := range zonetest.Cases(t) {
		t.Run(fmt.Sprintf("%s/%d-%d", c.Zone, c.From, c.To), func(t *testing.T) {
			checkZone(t, o, c, &compared)
		})
	}
	if compared == 0 {
		t.Fatal("no zone-year compared: PostgreSQL's tz data agrees with Go's nowhere")
	}
}

func checkZone(t *testing.T, o *zonetest.Oracle, c zonetest.Case, compared *int) {
	loc, err := time.LoadLocation(c.Zone)
	if err != nil {
		t.Skipf("Go cannot load %s here: %v", c.Zone, err)
	}
	from := time.Date(c.From, 1, 1, 0, 0, 0, 0, time.UTC)
	to := time.Date(c.To+1, 1, 1, 0, 0, 0, 0, time.UTC)
	// The days reach 400 days back and two months on, for the calendar
	// steps and the windows of the lines.
	span0, span1 := from.AddDate(0, 0, -410), to.AddDate(0, 2, 5)
	pg := o.Changes(t, c.Zone, span0.AddDate(0, 0, -3), span1.AddDate(0, 0, 3))
	years := zonetest.Agreeing(t, c, pg, zonetest.GoChanges(loc, span0.AddDate(0, 0, -3), span1.AddDate(0, 0, 3)))
	cal := zonetest.NewCalendar(o.Days(t, c.Zone, pg, span0, span1))
	// The specs: every level, and hours alone; kept long enough that
	// nothing in the sweep has expired, now just after it.
	long := Duration{Years: 200}
	all := testSpec(t, c.Zone, LevelSpec{Hour, long}, LevelSpec{Day, long}, LevelSpec{Week, long}, LevelSpec{Month, long})
	hours := testSpec(t, c.Zone, LevelSpec{Hour, long})
	now := span1
	// PostgreSQL's date arithmetic, once per zone: each date of the
	// calendar moved by each step, back and forth.
	var dates []time.Time
	for _, d := range cal.Days {
		dates = append(dates, d.Date)
	}
	shifts := map[Duration]map[time.Time][2]time.Time{}
	for _, d := range steps {
		m := map[time.Time][2]time.Time{}
		fwd := o.Shift(t, dates, d.Years, d.Months, 7*d.Weeks+d.Days)
		back := o.Shift(t, dates, -d.Years, -d.Months, -(7*d.Weeks + d.Days))
		for i, date := range dates {
			m[date] = [2]time.Time{fwd[i], back[i]}
		}
		shifts[d] = m
	}
	for _, y := range years {
		y0 := time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
		y1 := y0.AddDate(1, 0, 0)
		// The changes of the year and the one before and after, near
		// which ranges are planned.
		var near []time.Time
		for _, ch := range pg {
			if !ch.At.Before(y0.AddDate(0, 0, -35)) && ch.At.Before(y1.AddDate(0, 0, 35)) {
				near = append(near, ch.At)
			}
		}
		if len(near) == 0 && zonetest.Full() {
			// The whole sweep looks at the years around changes; the
			// fast cases check every year they name.
			continue
		}
		*compared++
		checkEdges(t, loc, cal, pg, y0, y1)
		checkSteps(t, loc, cal, shifts, y0, y1)
		checkLines(t, all, hours, cal, shifts, near, y0, y1, now)
		if t.Failed() {
			t.FailNow()
		}
	}
}

// steps are the calendar steps checked, and the lines' windows.
var steps = []Duration{{Days: 1}, {Days: 7}, {Weeks: 1}, {Weeks: 4}, {Days: 30}, {Months: 1}, {Months: 3}, {Years: 1}, {Days: 400}}

// checkEdges: each level's edges in [y0, y1) are PostgreSQL's, in order,
// and the bucket holding an instant near an edge or a change starts at
// PostgreSQL's latest edge at or before it.
func checkEdges(t *testing.T, loc *time.Location, cal *zonetest.Calendar, pg []zonetest.Change, y0, y1 time.Time) {
	t.Helper()
	for _, lv := range []struct {
		l    Level
		keep func(zonetest.Day) bool
	}{{Day, zonetest.AnyDay}, {Week, zonetest.Mondays}, {Month, zonetest.Firsts}} {
		want := cal.Starts(y0, y1, lv.keep)
		if len(want) == 0 {
			continue
		}
		var got []time.Time
		for s := lv.l.Start(want[0], loc); len(got) < len(want); s = lv.l.Next(s, loc) {
			got = append(got, s.UTC())
		}
		if i := firstDiff(got, want); i >= 0 {
			t.Errorf("%s %s edge %d: Go %v, PostgreSQL %v", loc, lv.l, i, got[i].In(loc), want[i].In(loc))
			continue
		}
		var probes []time.Time
		for _, s := range cal.Starts(y0, y1, zonetest.AnyDay) {
			probes = append(probes, s.Add(-time.Second), s, s.Add(time.Second), s.Add(12*time.Hour))
		}
		for _, ch := range pg {
			if !ch.At.Before(y0) && ch.At.Before(y1) {
				probes = append(probes, ch.At.Add(-time.Second), ch.At, ch.At.Add(time.Second), ch.At.Add(30*time.Minute))
			}
		}
		for _, p := range probes {
			w, ok := cal.Holding(p, lv.keep)
			if !ok {
				continue
			}
			if g := lv.l.Start(p, loc); !g.Equal(w) {
				t.Errorf("%s %s bucket of %v: Go starts it at %v, PostgreSQL at %v", loc, lv.l, p.In(loc), g, w.In(loc))
			}
		}
	}
	// Day starts are hour bucket starts, so hours answer whole days.
	for _, s := range cal.Starts(y0, y1, zonetest.AnyDay) {
		if !Hour.Aligned(s, loc) {
			t.Errorf("%s: the day starting %v is inside an hour bucket (%v)", loc, s.In(loc), Hour.Start(s, loc))
		}
	}
}

// checkSteps: a calendar step from a day's start lands on the start of
// the date PostgreSQL's date arithmetic gives, back and forth. Where
// dates are skipped their start is that of the next date: a step forward
// counts from the latest date beginning there, a step back from the
// earliest, so that a step always moves.
func checkSteps(t *testing.T, loc *time.Location, cal *zonetest.Calendar, shifts map[Duration]map[time.Time][2]time.Time, y0, y1 time.Time) {
	t.Helper()
	for _, step := range steps {
		for i, d := range cal.Days {
			if d.Date.Before(y0) || !d.Date.Before(y1) {
				continue
			}
			for j, sign := range []int{1, -1} {
				if sign > 0 && cal.Latest(d.Start) != i || sign < 0 && cal.Earliest(d.Start) != i {
					continue
				}
				to := shifts[step][d.Date][j]
				w, ok := cal.Start(to)
				if !ok {
					continue
				}
				if g := step.AddTo(d.Start.In(loc), sign); !g.Equal(w) {
					t.Errorf("%s: %v %+d×%s = %v; PostgreSQL: %s begins at %v", loc, d.Start.In(loc), sign, step, g, to.Format(time.DateOnly), w.In(loc))
				}
			}
		}
	}
}

// checkLines: rolling lines over [y0, y1) have one point per local day
// (week, month) starting where PostgreSQL's does, windows from the start
// of the date PostgreSQL's date arithmetic gives, and are answered from
// the buckets of the level expected, which tile every window.
func checkLines(t *testing.T, all, hours *Spec, cal *zonetest.Calendar, shifts map[Duration]map[time.Time][2]time.Time, near []time.Time, y0, y1, now time.Time) {
	t.Helper()
	type line struct {
		spec         *Spec
		step, window Duration
		keep         func(zonetest.Day) bool
		level        Level
	}
	lines := []line{
		{all, Duration{Days: 1}, Duration{Days: 1}, zonetest.AnyDay, Day},
		{all, Duration{Days: 1}, Duration{Days: 7}, zonetest.AnyDay, Day},
		{all, Duration{Weeks: 1}, Duration{Weeks: 4}, zonetest.Mondays, Week},
		{all, Duration{Months: 1}, Duration{Months: 3}, zonetest.Firsts, Month},
		{hours, Duration{Days: 1}, Duration{Days: 7}, zonetest.AnyDay, Hour},
		{hours, Duration{Months: 1}, Duration{Months: 1}, zonetest.Firsts, Hour},
	}
	for _, ln := range lines {
		starts := cal.Starts(y0, y1, ln.keep)
		if len(starts) < 2 {
			continue
		}
		loc := ln.spec.loc
		ts, err := ln.spec.Timeseries(starts[0], starts[len(starts)-1], ln.step, ln.window, now)
		what := fmt.Sprintf("%s line step %s window %s over %s levels", loc, ln.step, ln.window, ln.spec.levelNames())
		if err != nil {
			t.Errorf("%s: %v", what, err)
			continue
		}
		if ts.Level != ln.level || len(ts.Points) != len(starts)-1 {
			t.Errorf("%s: %d points from %s buckets, want %d from %s", what, len(ts.Points), ts.Level, len(starts)-1, ln.level)
			continue
		}
		for i, p := range ts.Points {
			// The window ends with the point: it reaches back from the
			// date the step from the point's start reached (Apia's
			// skipped 2011-12-30 for the 29th's point).
			reached := shifts[ln.step][cal.Days[cal.Latest(starts[i])].Date][0]
			wf, ok := cal.Start(shifts[ln.window][reached][1])
			if !p.Start.Equal(starts[i]) || !p.End.Equal(starts[i+1]) || (ok && !p.WindowFrom.Equal(wf)) {
				t.Errorf("%s: point %d = [%v, %v) window from %v; PostgreSQL [%v, %v) window from %v",
					what, i, p.Start, p.End, p.WindowFrom, starts[i].In(loc), starts[i+1].In(loc), wf.In(loc))
				break
			}
			// The window's buckets tile it.
			el := ts.Elements[p.First:p.Last]
			if len(el) == 0 || !el[0].Start.Equal(p.WindowFrom) || !ts.Level.Next(el[len(el)-1].Start, loc).Equal(p.End) {
				t.Errorf("%s: point %d's window [%v, %v) is answered from %d buckets not tiling it", what, i, p.WindowFrom, p.End, len(el))
				break
			}
			for j := 1; j < len(el); j++ {
				if !ts.Level.Next(el[j-1].Start, loc).Equal(el[j].Start) {
					t.Errorf("%s: buckets %v and %v of point %d's window are not adjacent", what, el[j-1].Start, el[j].Start, i)
					break
				}
			}
		}
	}
	// A whole day, week or month within a month of an offset change (and
	// the first of the year) is planned as itself, from its own bucket
	// where the level is kept.
	isNear := func(a, b time.Time) bool {
		return a.Equal(cal.Days[0].Start) || slices.ContainsFunc(near, func(c time.Time) bool {
			return c.After(a.AddDate(0, 0, -31)) && c.Before(b.AddDate(0, 0, 31))
		})
	}
	for _, lv := range []struct {
		l    Level
		keep func(zonetest.Day) bool
	}{{Day, zonetest.AnyDay}, {Week, zonetest.Mondays}, {Month, zonetest.Firsts}} {
		starts := cal.Starts(y0, y1, lv.keep)
		for i := 0; i+1 < len(starts); i++ {
			if i > 0 && !isNear(starts[i], starts[i+1]) {
				continue
			}
			for _, spec := range []*Spec{all, hours} {
				p, err := spec.Plan(starts[i], starts[i+1], now)
				if err != nil || !p.From.Equal(starts[i]) || !p.To.Equal(starts[i+1]) || len(p.Warnings) > 0 {
					t.Errorf("%s %s plan of [%v, %v) over %s: [%v, %v) %q %v", spec.loc, lv.l, starts[i].In(spec.loc), starts[i+1].In(spec.loc), spec.levelNames(), p.From, p.To, p.Warnings, err)
					continue
				}
				if spec == all && (len(p.Buckets) != 1 || p.Buckets[0].Level != lv.l || !p.Buckets[0].Start.Equal(starts[i])) {
					t.Errorf("%s %s plan of [%v, %v): buckets %v, want the one %s", spec.loc, lv.l, starts[i].In(spec.loc), starts[i+1].In(spec.loc), p.Buckets, lv.l)
				}
			}
		}
	}
}

// firstDiff returns the first index where a and b differ as instants, or
// -1.
func firstDiff(a, b []time.Time) int {
	for i := range min(len(a), len(b)) {
		if !a[i].Equal(b[i]) {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}
