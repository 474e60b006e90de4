package series

import (
	"fmt"
	"time"
)

// Level is a bucket width: hour, day, ISO week (from Monday) or month, with
// edges in the series' time zone.
type Level uint8

// The levels, finest first. Their values are stored: never renumber.
const (
	Hour Level = iota + 1
	Day
	Week
	Month
)

// Levels lists every level, finest first.
var Levels = [...]Level{Hour, Day, Week, Month}

// ParseLevel reads a level's name.
func ParseLevel(s string) (Level, error) {
	for _, l := range Levels {
		if l.String() == s {
			return l, nil
		}
	}
	return 0, fmt.Errorf("unknown level %q; use hour, day, week or month", s)
}

// String names the level as the API does.
func (l Level) String() string {
	switch l {
	case Hour:
		return "hour"
	case Day:
		return "day"
	case Week:
		return "week"
	case Month:
		return "month"
	}
	return fmt.Sprintf("level(%d)", uint8(l))
}

// Valid reports whether l is one of the levels.
func (l Level) Valid() bool { return l >= Hour && l <= Month }

// Start returns the start of the bucket of level l that holds t, in loc.
// An hour bucket starts at the last whole local hour (or at an offset
// change between it and t), so the repeated hour of a DST fall-back is
// two buckets; days, weeks and months start at local
// midnight (or the first instant after it, where midnight does not exist).
func (l Level) Start(t time.Time, loc *time.Location) time.Time {
	t = t.In(loc)
	switch l {
	case Hour:
		s := t.Add(-time.Duration(t.Minute())*time.Minute - time.Duration(t.Second())*time.Second - time.Duration(t.Nanosecond()))
		// A change of offset by a part of an hour (Lord Howe's DST) starts
		// a bucket of its own.
		if zs, _ := t.ZoneBounds(); zs.After(s) {
			return zs
		}
		return s
	case Day:
		y, m, d := t.Date()
		return date(y, m, d, loc)
	case Week:
		y, m, d := t.Date()
		back := (int(t.Weekday()) + 6) % 7 // days since Monday
		return date(y, m, d-back, loc)
	case Month:
		y, m, _ := t.Date()
		return date(y, m, 1, loc)
	}
	panic("series: invalid level")
}

// date is the first instant of local day y-m-d (normalised, so d may
// overflow the month): midnight, or the DST change where midnight is
// skipped.
func date(y int, m time.Month, d int, loc *time.Location) time.Time {
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	noon := time.Date(y, m, d, 12, 0, 0, 0, loc)
	if t.Day() != noon.Day() {
		// Midnight does not exist (DST starts at 00:00, as in Santiago):
		// the day starts at the change.
		zs, _ := noon.ZoneBounds()
		return zs
	}
	return t
}

// Next returns the start of the bucket after the one starting at start.
func (l Level) Next(start time.Time, loc *time.Location) time.Time {
	start = start.In(loc)
	switch l {
	case Hour:
		// The next local whole hour: an hour later in absolute time for
		// whole-hour zones, with Start re-aligning where a DST change
		// shifts by less than an hour.
		return l.Start(start.Add(time.Hour+time.Minute), loc)
	case Day:
		y, m, d := start.Date()
		return date(y, m, d+1, loc)
	case Week:
		y, m, d := start.Date()
		return date(y, m, d+7, loc)
	case Month:
		y, m, _ := start.Date()
		return date(y, m+1, 1, loc)
	}
	panic("series: invalid level")
}

// Ceil returns the first bucket start at or after t.
func (l Level) Ceil(t time.Time, loc *time.Location) time.Time {
	s := l.Start(t, loc)
	if s.Equal(t) {
		return s
	}
	return l.Next(s, loc)
}

// Aligned reports whether t is a bucket start of level l.
func (l Level) Aligned(t time.Time, loc *time.Location) bool { return l.Start(t, loc).Equal(t) }
