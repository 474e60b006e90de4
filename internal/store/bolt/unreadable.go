package bolt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/internal/sketch"
)

// A stored record that fails its checksum or cannot be decoded breaks
// only its own entry: reads of it fail with a Damaged error (500) naming
// it (never its bytes), List skips it, the statistics at open skip it,
// each detection is logged (the name quoted, never raw bytes) and counted,
// and Delete (DeleteSeries for a series' entries) removes it. Nothing else
// ever deletes or overwrites it: a checkpoint leaves an unreadable record
// alone unless it was explicitly deleted or replaced by a logged put.

// unreadableError is the error for a record that cannot be read.
type unreadableError struct {
	name, path string
	err        error
}

func (e *unreadableError) Error() string {
	return fmt.Sprintf("store: stored %s in %s is unreadable (%v); %s", entryLabel(e.name), e.path, e.err, removeHint(e.name))
}

func (e *unreadableError) Unwrap() error { return e.err }

// removeHint says how to remove the entry key.
func removeHint(key string) string {
	if isSketchName(key) {
		return "DELETE the sketch to remove it"
	}
	return "DELETE the series to remove it"
}

// damaged returns the error for the entry key's unreadable record: a
// Damaged error whose client-safe detail names the entry and says what
// to do, wrapping an *unreadableError with the cause and the file.
func damaged(key, path string, err error) error {
	what := "cannot be decoded"
	if errors.Is(err, errChecksum) {
		what = "failed its checksum"
	}
	ue := &unreadableError{name: key, path: path, err: err}
	return sketch.Wrap(sketch.Damaged, ue, fmt.Sprintf("stored %s is damaged: its record %s; %s, or restore the data file from a backup", entryLabel(key), what, removeHint(key)))
}

// entryLabel names an entry key for a message: sketch "a", series "s",
// or bucket day 2026-11-01T00:00:00Z of series "s"; quoted, never raw
// bytes.
func entryLabel(key string) string {
	switch {
	case key != "" && key[0] == prefixSeries:
		return "series " + quoteName([]byte(key[1:]))
	case key != "" && key[0] == prefixBucket:
		name, _, _ := strings.Cut(key[1:], "\x00")
		if l, start, err := parseBucketKey(key); err == nil {
			return fmt.Sprintf("bucket %s %s of series %s", l, start.Format(time.RFC3339), quoteName([]byte(name)))
		}
		return "bucket " + quoteName([]byte(key[1:]))
	}
	return "sketch " + quoteName([]byte(key))
}

// UnreadableRecords returns how many times a stored record was skipped
// because it could not be decoded (at open, or by List).
func (s *DB) UnreadableRecords() int64 { return s.unreadable.Load() }

// ChecksumFailures returns how many times a stored record failed its
// checksum when read (at open, by List, or by a read of it).
func (s *DB) ChecksumFailures() int64 { return s.checksumFailures.Load() }

// reportUnreadable logs the entry key's unreadable record, found during
// where, and counts it if it failed its checksum.
func (s *DB) reportUnreadable(key []byte, err error, where string) {
	if errors.Is(err, errChecksum) {
		s.checksumFailures.Add(1)
	}
	s.opts.Logger.Warn("stored record is unreadable", "sketch", quoteName(key), "entry", entryLabel(string(key)), "file", s.path, "during", where, "err", err)
}

// skipUnreadable logs and counts a record skipped because it could not be
// read.
func (s *DB) skipUnreadable(name []byte, err error, where string) {
	s.unreadable.Add(1)
	s.reportUnreadable(name, err, where)
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
		err := s.readyLocked(have)
		s.cacheMu.Unlock()
		if err == nil {
			err = s.unpackPinned(have)
		}
		if err != nil {
			s.release(have)
			return nil, err
		}
		return have, nil
	}
	e = &entry{name: name, pins: 1, unreadable: true}
	s.entries[name] = e
	s.cacheMu.Unlock()
	return e, nil
}

// acquireAllTolerant is acquireAll with acquireTolerant: for a write that
// deletes whatever it acquires, readable or not.
func (s *DB) acquireAllTolerant(names []string) ([]*entry, error) {
	es := make([]*entry, 0, len(names))
	for _, n := range names {
		e, err := s.acquireTolerant(n)
		if err != nil {
			s.releaseAll(es)
			return nil, err
		}
		es = append(es, e)
	}
	return es, nil
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
	key, err := recordKey(string(name), rec)
	if err != nil {
		s.skipUnreadable(name, err, "open")
		return
	}
	s.counts[key]++
}

// metricEstimate reads the estimate of an opted-in sketch at open,
// skipping an unreadable record.
func (s *DB) metricEstimate(sketches *bbolt.Bucket, name []byte) {
	st, err := decodeEntry(string(name), sketches.Get(name))
	if err != nil {
		s.skipUnreadable(name, err, "open")
		return
	}
	s.estimates[string(name)] = metricValueOf(st)
}
