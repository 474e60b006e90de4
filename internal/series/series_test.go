package series

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
)

func mustLoc(tb testing.TB, name string) *time.Location {
	tb.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		tb.Fatal(err)
	}
	return loc
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]Duration{
		"P400D": {Days: 400}, "PT1H": {Hours: 1}, "P5Y": {Years: 5}, "P1Y2M3W4DT5H6M7S": {1, 2, 3, 4, 5, 6, 7},
		"P1DT12H": {Days: 1, Hours: 12}, "P14D": {Days: 14}, "PT90M": {Minutes: 90},
	} {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if back, err := ParseDuration(got.String()); err != nil || back != got {
			t.Errorf("%q formats as %q, which parses as %+v, %v", in, got.String(), back, err)
		}
	}
	for _, in := range []string{"", "P", "PT", "7D", "P7", "P1.5D", "P-1D", "PD", "P1D1D", "PT1D", "P1H", "P0D", "P1DT", "P99999999999999999999D", "P1DTT1H", "p7d"} {
		if d, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) = %+v, want an error", in, d)
		}
	}
}

// TestLevelEdges: bucket edges in a zone with DST, across ISO week and
// year boundaries.
func TestLevelEdges(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	at := func(s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04", s, ny)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Spring forward: 2026-03-08 is 23 hours long, fall back 2026-11-01 25.
	for day, hours := range map[string]float64{"2026-03-08 12:00": 23, "2026-11-01 12:00": 25, "2026-07-01 12:00": 24} {
		s := Day.Start(at(day), ny)
		if got := Day.Next(s, ny).Sub(s).Hours(); got != hours {
			t.Errorf("the day of %s lasts %v hours, want %v", day, got, hours)
		}
		n := 0
		for h := s; h.Before(Day.Next(s, ny)); h = Hour.Next(h, ny) {
			if !Hour.Aligned(h, ny) || h.Minute() != 0 {
				t.Fatalf("hour bucket start %v is not a whole local hour", h)
			}
			n++
		}
		if float64(n) != hours {
			t.Errorf("the day of %s has %d hour buckets, want %v", day, n, hours)
		}
	}
	for in, want := range map[string]string{
		"2026-12-31 10:00": "2026-12-28 00:00", // Thursday; the ISO week starts Monday
		"2027-01-03 23:59": "2026-12-28 00:00", // Sunday, same week
		"2027-01-04 00:00": "2027-01-04 00:00", // Monday
	} {
		if got := Week.Start(at(in), ny); !got.Equal(at(want)) {
			t.Errorf("week of %s starts %v, want %s", in, got, want)
		}
	}
	if got := Month.Next(Month.Start(at("2026-01-31 12:00"), ny), ny); !got.Equal(at("2026-02-01 00:00")) {
		t.Errorf("month after January starts %v", got)
	}
	if got := Hour.Start(at("2026-11-01 01:30").Add(time.Hour), ny); got.Hour() != 1 || got.Equal(at("2026-11-01 01:00")) {
		t.Errorf("the repeated 01:00 hour of the fall-back starts %v; want a second 01:00 bucket", got)
	}
}

// TestLevelProperties: for random instants in several zones, Start(t) <= t
// < Next(Start(t)), Next is a bucket start, and an hour bucket starts at
// a whole local hour or where the offset changes, also in years a zone's
// TZ rule serves (after 2037), where Go reports a period boundary at
// every new year.
func TestLevelProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, zone := range []string{"UTC", "America/New_York", "Europe/Berlin", "Asia/Kolkata", "Australia/Lord_Howe", "America/Santiago", "America/St_Johns", "America/Goose_Bay", "Pacific/Apia"} {
		loc := mustLoc(t, zone)
		for i := range 3000 {
			tm := time.Unix(1_200_000_000+r.Int64N(1_400_000_000), 0)
			if i%3 == 0 {
				// Around a new year, UTC.
				tm = time.Date(2000+r.IntN(60), 12, 31, 12, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(24 * time.Hour))))
			}
			for _, l := range Levels {
				s := l.Start(tm, loc)
				n := l.Next(s, loc)
				if s.After(tm) || !n.After(tm) {
					t.Fatalf("%s %s: %v not in [%v, %v)", zone, l, tm, s, n)
				}
				if !l.Aligned(n, loc) || !l.Aligned(s, loc) {
					t.Fatalf("%s %s: %v or %v is not aligned", zone, l, s, n)
				}
				_, before := s.Add(-time.Second).In(loc).Zone()
				if _, off := s.In(loc).Zone(); l == Hour && s.In(loc).Minute() != 0 && before == off {
					t.Fatalf("%s: hour bucket %v starts neither at a whole hour nor at an offset change", zone, s.In(loc))
				}
			}
		}
	}
}

