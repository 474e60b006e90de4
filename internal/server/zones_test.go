package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/series/zonetest"
)

// TestSeriesZones: around every offset change of the zones swept (a fast
// subset; every zone of Go's embedded tz database with
// SKETCHD_ZONE_SWEEP=all), in the years where Go's and PostgreSQL's tz
// data agree, a series answers over HTTP exactly for the local days,
// weeks and months PostgreSQL's clock gives (zonetest): ids are added a
// second before, at and after every day's start and every change, and
// /count, /raw, /timeseries (from day, week and month buckets, and from
// hour buckets alone) and union and intersection operands over PostgreSQL's
// day, week and month edges count exactly the ids stamped inside, echo
// the range asked for and warn of nothing. Run over PostgreSQL with
// SKETCHD_TEST_BACKEND=postgres.
func TestSeriesZones(t *testing.T) {
	t.Parallel()
	o := zonetest.Connect(t)
	cases := zonetest.Cases(t)
	compared := 0
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s/%d-%d", c.Zone, c.From, c.To), func(t *testing.T) {
			compared += checkSeriesZone(t, o, i, c)
		})
	}
	if compared == 0 && !t.Failed() {
		t.Fatal("no zone-year compared: PostgreSQL's tz data agrees with Go's nowhere")
	}
}

// zoneSeries is a series of one zone over HTTP and the ids added to it.
type zoneSeries struct {
	e    *env
	loc  *time.Location
	p    hll.Params
	ids  []int64
	ts   []time.Time
	next int64
}

// in returns the ids stamped in [a, b).
func (z *zoneSeries) in(a, b time.Time) []int64 {
	var out []int64
	for i, t := range z.ts {
		if !t.Before(a) && t.Before(b) {
			out = append(out, z.ids[i])
		}
	}
	return out
}

// count is the estimate of the sketch of the ids stamped in [a, b).
func (z *zoneSeries) count(tb testing.TB, a, b time.Time) float64 {
	return hllOf(tb, z.p, z.in(a, b)...).Estimate()
}

