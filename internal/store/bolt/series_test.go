package bolt

import (
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// centurySeries creates s keeping hours for a century and adds ids 1..3
// stamped at, returning the spec.
func centurySeries(tb testing.TB, s *DB, at time.Time) *series.Spec {
	tb.Helper()
	spec := &series.Spec{Params: sketch.HLLParams{Params: hllParams(11)}, TZ: "UTC",
		Levels: []series.LevelSpec{{Level: series.Hour, Retention: series.Duration{Years: 100}}}, LateLimit: series.Duration{Years: 100}}
	if err := spec.Validate(); err != nil {
		tb.Fatal(err)
	}
	if _, _, err := s.CreateSeries(ctx, "century", spec); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.AddSeries(ctx, "century", at, storetest.Ints(1, 4)); err != nil {
		tb.Fatal(err)
	}
	return spec
}

// viewRun reads one run of name and returns how many buckets it found and
// how many cache entries there were while it read them.
func viewRun(tb testing.TB, s *DB, name string, run series.Run) (found, entries int) {
	tb.Helper()
	err := s.ViewSeries(ctx, name, func(*series.Spec) ([]series.Run, error) { return []series.Run{run}, nil }, func(_ *series.Spec, bs []series.Bucket) error {
		found = len(bs)
		s.cacheMu.Lock()
		entries = len(s.entries)
		s.cacheMu.Unlock()
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return found, entries
}

// TestSeriesReadCachesOnlyStored: reading ten years of hours of a series
// holding one bucket looks up, pins and caches that bucket only, not an
// entry per hour (the read of 876,000 hours that took a gigabyte made
// one each), whether the bucket is still in memory or in bbolt.
func TestSeriesReadCachesOnlyStored(t *testing.T) {
	s, _ := openStore(t, Options{})
	now := time.Now().UTC()
	at := now.Add(-5 * time.Hour)
	centurySeries(t, s, at)
	run := series.Run{Level: series.Hour, First: now.AddDate(-10, 0, 0).Truncate(time.Hour), Last: now.Truncate(time.Hour), Count: 87_600}
	for _, when := range []string{"in memory", "in bbolt"} {
		if when == "in bbolt" {
			if err := s.Checkpoint(ctx); err != nil {
				t.Fatal(err)
			}
		}
		found, entries := viewRun(t, s, "century", run)
		if found != 1 || entries > 4 {
			t.Errorf("%s: a run of ten years of hours found %d buckets with %d cache entries; want 1 bucket and a handful of entries", when, found, entries)
		}
	}
}

// TestSeriesReadDuringCheckpoint: a bucket that a running checkpoint has
// taken from the dirty set, but not yet written to bbolt, is still found
// by a range read and by describe (between the two it was in neither
// place a scan looked).
func TestSeriesReadDuringCheckpoint(t *testing.T) {
	s, _ := openStore(t, Options{CheckpointInterval: time.Hour})
	now := time.Now().UTC()
	centurySeries(t, s, now.Add(-time.Hour))
	run := series.Run{Level: series.Hour, First: now.AddDate(0, 0, -1).Truncate(time.Hour), Last: now.Truncate(time.Hour), Count: 25}
	s.cpRun.Lock()
	s.cp.Lock()
	snaps := s.takeDirty()
	s.cp.Unlock()
	found, _ := viewRun(t, s, "century", run)
	info, err := s.DescribeSeries(ctx, "century")
	if err != nil {
		t.Fatal(err)
	}
	s.abandon(snaps)
	s.cpRun.Unlock()
	if found != 1 || info.Levels[0].Buckets != 1 {
		t.Errorf("mid-checkpoint: the read found %d buckets and describe counts %d, want 1 and 1", found, info.Levels[0].Buckets)
	}
	if found, _ := viewRun(t, s, "century", run); found != 1 {
		t.Errorf("after the checkpoint gave up: %d buckets", found)
	}
}
