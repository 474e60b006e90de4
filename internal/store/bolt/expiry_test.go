package bolt

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// TestExpiryPassPrefersMemory: the expiry pass reads a sketch that waits
// for a checkpoint from memory, not from its stored record, which is
// older. The record says the sketch expired (written 70 minutes before
// the pass, expiring an hour after its last write); the add 20 minutes
// before the pass, not yet checkpointed, says it did not.
func TestExpiryPassPrefersMemory(t *testing.T) {
	clk := storetest.NewClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	s, err := Open(filepath.Join(t.TempDir(), "x.db"), Options{Now: clk.Now, CheckpointInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	spec := hllSpec(11)
	spec.Expiry = sketch.Expiry{After: time.Hour}
	for _, n := range []string{"kept", "gone"} {
		if _, _, err := s.Create(ctx, n, spec); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Add(ctx, n, storetest.Ints(0, 10), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(50 * time.Minute)
	if _, err := s.Add(ctx, "kept", storetest.Ints(10, 20), false); err != nil {
		t.Fatal(err)
	}
	clk.Advance(20 * time.Minute)
	n, err := s.ExpireSketches(ctx, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("ExpireSketches removed %d, want 1 (gone)", n)
	}
	if _, err := s.Describe(ctx, "kept"); err != nil {
		t.Errorf("kept, written 20 minutes before the pass: %v", err)
	}
	if _, err := s.Describe(ctx, "gone"); sketch.KindOf(err) != sketch.NotFound {
		t.Errorf("gone after the pass: %v, want NotFound", err)
	}
}
