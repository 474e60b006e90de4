package bolt

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// snapshot is a copy of one changed sketch (st nil: deleted) taken at the
// checkpoint's log position, and the entry's change count then.
type snapshot struct {
	e   *entry
	st  *state
	gen uint64
}

// takeSnapshots copies every changed entry. The caller excludes writers
// (holds cp exclusively, or is single-threaded). The entries stay dirty,
// so none is evicted, until the copy is committed.
func (s *DB) takeSnapshots() []snapshot {
	s.dirtyMu.Lock()
	dirty := s.dirty
	s.dirty = map[*entry]struct{}{}
	s.dirtyBytes.Store(0)
	s.dirtyMu.Unlock()
	snaps := make([]snapshot, 0, len(dirty))
	for e := range dirty {
		e.mu.Lock()
		sn := snapshot{e: e, gen: e.gen}
		if e.st != nil {
			sn.st = e.st.clone()
		}
		e.mu.Unlock()
		snaps = append(snaps, sn)
	}
	return snaps
}

// commitCheckpoint writes the snapshots and the log position they reflect
// in one bbolt transaction, then marks clean the entries not changed since
// their copy. On failure the entries return to the dirty set.
func (s *DB) commitCheckpoint(snaps []snapshot, lsn uint64) error {
	err := s.bdb.Update(func(tx *bbolt.Tx) error {
		metric := tx.Bucket(bucketMetric)
		var buf []byte
		for _, sn := range snaps {
			bucket, key := location(sn.e.name)
			b := tx.Bucket(bucket)
			indexed := isSketchName(sn.e.name) // only sketches are on /metrics
			if sn.st == nil {
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
			buf = appendRecord(buf[:0], sn.st)
			// bbolt keeps the slice until the transaction commits.
			if err := b.Put(key, append([]byte(nil), buf...)); err != nil {
				return err
			}
			if !indexed {
				continue
			}
			var err error
			if sn.st.metric {
				err = metric.Put(key, nil)
			} else {
				err = metric.Delete(key)
			}
			if err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keyCheckpoint, binary.BigEndian.AppendUint64(nil, lsn))
	})
	for _, sn := range snaps {
		sn.e.mu.Lock()
		switch {
		case err != nil:
			s.markDirty(sn.e, 0)
		case sn.e.gen == sn.gen:
			sn.e.dirty.Store(false)
		}
		sn.e.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("store: checkpoint: %w", err)
	}
	return nil
}

// releaseClean parks the snapshots' entries that are now clean and
// unpinned: only they can have turned clean.
func (s *DB) releaseClean(snaps []snapshot) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	for _, sn := range snaps {
		if e := sn.e; e.pins == 0 && !e.dirty.Load() {
			s.parkLocked(e)
		}
	}
	s.evictLocked()
}

// Checkpoint copies every sketch changed since the last checkpoint into
// bbolt and drops the log it no longer needs.
func (s *DB) Checkpoint(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.cpRun.Lock()
	defer s.cpRun.Unlock()
	if s.wal.lastLSN() == s.checkpointed && s.dirtyCount() == 0 {
		return nil
	}
	start := time.Now()
	// Create the next segment before pausing writers: it costs a
	// directory sync.
	seg, err := s.wal.createSegment()
	if err != nil {
		return err
	}
	s.cp.Lock()
	lsn := s.wal.lastLSN()
	last := s.wal.rotate(seg)
	snaps := s.takeSnapshots()
	s.cp.Unlock()
	return s.finishCheckpoint(snaps, lsn, last, seg, start)
}

func (s *DB) dirtyCount() int {
	s.dirtyMu.Lock()
	defer s.dirtyMu.Unlock()
	return len(s.dirty)
}

func (s *DB) finishCheckpoint(snaps []snapshot, lsn uint64, last *batch, seg *segment, start time.Time) error {
	if err := s.commitCheckpoint(snaps, lsn); err != nil {
		return err
	}
	s.checkpointed = lsn
	// The previous segments are complete once their last batch is written.
	if last != nil {
		<-last.done
	}
	if err := s.wal.dropBefore(seg); err != nil {
		return fmt.Errorf("store: checkpoint: %w", err)
	}
	s.releaseClean(snaps)
	if s.opts.Observer != nil {
		s.opts.Observer.ObserveCheckpoint(len(snaps), time.Since(start))
	}
	return nil
}

// checkpointLoop checkpoints on the interval, when the log grows past
// CheckpointBytes, and when changed sketches fill the cache.
func (s *DB) checkpointLoop() {
	defer close(s.done)
	tick := time.NewTicker(s.opts.CheckpointInterval)
	defer tick.Stop()
	sizeCheck := time.NewTicker(100 * time.Millisecond)
	defer sizeCheck.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		case <-s.cpKick:
		case <-sizeCheck.C:
			if s.wal.bytes() < s.opts.CheckpointBytes && s.dirtyBytes.Load() < s.opts.CacheBytes {
				continue
			}
		}
		if err := s.Checkpoint(context.Background()); err != nil {
			s.opts.Logger.Error("checkpoint failed", "err", err)
		}
	}
}