func testSpec(tb testing.TB, tz string, levels ...LevelSpec) *Spec {
	tb.Helper()
	s := &Spec{Params: sketch.HLLParams{Params: hll.DefaultParams()}, TZ: tz, Levels: levels}
	if err := s.Validate(); err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestValidate(t *testing.T) {
	p := sketch.HLLParams{Params: hll.DefaultParams()}
	for name, s := range map[string]Spec{
		"no params":           {TZ: "UTC", Levels: []LevelSpec{{Day, Duration{Days: 10}}}},
		"bad tz":              {Params: p, TZ: "Mars/Olympus", Levels: []LevelSpec{{Day, Duration{Days: 10}}}},
		"empty tz":            {Params: p, Levels: []LevelSpec{{Day, Duration{Days: 10}}}},
		"no levels":           {Params: p, TZ: "UTC"},
		"level twice":         {Params: p, TZ: "UTC", Levels: []LevelSpec{{Day, Duration{Days: 10}}, {Day, Duration{Days: 20}}}},
		"coarser keeps less":  {Params: p, TZ: "UTC", Levels: []LevelSpec{{Hour, Duration{Days: 30}}, {Day, Duration{Days: 10}}}},
		"zero retention":      {Params: p, TZ: "UTC", Levels: []LevelSpec{{Day, Duration{}}}},
		"late past retention": {Params: p, TZ: "UTC", Levels: []LevelSpec{{Hour, Duration{Days: 2}}}, LateLimit: Duration{Days: 3}},
		"unknown level":       {Params: p, TZ: "UTC", Levels: []LevelSpec{{9, Duration{Days: 2}}}},
	} {
		if err := s.Validate(); sketch.KindOf(err) != sketch.Invalid {
			t.Errorf("%s: Validate = %v, want Invalid", name, err)
		}
	}
}

func TestBuckets(t *testing.T) {
	s := testSpec(t, "Europe/Berlin", LevelSpec{Hour, Duration{Days: 14}}, LevelSpec{Day, Duration{Days: 400}}, LevelSpec{Month, Duration{Years: 5}})
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	keys, err := s.Buckets(now.Add(-time.Hour), now)
	if err != nil || len(keys) != 3 {
		t.Fatalf("Buckets(now-1h) = %v, %v; want hour, day, month", keys, err)
	}
	if _, err := s.Buckets(now.Add(6*time.Minute), now); sketch.KindOf(err) != sketch.Unprocessable {
		t.Errorf("6 minutes ahead = %v, want Invalid", err)
	}
	if _, err := s.Buckets(now.Add(4*time.Minute), now); err != nil {
		t.Errorf("4 minutes ahead = %v", err)
	}
	if _, err := s.Buckets(now.AddDate(0, 0, -8), now); sketch.KindOf(err) != sketch.Unprocessable {
		t.Errorf("8 days late (limit P7D) = %v, want Invalid", err)
	}
	// A late limit longer than the finest level keeps is a backfill
	// window: an add older than the hour level's retention goes to days
	// only. One past the coarsest level's retention is refused; the
	// default shrinks to the finest level's.
	s2 := &Spec{Params: s.Params, TZ: "UTC", Levels: []LevelSpec{{Hour, Duration{Days: 1}}, {Day, Duration{Days: 30}}}, LateLimit: Duration{Days: 20}}
	if err := s2.Validate(); err != nil {
		t.Fatalf("late limit P20D over hours kept P1D and days P30D = %v", err)
	}
	keys, err = s2.Buckets(now.Add(-36*time.Hour), now)
	if err != nil || len(keys) != 1 || keys[0] != (Key{Day, Day.Start(now.Add(-36*time.Hour), s2.loc)}) {
		t.Errorf("36 hours late over hours kept P1D = %v, %v; want the day bucket only", keys, err)
	}
	added := s2.AddedTo(sketch.Added{Accepted: 3}, keys)
	if !slices.Equal(added.Levels, []Level{Day}) || len(added.Skipped) != 1 || added.Skipped[0].Level != Hour {
		t.Errorf("AddedTo = %+v, want day taken and hour skipped", added)
	}
	s2.LateLimit = Duration{Days: 31}
	if err := s2.Validate(); sketch.KindOf(err) != sketch.Invalid {
		t.Errorf("late limit P31D over days kept P30D = %v, want Invalid", err)
	}
	// No level keeps the time (a spec changed behind Validate's back):
	// 422, not an add that writes nothing.
	s2.LateLimit = Duration{Days: 60}
	if _, err := s2.Buckets(now.AddDate(0, 0, -45), now); sketch.KindOf(err) != sketch.Unprocessable {
		t.Errorf("45 days late over days kept P30D = %v, want Unprocessable", err)
	}
	s2.LateLimit = Duration{}
	if err := s2.Validate(); err != nil || s2.LateLimit != (Duration{Days: 1}) {
		t.Errorf("default late limit over an hour level kept P1D = %v, %v; want P1D", s2.LateLimit, err)
	}
	s3 := &Spec{Params: s.Params, TZ: "UTC", Levels: []LevelSpec{{Hour, Duration{Days: 1}}, {Day, Duration{Days: 30}}}, LateLimit: Duration{Hours: 20}}
	if err := s3.Validate(); err != nil {
		t.Fatal(err)
	}
	keys, err = s3.Buckets(now.Add(-19*time.Hour), now)
	if err != nil || len(keys) != 2 {
		t.Errorf("19 hours late = %v, %v", keys, err)
	}
}

// bestCover finds the fewest unexpired buckets tiling [a, b) by a
// shortest path over every bucket edge: the reference Plan must match.
func bestCover(s *Spec, a, b, now time.Time) int {
	dist := map[time.Time]int{a: 0}
	frontier := []time.Time{a}
	for len(frontier) > 0 {
		slices.SortFunc(frontier, func(x, y time.Time) int { return x.Compare(y) })
		t := frontier[0]
		frontier = frontier[1:]
		if t.Equal(b) {
			return dist[t]
		}
		for _, ls := range s.Levels {
			l := ls.Level
			if !l.Aligned(t, s.loc) {
				continue
			}
			n := l.Next(t, s.loc)
			if n.After(b) || !n.After(s.Cutoff(l, now)) {
				continue
			}
			if d, ok := dist[n]; !ok || dist[t]+1 < d {
				if !ok {
					frontier = append(frontier, n)
				}
				dist[n] = dist[t] + 1
			}
		}
	}
	return -1
}

// TestPlanOptimal: on random ranges in a DST zone, the plan tiles the
// covered range exactly with unexpired buckets, as few as the best cover,
// and warns exactly when the covered range differs from the one asked.
func TestPlanOptimal(t *testing.T) {
	s := testSpec(t, "America/New_York", LevelSpec{Hour, Duration{Days: 14}}, LevelSpec{Day, Duration{Days: 400}},
		LevelSpec{Week, Duration{Days: 400}}, LevelSpec{Month, Duration{Years: 5}})
	now := time.Date(2026, 11, 20, 15, 17, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		from := now.Add(-time.Duration(r.Int64N(int64(450 * 24 * time.Hour))))
		if i%3 == 0 { // day-aligned ranges, as most users ask
			from = Day.Start(from, s.loc)
		}
		to := from.Add(time.Duration(1 + r.Int64N(int64(200*24*time.Hour))))
		if i%3 == 0 {
			to = Day.Ceil(to, s.loc)
		}
		p, err := s.Plan(from, to, now)
		if err != nil {
			t.Fatal(err)
		}
		if (len(p.Warnings) > 0) != (!p.From.Equal(from) || !p.To.Equal(to)) {
			t.Fatalf("[%v, %v): covered [%v, %v) with warnings %q", from, to, p.From, p.To, p.Warnings)
		}
		at := p.From
		for _, k := range p.Buckets {
			if !k.Start.Equal(at) {
				t.Fatalf("[%v, %v): bucket %v %v does not start where the last ended (%v)", from, to, k.Level, k.Start, at)
			}
			at = k.Level.Next(k.Start, s.loc)
			if !at.After(s.Cutoff(k.Level, now)) {
				t.Fatalf("plan uses expired %v bucket %v", k.Level, k.Start)
			}
		}
		if !at.Equal(p.To) {
			t.Fatalf("[%v, %v): buckets end at %v, want %v", from, to, at, p.To)
		}
		checkRuns(t, p)
		if best := bestCover(s, p.From, p.To, now); best != len(p.Buckets) {
			t.Fatalf("[%v, %v): %d buckets, the best cover has %d", p.From, p.To, len(p.Buckets), best)
		}
	}
	if _, err := s.Plan(now, now, now); sketch.KindOf(err) != sketch.Invalid {
		t.Errorf("zero-length range = %v, want Invalid", err)
	}
	if _, err := s.Plan(now, now.Add(-time.Hour), now); sketch.KindOf(err) != sketch.Invalid {
		t.Errorf("to before from = %v, want Invalid", err)
	}
	p, err := s.Plan(now.AddDate(-10, 0, 0), now.AddDate(-9, 0, 0), now)
	if err != nil || len(p.Buckets) != 0 || len(p.Warnings) == 0 {
		t.Errorf("an expired range = %+v, %v; want no buckets and a warning", p, err)
	}
}

// set is a tiny exact "sketch" for testing the window: a sorted id list.
func unionSets(a, b []int) []int {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// TestWindowMatchesNaive: a random sequence of pushes and pops gives the
// union of exactly the elements inside, every time, with unions made anew
// or (MergeInto) grown in place, and never changes an element pushed.
func TestWindowMatchesNaive(t *testing.T) {
	for _, inPlace := range []bool{false, true} {
		t.Run(fmt.Sprintf("in_place=%t", inPlace), func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, 6))
			unions := 0
			w := NewWindow(func(a, b []int) []int { unions++; return unionSets(a, b) })
			if inPlace {
				w.MergeInto(func(dst []int, own bool, src []int) ([]int, bool) {
					switch {
					case len(src) == 0:
						return dst, own
					case len(dst) == 0:
						return src, false // the element itself: not the window's
					case !own:
						unions++
						return unionSets(dst, src), true
					}
					dst = append(dst, src...) // changes dst's array: only when owned
					slices.Sort(dst)
					return slices.Compact(dst), true
				})
			}
			var inside, copies [][]int
			for i := range 5000 {
				if len(inside) > 40 || (len(inside) > 0 && r.IntN(3) == 0) {
					w.Pop()
					inside, copies = inside[1:], copies[1:]
				} else {
					var v []int // some elements are empty, as empty buckets are
					if r.IntN(5) != 0 {
						// Room to grow, so a merge into an element would
						// write into its array.
						v = append(make([]int, 0, 8), r.IntN(1000), i)
					}
					w.Push(v)
					inside, copies = append(inside, v), append(copies, slices.Clone(v))
				}
				var want []int
				for k, v := range inside {
					if !slices.Equal(v, copies[k]) {
						t.Fatalf("step %d: an element pushed was changed to %v from %v", i, v, copies[k])
					}
					want = unionSets(want, v)
				}
				if got := w.Value(); !slices.Equal(got, want) || w.Len() != len(inside) {
					t.Fatalf("step %d: window %v (len %d), want %v (len %d)", i, got, w.Len(), want, len(inside))
				}
			}
			// Amortised O(1) unions per operation (plus one per Value).
			if unions > 5*5000 {
				t.Errorf("%d unions for 5000 operations", unions)
			}
		})
	}
}

