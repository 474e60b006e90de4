// Package zonetest checks local calendar arithmetic against PostgreSQL's,
// an independent implementation of the tz database: its own compiled
// zone files and its own localtime code. It takes from PostgreSQL only
// the mapping of an instant to a local wall clock (timestamptz AT TIME
// ZONE) and date arithmetic on plain dates, and derives from them where
// each local date begins; nothing here uses Go's calendar code on zoned
// times.
//
// Which zones: Names lists the zones of Go's embedded tz database (the
// zoneinfo.zip in GOROOT that time/tzdata embeds). Cases is a fixed fast
// subset of zones with unusual days (a skipped midnight, a repeated one, a
// fall-back across midnight, a skipped date, half-hour and two-hour
// changes), or, with SKETCHD_ZONE_SWEEP=all, every one of Names whose
// offset changes between FullFrom and FullTo (SKETCHD_ZONE_SWEEP=a,b: the
// zones named, over those years).
//
// PostgreSQL's tz data (the system's, on Debian) may be a different
// release than the one Go reads. Agreeing keeps only the years in which
// both list the same offset changes, and logs the others.
package zonetest

import (
	"archive/zip"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/pgtest"
)

// The whole sweep's years.
const (
	FullFrom = 1970
	FullTo   = 2041
)

// Case is a zone and the years, From to To inclusive, to check in it.
type Case struct {
	Zone     string
	From, To int
}

// fast is the subset CI runs on every change: zones whose days are not
// all midnight to midnight, in years that show it, plus 2040, a leap
// year that a TZ rule serves (Go reports a zone period ending before the
// instant on its last UTC day, golang.org/issue/81583).
var fast = []Case{
	{"America/Santiago", 2026, 2026},    // 2026-09-06 starts at 01:00; DST ends at 24:00
	{"America/Havana", 2025, 2025},      // midnight skipped in March, shown twice in November
	{"America/Goose_Bay", 2009, 2010},   // changes at 00:01: clocks fall back across midnight
	{"Pacific/Apia", 2011, 2011},        // 2011-12-30 does not exist
	{"Pacific/Kiritimati", 1994, 1995},  // 1994-12-31 does not exist
	{"America/Nuuk", 2024, 2024},        // DST starts at 23:00: a Saturday ends at 23:00
	{"Australia/Lord_Howe", 2026, 2026}, // half-hour DST
	{"Antarctica/Troll", 2026, 2026},    // two-hour DST
	{"Africa/Casablanca", 2026, 2026},   // DST suspended for Ramadan
	{"Asia/Tehran", 2021, 2021},         // DST at 24:00
	{"America/Sao_Paulo", 2018, 2018},   // DST at 00:00
	{"Europe/Berlin", 2026, 2026},       // 23- and 25-hour days
	{"Europe/Berlin", 2040, 2040},
	{"America/St_Johns", 2040, 2040}, // half-hour offset, leap year served by a TZ rule
	{"Africa/Monrovia", 1972, 1972},  // an offset with seconds (-00:44:30) until 1972-01-07
}

// Full reports whether SKETCHD_ZONE_SWEEP asks for a whole sweep: "all"
// for every zone, or a comma-separated list of zone names.
func Full() bool { return os.Getenv("SKETCHD_ZONE_SWEEP") != "" }

// Fast returns the fast subset.
func Fast() []Case { return slices.Clone(fast) }

// Cases returns the zones and years to check: the fast subset, or under
// SKETCHD_ZONE_SWEEP=all every zone of Names whose offset changes between
// FullFrom and FullTo, over those years (SKETCHD_ZONE_SWEEP=zone,zone:
// those zones). A zone Go cannot load (it is in the embedded database but
// not in the system's) is logged and left out.
func Cases(tb testing.TB) []Case {
	tb.Helper()
	if !Full() {
		return Fast()
	}
	var out []Case
	from := time.Date(FullFrom, 1, 1, 0, 0, 0, 0, time.UTC)
	to := time.Date(FullTo+1, 1, 1, 0, 0, 0, 0, time.UTC)
	names := strings.Split(os.Getenv("SKETCHD_ZONE_SWEEP"), ",")
	if names[0] == "all" {
		names = Names(tb)
	}
	for _, name := range names {
		loc, err := time.LoadLocation(name)
		if err != nil {
			tb.Logf("%s: Go cannot load it here (%v): left out", name, err)
			continue
		}
		if len(GoChanges(loc, from, to)) > 0 {
			out = append(out, Case{name, FullFrom, FullTo})
		}
	}
	return out
}

