package series

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/sketch"
)

// checkRuns: a plan's runs are its buckets, in order, grouped by level.
func checkRuns(tb testing.TB, p Plan) {
	tb.Helper()
	i := 0
	for j, r := range p.Runs {
		if r.Count < 1 || i+r.Count > len(p.Buckets) {
			tb.Fatalf("run %d %+v does not fit %d buckets from %d", j, r, len(p.Buckets), i)
		}
		if j > 0 && p.Runs[j-1].Level == r.Level {
			tb.Fatalf("runs %d and %d are both %s", j-1, j, r.Level)
		}
		for _, k := range p.Buckets[i : i+r.Count] {
			if !r.Contains(k.Level, k.Start) {
				tb.Fatalf("bucket %s %v outside its run %+v", k.Level, k.Start, r)
			}
		}
		if !p.Buckets[i].Start.Equal(r.First) || !p.Buckets[i+r.Count-1].Start.Equal(r.Last) {
			tb.Fatalf("run %+v: its buckets go from %v to %v", r, p.Buckets[i].Start, p.Buckets[i+r.Count-1].Start)
		}
		i += r.Count
	}
	if i != len(p.Buckets) {
		tb.Fatalf("runs hold %d buckets, the plan %d", i, len(p.Buckets))
	}
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestPlanBudget: a series keeping hours for a century. A range planned
// within the budget is one run of hours; one past it is refused with the
// limit and how to narrow, having allocated next to nothing; ranges of
// one request share the budget.
func TestPlanBudget(t *testing.T) {
	s := testSpec(t, "Europe/Berlin", LevelSpec{Hour, Duration{Years: 100}})
	now := time.Date(2026, 11, 20, 15, 0, 0, 0, time.UTC)
	from := Hour.Start(now.AddDate(-10, 0, 0), s.loc)
	to := Hour.Start(now, s.loc)
	p, err := s.Plan(from, to, now)
	if err != nil {
		t.Fatal(err)
	}
	hours := int(to.Sub(from) / time.Hour)
	if len(p.Runs) != 1 || p.Runs[0].Level != Hour || p.Runs[0].Count != hours || len(p.Buckets) != hours {
		t.Fatalf("10 years of hours: runs %+v, %d buckets; want one run of %d hours", p.Runs, len(p.Buckets), hours)
	}
	checkRuns(t, p)

	var refused error
	n := allocated(func() { _, refused = s.Plan(now.AddDate(-100, 0, 0), now, now) })
	if sketch.KindOf(refused) != sketch.Unprocessable {
		t.Fatalf("100 years of hours = %v, want Unprocessable", refused)
	}
	for _, want := range []string{"more than 100000 buckets", "at most 100000", "-max-series-buckets", "shorter range", "coarser level"} {
		if !strings.Contains(refused.Error(), want) {
			t.Errorf("refusal %q does not say %q", refused, want)
		}
	}
	// The steps kept for the cover (24 bytes each, in a slice that grows)
	// up to the limit, not the 876,000 hours of the century.
	if n > 32<<20 {
		t.Errorf("planning 100 years of hours allocated %d MiB before refusing", n>>20)
	}

	b := NewBudget(3000, 0)
	if _, err := s.PlanWithin(from, from.Add(2000*time.Hour), now, b); err != nil || b.Used() != 2000 {
		t.Fatalf("2000 hours within 3000: %v, used %d", err, b.Used())
	}
	_, err = s.PlanWithin(from, from.Add(2000*time.Hour), now, b)
	if sketch.KindOf(err) != sketch.Unprocessable || !strings.Contains(err.Error(), "with the 2000 of this request's other series ranges") {
		t.Errorf("a second range past the shared budget = %v", err)
	}
}

// TestTimeseriesBudget: a line whose windows span a century of hours is
// refused before its elements are laid out; its points are bounded too.
func TestTimeseriesBudget(t *testing.T) {
	s := testSpec(t, "UTC", LevelSpec{Hour, Duration{Years: 100}})
	now := time.Date(2026, 11, 20, 15, 0, 0, 0, time.UTC)
	from, to := time.Date(1930, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var err error
	n := allocated(func() { _, err = s.Timeseries(from, to, Duration{Months: 1}, Duration{Years: 100}, now) })
	if sketch.KindOf(err) != sketch.Unprocessable || !strings.Contains(err.Error(), "hour buckets") || !strings.Contains(err.Error(), "-max-series-buckets") {
		t.Fatalf("monthly points over 100-year windows of hours = %v, want Unprocessable naming the limit", err)
	}
	if n > 32<<20 {
		t.Errorf("planning the line allocated %d MiB before refusing", n>>20)
	}
	ts, err := s.TimeseriesWithin(to.AddDate(0, 0, -30), to, Duration{Days: 1}, Duration{Days: 7}, now, NewBudget(1000, 0))
	if err != nil || ts.Run() != (Run{Level: Hour, First: to.AddDate(0, 0, -36), Last: to.Add(-time.Hour), Count: 36 * 24}) {
		t.Errorf("30 daily points over 7-day windows: run %+v, %v", ts.Run(), err)
	}
	_, err = s.TimeseriesWithin(to.AddDate(0, 0, -30), to, Duration{Days: 1}, Duration{Days: 7}, now, NewBudget(0, 20))
	if sketch.KindOf(err) != sketch.Unprocessable || !strings.Contains(err.Error(), "at most 20") || !strings.Contains(err.Error(), "-max-series-points") {
		t.Errorf("30 points with at most 20 = %v", err)
	}
}

// BenchmarkPlan measures planning: a 400-day count over hours, days and
// months (the count of the HTTP benchmark), ten years of hours (87,600
// buckets, within the default budget) and a century of hours (refused at
// the budget). buckets/op is what the plan considered.
//
//	go test -run '^$' -bench Plan -count 6 ./internal/series
func BenchmarkPlan(b *testing.B) {
	now := time.Date(2026, 11, 20, 15, 17, 0, 0, time.UTC)
	three := testSpec(b, "America/New_York", LevelSpec{Hour, Duration{Days: 14}}, LevelSpec{Day, Duration{Days: 400}}, LevelSpec{Month, Duration{Years: 5}})
	century := testSpec(b, "America/New_York", LevelSpec{Hour, Duration{Years: 100}})
	for _, c := range []struct {
		name     string
		s        *Spec
		from, to time.Time
		refused  bool
	}{
		{"count_400_days", three, Day.Start(now, three.loc).AddDate(0, 0, -399).Add(5 * time.Hour), now.Truncate(time.Hour), false},
		{"hours_10_years", century, now.AddDate(-10, 0, 0).Truncate(time.Hour), now.Truncate(time.Hour), false},
		{"hours_100_years_refused", century, now.AddDate(-100, 0, 0).Truncate(time.Hour), now.Truncate(time.Hour), true},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var used int
			for b.Loop() {
				bud := NewBudget(0, 0)
				_, err := c.s.PlanWithin(c.from, c.to, now, bud)
				if (err != nil) != c.refused {
					b.Fatalf("refused: %v", err)
				}
				used = bud.Used()
			}
			b.ReportMetric(float64(used), "buckets/op")
		})
	}
}