func checkSeriesZone(t *testing.T, o *zonetest.Oracle, i int, c zonetest.Case) int {
	loc, err := time.LoadLocation(c.Zone)
	if err != nil {
		t.Skipf("Go cannot load %s here: %v", c.Zone, err)
	}
	from := time.Date(c.From, 1, 1, 0, 0, 0, 0, time.UTC)
	to := time.Date(c.To+1, 1, 1, 0, 0, 0, 0, time.UTC)
	span0, span1 := from.AddDate(0, -2, 0), to.AddDate(0, 2, 0)
	pg := o.Changes(t, c.Zone, span0.AddDate(0, 0, -3), span1.AddDate(0, 0, 3))
	years := zonetest.Agreeing(t, c, pg, zonetest.GoChanges(loc, span0.AddDate(0, 0, -3), span1.AddDate(0, 0, 3)))
	if len(years) == 0 {
		return 0
	}
	cal := zonetest.NewCalendar(o.Days(t, c.Zone, pg, span0, span1))
	// PostgreSQL's date arithmetic on every date of the calendar.
	var dates []time.Time
	for _, d := range cal.Days {
		dates = append(dates, d.Date)
	}
	shift := func(years, months, days int) map[time.Time]time.Time {
		m := map[time.Time]time.Time{}
		for i, d := range o.Shift(t, dates, years, months, days) {
			m[dates[i]] = d
		}
		return m
	}
	dayOn, weekBack, weekOn, monthOn := shift(0, 0, 1), shift(0, 0, -7), shift(0, 0, 7), shift(0, 1, 0)
	var changes []zonetest.Change
	for _, ch := range pg {
		if slices.Contains(years, ch.At.Year()) {
			changes = append(changes, ch)
		}
	}
	if len(changes) == 0 {
		return len(years)
	}
	// The store's clock is just after the sweep, so that every add is on
	// time; nothing expires in 100 years (the longest a request may give).
	now := span1
	e := newEnv(t, withClock(func() time.Time { return now }))
	if _, ok := e.db.Store.(SeriesStore); !ok {
		t.Skipf("the %s backend keeps no series yet", testBackend(t, nil).Name)
	}
	z := &zoneSeries{e: e, loc: loc, p: hll.DefaultParams(), next: int64(i) << 32}
	z.p.Log2m = 12
	const levels = `{"log2m":12,"tz":%q,"levels":%s,"late_limit":"P100Y"}`
	must(t, e.send(t, http.MethodPut, "/v1/series/all", "application/json", fmt.Sprintf(levels, c.Zone, `{"hour":"P100Y","day":"P100Y","week":"P100Y","month":"P100Y"}`)), http.StatusCreated, "create all levels")
	must(t, e.send(t, http.MethodPut, "/v1/series/hours", "application/json", fmt.Sprintf(levels, c.Zone, `{"hour":"P100Y"}`)), http.StatusCreated, "create hours")

	// The days around each change: the day holding it, the one before
	// and the one after.
	var stamps []time.Time
	dayIndex := func(t time.Time) int { // the latest date beginning where t's day does
		s, _ := cal.Holding(t, zonetest.AnyDay)
		return cal.Latest(s)
	}
	for _, ch := range changes {
		stamps = append(stamps, ch.At.Add(-time.Second), ch.At, ch.At.Add(time.Second), ch.At.Add(30*time.Minute))
		k := dayIndex(ch.At)
		for j := max(k-2, 0); j <= min(k+2, len(cal.Days)-1); j++ {
			s := cal.Days[j].Start
			stamps = append(stamps, s.Add(-time.Second), s, s.Add(time.Second), s.Add(6*time.Hour))
		}
	}
	slices.SortFunc(stamps, func(a, b time.Time) int { return a.Compare(b) })
	stamps = slices.CompactFunc(stamps, func(a, b time.Time) bool { return a.Equal(b) })
	z.add(t, stamps)

	// Lines over each year with a change, daily by the day and over 7
	// days, weekly and monthly, from day, week and month buckets; every
	// point counts the ids stamped in its window. (Hour buckets answer
	// the same lines near each change, below.)
	// A point's window ends with its step, and a P7D window reaches back
	// seven days from the date the step reached (the skipped one, where
	// the step ended on a skipped date).
	itself := func(start time.Time) time.Time { return start }
	week := func(start time.Time) time.Time {
		return mustStart(t, cal, weekBack[dayOn[dateOf(cal, start)]])
	}
	for _, y := range years {
		y0 := time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
		y1 := y0.AddDate(1, 0, 0)
		if !slices.ContainsFunc(changes, func(ch zonetest.Change) bool { return ch.At.Year() == y }) {
			continue
		}
		what := fmt.Sprintf("%s %d", c.Zone, y)
		// Where the year's days, weeks and months begin, and the next
		// year's (a skipped December 31 begins where January 1 does).
		days := cal.Starts(y0, y1.AddDate(0, 0, 1), zonetest.AnyDay)
		weeks := cal.Starts(y0, y1, zonetest.Mondays)
		weeks = append(weeks, mustStart(t, cal, weekOn[dateOf(cal, weeks[len(weeks)-1])]))
		months := cal.Starts(y0, y1.AddDate(0, 0, 1), zonetest.Firsts)
		z.checkLine(t, what, "all", "P1D", "P1D", days, itself)
		z.checkLine(t, what, "all", "P1D", "P7D", days, week)
		z.checkLine(t, what, "all", "P1W", "P1W", weeks, itself)
		z.checkLine(t, what, "all", "P1M", "P1M", months, itself)
	}
	// Around each change: lines from hour buckets, the days counted one
	// by one (three either side in the fast sweep, the change's day and
	// the next in the whole one), the week and the month holding it, the
	// day raw, and ranges as operands.
	near := 3
	if zonetest.Full() {
		near = 0
	}
	for _, ch := range changes {
		k := dayIndex(ch.At)
		if k < 7 || k+8 > len(cal.Days) {
			t.Fatalf("%s: the calendar does not reach a week around the change at %v", c.Zone, ch.At)
		}
		day := func(j int) time.Time { return cal.Days[k+j].Date }
		what := fmt.Sprintf("%s, change at %v (%+d s)", c.Zone, ch.At.In(loc), ch.After-ch.Before)
		days := cal.Starts(day(-3), day(4), zonetest.AnyDay)
		days = append(days, mustStart(t, cal, day(4)))
		at := slices.IndexFunc(days, func(s time.Time) bool { return s.Equal(cal.Days[k].Start) })
		for j := max(at-near, 0); j <= min(at+max(near, 1), len(days)-2); j++ {
			z.checkCount(t, what, "all", days[j], days[j+1])
			z.checkCount(t, what, "hours", days[j], days[j+1])
		}
		a, b := days[at], days[at+1]
		z.checkRaw(t, what, a, b)
		z.checkLine(t, what, "hours", "P1D", "P1D", days, itself)
		z.checkLine(t, what, "hours", "P1D", "P7D", days, week)
		for _, lv := range []struct {
			keep func(zonetest.Day) bool
			on   map[time.Time]time.Time
			step string
		}{{zonetest.Mondays, weekOn, "P1W"}, {zonetest.Firsts, monthOn, "P1M"}} {
			s0, _ := cal.Holding(ch.At, lv.keep)
			s1 := mustStart(t, cal, lv.on[dateOf(cal, s0)])
			s2 := mustStart(t, cal, lv.on[dateOf(cal, s1)])
			z.checkLine(t, what, "hours", lv.step, lv.step, []time.Time{s0, s1, s2}, itself)
			if !zonetest.Full() {
				z.checkCount(t, what, "all", s0, s1)
				z.checkCount(t, what, "hours", s0, s1)
			}
		}
		// The day before the change from days, the day of it and the
		// one after from hours.
		pre, post := days[at-1], days[at+2]
		z.checkOperands(t, what, pre, a, b, post)
		if t.Failed() {
			t.FailNow()
		}
	}
	return len(years)
}

