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
// only after the next checkpoint. Backup writes nothing and syncs
// nothing: at one moment, with writers paused exactly as a checkpoint
// pauses them while it notes its log position, it takes a bbolt read
// transaction (the last committed checkpoint) and a copy of every entry
// changed since (sketches, series definitions and buckets, deletions,
// idempotency keys: what the log holds that bbolt does not), and then
// merges the two as it streams, a changed entry replacing or removing
// bbolt's (see backupView). Writers go on while the archive streams,
// and checkpoints too: bbolt keeps the pages the read transaction sees
// until it ends, so the data file may grow by what changes meanwhile
// (and a checkpoint that must grow the file's memory map waits for the
// backup to end). Each copy is held until the backup has streamed it:
// together at most what the next checkpoint would write, which the
// cache size bounds.
//
// Every value is checked as a read checks it (its record's checksum,
// then that it decodes: its kind's Check, which for an HLL does not
// unpack the registers), a copy as well as bbolt's: a damaged one fails the
// backup with a Damaged error naming it, and nothing is archived
// silently. Sketches expired at the backup's moment, and idempotency
// keys past their window, are left out.
func (s *DB) Backup(ctx context.Context, w *archive.Writer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.readable(); err != nil {
		return err
	}
	v, err := s.backupView()
	if err != nil {
		return err
	}
	defer v.tx.Rollback()
	if err := s.backupSketches(ctx, v, w); err != nil {
		return err
	}
	if err := s.backupSeries(ctx, v, w); err != nil {
		return err
	}
	return s.backupKeys(v, w)
}

// backupView is the store at a backup's moment: bbolt as of the last
// committed checkpoint, read in tx, and the entries changed since, each
// list in its bbolt bucket's key order.
type backupView struct {
	tx                        *bbolt.Tx
	now                       time.Time
	sketches, series, buckets []change
	keys                      map[idem.ID]*idem.Record // nil: removed
}

// change is an entry's record at a backup's moment, under its key in
// its bbolt bucket; rec is nil when the entry was deleted. The record is
// the backup's own copy: it shares no memory with a live sketch or a
// request.
type change struct {
	key string
	rec []byte
}

// backupView takes the moment a backup reads. cpRun is held throughout,
// so no checkpoint commits between the read transaction's start and the
// copies: tx holds the last committed checkpoint, and every entry whose
// state may differ from it has its dirty flag set (only a commit clears
// one). Writers are paused (cp) only while each such entry is handed an
// empty snapshot; the first to lock it afterwards fills it, as for a
// checkpoint (a writer before changing it, copy on write, or the backup
// itself), so each copy is the entry's state at the log position noted.
// Then the backup waits for that position to be durable, so it never
// holds a write the log failed to keep.
func (s *DB) backupView() (*backupView, error) {
	s.gate.RLock()
	defer s.gate.RUnlock()
	if s.closing.Load() {
		return nil, ErrClosed
	}
	s.cpRun.Lock()
	defer s.cpRun.Unlock()
	if err := s.wal.err(); err != nil {
		return nil, errLogFailed(err)
	}
	tx, err := s.bdb.Begin(false)
	if err != nil {
		return nil, fmt.Errorf("store: backup: %w", err)
	}
	v := &backupView{tx: tx}
	s.cp.Lock()
	lsn := s.wal.lastLSN()
	v.now = s.opts.Now()
	s.dirtyMu.Lock()
	items := s.dirtyIdx.appendAll(nil)
	s.dirtyMu.Unlock()
	snaps := make([]*snapshot, len(items))
	for i, it := range items {
		// No checkpoint runs (cpRun), and each fills or abandons every
		// snapshot it hands out: none is pending.
		snaps[i] = &snapshot{e: it.e, backup: true}
		it.e.snap = snaps[i]
	}
	v.keys = s.keys.changesCopy()
	s.cp.Unlock()
	for _, sn := range snaps {
		sn.e.mu.Lock()
		if !sn.taken {
			sn.take()
		}
		sn.e.mu.Unlock()
	}
	if err := s.wal.waitDurable(lsn); err != nil {
		tx.Rollback()
		return nil, errLogFailed(err)
	}
	// items are in entry-key order; within one bbolt bucket that is the
	// order of the bbolt keys (its entries share their first byte).
	for _, sn := range snaps {
		if sn.keep {
			continue // an unreadable record nobody replaced: bbolt's, refused when read
		}
		bucket, key := location(sn.e.name)
		c := change{key: string(key), rec: sn.rec}
		switch {
		case bytes.Equal(bucket, bucketSeries):
			v.series = append(v.series, c)
		case bytes.Equal(bucket, bucketBuckets):
			v.buckets = append(v.buckets, c)
		default:
			v.sketches = append(v.sketches, c)
		}
	}
	return v, nil
}

// mergeCursor walks a bbolt bucket as changed by a sorted list of
// changes: a change replaces bbolt's record under its key, or removes
// it (rec nil). The backup walks each key range once, in key order, so
// a change's copy is dropped once the walk passed it (next was called
// again), and the backup lets go of its copies as it streams. The record
// a walk read past its range's end is not dropped: seek forgets it, and
// the next range's walk returns it again.
type mergeCursor struct {
	c    *bbolt.Cursor
	ch   []change
	i    int
	k, v []byte  // bbolt's next record
	last *change // the change next returned last, if it did
}

