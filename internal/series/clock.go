package series

import "time"

// Local calendar time. Calendar arithmetic (a day, a week, a month later)
// happens on wall clocks, and a wall clock is not always one instant: a
// DST change skips some local times (Santiago's 00:00–01:00 on
// 2026-09-06, so that day starts at 01:00), shows others twice (Havana's
// 00:00–01:00 when DST ends, Berlin's 02:00–03:00), and a zone may skip a
// whole date (Pacific/Apia has no 2011-12-30). Go's time.Date then picks
// an instant it does not guarantee (for Santiago's midnight, 23:00 the day
// before). Here one rule decides every case: a wall time stands for the
// instant from which on the zone's clocks show it or later, never again
// an earlier time (wall). So a local day starts where its date begins for
// good; a day is a half-open interval of instants, and consecutive days
// tile time.

// maxOffset bounds a zone's offset from UTC (the tz database stays within
// ±16 hours): 26 hours before a wall time read as UTC every clock shows
// less, 26 hours after it every clock shows it or more.
const maxOffset = 26 * time.Hour

// wall returns the instant from which on loc's clocks show the wall time
// w (w's fields, read in UTC) or later, in loc. That is w where it exists
// once; the DST change, where the change skips w; the later of the two
// where clocks show w twice and go back below it in between (Berlin's
// second 02:30 on the day DST ends); the earlier where they go back to w
// itself (Havana's first midnight, as clocks go from 00:59 back to 00:00).
func wall(w time.Time, loc *time.Location) time.Time {
	// Walk the zone's periods of one offset from when every clock shows
	// less than w to when every clock shows w or more. In a period of
	// offset off, the clock shows w or more from w-off on.
	var from time.Time
	found := false
	horizon := w.Add(maxOffset)
	for t := w.Add(-maxOffset); ; {
		lt := t.In(loc)
		_, off := lt.Zone()
		start, end := lt.ZoneBounds() // zero: unbounded
		at := w.Add(-time.Duration(off) * time.Second)
		switch {
		case !end.IsZero() && !at.Before(end):
			// The whole period shows less than w.
			found = false
		case at.After(start):
			// The clock reaches w inside the period.
			from, found = at, true
		case !found:
			// The period starts past w: the change that starts it
			// skipped w.
			from, found = start, true
		}
		if end.IsZero() || end.After(horizon) {
			return from.In(loc)
		}
		t = end
	}
}

// clock returns the wall time t stands for in calendar arithmetic, as a
// time in UTC whose fields are the local ones: its local date and time,
// or midnight of its date when t is where that date's day starts (so
// Santiago's 2026-09-06T01:00-03:00 stands for 2026-09-06 00:00, and a
// day later is 2026-09-07's start, 00:00).
func clock(t time.Time, loc *time.Location) time.Time {
	t = t.In(loc)
	y, m, d := t.Date()
	hh, mm, ss := t.Clock()
	if ns := t.Nanosecond(); hh != 0 || mm != 0 || ss != 0 || ns != 0 {
		if !date(y, m, d, loc).Equal(t) {
			return time.Date(y, m, d, hh, mm, ss, ns, time.UTC)
		}
	}
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