// mustStart returns where date begins in cal.
func mustStart(tb testing.TB, cal *zonetest.Calendar, date time.Time) time.Time {
	tb.Helper()
	s, ok := cal.Start(date)
	if !ok {
		tb.Fatalf("%s is outside the calendar", date.Format(time.DateOnly))
	}
	return s
}

// dateOf returns the latest date that begins at start (a step forward
// counts from it: past a skipped date).
func dateOf(cal *zonetest.Calendar, start time.Time) time.Time {
	return cal.Days[cal.Latest(start)].Date
}

// add adds one new id at each stamp to both series, in batches of events.
func (z *zoneSeries) add(tb testing.TB, stamps []time.Time) {
	tb.Helper()
	for len(stamps) > 0 {
		n := min(len(stamps), 500)
		var b strings.Builder
		b.WriteString(`{"events":[`)
		for i, s := range stamps[:n] {
			if i > 0 {
				b.WriteByte(',')
			}
			z.next++
			fmt.Fprintf(&b, `{"id":%d,"series":["all","hours"],"ts":%q}`, z.next, s.Format(time.RFC3339))
			z.ids, z.ts = append(z.ids, z.next), append(z.ts, s)
		}
		b.WriteString(`]}`)
		must(tb, z.e.postJSON(tb, "/v1/events", b.String()), http.StatusOK, "events")
		stamps = stamps[n:]
	}
}

func (z *zoneSeries) checkCount(tb testing.TB, what, name string, a, b time.Time) {
	tb.Helper()
	var c countAnswer
	decode(tb, must(tb, z.e.get(tb, "/v1/series/"+name+"/count?from="+rfc(a)+"&to="+rfc(b)), http.StatusOK, "count").Body, &c)
	if want := z.count(tb, a, b); c.Cardinality != want || !c.From.Equal(a) || !c.To.Equal(b) || len(c.Warnings) > 0 {
		tb.Errorf("%s: %s count of [%v, %v) = %v over [%v, %v) %q; want %v (%d ids) over the same range",
			what, name, a.In(z.loc), b.In(z.loc), c.Cardinality, c.From, c.To, c.Warnings, want, len(z.in(a, b)))
	}
}