func newMergeCursor(b *bbolt.Bucket, ch []change) *mergeCursor {
	return &mergeCursor{c: b.Cursor(), ch: ch}
}

// seek returns the first record at or after from.
func (m *mergeCursor) seek(from []byte) (k, v []byte) {
	m.k, m.v = m.c.Seek(from)
	m.last = nil
	m.i, _ = slices.BinarySearchFunc(m.ch, from, func(c change, k []byte) int { return strings.Compare(c.key, string(k)) })
	return m.next()
}

// next returns the record after the last one returned (nil at the end).
// bbolt's bytes die with the transaction; a change's with the next call.
func (m *mergeCursor) next() (k, v []byte) {
	if m.last != nil {
		m.last.rec, m.last = nil, nil
	}
	for {
		var ch *change
		if m.i < len(m.ch) {
			ch = &m.ch[m.i]
		}
		switch {
		case m.k == nil && ch == nil:
			return nil, nil
		case ch == nil || m.k != nil && string(m.k) < ch.key:
			k, v = m.k, m.v
			m.k, m.v = m.c.Next()
			return k, v
		}
		if m.k != nil && string(m.k) == ch.key {
			m.k, m.v = m.c.Next()
		}
		m.i++
		if ch.rec != nil {
			m.last = ch
			return []byte(ch.key), ch.rec
		}
	}
}

// storedSketch checks the stored record v of the entry key (a sketch or
// a bucket) as a read would (its checksum, then its kind's Check: that
// it would decode): its state (without its sketch), its parameters and
// the sketch's bytes as stored, which die with the transaction.
func (s *DB) storedSketch(key string, v []byte) (*state, sketch.Params, []byte, error) {
	body, err := checkRecord2(key, v)
	if err == nil {
		var st *state
		var kind *sketch.Kind
		st, kind, body, err = decodeHeader(v, body)
		if err == nil {
			var p sketch.Params
			if p, err = kind.Checked(body); err == nil {
				return st, p, body, nil
			}
		}
	}
	if errors.Is(err, errChecksum) {
		s.checksumFailures.Add(1)
	}
	err = damaged(key, s.path, err)
	s.opts.Logger.Warn("stored record is unreadable", "entry", entryLabel(key), "during", "backup", "err", err)
	return nil, nil, nil, err
}

func (s *DB) backupSketches(ctx context.Context, v *backupView, w *archive.Writer) error {
	c := newMergeCursor(v.tx.Bucket(bucketSketches), v.sketches)
	for k, rec := c.seek(nil); k != nil; k, rec = c.next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := string(k)
		st, p, b, err := s.storedSketch(name, rec)
		if err != nil {
			return err
		}
		if st.expired(v.now) {
			continue
		}
		r, err := backup.SketchRecord(name, p.Kind().Type, p, b, st.metric, st.expiry, st.created, st.updated)
		if err != nil {
			return err
		}
		if err := w.Sketch(r); err != nil {
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
func (s *DB) backupSeries(ctx context.Context, v *backupView, w *archive.Writer) error {
	var names []string
	c := newMergeCursor(v.tx.Bucket(bucketSeries), v.series)
	for k, rec := c.seek(nil); k != nil; k, rec = c.next() {
		name := string(k)
		st, err := decodeEntry(seriesKey(name), rec)
		if err != nil {
			return damaged(seriesKey(name), s.path, err)
		}
		r, err := backup.SeriesRecord(name, st.def, st.created)
		if err != nil {
			return err
		}
		if err := w.Series(r); err != nil {
			return err
		}
		names = append(names, name)
	}
	bc := newMergeCursor(v.tx.Bucket(bucketBuckets), v.buckets)
	for _, name := range names {
		for _, l := range levelsByName {
			prefix := append([]byte(bucketPrefix(name)[1:]), byte(l))
			for bk, rec := bc.seek(prefix); bk != nil && bytes.HasPrefix(bk, prefix); bk, rec = bc.next() {
				if err := ctx.Err(); err != nil {
					return err
				}
				key := string(prefixBucket) + string(bk)
				_, start, err := parseBucketKey(key)
				if err != nil {
					return damaged(key, s.path, err)
				}
				st, _, b, err := s.storedSketch(key, rec)
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
// keeps them: bbolt's, as changed since the last checkpoint (a changed
// key replaces or removes bbolt's record, damaged or not).
func (s *DB) backupKeys(v *backupView, w *archive.Writer) error {
	type kept struct {
		id  idem.ID
		rec idem.Record
	}
	var all []kept
	err := readKeys(v.tx, func(k []byte, id idem.ID, rec idem.Record, err error) error {
		if id.Key != "" {
			if _, changed := v.keys[id]; changed {
				return nil
			}
		}
		if err != nil {
			return fmt.Errorf("store: backup: stored %s in %s is damaged: %w", keyLabel(k), s.path, err)
		}
		if !s.keys.expired(&rec, v.now) {
			all = append(all, kept{id, rec})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for id, rec := range v.keys {
		if rec != nil && !s.keys.expired(rec, v.now) {
			all = append(all, kept{id, *rec})
		}
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
