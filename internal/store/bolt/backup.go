package bolt

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/internal/archive"
	"github.com/sketchd/sketchd/internal/backup"
	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

// Backup writes the store to w as it was at one moment, later than the
// call's start: every write acknowledged before the call is in it, and
// no write is in it in part. It does not close w.
//
// A write is acknowledged once its log record is durable; bbolt holds it
// only after the next checkpoint. So Backup first runs a checkpoint,
// which copies the state at a log position past every acknowledged
// write into bbolt in one transaction, and then reads one bbolt read
// transaction: a snapshot of that checkpoint (or a later one). Writers
// are paused only while the checkpoint notes its position, as for any
// checkpoint; they go on while the archive streams, and checkpoints
// too: bbolt keeps the pages the read transaction sees until it ends,
// so the data file may grow by what changes meanwhile (and a checkpoint
// that must grow the file's memory map waits for the backup to end).
//
// Every value is checked as a read checks it (its record's checksum,
// then a decode): a damaged one fails the backup with a Damaged error
// naming it, and nothing is archived silently. Sketches expired at the
// backup's moment, and idempotency keys past their window, are left out.
func (s *DB) Backup(ctx context.Context, w *archive.Writer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.readable(); err != nil {
		return err
	}
	tx, err := s.backupTx(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	now := s.opts.Now()
	if err := s.backupSketches(ctx, tx, w, now); err != nil {
		return err
	}
	if err := s.backupSeries(ctx, tx, w); err != nil {
		return err
	}
	return s.backupKeys(tx, w, now)
}

// backupTx checkpoints and opens the read transaction a backup reads.
func (s *DB) backupTx(ctx context.Context) (*bbolt.Tx, error) {
	s.gate.RLock()
	defer s.gate.RUnlock()
	if s.closing.Load() {
		return nil, ErrClosed
	}
	if err := s.Checkpoint(ctx); err != nil {
		return nil, err
	}
	tx, err := s.bdb.Begin(false)
	if err != nil {
		return nil, fmt.Errorf("store: backup: %w", err)
	}
	return tx, nil
}

// storedSketch checks and decodes the stored record v of the entry key
// (a sketch or a bucket): its state (with its sketch) and the sketch's
// bytes as stored, which die with the transaction.
func (s *DB) storedSketch(key string, v []byte) (*state, []byte, error) {
	body, err := checkRecord2(key, v)
	if err == nil {
		var st *state
		var kind *sketch.Kind
		st, kind, body, err = decodeHeader(v, body)
		if err == nil {
			if st.sk, err = kind.Decode(bytes.Clone(body)); err == nil {
				return st, body, nil
			}
		}
	}
	if errors.Is(err, errChecksum) {
		s.checksumFailures.Add(1)
	}
	err = damaged(key, s.path, err)
	s.opts.Logger.Warn("stored record is unreadable", "entry", entryLabel(key), "during", "backup", "err", err)
	return nil, nil, err
}

func (s *DB) backupSketches(ctx context.Context, tx *bbolt.Tx, w *archive.Writer, now time.Time) error {
	c := tx.Bucket(bucketSketches).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := string(k)
		st, b, err := s.storedSketch(name, v)
		if err != nil {
			return err
		}
		if st.expired(now) {
			continue
		}
		rec, err := backup.SketchRecord(name, st.sk, b, st.metric, st.expiry, st.created, st.updated)
		if err != nil {
			return err
		}
		if err := w.Sketch(rec); err != nil {
			return err
		}
	}
	return nil
}

// levelsByName are the levels in the order of their names, the order of
// a series' buckets in an archive.
var levelsByName = func() []series.Level {
	ls := slices.Clone(series.Levels[:])
	slices.SortFunc(ls, func(a, b series.Level) int { return cmp.Compare(a.String(), b.String()) })
	return ls
}()

