package bolt

import (
	"context"
	"errors"
	"fmt"

	bbolt "go.etcd.io/bbolt"
)

// A stored record that cannot be decoded breaks only its own sketch:
// reads of it fail with an error naming it and the file, List skips it,
// the statistics at open skip it, each skip is logged (the name quoted,
// never raw bytes) and counted, and Delete removes it. Nothing else ever
// deletes or overwrites it: a checkpoint leaves an unreadable record alone
// unless it was explicitly deleted.

// unreadableError is the error for a record that cannot be decoded.
type unreadableError struct {
	name, path string
	err        error
}

func (e *unreadableError) Error() string {
	return fmt.Sprintf("store: stored sketch %s in %s is unreadable (%v); DELETE it to remove it", quoteName([]byte(e.name)), e.path, e.err)
}

func (e *unreadableError) Unwrap() error { return e.err }

// UnreadableRecords returns how many times a stored record was skipped
// because it could not be decoded (at open, or by List).
func (s *DB) UnreadableRecords() int64 { return s.unreadable.Load() }

// skipUnreadable logs and counts a record skipped because it could not be
// decoded.
func (s *DB) skipUnreadable(name []byte, err error, where string) {
	s.unreadable.Add(1)
	s.opts.Logger.Warn("skipped an unreadable sketch record", "sketch", quoteName(name), "file", s.path, "during", where, "err", err)
}

// acquireTolerant is acquire for a name whose record may be unreadable:
// then the entry has no state and is marked unreadable instead of failing.
func (s *DB) acquireTolerant(name string) (*entry, error) {
	e, err := s.acquire(name)
	var ue *unreadableError
	if !errors.As(err, &ue) {
		return e, err
	}
	s.cacheMu.Lock()
	if have := s.entries[name]; have != nil {
		// Someone else holds it now (a concurrent tolerant acquire, or a
		// repair); use theirs.
		have.pins++
		if have.lru != nil {
			s.lru.Remove(have.lru)
			have.lru = nil
		}
		s.cacheMu.Unlock()
		<-have.loaded
		if have.loadErr != nil {
			s.release(have)
			return nil, have.loadErr
		}
		return have, nil
	}
	e = &entry{name: name, pins: 1, loaded: make(chan struct{}), unreadable: true}
	close(e.loaded)
	s.entries[name] = e
	s.cacheMu.Unlock()
	return e, nil
}

// deleteUnreadable deletes name whose record cannot be decoded: a logged,
// durable delete like any other, which the next checkpoint applies.
func (s *DB) deleteUnreadable(ctx context.Context, name string) error {
	return s.write(ctx, []string{name}, func(names []string) ([]*entry, error) {
		e, err := s.acquireTolerant(names[0])
		if err != nil {
			return nil, err
		}
		return []*entry{e}, nil
	}, func(t *tx) error {
		e := t.entry(name)
		if e.st == nil && !e.unreadable {
			return notFound(name)
		}
		t.delete(e)
		e.unreadable = false
		return nil
	})
}

// countRecord counts one stored record at open by kind and
// representation, skipping an unreadable one.
func (s *DB) countRecord(name, rec []byte) {
	key, err := recordKey(rec)
	if err != nil {
		s.skipUnreadable(name, err, "open")
		return
	}
	s.counts[key]++
}

// metricEstimate reads the estimate of an opted-in sketch at open,
// skipping an unreadable record.
func (s *DB) metricEstimate(sketches *bbolt.Bucket, name []byte) {
	st, err := decodeRecord(sketches.Get(name))
	if err != nil {
		s.skipUnreadable(name, err, "open")
		return
	}
	s.estimates[string(name)] = st.sk.Estimate()
}