// Names lists the zones of Go's embedded tz database, read from
// $GOROOT/lib/time/zoneinfo.zip (the file time/tzdata embeds).
func Names(tb testing.TB) []string {
	tb.Helper()
	root, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		tb.Fatalf("go env GOROOT: %v", err)
	}
	path := filepath.Join(strings.TrimSpace(string(root)), "lib", "time", "zoneinfo.zip")
	z, err := zip.OpenReader(path)
	if err != nil {
		tb.Fatalf("Go's tz database: %v", err)
	}
	defer z.Close()
	var names []string
	for _, f := range z.File {
		if !strings.HasSuffix(f.Name, "/") {
			names = append(names, f.Name)
		}
	}
	slices.Sort(names)
	return names
}

// Change is a change of a zone's offset from UTC, in seconds east.
type Change struct {
	At            time.Time
	Before, After int
}

// GoChanges lists the changes of loc's offset in [from, to) as Go's tz
// data has them (Go's periods that change only the abbreviation, or that
// a TZ rule starts at each new year, are not changes).
func GoChanges(loc *time.Location, from, to time.Time) []Change {
	var out []Change
	_, off := from.In(loc).Zone()
	for t := from; t.Before(to); {
		_, end := t.In(loc).ZoneBounds()
		if end.IsZero() {
			break
		}
		if !end.After(t) {
			// golang.org/issue/81583: Go reports an end before t on the
			// last UTC day of a leap year that a TZ rule serves; its next
			// period starts the next day.
			u := t.UTC()
			end = time.Date(u.Year(), u.Month(), u.Day()+1, 0, 0, 0, 0, time.UTC)
		}
		if !end.Before(to) {
			break
		}
		if _, o := end.In(loc).Zone(); o != off {
			out = append(out, Change{end.UTC(), off, o})
			off = o
		}
		t = end
	}
	return out
}

// Oracle asks PostgreSQL.
type Oracle struct{ conn *pgx.Conn }

// Connect returns an Oracle, or skips (fails under SKETCHD_REQUIRE_PG=1)
// without PostgreSQL.
func Connect(tb testing.TB) *Oracle {
	tb.Helper()
	conn := pgtest.Connect(tb)
	// The queries are cheap, but the planner's row guesses for
	// generate_series make them look expensive enough to compile, which
	// takes longer than running them.
	if _, err := conn.Exec(context.Background(), "SET jit = off"); err != nil {
		tb.Fatal(err)
	}
	return &Oracle{conn}
}

func (o *Oracle) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*time.Minute)
}

// changesSQL finds where the local clock stops running with UTC: on a
// 6-hour grid (no zone changes twice within 6 hours; Agreeing would show
// it), then the minute, then the second.
const changesSQL = `
WITH blocks AS (
  SELECT g FROM generate_series($2::timestamptz, $3::timestamptz, interval '6 hours') g
  WHERE (g AT TIME ZONE $1::text) <> ((g - interval '6 hours') AT TIME ZONE $1::text) + interval '6 hours'
), mins AS (
  SELECT m FROM blocks, generate_series(g - interval '359 minutes', g, interval '1 minute') m
  WHERE (m AT TIME ZONE $1::text) <> ((m - interval '1 minute') AT TIME ZONE $1::text) + interval '1 minute'
), secs AS (
  SELECT s FROM mins, generate_series(m - interval '59 seconds', m, interval '1 second') s
  WHERE (s AT TIME ZONE $1::text) <> ((s - interval '1 second') AT TIME ZONE $1::text) + interval '1 second'
)
SELECT s,
  extract(epoch FROM ((s - interval '1 second') AT TIME ZONE $1::text) - ((s - interval '1 second') AT TIME ZONE 'UTC'))::int,
  extract(epoch FROM (s AT TIME ZONE $1::text) - (s AT TIME ZONE 'UTC'))::int
FROM secs ORDER BY s`