// backupSeries writes every definition, then every bucket, each in key
// order.
func (s *DB) backupSeries(ctx context.Context, tx *bbolt.Tx, w *archive.Writer) error {
	defs := tx.Bucket(bucketSeries)
	c := defs.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		name := string(k)
		st, err := decodeEntry(seriesKey(name), v)
		if err != nil {
			return damaged(seriesKey(name), s.path, err)
		}
		rec, err := backup.SeriesRecord(name, st.def, st.created)
		if err != nil {
			return err
		}
		if err := w.Series(rec); err != nil {
			return err
		}
	}
	bc := tx.Bucket(bucketBuckets).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		name := string(k)
		for _, l := range levelsByName {
			prefix := append([]byte(bucketPrefix(name)[1:]), byte(l))
			for bk, v := bc.Seek(prefix); bk != nil && bytes.HasPrefix(bk, prefix); bk, v = bc.Next() {
				if err := ctx.Err(); err != nil {
					return err
				}
				key := string(prefixBucket) + string(bk)
				_, start, err := parseBucketKey(key)
				if err != nil {
					return damaged(key, s.path, err)
				}
				st, b, err := s.storedSketch(key, v)
				if err != nil {
					return err
				}
				if err := w.Bucket(&archive.Bucket{Series: name, Level: l.String(), Start: start, Updated: st.updated, Bytes: b}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// backupKeys writes the keys inside their window, sorted as an archive
// keeps them. They are all in memory already (the key table holds them).
func (s *DB) backupKeys(tx *bbolt.Tx, w *archive.Writer, now time.Time) error {
	type kept struct {
		id  idem.ID
		rec idem.Record
	}
	var all []kept
	err := readKeys(tx, func(k []byte, id idem.ID, rec idem.Record, err error) error {
		if err != nil {
			return fmt.Errorf("store: backup: stored %s in %s is damaged: %w", keyLabel(k), s.path, err)
		}
		if !s.keys.expired(&rec, now) {
			all = append(all, kept{id, rec})
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(all, func(a, b kept) int {
		return cmp.Or(strings.Compare(a.id.Target, b.id.Target), strings.Compare(a.id.Scope, b.id.Scope), strings.Compare(a.id.Key, b.id.Key))
	})
	for _, k := range all {
		if err := w.Key(backup.KeyRecord(k.id, k.rec)); err != nil {
			return err
		}
	}
	return nil
}

// ErrNotEmpty is the cause of a restore refused because its target holds
// data and replacing it was not asked for.
var ErrNotEmpty = errors.New("store: the target is not empty")

// Restore writes the archive r reads into the store at path (created if
// missing) with (*DB).Restore, then closes it. A store it created is
// removed again when the restore fails. The store must not be open
// elsewhere (its lock is taken, waiting opts.OpenTimeout).
func Restore(path string, r *archive.Reader, replace bool, opts Options, progress func(read int64)) (counts archive.Counts, err error) {
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, fs.ErrNotExist)
	s, err := Open(path, opts)
	if err != nil {
		return counts, err
	}
	counts, err = s.Restore(context.Background(), r, replace, progress)
	if cerr := s.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil && created {
		os.Remove(path)
		os.RemoveAll(path + ".wal")
	}
	return counts, err
}

// Restore writes the archive r reads into the store, in one bbolt
// transaction that commits only once r has confirmed the archive's
// trailer (its counts and digest) and every record passed
// backup.Checker: a damaged, truncated or refused archive changes
// nothing. A store holding any sketch, series or idempotency key is
// refused (ErrNotEmpty) unless replace is set; then its contents are
// replaced in the same transaction. progress, if set, is called after
// each record written with the archive's bytes read so far. Nothing else may use the store while
// it runs (no request is served from it); afterwards it serves what it
// restored.
//
// Values keep their bytes; records get the checksum a checkpoint would
// write. The transaction holds what it writes until it commits: about
// the archive's size in memory.
func (s *DB) Restore(ctx context.Context, r *archive.Reader, replace bool, progress func(read int64)) (archive.Counts, error) {
	if err := ctx.Err(); err != nil {
		return r.Counts(), err
	}
	// A checkpoint first, so that nothing in memory is newer than bbolt,
	// then none until the cache is rebuilt from what was restored.
	if err := s.Checkpoint(ctx); err != nil {
		return r.Counts(), err
	}
	s.cpRun.Lock()
	defer s.cpRun.Unlock()
	err := s.bdb.Update(func(tx *bbolt.Tx) error {
		if !replace {
			if what := nonEmpty(tx); what != "" {
				return fmt.Errorf("%w: %s holds %s; restore into an empty store, or pass -replace to replace its contents", ErrNotEmpty, s.path, what)
			}
		}
		for _, b := range [][]byte{bucketSketches, bucketMetric, bucketSeries, bucketBuckets, bucketKeys} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		return s.restoreRecords(tx, r, progress)
	})
	if err != nil {
		return r.Counts(), err
	}
	return r.Counts(), s.reload()
}

// reload drops what memory holds of the store (its cache, key table and
// statistics) and reads them again from bbolt, after Restore replaced
// its contents. Nothing is dirty: Restore checkpointed first and nothing
// wrote since.
func (s *DB) reload() error {
	s.cacheMu.Lock()
	s.entries = map[string]*entry{}
	s.lru.Init()
	s.cacheBytes = 0
	s.cacheMu.Unlock()
	s.keys.reset()
	s.statsMu.Lock()
	s.counts = map[countKey]int{}
	s.estimates = map[string]metricValue{}
	s.statsMu.Unlock()
	return s.bdb.View(func(tx *bbolt.Tx) error {
		if err := s.loadKeys(tx, s.opts.Now()); err != nil {
			return err
		}
		return s.loadStats(tx)
	})
}

// nonEmpty says what the store in tx holds ("" if nothing).
func nonEmpty(tx *bbolt.Tx) string {
	for _, b := range []struct {
		name []byte
		what string
	}{{bucketSketches, "sketches"}, {bucketSeries, "series"}, {bucketKeys, "idempotency keys"}} {
		if k, _ := tx.Bucket(b.name).Cursor().First(); k != nil {
			return b.what
		}
	}
	return ""
}

// restoreRecords writes every record of r into tx.
func (s *DB) restoreRecords(tx *bbolt.Tx, r *archive.Reader, progress func(read int64)) error {
	check := backup.NewChecker()
	sketches, metric := tx.Bucket(bucketSketches), tx.Bucket(bucketMetric)
	defs, buckets, keys := tx.Bucket(bucketSeries), tx.Bucket(bucketBuckets), tx.Bucket(bucketKeys)
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		d, err := check.Check(rec)
		if err != nil {
			return err
		}
		switch rec.Type {
		case archive.TypeSketch:
			a := rec.Sketch
			st := &state{sk: d.Sketch, metric: a.Metric, created: a.Created, updated: a.Updated, expiry: d.Expiry}
			if err := sketches.Put([]byte(a.Name), appendRecordBytes(nil, a.Name, d.Sketch.Kind().Tag, st, a.Bytes)); err != nil {
				return err
			}
			if a.Metric {
				if err := metric.Put([]byte(a.Name), nil); err != nil {
					return err
				}
			}
		case archive.TypeSeries:
			a := rec.Series
			st := &state{def: d.Spec, created: a.Created, updated: a.Created}
			key := seriesKey(a.Name)
			if err := defs.Put([]byte(a.Name), appendRecord(nil, key, st)); err != nil {
				return err
			}
		case archive.TypeBucket:
			a := rec.Bucket
			key := bucketKey(a.Series, series.Key{Level: d.Level, Start: a.Start})
			st := &state{sk: d.Sketch, created: a.Updated, updated: a.Updated}
			if err := buckets.Put([]byte(key[1:]), appendRecordBytes(nil, key, d.Sketch.Kind().Tag, st, a.Bytes)); err != nil {
				return err
			}
		case archive.TypeKey:
			k := appendKeyID(nil, d.ID)
			if err := keys.Put(k, appendKeyRecord(nil, k, d.Key)); err != nil {
				return err
			}
		}
		if progress != nil {
			progress(r.Offset())
		}
	}
}

// BackupSource is the archive header's source byte of this backend.
func (s *DB) BackupSource() byte { return archive.SourceBolt }
