package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

// ExpiryStore is the part of the contract that expires sketches: a
// sketch whose sketch.Spec.Expiry has run out (sketch.Expiry.Expired at
// the backend's clock, from its last write) is gone for every method of
// Store, as if deleted, and ExpireSketches removes it. Every write that
// reaches a sketch (an add, even one that changes nothing, a put, a
// merge) is its last write. Errors, atomicity and durability are as for
// Store. A backend without it answers expiry requests with 501.
type ExpiryStore interface {
	// SetExpiry makes x name's expiry (the zero Expiry: never) and
	// returns the new description; x is checked as sketch.Expiry.Validate
	// does (Invalid, nothing changed).
	SetExpiry(ctx context.Context, name string, x sketch.Expiry) (sketch.Info, error)
	// ExpireSketches removes every sketch expired at now and says how
	// many it removed.
	ExpireSketches(ctx context.Context, now time.Time) (int, error)
}

func (s *Server) expiryStore() (ExpiryStore, error) {
	xs, ok := s.store.(ExpiryStore)
	if !ok {
		return nil, &httpError{http.StatusNotImplemented, "this storage backend does not expire sketches yet"}
	}
	return xs, nil
}

// parseExpiry reads the expire_after (an ISO 8601 duration without years
// or months, a day being 24 hours) and expire_at (RFC 3339) fields; nil
// means absent. Errors are Invalid and name the field.
func parseExpiry(after, at *string) (sketch.Expiry, error) {
	var x sketch.Expiry
	if after != nil && at != nil {
		return x, sketch.Errorf(sketch.Invalid, "expire_after and expire_at: give one, not both")
	}
	if after != nil {
		d, err := series.ParseField("expire_after", *after)
		if err != nil {
			return x, err
		}
		if d.Years != 0 || d.Months != 0 {
			return x, sketch.Errorf(sketch.Invalid, "expire_after %q: years and months have no fixed length; use weeks or days (P30D)", clip(*after))
		}
		// Within the cap, so far from overflowing.
		secs := ((int64(d.Weeks)*7+int64(d.Days))*24+int64(d.Hours))*3600 + int64(d.Minutes)*60 + int64(d.Seconds)
		if secs <= 0 {
			return x, sketch.Errorf(sketch.Invalid, "expire_after %q must be positive", *after)
		}
		x.After = time.Duration(secs) * time.Second
	}
	if at != nil {
		t, err := time.Parse(time.RFC3339Nano, *at)
		if err != nil {
			return x, sketch.Errorf(sketch.Invalid, "expire_at %q: want RFC 3339, like 2026-12-31T00:00:00Z", clip(*at))
		}
		if t.IsZero() {
			return x, sketch.Errorf(sketch.Invalid, "expire_at %q is not in the future", clip(*at))
		}
		x.At = t.UTC()
	}
	return x, nil
}

// formatAfter writes d (whole seconds) as an ISO 8601 duration: whole
// days as days (P7D), anything else in hours, minutes and seconds (PT36H,
// not P1DT12H), as a user most likely wrote it.
func formatAfter(d time.Duration) string {
	s := int(d / time.Second)
	if s%86400 == 0 {
		return series.Duration{Days: s / 86400}.String()
	}
	return series.Duration{Hours: s / 3600, Minutes: s % 3600 / 60, Seconds: s % 60}.String()
}

// expiryFields are what a description says of a sketch's expiry.
type expiryFields struct {
	ExpireAfter string    `json:"expire_after,omitempty"`
	ExpireAt    string    `json:"expire_at,omitempty"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// withExpiry adds in's expiry, if it has one, to d, its description.
func withExpiry(in sketch.Info, d any) any {
	x := in.Spec.Expiry
	if x.IsZero() {
		return d
	}
	f := expiryFields{ExpiresAt: x.Deadline(in.UpdatedAt).UTC()}
	if x.After > 0 {
		f.ExpireAfter = formatAfter(x.After)
	} else {
		f.ExpireAt = x.At.UTC().Format(time.RFC3339Nano)
	}
	return expiringDescription{d, f}
}

// expiringDescription is a description with its expiry fields.
type expiringDescription struct {
	d any
	f expiryFields
}

func (e expiringDescription) MarshalJSON() ([]byte, error) {
	a, err := json.Marshal(e.d)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(e.f)
	if err != nil {
		return nil, err
	}
	a = bytes.TrimSuffix(bytes.TrimSpace(a), []byte("}"))
	return append(append(a, ','), b[1:]...), nil
}

// expiryRequest is the body of PATCH /v1/sketches/{name}: one of the two
// fields, a value to set or null to clear.
type expiryRequest struct {
	ExpireAfter json.RawMessage `json:"expire_after"`
	ExpireAt    json.RawMessage `json:"expire_at"`
}

func (q expiryRequest) expiry() (sketch.Expiry, error) {
	field := func(name string, raw json.RawMessage) (*string, bool, error) {
		if raw == nil || string(raw) == "null" {
			return nil, raw != nil, nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, true, sketch.Errorf(sketch.Invalid, "%s: want a string or null", name)
		}
		return &s, true, nil
	}
	after, hasAfter, err := field("expire_after", q.ExpireAfter)
	if err != nil {
		return sketch.Expiry{}, err
	}
	at, hasAt, err := field("expire_at", q.ExpireAt)
	if err != nil {
		return sketch.Expiry{}, err
	}
	switch {
	case !hasAfter && !hasAt:
		return sketch.Expiry{}, sketch.Errorf(sketch.Invalid, `name the expiry: {"expire_after":"P7D"}, {"expire_at":"2026-12-31T00:00:00Z"}, or null to clear it`)
	case hasAfter && hasAt && (after != nil || at != nil):
		return sketch.Expiry{}, sketch.Errorf(sketch.Invalid, "expire_after and expire_at: give one, not both")
	}
	return parseExpiry(after, at)
}

// handleExpiry is PATCH /v1/sketches/{name}: it sets or clears the
// sketch's expiry.
func (s *Server) handleExpiry(w http.ResponseWriter, r *http.Request) error {
	name, err := nameParam(r)
	if err != nil {
		return err
	}
	if _, err := query(r); err != nil {
		return err
	}
	var req expiryRequest
	if err := s.decodeJSON(w, r, &req, false); err != nil {
		return err
	}
	x, err := req.expiry()
	if err != nil {
		return err
	}
	xs, err := s.expiryStore()
	if err != nil {
		return err
	}
	return s.commit(w, r, func(res idem.Result) (*answer, error) {
		return jsonAnswer(http.StatusOK, withExpiry(res.Info, describe(res.Info)))
	}, func(ctx context.Context) (res idem.Result, err error) {
		res.Info, err = xs.SetExpiry(ctx, name, x)
		return res, err
	})
}
