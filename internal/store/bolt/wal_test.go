package bolt

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/storetest"
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

// TestWriteAnswersAtItsDeadline: a write whose log sync stalls past its
// request's deadline (a disk that stalls an fsync) is answered at the
// deadline, Unavailable and saying it may or may not have been applied,
// not when the sync ends; once the sync completes the write is there and
// the store takes writes again.
func TestWriteAnswersAtItsDeadline(t *testing.T) {
	s, _ := openStore(t, Options{})
	mustCreate(t, s, "h", hllSpec(10))
	release := blockSyncs(t, s)
	c, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.Add(c, "h", storetest.Input{Hashed: []uint64{5 << 20}}, false)
		done <- err
	}()
	select {
	case err := <-done:
		if sketch.KindOf(err) != sketch.Unavailable || !strings.Contains(err.Error(), "may or may not have been applied") {
			t.Errorf("a write whose sync stalled past its deadline: %v, want Unavailable saying it may or may not have been applied", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a write whose sync stalled was not answered at its deadline")
	}
	release <- nil
	// Later syncs go through (the test's end stops this before it closes
	// release).
	stop := make(chan struct{})
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		for {
			select {
			case release <- nil:
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-fed })
	if err := addHashes(s, "h", []uint64{6 << 20}, false); err != nil {
		t.Fatalf("a write after the stalled sync ended: %v", err)
	}
	info, err := s.Describe(ctx, "h")
	if err != nil {
		t.Fatal(err)
	}
	if est := info.Cardinality; est != 2 {
		t.Errorf("after the sync: cardinality %v, want 2 (the write answered at its deadline was applied)", est)
	}
}
