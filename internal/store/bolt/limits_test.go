package bolt

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/sketch"
)

// TestCheckpointByCount checks that changed sketches past
// CheckpointSketches start a checkpoint, and that past twice as many
// writes are refused (Unavailable) until one completes: what a restart
// replays stays bounded.
func TestCheckpointByCount(t *testing.T) {
	s, _ := openStore(t, Options{CheckpointSketches: 5, CheckpointInterval: time.Hour})
	// Hold checkpoints off: the count must not pass 10 unanswered.
	s.cpRun.Lock()
	held := true
	defer func() {
		if held {
			s.cpRun.Unlock()
		}
	}()
	var refused error
	for i := range 20 {
		if err := addHashes(s, fmt.Sprintf("s%02d", i), []uint64{uint64(i)}, true); err != nil {
			refused = err
			if i != 11 {
				t.Errorf("write %d refused: %v; want the 12th refused, with 11 waiting", i, err)
			}
			break
		}
	}
	if sketch.KindOf(refused) != sketch.Unavailable {
		t.Fatalf("writes past twice CheckpointSketches: %v, want Unavailable", refused)
	}
	s.cpRun.Unlock()
	held = false
	// The kicked checkpoint settles them without waiting for the interval.
	deadline := time.Now().Add(30 * time.Second)
	for s.unsettled.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d sketches still unsettled 30s after passing CheckpointSketches", s.unsettled.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := addHashes(s, "s11", []uint64{11}, true); err != nil {
		t.Fatalf("write after the checkpoint: %v", err)
	}
}

// TestSmallSketchesLeaveTheCache checks that a small sketch is not kept
// decoded once it is clean and unused, while a large one is, and that
// the small one reads back the same from bbolt.
func TestSmallSketchesLeaveTheCache(t *testing.T) {
	s, _ := openStore(t, Options{CheckpointInterval: time.Hour})
	if err := addHashes(s, "small", []uint64{1, 2, 3}, true); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "large", hllSpec(11))
	if err := addHashes(s, "large", randomHashes(rand.New(rand.NewPCG(3, 3)), 5000), false); err != nil {
		t.Fatal(err)
	}
	want := rawOf(t, s, "small")
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	s.cacheMu.Lock()
	_, small := s.entries["small"]
	_, large := s.entries["large"]
	s.cacheMu.Unlock()
	if small || !large {
		t.Fatalf("after a checkpoint: small sketch cached %v, large %v; want false, true", small, large)
	}
	if got := rawOf(t, s, "small"); string(got) != string(want) {
		t.Fatalf("small sketch reads back %x, want %x", got, want)
	}
}
