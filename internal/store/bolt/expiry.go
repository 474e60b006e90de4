package bolt

import (
	"context"
	"time"

	"go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/sketch"
)

// SetExpiry makes x name's expiry (the zero Expiry: never) and returns
// its new description. It is a write: expire_after counts from it. The
// new expiry is logged with the whole record.
func (s *DB) SetExpiry(ctx context.Context, name string, x sketch.Expiry) (info sketch.Info, err error) {
	if err := x.Validate(s.opts.Now()); err != nil {
		return sketch.Info{}, err
	}
	err = s.update(ctx, []string{name}, func(t *tx) error {
		e := t.entry(name)
		if e.st == nil {
			return notFound(name)
		}
		st := e.st.clone()
		st.expiry, st.updated = x, t.now
		t.put(e, st)
		info = e.st.info(name)
		t.res = idem.Result{Info: info}
		return nil
	})
	return info, err
}

// expiryPage is how many sketch names ExpireSketches reads at a time.
const expiryPage = 256

// ExpireSketches removes every sketch expired at now and says how many.
// It walks the names in pages; each page's expired sketches go in one
// logged write (a write finds an expired sketch gone already: this only
// frees its room).
func (s *DB) ExpireSketches(ctx context.Context, now time.Time) (int, error) {
	removed, after := 0, ""
	for {
		names, more, err := s.listKeys(ctx, "", bucketSketches, "", after, expiryPage)
		if err != nil {
			return removed, err
		}
		if len(names) > 0 {
			after = names[len(names)-1]
		}
		var expired []string
		for _, n := range names {
			if isSketchName(n) && s.expiredAt(n, now) {
				expired = append(expired, n)
			}
		}
		if len(expired) > 0 {
			err = s.write(ctx, expired, s.acquireEach, func(t *tx) error {
				for _, n := range expired {
					// One expired at t.now is already gone (update deletes it).
					if e := t.entry(n); e.st != nil && e.st.expired(now) {
						t.delete(e)
						removed++
					} else if e.st == nil {
						removed++
					}
				}
				return nil
			})
			if err != nil {
				return removed, err
			}
		}
		if !more {
			return removed, nil
		}
	}
}

// expiredAt reports whether the sketch name is expired at now (false if
// it is missing or cannot be read: the write that removes it checks again).
// A sketch in memory answers from there (it may be newer than bbolt); any
// other from its stored record's header, without decoding the sketch or
// taking it into the cache.
func (s *DB) expiredAt(name string, now time.Time) bool {
	s.cacheMu.Lock()
	_, inMemory := s.entries[name]
	s.cacheMu.Unlock()
	if !inMemory {
		if expired, ok := s.storedExpired(name, now); ok {
			return expired
		}
	}
	// In memory, or a record missing or unreadable: the load reports
	// damage as every read does.
	e, err := s.acquire(name)
	if err != nil {
		return false
	}
	defer s.release(e)
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.st != nil && e.st.expired(now)
}

// storedExpired reads whether the stored record of the sketch name is
// expired at now from its header; ok is false if there is no record or
// it cannot be read.
func (s *DB) storedExpired(name string, now time.Time) (expired, ok bool) {
	s.bdb.View(func(tx *bbolt.Tx) error {
		bucket, key := location(name)
		rec := tx.Bucket(bucket).Get(key)
		if rec == nil {
			return nil
		}
		body, err := checkRecord2(name, rec)
		if err != nil {
			return nil
		}
		if st, _, _, err := decodeHeader(rec, body); err == nil {
			expired, ok = st.expired(now), true
		}
		return nil
	})
	return expired, ok
}
