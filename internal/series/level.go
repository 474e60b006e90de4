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
// two buckets; days, weeks and months start where their first date
// begins (wall: local midnight, or the DST change where midnight is
// skipped, as in Santiago).
func (l Level) Start(t time.Time, loc *time.Location) time.Time {
	t = t.In(loc)
	switch l {
	case Hour:
		s := t.Add(-time.Duration(t.Minute())*time.Minute - time.Duration(t.Second())*time.Second - time.Duration(t.Nanosecond()))
		// A change of offset by a part of an hour (Lord Howe's DST) starts
		// a bucket of its own.
		if zs, _ := bounds(t); zs.After(s) {
			if zs, _ = offsetBounds(t); zs.After(s) {
				return zs.In(loc)
			}
		}
		return s
	case Day:
		_, _, _, s := dayOf(t, loc)
		return s
	case Week:
		y, m, d, s := dayOf(t, loc)
		if back := (int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday()) + 6) % 7; back > 0 { // days since Monday
			s = date(y, m, d-back, loc)
		}
		return s
	case Month:
		y, m, d, s := dayOf(t, loc)
		if d > 1 {
			s = date(y, m, 1, loc)
		}
		return s
	}
	panic("series: invalid level")
}

// dayOf returns the local date whose day bucket holds t, and where it
// starts: t's own date, or the one before where clocks went back across
// midnight and t's date begins for good only later (Goose Bay fell back
// from 00:01 to 23:01 until 2010: the minute after the first midnight
// belongs to the day before).
func dayOf(t time.Time, loc *time.Location) (y int, m time.Month, d int, start time.Time) {
	y, m, d = t.Date()
	for range 2 {
		if start = date(y, m, d, loc); !start.After(t) {
			break
		}
		y, m, d = time.Date(y, m, d-1, 0, 0, 0, 0, time.UTC).Date()
	}
	return y, m, d, start
}

// date is where local date y-m-d (normalised, so d may overflow the
// month) begins for good: its midnight, or the DST change where midnight
// is skipped. A date the zone skips begins where the next one does.
func date(y int, m time.Month, d int, loc *time.Location) time.Time {
	return wall(time.Date(y, m, d, 0, 0, 0, 0, time.UTC), loc)
}

// Next returns the start of the bucket after the one starting at start.
func (l Level) Next(start time.Time, loc *time.Location) time.Time {
	start = start.In(loc)
	switch l {
	case Hour:
		// The next whole local hour, or the next offset change if it
		// comes first (Lord Howe's half-hour changes, Goose Bay's at
		// 00:01, a minute after the whole hour of midnight).
		next := start.Add(time.Hour - time.Duration(start.Minute())*time.Minute - time.Duration(start.Second())*time.Second - time.Duration(start.Nanosecond()))
		if _, end := bounds(start); !end.IsZero() && end.Before(next) {
			if _, end = offsetBounds(start); !end.IsZero() && end.Before(next) {
				return end.In(loc)
			}
		}
		return next
	case Day:
		y, m, d := start.Date()
		return date(y, m, d+1, loc)
	case Week:
		// From the Monday: a week whose Monday the zone skipped starts on
		// the Tuesday.
		y, m, d := start.Date()
		back := (int(start.Weekday()) + 6) % 7
		return date(y, m, d-back+7, loc)
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
