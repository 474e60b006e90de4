package bolt

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/internal/idem"
)

// snapshot is the record of one changed sketch (rec nil: deleted) as it
// was at a checkpoint's log position, and the entry's change count then.
// A checkpoint hands one to each changed entry while writers are paused;
// whoever locks the entry first after that fills it: a writer about to
// change the sketch (copy on write), or the checkpoint itself. A backup
// takes its copies the same way (backup set), with no checkpoint
// running meanwhile: an entry has at most one snapshot pending.
type snapshot struct {
	e      *entry
	taken  bool
	keep   bool // an unreadable record nobody deleted: leave it alone
	backup bool // a backup's copy: the entry keeps its encoding (enc) for the next checkpoint
	rec    []byte
	metric bool
	gen    uint64
}

// take fills sn from its entry's current state. Called with e.mu held.
// rec is never changed afterwards: it is a new encoding, or the entry's
// kept encoding, which is replaced, never written into.
func (sn *snapshot) take() {
	e := sn.e
	sn.taken, sn.gen, sn.keep = true, e.gen, e.unreadable
	e.snap = nil
	if e.packed.Load() {
		// Its record is its state (never a sketch on /metrics), and stays
		// so: the snapshot shares it, and nobody changes it in place.
		sn.rec = e.enc
		return
	}
	if e.st != nil {
		if e.enc != nil && e.encGen == e.gen {
			sn.rec = e.enc
		} else {
			sn.rec = appendRecord(nil, e.name, e.st)
		}
		sn.metric = e.st.metric
	}
	if !sn.backup {
		e.enc = nil // the checkpoint writes it: no longer worth its memory
	}
}

// takeDirty hands a snapshot to every changed entry and starts a new dirty
// set. The caller excludes writers (holds cp exclusively, or is
// single-threaded); it locks no entry, so a reader holding one for a long
// union never delays it. The entries stay dirty, so none is evicted,
// until their copy is committed.
func (s *DB) takeDirty() []*snapshot {
	s.dirtyMu.Lock()
	dirty := s.dirty
	s.dirty = nil
	for _, e := range dirty {
		e.inDirty = false
	}
	s.dirtyN.Store(0)
	s.dirtyBytes.Store(0)
	s.dirtyMu.Unlock()
	snaps := make([]*snapshot, 0, len(dirty))
	for _, e := range dirty {
		sn := &snapshot{e: e}
		e.snap = sn
		snaps = append(snaps, sn)
	}
	return snaps
}

// fill takes the snapshots no writer took, one entry lock at a time, and
// sorts them by name: bbolt inserts sorted keys in O(log n) each, while
// random order makes a large transaction quadratic.
func fill(snaps []*snapshot) {
	for _, sn := range snaps {
		sn.e.mu.Lock()
		if !sn.taken {
			sn.take()
		}
		sn.e.mu.Unlock()
	}
	// Sort (name, snapshot) pairs: comparing names held in the slice
	// itself, not behind two pointers, keeps a million-key sort to a
	// fraction of a second.
	keyed := make([]keyedSnapshot, len(snaps))
	for i, sn := range snaps {
		keyed[i] = keyedSnapshot{sn.e.name, sn}
	}
	slices.SortFunc(keyed, func(a, b keyedSnapshot) int { return strings.Compare(a.name, b.name) })
	for i := range keyed {
		snaps[i] = keyed[i].sn
	}
}

type keyedSnapshot struct {
	name string
	sn   *snapshot
}

// abandon returns the snapshots' entries to the dirty set, for the next
// checkpoint.
func (s *DB) abandon(snaps []*snapshot) {
	for _, sn := range snaps {
		sn.e.mu.Lock()
		if sn.e.snap == sn {
			sn.e.snap = nil
		}
		s.markDirty(sn.e, 0)
		sn.e.mu.Unlock()
	}
}

// commitCheckpoint writes the filled snapshots and the log position they
// reflect in one bbolt transaction, then marks clean the entries not
// changed since their copy. On failure the entries return to the dirty
// set.
//
// One transaction, because a checkpoint must be atomic with its position:
// replaying the log onto a sketch already holding some of its records
// would count CMS increments twice. Its memory is bounded by the cache
// setting: the snapshots are encoded records of dirty sketches, and
// writes are refused while those pass twice the cache size.
//
// keys are the idempotency keys added (and removed, nil) since the last
// checkpoint, up to lsn: they go in the same transaction.
func (s *DB) commitCheckpoint(snaps []*snapshot, keys map[idem.ID]*idem.Record, lsn uint64) error {
	err := s.bdb.Update(func(tx *bbolt.Tx) error {
		if err := writeKeys(tx, keys); err != nil {
			return err
		}
		metric := tx.Bucket(bucketMetric)
		for _, sn := range snaps {
			if sn.keep {
				continue
			}
			bucket, key := location(sn.e.name)
			b := tx.Bucket(bucket)
			indexed := isSketchName(sn.e.name) // only sketches are on /metrics
			if sn.rec == nil {
				if err := b.Delete(key); err != nil {
					return err
				}
				if !indexed {
					continue
				}
				if err := metric.Delete(key); err != nil {
					return err
				}
				continue
			}
			// bbolt keeps rec until the transaction commits; nothing else
			// refers to it.
			if err := b.Put(key, sn.rec); err != nil {
				return err
			}
			if !indexed {
				continue
			}
			var err error
			if sn.metric {
				err = metric.Put(key, nil)
			} else {
				err = metric.Delete(key)
			}
			if err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keyCheckpoint, appendCheckpoint(nil, lsn))
	})
	if err != nil {
		s.abandon(snaps)
		s.keys.giveBack(keys)
		return fmt.Errorf("store: checkpoint: %w", err)
	}
	for _, sn := range snaps {
		sn.e.mu.Lock()
		if sn.e.gen == sn.gen {
			s.markClean(sn.e)
		}
		sn.e.mu.Unlock()
	}
	return nil
}