// Changes lists the changes of zone's offset in [from, to) as PostgreSQL
// has them.
func (o *Oracle) Changes(tb testing.TB, zone string, from, to time.Time) []Change {
	tb.Helper()
	ctx, cancel := o.ctx()
	defer cancel()
	rows, err := o.conn.Query(ctx, changesSQL, zone, from, to.Add(-time.Second))
	if err != nil {
		tb.Fatalf("%s: PostgreSQL's offset changes: %v", zone, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Change, error) {
		var c Change
		err := r.Scan(&c.At, &c.Before, &c.After)
		c.At = c.At.UTC()
		return c, err
	})
	if err != nil {
		tb.Fatalf("%s: PostgreSQL's offset changes: %v", zone, err)
	}
	return out
}

// Agreeing returns the years of c in which PostgreSQL and Go list the
// same offset changes (pg and gc, by the UTC year of each change). The
// years they differ in are logged: the tz data releases differ there,
// and checking one against the other would test the data, not the code.
func Agreeing(tb testing.TB, c Case, pg, gc []Change) []int {
	tb.Helper()
	byYear := func(cs []Change) map[int][]Change {
		m := map[int][]Change{}
		for _, ch := range cs {
			m[ch.At.Year()] = append(m[ch.At.Year()], ch)
		}
		return m
	}
	p, g := byYear(pg), byYear(gc)
	var out []int
	for y := c.From; y <= c.To; y++ {
		// A change in the first or last days of a neighbouring year moves
		// this year's first or last days too.
		same := true
		for _, yy := range []int{y - 1, y, y + 1} {
			same = same && slices.Equal(p[yy], g[yy])
		}
		if same {
			out = append(out, y)
			continue
		}
		tb.Logf("%s %d: PostgreSQL's tz data has other offset changes than Go's (a different release): not compared\n PostgreSQL %v\n Go         %v", c.Zone, y, p[y], g[y])
	}
	return out
}

// Day is a local date (midnight UTC stands for it) and where it begins.
type Day struct {
	Date  time.Time
	Start time.Time
	// ISODow is the day of the week, Monday 1 to Sunday 7.
	ISODow int
}

// daysSQL: a local date D begins at the last instant at which the zone's
// clocks go from showing an earlier date to showing D or later (from then
// on they never show an earlier date). That instant is a change of
// offset, or where a period of one offset reaches D's midnight; so it is
// the latest of those candidates (within three days of D) at which PostgreSQL's clock
// (timestamptz AT TIME ZONE) shows an earlier date a microsecond before
// and D or later at the instant. PostgreSQL's own reading of D's midnight
// (timestamp AT TIME ZONE) is a candidate too, but not the answer where
// midnight is shown twice: it takes the later of the two, while Havana's
// day begins at the first (clocks go back to 00:00, never before it).
const daysSQL = `
WITH ch AS (SELECT * FROM unnest($2::timestamptz[], $3::int[], $4::int[]) AS c(at, before, after)),
near AS (
  SELECT (ch.at AT TIME ZONE 'UTC')::date + k AS d, ch.at, ch.before, ch.after FROM ch, generate_series(-3, 3) k
), days AS (
  SELECT d::date AS d, d AT TIME ZONE 'UTC' AS u
  FROM generate_series($5::timestamp, $6::timestamp, interval '1 day') d
), cand AS (
  SELECT d, d::timestamp AT TIME ZONE $1::text AS c FROM days
  UNION ALL
  SELECT d, near.at FROM days JOIN near USING (d)
  UNION ALL
  SELECT d, u - make_interval(secs => o) FROM days JOIN near USING (d), LATERAL (VALUES (near.before), (near.after)) v(o)
)
SELECT d, max(c) FILTER (WHERE ((c - interval '1 microsecond') AT TIME ZONE $1::text)::date < d AND (c AT TIME ZONE $1::text)::date >= d),
  extract(isodow FROM d)::int
FROM cand GROUP BY d ORDER BY d`

// Days returns where each local date from first to last (midnights UTC)
// begins in zone, from PostgreSQL's clock and its offset changes cs.
func (o *Oracle) Days(tb testing.TB, zone string, cs []Change, first, last time.Time) []Day {
	tb.Helper()
	ctx, cancel := o.ctx()
	defer cancel()
	var at []time.Time
	var before, after []int
	for _, c := range cs {
		at, before, after = append(at, c.At), append(before, c.Before), append(after, c.After)
	}
	rows, err := o.conn.Query(ctx, daysSQL, zone, at, before, after, first.Format("2006-01-02"), last.Format("2006-01-02"))
	if err != nil {
		tb.Fatalf("%s: PostgreSQL's day starts: %v", zone, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Day, error) {
		var d Day
		var start *time.Time
		err := r.Scan(&d.Date, &start, &d.ISODow)
		if err == nil && start == nil {
			tb.Fatalf("%s %s: no instant begins the date", zone, d.Date.Format(time.DateOnly))
		}
		if start != nil {
			d.Start = start.UTC()
		}
		d.Date = d.Date.UTC()
		return d, err
	})
	if err != nil {
		tb.Fatalf("%s: PostgreSQL's day starts: %v", zone, err)
	}
	return out
}

