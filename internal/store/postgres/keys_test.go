package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/postgres"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func cmsSpec() sketch.Spec {
	return sketch.Spec{Params: sketch.CMSParams{Params: cms.Params{Width: 64, Depth: 2}}}
}

var oneItem = storetest.Input{IDs: []cms.ID{cms.IntID(7)}, Counts: []uint64{1}}

func keyed(target, key string) (context.Context, *idem.Guard) {
	g := &idem.Guard{ID: idem.ID{Scope: "s", Target: target, Key: key}, Render: func(res idem.Result) ([]byte, error) {
		return []byte(fmt.Sprintf("accepted %d", res.Added.Accepted)), nil
	}}
	copy(g.Fingerprint[:], key)
	return idem.With(ctx, g), g
}

func total(t *testing.T, db *postgres.DB, name string) int64 {
	t.Helper()
	info, err := db.Describe(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return info.Total
}

func keyRows(t *testing.T, db *postgres.DB) int {
	t.Helper()
	var n int
	if err := db.Pool().QueryRow(ctx, "SELECT count(*) FROM sketchd_idempotency").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestKeysExpire: a key is remembered for the window and no longer; the
// sweep deletes it, and it may then guard a new write.
func TestKeysExpire(t *testing.T) {
	c := &clock{t: time.Now().UTC()}
	db := openWith(t, 1, postgres.Options{MaxConns: 3, Now: c.now, KeyWindow: time.Hour, KeySweepInterval: time.Hour})[0]
	if _, _, err := db.Create(ctx, "c", cmsSpec()); err != nil {
		t.Fatal(err)
	}
	kctx, g := keyed("c", "k")
	if _, err := db.Add(kctx, "c", oneItem, false); err != nil {
		t.Fatal(err)
	}
	c.advance(59 * time.Minute)
	if _, ok, err := db.Remembered(ctx, g.ID); !ok || err != nil {
		t.Fatalf("a key inside its window: remembered %v, %v", ok, err)
	}
	if _, err := db.SweepKeys(ctx, c.now()); err != nil {
		t.Fatal(err)
	}
	if n := keyRows(t, db); n != 1 {
		t.Fatalf("%d key rows after sweeping inside the window, want 1", n)
	}
	kctx, _ = keyed("c", "k")
	if _, err := db.Add(kctx, "c", oneItem, false); !errors.Is(err, idem.ErrTaken) {
		t.Fatalf("the key inside its window: %v, want ErrTaken", err)
	}
	c.advance(2 * time.Minute)
	if _, ok, _ := db.Remembered(ctx, g.ID); ok {
		t.Fatal("a key past its window is remembered")
	}
	// Past the window, not yet swept: the key guards a new write.
	kctx, _ = keyed("c", "k")
	if _, err := db.Add(kctx, "c", oneItem, false); err != nil {
		t.Fatalf("the key past its window: %v", err)
	}
	if got := total(t, db, "c"); got != 2 {
		t.Fatalf("total %d, want 2", got)
	}
	c.advance(2 * time.Hour)
	if _, err := db.SweepKeys(ctx, c.now()); err != nil {
		t.Fatal(err)
	}
	if n := keyRows(t, db); n != 0 {
		t.Fatalf("%d key rows after the window, want 0", n)
	}
	if n, _, _ := db.IdempotencyKeys(); n != 0 {
		t.Fatalf("IdempotencyKeys = %d, want 0", n)
	}
}

// TestKeysSweepBound: past KeyBytes a sweep deletes the oldest keys.
func TestKeysSweepBound(t *testing.T) {
	c := &clock{t: time.Now().UTC()}
	const bound = 3000
	db := openWith(t, 1, postgres.Options{MaxConns: 3, Now: c.now, KeyBytes: bound, KeySweepInterval: time.Hour})[0]
	if _, _, err := db.Create(ctx, "c", cmsSpec()); err != nil {
		t.Fatal(err)
	}
	var gs []*idem.Guard
	for i := range 60 {
		c.advance(time.Second)
		kctx, g := keyed("c", fmt.Sprintf("key-%03d", i))
		if _, err := db.Add(kctx, "c", oneItem, false); err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
	}
	evicted, err := db.SweepKeys(ctx, c.now())
	if err != nil {
		t.Fatal(err)
	}
	n, bytes, total := db.IdempotencyKeys()
	if evicted == 0 || total != evicted || bytes > bound || n != 60-int(evicted) || n != keyRows(t, db) {
		t.Fatalf("sweep evicted %d; IdempotencyKeys = %d keys, %d bytes, %d evicted; %d rows", evicted, n, bytes, total, keyRows(t, db))
	}
	for i, g := range gs {
		_, ok, _ := db.Remembered(ctx, g.ID)
		if want := i >= 60-n; ok != want {
			t.Fatalf("key %d remembered = %v, want %v (oldest go first)", i, ok, want)
		}
	}
}

// TestKeysSweepBoundBelowOneKey: a bound smaller than one key keeps no
// key made before the sweep.
func TestKeysSweepBoundBelowOneKey(t *testing.T) {
	c := &clock{t: time.Now().UTC()}
	db := openWith(t, 1, postgres.Options{MaxConns: 3, Now: c.now, KeyBytes: 1, KeySweepInterval: time.Hour})[0]
	if _, _, err := db.Create(ctx, "c", cmsSpec()); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		c.advance(time.Second)
		kctx, _ := keyed("c", fmt.Sprintf("key-%d", i))
		if _, err := db.Add(kctx, "c", oneItem, false); err != nil {
			t.Fatal(err)
		}
	}
	c.advance(time.Second)
	evicted, err := db.SweepKeys(ctx, c.now())
	if err != nil || evicted != 3 || keyRows(t, db) != 0 {
		t.Fatalf("SweepKeys = %d, %v with %d rows left; want all 3 evicted", evicted, err, keyRows(t, db))
	}
}

// TestKeysAcrossNodes: the same key sent to two nodes at once applies
// once: the second node's claim waits for the first's transaction and
// then finds the key taken. Every path is raced: the committer (adds to a
// known HLL take its fast path), events with series, and series adds.
func TestKeysAcrossNodes(t *testing.T) {
	dbs := open(t, 2)
	if _, _, err := dbs[0].Create(ctx, "c", cmsSpec()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := dbs[0].Create(ctx, "h", hllSpec(11)); err != nil {
		t.Fatal(err)
	}
	spec := &series.Spec{Params: cmsSpec().Params, TZ: "UTC", Levels: []series.LevelSpec{{Level: series.Day, Retention: series.Duration{Days: 30}}}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := dbs[0].CreateSeries(ctx, "cs", spec); err != nil {
		t.Fatal(err)
	}
	hspec := &series.Spec{Params: hllSpec(11).Params, TZ: "UTC", Levels: []series.LevelSpec{{Level: series.Day, Retention: series.Duration{Days: 30}}}}
	if _, _, err := dbs[0].CreateSeries(ctx, "hs", hspec); err != nil {
		t.Fatal(err)
	}
	// Both nodes know the HLL, so its adds take the fast path.
	for _, db := range dbs {
		if _, err := db.Add(ctx, "h", storetest.Ints(0, 1), false); err != nil {
			t.Fatal(err)
		}
	}
	writes := map[string]func(db *postgres.DB, ctx context.Context) error{
		"c": func(db *postgres.DB, ctx context.Context) error {
			_, err := db.Add(ctx, "c", oneItem, false)
			return err
		},
		"h": func(db *postgres.DB, ctx context.Context) error {
			_, err := db.Add(ctx, "h", storetest.Ints(100, 200), false)
			return err
		},
		"": func(db *postgres.DB, ctx context.Context) error {
			_, err := db.AddEvents(ctx, []sketch.Event{{ID: cms.IntID(7), Sketches: []string{"c"}, Series: &sketch.EventSeries{Names: []string{"cs"}}}}, false)
			return err
		},
		"cs": func(db *postgres.DB, ctx context.Context) error {
			_, err := db.AddSeries(ctx, "cs", time.Now(), oneItem)
			return err
		},
		"hs": func(db *postgres.DB, ctx context.Context) error {
			_, err := db.AddSeries(ctx, "hs", time.Now(), storetest.Ints(0, 5))
			return err
		},
	}
	for round := range 5 {
		for target, write := range writes {
			var wg sync.WaitGroup
			errs := make([]error, 2*len(dbs))
			for i := range errs {
				wg.Go(func() {
					kctx, _ := keyed(target, fmt.Sprintf("round-%d", round))
					errs[i] = write(dbs[i%len(dbs)], kctx)
				})
			}
			wg.Wait()
			applied := 0
			for _, err := range errs {
				switch {
				case err == nil:
					applied++
				case errors.Is(err, idem.ErrTaken):
				default:
					t.Fatalf("%q round %d: %v", target, round, err)
				}
			}
			if applied != 1 {
				t.Fatalf("%q round %d: %d of %d racing writes applied, want 1", target, round, applied, len(errs))
			}
		}
	}
	// c got one item per round from its adds and one from the events.
	if got := total(t, dbs[1], "c"); got != 10 {
		t.Fatalf("total of c = %d, want 10", got)
	}
	var seriesTotal int64
	err := dbs[1].ViewSeries(ctx, "cs", func(*series.Spec) ([]series.Run, error) {
		day := time.Now().UTC().Truncate(24 * time.Hour)
		return []series.Run{{Level: series.Day, First: day, Last: day, Count: 1}}, nil
	}, func(_ *series.Spec, found []series.Bucket) error {
		if len(found) != 1 {
			return fmt.Errorf("%d buckets found, want 1", len(found))
		}
		var info sketch.Info
		found[0].Sketch.Describe(&info)
		seriesTotal = info.Total
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seriesTotal != 10 {
		t.Fatalf("series total = %d, want 10 (5 adds, 5 events)", seriesTotal)
	}
}