// markClean clears e's dirty flag: a committed checkpoint holds its
// state. Called with e.mu held.
func (s *DB) markClean(e *entry) {
	s.dirtyMu.Lock()
	e.dirty.Store(false)
	s.dirtyIdx.remove(e.name)
	s.unsettled.Store(int64(s.dirtyIdx.len()))
	s.dirtyMu.Unlock()
}

// releaseClean parks the snapshots' entries that are now clean and
// unpinned: only they can have turned clean. It returns the memory of
// those that left the cache.
func (s *DB) releaseClean(snaps []*snapshot) int64 {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	before := s.cacheBytes
	for _, sn := range snaps {
		if e := sn.e; e.pins == 0 && !e.dirty.Load() {
			s.parkLocked(e)
		}
	}
	released := before - s.cacheBytes
	s.evictLocked()
	return released
}

// Checkpoint copies every sketch changed since the last checkpoint into
// bbolt and drops the log it no longer needs. Nothing past the durable end
// of the log reaches bbolt: the checkpoint waits for its position to be
// synced and abandons the copy if that sync failed. After a log failure it
// instead rebuilds memory from what is durable and tries to start a new
// log (see the package doc).
func (s *DB) Checkpoint(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.cpRun.Lock()
	defer s.cpRun.Unlock()
	if s.wal.err() != nil {
		return s.recoverLog()
	}
	s.keys.sweep(s.opts.Now())
	if s.wal.lastLSN() == s.checkpointed && s.dirtyN.Load() == 0 && !s.keys.pending() {
		return nil
	}
	start := time.Now()
	// Create the next segment before pausing writers: it costs a
	// directory sync. It stays unused if the current segment holds no
	// record, so failed checkpoints leave no empty segments behind.
	next, err := s.wal.createSegment()
	if err != nil {
		return err
	}
	s.cp.Lock()
	lsn := s.wal.lastLSN()
	keep := s.wal.rotate(next)
	snaps := s.takeDirty()
	keys := s.keys.takeChanges()
	s.cp.Unlock()
	if keep != next {
		if err := s.wal.discard(next); err != nil {
			s.opts.Logger.Warn("removing an unused log segment", "err", err)
		}
	}
	if err := s.wal.waitDurable(lsn); err != nil {
		s.abandon(snaps)
		s.keys.giveBack(keys)
		return fmt.Errorf("store: checkpoint: %w", err)
	}
	fill(snaps)
	if s.opts.beforeCommit != nil {
		s.opts.beforeCommit()
	}
	if err := s.commitCheckpoint(snaps, keys, lsn); err != nil {
		return err
	}
	s.checkpointed = lsn
	if err := s.writeMarker(lsn); err != nil {
		return err
	}
	if err := s.wal.dropBefore(keep); err != nil {
		return fmt.Errorf("store: checkpoint: %w", err)
	}
	released := s.releaseClean(snaps)
	if s.opts.Observer != nil {
		s.opts.Observer.ObserveCheckpoint(len(snaps), time.Since(start))
	}
	if released > 0 && s.opts.Released != nil {
		s.opts.Released(released)
	}
	return nil
}

// checkpointDue reports whether the log or the changes since the last
// checkpoint passed a limit that starts the next one early.
func (s *DB) checkpointDue() bool {
	return s.wal.bytes() >= s.opts.CheckpointBytes || s.dirtyBytes.Load() >= s.opts.CacheBytes ||
		s.dirtyN.Load() >= int64(s.opts.CheckpointSketches)
}

// checkpointLoop checkpoints on the interval, when the log grows past
// CheckpointBytes, when changed sketches fill the cache or pass
// CheckpointSketches, and, after a log
// failure, at once and then every second until the log works again.
func (s *DB) checkpointLoop() {
	defer close(s.done)
	tick := time.NewTicker(s.opts.CheckpointInterval)
	defer tick.Stop()
	sizeCheck := time.NewTicker(100 * time.Millisecond)
	defer sizeCheck.Stop()
	var lastTry time.Time
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		case <-s.cpKick:
		case <-sizeCheck.C:
			if s.wal.err() != nil {
				if time.Since(lastTry) < time.Second {
					continue
				}
			} else if !s.checkpointDue() {
				continue
			}
		}
		lastTry = time.Now()
		if err := s.Checkpoint(context.Background()); err != nil {
			s.opts.Logger.Error("checkpoint failed", "err", err)
		}
	}
}
