package sketch

import (
	"fmt"
	"math"
	"time"
)

// Expiry says when a sketch expires: After its last write (each write
// pushes the deadline forward), or At a fixed instant. At most one is
// set; the zero Expiry never expires. An expired sketch is gone for
// every reader and writer, as if deleted, before the backend's next
// expiry pass removes it.
type Expiry struct {
	// After is the time from the last write; 0: none.
	After time.Duration
	// At is the absolute instant; zero: none.
	At time.Time
}

// MaxDurationDays is the one cap on every duration the API accepts, in
// days of 24 hours (P36500D, about 100 years): expire_after, series
// retentions and late limits (at create and PATCH), timeseries steps and
// windows. series.ParseField applies it to what a request says (a year
// counting 365 days and a month 30); Expiry.Validate to expire_after.
const MaxDurationDays = 36500

// MaxExpireAfter bounds Expiry.After: the cap, MaxDurationDays.
const MaxExpireAfter = MaxDurationDays * 24 * time.Hour

// MaxDurationText is the cap as the API writes it, for messages.
var MaxDurationText = fmt.Sprintf("P%dD", MaxDurationDays)

// IsZero reports whether x never expires.
func (x Expiry) IsZero() bool { return x.After == 0 && x.At.IsZero() }

// Deadline returns when a sketch last written at updated expires under x
// (zero when it never does).
func (x Expiry) Deadline(updated time.Time) time.Time {
	switch {
	case !x.At.IsZero():
		return x.At
	case x.After > 0:
		return updated.Add(x.After)
	}
	return time.Time{}
}

// Expired reports whether a sketch last written at updated is expired at
// now: its deadline is not after now.
func (x Expiry) Expired(updated, now time.Time) bool {
	d := x.Deadline(updated)
	return !d.IsZero() && !now.Before(d)
}

// Validate checks x against now; errors are Invalid and name the field
// (expire_after, expire_at).
func (x Expiry) Validate(now time.Time) error {
	switch {
	case x.After != 0 && !x.At.IsZero():
		return Errorf(Invalid, "expire_after and expire_at: give one, not both")
	case x.After < 0:
		return Errorf(Invalid, "expire_after must be positive")
	case x.After > MaxExpireAfter:
		return Errorf(Invalid, "expire_after %v is over the limit of %s", x.After, MaxDurationText)
	case x.After%time.Second != 0:
		return Errorf(Invalid, "expire_after must be whole seconds")
	case !x.At.IsZero() && !x.At.After(now):
		return Errorf(Invalid, "expire_at %s is not in the future", x.At.Format(time.RFC3339Nano))
	case !x.At.IsZero() && x.At.After(time.Unix(0, math.MaxInt64)):
		return Errorf(Invalid, "expire_at %s is after 2262-04-11, the last instant kept", x.At.Format(time.RFC3339))
	}
	return nil
}
