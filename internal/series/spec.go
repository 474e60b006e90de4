package series

import (
	"fmt"
	"slices"
	"time"

	"github.com/sketchd/sketchd/internal/sketch"
)

// MaxFuture is how far ahead of the server's clock an add may be stamped.
const MaxFuture = 5 * time.Minute

// DefaultLateLimit is how old an add may be when the series does not say
// (or the finest level's retention, when that is shorter).
var DefaultLateLimit = Duration{Days: 7}

// LevelSpec is one level a series keeps, and for how long.
type LevelSpec struct {
	Level     Level
	Retention Duration
}

// Spec is what a series is created with: the parameters of its bucket
// sketches (one kind for all), its time zone, its levels and how late an
// add may come.
type Spec struct {
	Params sketch.Params
	// TZ is an IANA time zone name ("UTC", "Europe/Berlin").
	TZ string
	// Levels are kept finest first, one entry per level.
	Levels    []LevelSpec
	LateLimit Duration

	loc *time.Location
}

// Validate checks the spec and loads its time zone. Coarser levels must
// keep their buckets at least as long as finer ones (so a range that
// finer buckets have left can still be answered from coarser ones), and
// the late limit must not reach past the finest level's retention.
// Errors are Invalid.
func (s *Spec) Validate() error {
	if s.Params == nil {
		return sketch.Errorf(sketch.Invalid, "a series needs a sketch type")
	}
	if err := s.Params.Validate(); err != nil {
		return err
	}
	loc, err := time.LoadLocation(s.TZ)
	if err != nil || s.TZ == "" || s.TZ == "Local" {
		return sketch.Errorf(sketch.Invalid, "tz %q is not an IANA time zone name", s.TZ)
	}
	s.loc = loc
	if len(s.Levels) == 0 {
		return sketch.Errorf(sketch.Invalid, "a series needs at least one level (hour, day, week, month)")
	}
	slices.SortFunc(s.Levels, func(a, b LevelSpec) int { return int(a.Level) - int(b.Level) })
	// A fixed instant measures retentions against each other.
	ref := time.Date(2000, 3, 1, 0, 0, 0, 0, time.UTC)
	for i, l := range s.Levels {
		if !l.Level.Valid() {
			return sketch.Errorf(sketch.Invalid, "unknown level %d", l.Level)
		}
		if l.Retention.IsZero() {
			return sketch.Errorf(sketch.Invalid, "level %s needs a retention, like P400D", l.Level)
		}
		if i > 0 && l.Level == s.Levels[i-1].Level {
			return sketch.Errorf(sketch.Invalid, "level %s given twice", l.Level)
		}
		if i > 0 && l.Retention.AddTo(ref, 1).Before(s.Levels[i-1].Retention.AddTo(ref, 1)) {
			return sketch.Errorf(sketch.Invalid, "level %s keeps %s, less than the finer level %s (%s); coarser levels must keep at least as long", l.Level, l.Retention, s.Levels[i-1].Level, s.Levels[i-1].Retention)
		}
	}
	if s.LateLimit.IsZero() {
		s.LateLimit = DefaultLateLimit
		if s.LateLimit.AddTo(ref, 1).After(s.Levels[0].Retention.AddTo(ref, 1)) {
			s.LateLimit = s.Levels[0].Retention
		}
	}
	if s.LateLimit.AddTo(ref, 1).After(s.Levels[0].Retention.AddTo(ref, 1)) {
		return sketch.Errorf(sketch.Invalid, "late_limit %s reaches past the %s level's retention %s", s.LateLimit, s.Levels[0].Level, s.Levels[0].Retention)
	}
	return nil
}

// Location is the series' time zone (after Validate).
func (s *Spec) Location() *time.Location { return s.loc }

// Kept reports whether the series keeps level l, and its retention.
func (s *Spec) Kept(l Level) (Duration, bool) {
	for _, ls := range s.Levels {
		if ls.Level == l {
			return ls.Retention, true
		}
	}
	return Duration{}, false
}

// Cutoff is the instant before which level l's buckets have expired: a
// bucket whose end is at or before it is dropped.
func (s *Spec) Cutoff(l Level, now time.Time) time.Time {
	r, _ := s.Kept(l)
	return r.AddTo(now.In(s.loc), -1)
}

// Key names one bucket.
type Key struct {
	Level Level
	Start time.Time
}

// Buckets returns the buckets an add stamped ts updates: one per level
// whose bucket for ts has not expired. A ts older than the late limit or
// more than MaxFuture ahead of now is Unprocessable (422).
func (s *Spec) Buckets(ts, now time.Time) ([]Key, error) {
	if ts.After(now.Add(MaxFuture)) {
		return nil, sketch.Errorf(sketch.Unprocessable, "ts %s is more than %s ahead of the server's clock (%s)", ts.UTC().Format(time.RFC3339), MaxFuture, now.UTC().Format(time.RFC3339))
	}
	if ts.Before(s.LateLimit.AddTo(now.In(s.loc), -1)) {
		return nil, sketch.Errorf(sketch.Unprocessable, "ts %s is older than the series' late_limit %s", ts.UTC().Format(time.RFC3339), s.LateLimit)
	}
	keys := make([]Key, 0, len(s.Levels))
	for _, ls := range s.Levels {
		start := ls.Level.Start(ts, s.loc)
		if !ls.Level.Next(start, s.loc).After(s.Cutoff(ls.Level, now)) {
			continue
		}
		keys = append(keys, Key{ls.Level, start})
	}
	return keys, nil
}

// String describes the spec for messages.
func (s *Spec) String() string {
	levels := ""
	for i, l := range s.Levels {
		if i > 0 {
			levels += ","
		}
		levels += fmt.Sprintf("%s:%s", l.Level, l.Retention)
	}
	return fmt.Sprintf("%s tz=%s levels=%s late_limit=%s", s.Params, s.TZ, levels, s.LateLimit)
}

// Same reports whether s and o describe the same series: same sketch
// parameters, zone, levels with their retentions and late limit.
func (s *Spec) Same(o *Spec) bool {
	return s.Params == o.Params && s.TZ == o.TZ && s.LateLimit == o.LateLimit && slices.Equal(s.Levels, o.Levels)
}

// LevelInfo describes the buckets one level holds.
type LevelInfo struct {
	Level     Level
	Retention Duration
	Buckets   int
	// Oldest and Newest are the first and last bucket starts (zero when
	// the level holds none).
	Oldest, Newest time.Time
	// Bytes is the size of the level's bucket encodings.
	Bytes int64
}

// Info describes a stored series.
type Info struct {
	Name      string
	Spec      *Spec
	Levels    []LevelInfo
	CreatedAt time.Time
}

// Expired is what one retention pass removed.
type Expired struct {
	Buckets int
	Bytes   int64
}