func (z *zoneSeries) checkRaw(tb testing.TB, what string, a, b time.Time) {
	tb.Helper()
	for _, name := range []string{"all", "hours"} {
		r := must(tb, z.e.get(tb, "/v1/series/"+name+"/raw?from="+rfc(a)+"&to="+rfc(b)), http.StatusOK, "raw")
		if want := encode(tb, hllOf(tb, z.p, z.in(a, b)...)); !bytes.Equal(r.Body, want) {
			tb.Errorf("%s: %s raw of [%v, %v) differs from the sketch of the %d ids stamped inside", what, name, a.In(z.loc), b.In(z.loc), len(z.in(a, b)))
		}
	}
}

// checkLine asks for a line over [starts[0], starts[n-1]) by step and
// window: one point per interval of starts, its window from windowFrom
// of its start, each counting the ids stamped inside.
func (z *zoneSeries) checkLine(tb testing.TB, what, name, step, window string, starts []time.Time, windowFrom func(start time.Time) time.Time) {
	tb.Helper()
	q := fmt.Sprintf("/v1/series/%s/timeseries?from=%s&to=%s&step=%s&window=%s", name, rfc(starts[0]), rfc(starts[len(starts)-1]), step, window)
	var ts timeseriesAnswer
	decode(tb, must(tb, z.e.get(tb, q), http.StatusOK, "timeseries").Body, &ts)
	if len(ts.Points) != len(starts)-1 || len(ts.Warnings) > 0 {
		tb.Errorf("%s: %s line step %s window %s from %v: %d points %q; want %d, no warnings", what, name, step, window, starts[0].In(z.loc), len(ts.Points), ts.Warnings, len(starts)-1)
		return
	}
	for i, p := range ts.Points {
		wf := windowFrom(starts[i])
		if want := z.count(tb, wf, starts[i+1]); !p.Start.Equal(starts[i]) || !p.End.Equal(starts[i+1]) || !p.WindowFrom.Equal(wf) || p.Cardinality != want {
			tb.Errorf("%s: %s line step %s window %s, point %d = [%v, %v) window from %v: %v; want [%v, %v) from %v: %v",
				what, name, step, window, i, p.Start, p.End, p.WindowFrom, p.Cardinality, starts[i].In(z.loc), starts[i+1].In(z.loc), wf.In(z.loc), want)
		}
	}
}