// TestTimeseries: a 30-day window by day over a year uses day buckets,
// each point's window is its own day and the 29 before, across DST.
func TestTimeseries(t *testing.T) {
	s := testSpec(t, "America/New_York", LevelSpec{Hour, Duration{Days: 14}}, LevelSpec{Day, Duration{Days: 500}}, LevelSpec{Month, Duration{Years: 5}})
	now := time.Date(2026, 11, 20, 15, 0, 0, 0, time.UTC)
	from := Day.Start(now.AddDate(-1, 0, 0), s.loc)
	to := Day.Start(now, s.loc)
	ts, err := s.Timeseries(from, to, Duration{Days: 1}, Duration{Days: 30}, now)
	if err != nil {
		t.Fatal(err)
	}
	if ts.Level != Day || len(ts.Points) != 365 || len(ts.Elements) != 365+29 {
		t.Fatalf("level %v, %d points, %d elements; want day, 365, 394", ts.Level, len(ts.Points), len(ts.Elements))
	}
	for _, p := range ts.Points {
		if p.Last-p.First != 30 || !ts.Elements[p.First].Start.Equal(p.WindowFrom) || !Day.Next(ts.Elements[p.Last-1].Start, s.loc).Equal(p.End) {
			t.Fatalf("point %v: elements [%d, %d)", p.Start, p.First, p.Last)
		}
	}
	// Monthly points over 3-month windows use month buckets.
	ts, err = s.Timeseries(Month.Start(from, s.loc), to, Duration{Months: 1}, Duration{Months: 3}, now)
	if err != nil || ts.Level != Month {
		t.Errorf("monthly: level %v, %v", ts.Level, err)
	}
	// Steps that fit no level are refused.
	if _, err := s.Timeseries(from.Add(30*time.Minute), to, Duration{Days: 1}, Duration{Days: 7}, now); sketch.KindOf(err) != sketch.Invalid {
		t.Errorf("unaligned from = %v, want Invalid", err)
	}
	if _, err := s.Timeseries(from, from.AddDate(0, 0, 3), Duration{Minutes: 1}, Duration{Days: 7}, now); sketch.KindOf(err) != sketch.Invalid {
		t.Errorf("a step of a minute = %v, want Invalid", err)
	}
	if _, err := s.Timeseries(from, to, Duration{Minutes: 1}, Duration{Days: 7}, now); sketch.KindOf(err) != sketch.Unprocessable {
		t.Errorf("more than MaxPoints = %v, want Unprocessable", err)
	}
}

