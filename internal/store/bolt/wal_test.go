package bolt

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/sketch"
)

// blockSyncs makes s's log syncs wait for a value on the returned channel
// (nil: succeed, else fail with it). The test's end releases them all.
func blockSyncs(t *testing.T, s *DB) chan error {
	release := make(chan error)
	t.Cleanup(func() { close(release) })
	s.wal.mu.Lock()
	s.wal.sync = func(f *os.File, b []byte) error {
		if err := <-release; err != nil {
			return err
		}
		return s.wal.writeSync(f, b)
	}
	s.wal.mu.Unlock()
	return release
}

func returned(ch chan error) bool {
	select {
	case <-ch:
		return true
	case <-time.After(50 * time.Millisecond):
		return false
	}
}

// TestRedundantWriteWaitsForDurability: a write whose ids are already in
// the sketch, through another writer's record that is not yet synced, must
// not be acknowledged before that record is.
func TestRedundantWriteWaitsForDurability(t *testing.T) {
	s, _ := openStore(t, Options{})
	mustCreate(t, s, "h", hllSpec(10))
	release := blockSyncs(t, s)
	first, second := make(chan error, 1), make(chan error, 1)
	go func() { first <- addHashes(s, "h", []uint64{5 << 20}, false) }()
	for s.wal.barrier() == nil { // wait until the first record is queued or in flight
		time.Sleep(time.Millisecond)
	}
	go func() { second <- addHashes(s, "h", []uint64{5 << 20}, false) }()
	if returned(second) {
		t.Fatal("a redundant write was acknowledged before the record holding its id was synced")
	}
	release <- nil
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
}

// TestSyncFailureStopsWrites: after a failed fdatasync nothing more is
// acknowledged, and the store reports itself not ready; until memory is
// rebuilt every add answers Unavailable, even one naming a sketch that
// does not exist (the look for its kind must not answer from memory that
// may be rebuilding). The checkpoint lock is held so the recovery waits
// for the checks.
func TestSyncFailureStopsWrites(t *testing.T) {
	s, _ := openStore(t, Options{})
	mustCreate(t, s, "h", hllSpec(10))
	release := blockSyncs(t, s)
	s.cpRun.Lock()
	locked := true
	defer func() {
		if locked {
			s.cpRun.Unlock()
		}
	}()
	done := make(chan error, 1)
	go func() { done <- addHashes(s, "h", []uint64{6 << 20}, false) }()
	release <- errors.New("injected EIO")
	if err := <-done; err == nil {
		t.Fatal("write acknowledged although its sync failed")
	}
	if s.Ready() {
		t.Error("Ready() after a failed sync")
	}
	if err := addHashes(s, "h", []uint64{7 << 20}, false); sketch.KindOf(err) != sketch.Unavailable {
		t.Errorf("write after a failed sync = %v, want Unavailable", err)
	}
	if err := addHashes(s, "nope", []uint64{7 << 20}, false); sketch.KindOf(err) != sketch.Unavailable {
		t.Errorf("write to a missing sketch after a failed sync = %v, want Unavailable", err)
	}
	s.cpRun.Unlock()
	locked = false
}