// checkOperands: [pre, a) of the day-level series and [a, post) of the
// hour-level one as union operands count the ids of [pre, post); the
// intersection of [pre, b) and [a, post) holds those of [a, b).
func (z *zoneSeries) checkOperands(tb testing.TB, what string, pre, a, b, post time.Time) {
	tb.Helper()
	op := func(name string, from, to time.Time) string {
		return fmt.Sprintf(`{"series":%q,"from":%q,"to":%q}`, name, from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	var u struct {
		Cardinality float64
		Warnings    []string
	}
	decode(tb, must(tb, z.e.postJSON(tb, "/v1/union", `{"sketches":[`+op("all", pre, a)+`,`+op("hours", a, post)+`]}`), http.StatusOK, "union").Body, &u)
	if want := z.count(tb, pre, post); u.Cardinality != want || len(u.Warnings) > 0 {
		tb.Errorf("%s: union of [%v, %v) and [%v, %v) = %v %q, want %v", what, pre.In(z.loc), a.In(z.loc), a.In(z.loc), post.In(z.loc), u.Cardinality, u.Warnings, want)
	}
	var x struct {
		Lower, Upper float64
		Warnings     []string
	}
	body := `{"sketches":[` + op("all", pre, b) + `,` + op("hours", a, post) + `]}`
	decode(tb, must(tb, z.e.postJSON(tb, "/v1/intersection", body), http.StatusOK, "intersection").Body, &x)
	both := float64(len(z.in(a, b)))
	// The ranges' plans warn of widened edges and expired buckets.
	planWarning := func(w string) bool { return strings.Contains(w, "bucket") || strings.Contains(w, "expired") }
	if x.Lower > both || x.Upper < both || slices.ContainsFunc(x.Warnings, planWarning) {
		raw, _ := json.Marshal(x)
		tb.Errorf("%s: intersection of [%v, %v) and [%v, %v) = %s; want bounds around %v", what, pre.In(z.loc), b.In(z.loc), a.In(z.loc), post.In(z.loc), raw, both)
	}
}

// TestSeriesSkippedMidnight: in Santiago, 2026-09-06 starts at 01:00
// (DST skips 00:00–01:00). A daily line has one point per local day, at
// each day's start, whether from day buckets, from hour buckets or from
// days alone (where it used to be refused), and /count and /raw take the
// same edges.
func TestSeriesSkippedMidnight(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	e := newEnv(t, withClock(func() time.Time { return now }))
	if _, ok := e.db.Store.(SeriesStore); !ok {
		t.Skipf("the %s backend keeps no series yet", testBackend(t, nil).Name)
	}
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Retentions long enough that the test keeps passing as the real
	// clock, which plans reads, moves on.
	for name, levels := range map[string]string{"both": `{"hour":"P100Y","day":"P100Y"}`, "hours": `{"hour":"P100Y"}`, "days": `{"day":"P100Y"}`} {
		must(t, e.send(t, http.MethodPut, "/v1/series/"+name, "application/json", `{"tz":"America/Santiago","levels":`+levels+`,"late_limit":"P100Y"}`), http.StatusCreated, "create "+name)
		must(t, e.postJSON(t, "/v1/series/"+name+"/add?ts="+rfc(at("2026-09-05T23:30:00-04:00")), idsJSON(1)), http.StatusOK, "add 1")
		must(t, e.postJSON(t, "/v1/series/"+name+"/add?ts="+rfc(at("2026-09-06T23:30:00-03:00")), idsJSON(2)), http.StatusOK, "add 2")
	}
	days := []time.Time{at("2026-09-05T00:00:00-04:00"), at("2026-09-06T01:00:00-03:00"), at("2026-09-07T00:00:00-03:00"), at("2026-09-08T00:00:00-03:00")}
	counts := []float64{1, 1, 0}
	for _, name := range []string{"both", "hours", "days"} {
		var ts timeseriesAnswer
		decode(t, must(t, e.get(t, "/v1/series/"+name+"/timeseries?from="+rfc(days[0])+"&to="+rfc(days[3])+"&step=P1D&window=P1D"), http.StatusOK, name+" line").Body, &ts)
		if len(ts.Points) != 3 {
			t.Fatalf("%s: %d points, want 3: %+v", name, len(ts.Points), ts.Points)
		}
		for i, p := range ts.Points {
			if !p.Start.Equal(days[i]) || !p.WindowFrom.Equal(days[i]) || !p.End.Equal(days[i+1]) || p.Cardinality != counts[i] {
				t.Errorf("%s point %d: [%v, %v) from %v = %v; want [%v, %v) = %v", name, i, p.Start, p.End, p.WindowFrom, p.Cardinality, days[i], days[i+1], counts[i])
			}
		}
		// A line may start on the day that starts at 01:00.
		decode(t, must(t, e.get(t, "/v1/series/"+name+"/timeseries?from="+rfc(days[1])+"&to="+rfc(days[3])+"&step=P1D&window=P7D"), http.StatusOK, name+" line from the 6th").Body, &ts)
		if len(ts.Points) != 2 || !ts.Points[1].Start.Equal(days[2]) || !ts.Points[1].WindowFrom.Equal(at("2026-09-01T00:00:00-04:00")) || ts.Points[1].Cardinality != 2 {
			t.Errorf("%s: line from %v over 7 days = %+v", name, days[1], ts.Points)
		}
		for i := range 3 {
			var c countAnswer
			decode(t, must(t, e.get(t, "/v1/series/"+name+"/count?from="+rfc(days[i])+"&to="+rfc(days[i+1])), http.StatusOK, name+" count").Body, &c)
			if c.Cardinality != counts[i] || !c.From.Equal(days[i]) || !c.To.Equal(days[i+1]) || len(c.Warnings) > 0 {
				t.Errorf("%s: count of [%v, %v) = %+v, want %v", name, days[i], days[i+1], c, counts[i])
			}
		}
	}
}