// TestTimeseriesSkippedMidnight: in Santiago, 2026-09-06 starts at 01:00
// (DST skips 00:00–01:00). A daily line's points and windows start at the
// local days' starts, 00:00, 01:00 and 00:00, whether it is answered from
// day buckets or from hour buckets; a day later than that day's start is
// the next day's midnight, not 01:00.
func TestTimeseriesSkippedMidnight(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	now := at("2026-11-25T12:00:00Z")
	days := []time.Time{at("2026-09-05T00:00:00-04:00"), at("2026-09-06T01:00:00-03:00"), at("2026-09-07T00:00:00-03:00"), at("2026-09-08T00:00:00-03:00")}
	for _, levels := range [][]LevelSpec{
		{{Day, Duration{Days: 400}}},
		{{Hour, Duration{Days: 120}}},
		{{Hour, Duration{Days: 120}}, {Day, Duration{Days: 400}}},
	} {
		s := testSpec(t, "America/Santiago", levels...)
		for _, from := range days[:3] {
			ts, err := s.Timeseries(from, days[3], Duration{Days: 1}, Duration{Days: 1}, now)
			if err != nil {
				t.Fatalf("%s: daily line from %v: %v", s, from, err)
			}
			var i int
			for i = range days {
				if days[i].Equal(from) {
					break
				}
			}
			if len(ts.Points) != 3-i {
				t.Fatalf("%s: daily line from %v has %d points, want %d", s, from, len(ts.Points), 3-i)
			}
			for j, p := range ts.Points {
				if want := days[i+j]; !p.Start.Equal(want) || !p.WindowFrom.Equal(want) || !p.End.Equal(days[i+j+1]) {
					t.Errorf("%s: point %d = [%v, %v) window from %v; want [%v, %v)", s, j, p.Start, p.End, p.WindowFrom, want, days[i+j+1])
				}
			}
		}
	}
	loc := mustLoc(t, "America/Santiago")
	if got := (Duration{Days: 1}).AddTo(days[1].In(loc), -1); !got.Equal(days[0]) {
		t.Errorf("a day before %v = %v, want %v", days[1], got, days[0])
	}
	if got := (Duration{Weeks: 1}).AddTo(days[0].In(loc), 1); !got.Equal(at("2026-09-12T00:00:00-03:00")) {
		t.Errorf("a week after %v = %v", days[0], got)
	}
}

