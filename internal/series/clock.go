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
	for t, i := w.Add(-maxOffset), 0; ; i++ {
		lt := t.In(loc)
		_, off := lt.Zone()
		start, end := bounds(lt) // zero: unbounded
		at := w.Add(-time.Duration(off) * time.Second)
		switch {
		case !end.IsZero() && !at.Before(end):
			// The whole period shows less than w.
			found = false
		case start.IsZero() || at.After(start):
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
		if !end.After(t) || i == 64 {
			// Periods that do not move on (times so far out that Go's
			// arithmetic overflows): Go's own reading.
			return time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc)
		}
		t = end
	}
}

// clock returns the wall time t stands for in calendar arithmetic, as a
// time in UTC whose fields are the local ones: its local date and time,
// or midnight of its date when t is where that date's day starts (so
// Santiago's 2026-09-06T01:00-03:00 stands for 2026-09-06 00:00, and a
// day later is 2026-09-07's start, 00:00). Where dates are skipped, the
// start of the next one is also theirs: stepping back (sign < 0) it
// stands for the earliest of them, so that a step always moves (a day
// before Apia's 2011-12-31 start is 2011-12-29's, as the 30th was
// skipped).
func clock(t time.Time, loc *time.Location, sign int) time.Time {
	t = t.In(loc)
	y, m, d := t.Date()
	hh, mm, ss := t.Clock()
	if ns := t.Nanosecond(); hh != 0 || mm != 0 || ss != 0 || ns != 0 {
		if !date(y, m, d, loc).Equal(t) {
			return time.Date(y, m, d, hh, mm, ss, ns, time.UTC)
		}
	}
	day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	for range 2 {
		if sign >= 0 {
			break
		}
		prev := day.AddDate(0, 0, -1)
		if !date(prev.Year(), prev.Month(), prev.Day(), loc).Equal(t) {
			break
		}
		day = prev
	}
	return day
}

// shift moves the wall time w (in UTC) by years and months, keeping the
// day of the month but not past the month's end, then by days.
func shift(w time.Time, years, months, days int) time.Time {
	y, m, d := w.Date()
	hh, mm, ss := w.Clock()
	ym := time.Date(y+years, m+time.Month(months), 1, 0, 0, 0, 0, time.UTC)
	if last := ym.AddDate(0, 1, -1).Day(); d > last {
		d = last
	}
	return time.Date(ym.Year(), ym.Month(), d+days, hh, mm, ss, w.Nanosecond(), time.UTC)
}

// bounds is t.ZoneBounds(): the period of one zone rule that holds t,
// unbounded on a side where the bound is zero. Go reports an end at or
// before t for instants on the last UTC day of a leap year that a zone's
// TZ rule serves (after its last listed change, 2037 for most zones;
// golang.org/issue/81583); that period runs at least to the end of the
// day, where Go's next period starts.
func bounds(t time.Time) (start, end time.Time) {
	start, end = t.ZoneBounds()
	if !end.IsZero() && !end.After(t) {
		u := t.UTC()
		end = time.Date(u.Year(), u.Month(), u.Day()+1, 0, 0, 0, 0, time.UTC).In(t.Location())
	}
	return start, end
}

// offsetBounds returns where the offset in effect at t began and where it
// ends, zero for a side where no change is found within a few of Go's
// periods. Go's periods also end where only a zone's abbreviation
// changes, and at every new year (UTC) that a TZ rule serves; those do not
// change the local clock.
func offsetBounds(t time.Time) (start, end time.Time) {
	_, off := t.Zone()
	start, end = bounds(t)
	for i := 0; !start.IsZero(); i++ {
		before := start.Add(-time.Nanosecond).In(t.Location())
		if _, o := before.Zone(); o != off {
			break
		}
		if start, _ = bounds(before); i == 8 {
			start = time.Time{}
		}
	}
	for i := 0; !end.IsZero(); i++ {
		at := end.In(t.Location())
		if _, o := at.Zone(); o != off {
			break
		}
		if _, end = bounds(at); i == 8 {
			end = time.Time{}
		}
	}
	return start, end
}
