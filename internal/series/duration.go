package series

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sketchd/sketchd/internal/sketch"
)

// Duration is an ISO 8601 duration with calendar parts (PnYnMnWnDTnHnMnS,
// whole numbers only). Years, months, weeks and days are calendar units:
// added in the series' time zone, a day is 23 or 25 hours across a DST
// change (from one local day's start to the next) and a month is as long
// as the month is.
type Duration struct {
	Years, Months, Weeks, Days int
	Hours, Minutes, Seconds    int
}

// maxDurationPart bounds each part so that arithmetic stays far from
// overflow: 10,000 years, or as many of the smaller units.
const maxDurationPart = 10_000 * 366 * 24 * 3600

// ParseField parses s, the value of the API's field (a JSON field or a
// query parameter, named as the request names it), as ParseDuration
// does, and refuses a duration longer than the cap every duration the
// API accepts shares (sketch.MaxDurationDays, P36500D; a year counts 365
// days toward it, a month 30, a week 7, a day 24 hours). Every request
// field that takes a duration is read with it. Errors are sketch.Invalid
// and name field, and past the cap the cap.
//
// Stored definitions are read with ParseDuration: one written before
// the cap still reads.
func ParseField(field, s string) (Duration, error) {
	d, err := ParseDuration(s)
	var big *partTooLarge
	switch {
	case errors.As(err, &big), err == nil && !d.WithinCap():
		return Duration{}, sketch.Errorf(sketch.Invalid, "%s: duration %q is over the limit of %s (a year counts as 365 days and a month as 30 toward it)", field, clipText(s), sketch.MaxDurationText)
	case err != nil:
		return Duration{}, sketch.Errorf(sketch.Invalid, "%s: %s", field, err)
	}
	return d, nil
}

// WithinCap reports whether d is at most sketch.MaxDurationDays long, a
// year counting 365 days, a month 30, a week 7 and a day 24 hours.
func (d Duration) WithinCap() bool {
	days := int64(d.Years)*365 + int64(d.Months)*30 + int64(d.Weeks)*7 + int64(d.Days)
	secs := int64(d.Hours)*3600 + int64(d.Minutes)*60 + int64(d.Seconds)
	limit := int64(sketch.MaxDurationDays)
	return days <= limit && secs <= (limit-days)*86400
}

// clipText shortens s for a message.
func clipText(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// partTooLarge is ParseDuration's error for a part past maxDurationPart.
type partTooLarge struct{ s, part string }

func (e *partTooLarge) Error() string {
	return fmt.Sprintf("duration %q: %s is too large", e.s, e.part)
}

// ParseDuration parses an ISO 8601 duration such as P400D, P5Y, PT1H or
// P1DT12H. Each part is a whole number; at least one part is required,
// and the whole must be positive. It does not apply the API's cap
// (ParseField does).
func ParseDuration(s string) (Duration, error) {
	var d Duration
	rest, ok := strings.CutPrefix(s, "P")
	if !ok || rest == "" || rest == "T" {
		return d, fmt.Errorf("duration %q: want ISO 8601 like P7D, PT1H or P1Y2M", s)
	}
	inTime := false
	seen := ""
	for rest != "" {
		if rest[0] == 'T' {
			if inTime {
				return d, fmt.Errorf("duration %q: T twice", s)
			}
			inTime, rest = true, rest[1:]
			if rest == "" {
				return d, fmt.Errorf("duration %q: nothing after T", s)
			}
			continue
		}
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i == len(rest) {
			return d, fmt.Errorf("duration %q: want a whole number then a unit (Y, M, W, D, or H, M, S after T)", s)
		}
		n, err := strconv.Atoi(rest[:i])
		if err != nil || n > maxDurationPart {
			return d, &partTooLarge{s, rest[:i]}
		}
		unit := string(rest[i])
		if inTime {
			unit = "T" + unit
		}
		if strings.Contains(seen, unit+",") {
			return d, fmt.Errorf("duration %q: %s given twice", s, strings.TrimPrefix(unit, "T"))
		}
		seen += unit + ","
		switch unit {
		case "Y":
			d.Years = n
		case "M":
			d.Months = n
		case "W":
			d.Weeks = n
		case "D":
			d.Days = n
		case "TH":
			d.Hours = n
		case "TM":
			d.Minutes = n
		case "TS":
			d.Seconds = n
		default:
			return d, fmt.Errorf("duration %q: unknown unit %q", s, rest[i])
		}
		rest = rest[i+1:]
	}
	if d.IsZero() {
		return d, fmt.Errorf("duration %q is zero", s)
	}
	return d, nil
}

// IsZero reports whether every part is 0.
func (d Duration) IsZero() bool { return d == Duration{} }

// calendar reports whether d has years, months, weeks or days; clockTime
// whether it has hours, minutes or seconds.
func (d Duration) calendar() bool {
	return d.Years != 0 || d.Months != 0 || d.Weeks != 0 || d.Days != 0
}
func (d Duration) clockTime() bool { return d.Hours != 0 || d.Minutes != 0 || d.Seconds != 0 }

// AddTo returns t plus d (sign 1) or minus d (sign -1) in t's location,
// as PostgreSQL adds an interval to a timestamptz: the calendar parts move
// t's wall clock (clock: a day's start stands for its midnight), years and
// months first, keeping the day of the month but not past the month's end
// (January 31 plus P1M is the last of February), then weeks and days; the
// result is where the zone's clocks show that wall time (wall), so a day
// after a day's start is the next day's start even where one of them
// begins at 01:00. The hours, minutes and seconds are then added as
// elapsed time.
func (d Duration) AddTo(t time.Time, sign int) time.Time {
	if d.calendar() {
		loc := t.Location()
		t = wall(shift(clock(t, loc, sign), sign*d.Years, sign*d.Months, sign*(7*d.Weeks+d.Days)), loc)
	}
	return t.Add(time.Duration(sign) * (time.Duration(d.Hours)*time.Hour + time.Duration(d.Minutes)*time.Minute + time.Duration(d.Seconds)*time.Second))
}

// String formats d in ISO 8601, as ParseDuration reads it.
func (d Duration) String() string {
	var b strings.Builder
	b.WriteByte('P')
	for _, p := range []struct {
		n    int
		unit byte
	}{{d.Years, 'Y'}, {d.Months, 'M'}, {d.Weeks, 'W'}, {d.Days, 'D'}} {
		if p.n != 0 {
			b.WriteString(strconv.Itoa(p.n))
			b.WriteByte(p.unit)
		}
	}
	if d.Hours != 0 || d.Minutes != 0 || d.Seconds != 0 {
		b.WriteByte('T')
		for _, p := range []struct {
			n    int
			unit byte
		}{{d.Hours, 'H'}, {d.Minutes, 'M'}, {d.Seconds, 'S'}} {
			if p.n != 0 {
				b.WriteString(strconv.Itoa(p.n))
				b.WriteByte(p.unit)
			}
		}
	}
	if b.Len() == 1 {
		return "PT0S"
	}
	return b.String()
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}