// TestAddToFarPast: a step back before year 1 keeps the wall clock, in a
// zone whose earliest period has no start (UTC) as in one that has.
func TestAddToFarPast(t *testing.T) {
	for _, zone := range []string{"UTC", "Europe/Berlin"} {
		loc := mustLoc(t, zone)
		got := (Duration{Years: 10000}).AddTo(time.Date(2026, 11, 25, 12, 0, 0, 0, loc), -1).In(loc)
		if y, m, d := got.Date(); y != -7974 || m != 11 || d != 25 || got.Hour() != 12 {
			t.Errorf("%s: 2026-11-25 12:00 minus P10000Y = %v, want -7974-11-25 12:00", zone, got)
		}
	}
}

func TestChanged(t *testing.T) {
	s := testSpec(t, "Europe/Berlin", LevelSpec{Hour, Duration{Days: 14}}, LevelSpec{Day, Duration{Days: 400}}, LevelSpec{Month, Duration{Years: 5}})
	late := Duration{Days: 90}
	c, err := s.Changed(Change{LateLimit: &late, Retentions: map[Level]Duration{Hour: {Days: 30}}})
	if err != nil {
		t.Fatal(err)
	}
	if c.LateLimit != late || c.Levels[0].Retention != (Duration{Days: 30}) || c.Levels[1].Retention != (Duration{Days: 400}) || c.Location() == nil {
		t.Errorf("Changed = %s", c)
	}
	if s.LateLimit != (Duration{Days: 7}) || s.Levels[0].Retention != (Duration{Days: 14}) {
		t.Errorf("Changed changed its receiver: %s", s)
	}
	if c.Same(s) {
		t.Error("a changed spec is the Same as the old one")
	}
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	if _, err := s.Buckets(now.AddDate(0, 0, -60), now); sketch.KindOf(err) != sketch.Unprocessable {
		t.Errorf("60 days late under P7D = %v", err)
	}
	if keys, err := c.Buckets(now.AddDate(0, 0, -60), now); err != nil || len(keys) != 2 {
		t.Errorf("60 days late under P90D with hours kept P30D = %v, %v; want day and month", keys, err)
	}
	for name, ch := range map[string]Change{
		"a level not kept":          {Retentions: map[Level]Duration{Week: {Days: 30}}},
		"coarser keeps less":        {Retentions: map[Level]Duration{Day: {Days: 10}}},
		"zero retention":            {Retentions: map[Level]Duration{Day: {}}},
		"zero late limit":           {LateLimit: &Duration{}},
		"late past the coarsest":    {LateLimit: &Duration{Years: 6}},
		"coarsest under late limit": {LateLimit: &late, Retentions: map[Level]Duration{Hour: {Days: 1}, Day: {Days: 2}, Month: {Days: 60}}},
	} {
		if _, err := s.Changed(ch); sketch.KindOf(err) != sketch.Invalid {
			t.Errorf("%s: Changed = %v, want Invalid", name, err)
		}
	}
}

