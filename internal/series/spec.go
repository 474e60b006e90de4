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
// the late limit must not reach past the coarsest level's retention (no
// level would keep an add that late). A late limit past a finer level's
// retention is a backfill window: an add older than a level keeps goes
// to the coarser levels that still keep its time (Buckets). Errors are
// Invalid.
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
	if top := s.Levels[len(s.Levels)-1]; s.LateLimit.AddTo(ref, 1).After(top.Retention.AddTo(ref, 1)) {
		return sketch.Errorf(sketch.Invalid, "late_limit %s reaches past the %s level's retention %s, the longest the series keeps: no level would keep an add that late", s.LateLimit, top.Level, top.Retention)
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
// whose bucket for ts has not expired (an add older than a fine level's
// retention goes to the coarser levels that still keep its time). A ts
// older than the late limit or more than MaxFuture ahead of now, or one
// that no level keeps, is Unprocessable (422).
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
	if len(keys) == 0 {
		top := s.Levels[len(s.Levels)-1]
		return nil, sketch.Errorf(sketch.Unprocessable, "ts %s is older than every level keeps (the longest, %s, keeps %s)", ts.UTC().Format(time.RFC3339), top.Level, top.Retention)
	}
	return keys, nil
}

// Added is what an add to a series applied: the ids it accepted and the
// levels whose buckets took them, finest first. Skipped are the levels
// the add did not reach because their retention is shorter than its age
// (a backfill older than the hour level keeps goes to days and months).
type Added struct {
	sketch.Added
	Levels  []Level
	Skipped []LevelSpec
}

// AddedTo describes an add that updated keys (from Buckets) of s.
func (s *Spec) AddedTo(a sketch.Added, keys []Key) Added {
	out := Added{Added: a}
	for _, ls := range s.Levels {
		took := false
		for _, k := range keys {
			took = took || k.Level == ls.Level
		}
		if took {
			out.Levels = append(out.Levels, ls.Level)
		} else {
			out.Skipped = append(out.Skipped, ls)
		}
	}
	return out
}

// Change is a change to a series' definition: a new late limit, and new
// retentions for levels it keeps; a nil or absent part stays as it is.
type Change struct {
	LateLimit  *Duration
	Retentions map[Level]Duration
}

// IsZero reports whether c changes nothing.
func (c Change) IsZero() bool { return c.LateLimit == nil && len(c.Retentions) == 0 }

// Changed returns a new spec: s with c applied, validated as a create
// is. A retention for a level s does not keep is Invalid (a change
// cannot add a level: its buckets would hold nothing of the past). A
// shorter retention drops the buckets that fall out of it at the next
// retention pass (reads stop using them at once); a longer one keeps
// buckets from then on, and reads use those not yet removed at once.
func (s *Spec) Changed(c Change) (*Spec, error) {
	out := &Spec{Params: s.Params, TZ: s.TZ, Levels: slices.Clone(s.Levels), LateLimit: s.LateLimit}
	for l, d := range c.Retentions {
		i := slices.IndexFunc(out.Levels, func(ls LevelSpec) bool { return ls.Level == l })
		if i < 0 {
			return nil, sketch.Errorf(sketch.Invalid, "the series keeps %s; a change sets their retentions and cannot add the %s level", s.levelNames(), l)
		}
		if d.IsZero() {
			return nil, sketch.Errorf(sketch.Invalid, "level %s needs a retention, like P400D", l)
		}
		out.Levels[i].Retention = d
	}
	if c.LateLimit != nil {
		if c.LateLimit.IsZero() {
			return nil, sketch.Errorf(sketch.Invalid, "late_limit must be positive, like P7D")
		}
		out.LateLimit = *c.LateLimit
	}
	if err := out.Validate(); err != nil {
		return nil, err
	}
	return out, nil
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