// Shift returns each date moved by years, months and days as PostgreSQL's
// date + interval does (months first, clamped to the month's end).
func (o *Oracle) Shift(tb testing.TB, dates []time.Time, years, months, days int) []time.Time {
	tb.Helper()
	ctx, cancel := o.ctx()
	defer cancel()
	in := make([]string, len(dates))
	for i, d := range dates {
		in[i] = d.Format("2006-01-02")
	}
	rows, err := o.conn.Query(ctx, `SELECT (d + make_interval(years => $2, months => $3, days => $4))::date
		FROM unnest($1::date[]) WITH ORDINALITY AS x(d, i) ORDER BY i`, in, years, months, days)
	if err != nil {
		tb.Fatalf("PostgreSQL's date arithmetic: %v", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (time.Time, error) {
		var d time.Time
		err := r.Scan(&d)
		return d.UTC(), err
	})
	if err != nil {
		tb.Fatalf("PostgreSQL's date arithmetic: %v", err)
	}
	return out
}

// Calendar is a zone's days as PostgreSQL has them, one per date in
// order, with look-ups.
type Calendar struct {
	Days []Day
	// byDate indexes Days by date; first and last by start, the earliest
	// and the latest date beginning there (they differ after a skipped
	// date).
	byDate      map[time.Time]int
	first, last map[int64]int
}

// NewCalendar indexes days.
func NewCalendar(days []Day) *Calendar {
	c := &Calendar{Days: days, byDate: map[time.Time]int{}, first: map[int64]int{}, last: map[int64]int{}}
	for i, d := range days {
		c.byDate[d.Date] = i
		k := d.Start.UnixNano()
		if _, ok := c.first[k]; !ok {
			c.first[k] = i
		}
		c.last[k] = i
	}
	return c
}

// Start returns where the date begins (false: outside the calendar).
func (c *Calendar) Start(date time.Time) (time.Time, bool) {
	i, ok := c.byDate[date]
	if !ok {
		return time.Time{}, false
	}
	return c.Days[i].Start, true
}

// Earliest and Latest return the index in Days of the earliest and the
// latest date that begin at start, or -1.
func (c *Calendar) Earliest(start time.Time) int { return c.index(c.first, start) }
func (c *Calendar) Latest(start time.Time) int   { return c.index(c.last, start) }

func (c *Calendar) index(m map[int64]int, start time.Time) int {
	if i, ok := m[start.UnixNano()]; ok {
		return i
	}
	return -1
}

// Holding returns the latest start at or before t among the days keep
// selects: the start of the day (or week, or month) bucket that holds t
// (false: before the calendar's first).
func (c *Calendar) Holding(t time.Time, keep func(Day) bool) (time.Time, bool) {
	// Starts never decrease with the date.
	i, _ := slices.BinarySearchFunc(c.Days, t, func(d Day, t time.Time) int {
		if d.Start.After(t) {
			return 1
		}
		return -1
	})
	for i--; i >= 0; i-- {
		if keep(c.Days[i]) {
			return c.Days[i].Start, true
		}
	}
	return time.Time{}, false
}

// Starts returns the distinct starts of the days keep selects whose dates
// are in [from, to), in order: a skipped date shares its start with the
// next one.
func (c *Calendar) Starts(from, to time.Time, keep func(Day) bool) []time.Time {
	i, _ := slices.BinarySearchFunc(c.Days, from, func(d Day, t time.Time) int { return d.Date.Compare(t) })
	var out []time.Time
	for ; i < len(c.Days) && c.Days[i].Date.Before(to); i++ {
		d := c.Days[i]
		if !keep(d) {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Equal(d.Start) {
			continue
		}
		out = append(out, d.Start)
	}
	return out
}

// AnyDay, Mondays and Firsts select days for Holding and Starts.
func AnyDay(Day) bool    { return true }
func Mondays(d Day) bool { return d.ISODow == 1 }
func Firsts(d Day) bool  { return d.Date.Day() == 1 }