// TestImportWrites: an hour rolls up into its day, week and month; a
// week into nothing (it does not lie inside a month); a coarser bucket
// named by the import is not rolled into; roll-ups into one bucket are
// unioned; writes come in (level, start) order.
func TestImportWrites(t *testing.T) {
	s := testSpec(t, "Europe/Berlin", LevelSpec{Hour, Duration{Days: 14}}, LevelSpec{Day, Duration{Days: 400}}, LevelSpec{Week, Duration{Days: 400}}, LevelSpec{Month, Duration{Years: 5}})
	loc := s.Location()
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	h1 := Hour.Start(now.Add(-30*time.Hour), loc)
	h2 := Hour.Next(h1, loc)
	sk := func() sketch.Sketch {
		v, err := s.Params.New()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ws, err := s.ImportWrites([]Import{{Key{Hour, h2}, sk()}, {Key{Hour, h1}, sk()}}, true, now)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range ws {
		got = append(got, fmt.Sprintf("%s %s %s", w.Level, w.Start.Format("01-02T15"), w.Action))
	}
	want := []string{
		"hour " + h1.Format("01-02T15") + " replaced", "hour " + h2.Format("01-02T15") + " replaced",
		"day " + Day.Start(h1, loc).Format("01-02T15") + " rolled_up",
		"week " + Week.Start(h1, loc).Format("01-02T15") + " rolled_up",
		"month " + Month.Start(h1, loc).Format("01-02T15") + " rolled_up",
	}
	if !slices.Equal(got, want) {
		t.Errorf("two hours:\n got %v\nwant %v", got, want)
	}
	// The imported sketches are left as they were, and each roll-up holds
	// the union of the buckets under it, in a copy of its own.
	a, b := sk(), sk()
	for i, x := range []sketch.Sketch{a, b} {
		h, _ := sketch.HLLOf(x)
		for v := range uint64(200) {
			h.AddHash((v + uint64(i)*200) * 0x9e3779b97f4a7c15)
		}
	}
	was := [][]byte{a.AppendBinary(nil), b.AppendBinary(nil)}
	u := a.Clone()
	if err := u.Merge(b); err != nil {
		t.Fatal(err)
	}
	if ws, err = s.ImportWrites([]Import{{Key{Hour, h1}, a}, {Key{Hour, h2}, b}}, true, now); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.AppendBinary(nil), was[0]) || !bytes.Equal(b.AppendBinary(nil), was[1]) {
		t.Error("ImportWrites changed the sketches it was given")
	}
	for _, w := range ws[2:] {
		if !bytes.Equal(w.Sketch.AppendBinary(nil), u.AppendBinary(nil)) {
			t.Errorf("%s roll-up = %x, want the union of both hours %x", w.Level, w.Sketch.AppendBinary(nil), u.AppendBinary(nil))
		}
	}
	if ws[2].Sketch == ws[3].Sketch || ws[3].Sketch == ws[4].Sketch {
		t.Error("two roll-ups share one sketch")
	}
	// A week starting 2026-09-28 spans two months: no roll-up.
	w := Week.Start(time.Date(2026, 9, 30, 12, 0, 0, 0, loc), loc)
	ws, err = s.ImportWrites([]Import{{Key{Week, w}, sk()}}, false, now)
	if err != nil || len(ws) != 1 || ws[0].Action != Merged {
		t.Errorf("a week = %+v, %v; want it merged alone", ws, err)
	}
	// The day named with its hour takes no roll-up.
	d := Day.Start(h1, loc)
	ws, err = s.ImportWrites([]Import{{Key{Hour, h1}, sk()}, {Key{Day, d}, sk()}}, true, now)
	if err != nil || len(ws) != 4 || ws[1].Level != Day || ws[1].Action != Replaced {
		t.Errorf("an hour and its day = %+v, %v; want hour, day replaced, week and month rolled up", ws, err)
	}
	// Expired coarser buckets take nothing; an expired named one is 422.
	old := Day.Start(now.AddDate(0, 0, -300), loc)
	s2 := testSpec(t, "UTC", LevelSpec{Day, Duration{Days: 400}}, LevelSpec{Week, Duration{Days: 400}})
	if _, err := s2.ImportWrites([]Import{{Key{Day, now.AddDate(0, 0, -500).Truncate(24 * time.Hour)}, sk()}}, true, now); sketch.KindOf(err) != sketch.Unprocessable {
		t.Errorf("an expired day = %v, want Unprocessable", err)
	}
	if ws, err := s.ImportWrites([]Import{{Key{Day, old}, sk()}}, true, now); err != nil || len(ws) != 3 {
		t.Errorf("a day 300 days old = %+v, %v; want day, week, month", ws, err)
	}
	if _, err := s.ImportWrites(make([]Import, MaxImports+1), true, now); sketch.KindOf(err) != sketch.TooLarge {
		t.Errorf("%d imports = %v, want TooLarge", MaxImports+1, err)
	}
}
