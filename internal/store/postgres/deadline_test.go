package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/store/postgres"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// TestWriteDeadlineCountsTheQueue: a write is answered by its request's
// deadline however long it waited for the committer. A transaction that
// cannot get its row lock (as one behind a cut link cannot finish) is
// cancelled at the deadline of its writes, not WriteTimeout after it
// began, and the write queued behind it is answered by its own deadline
// too. Once the lock is released, writes commit again.
func TestWriteDeadlineCountsTheQueue(t *testing.T) {
	t.Parallel()
	db := openWith(t, 1, postgres.Options{WriteTimeout: 30 * time.Second})[0]
	for _, n := range []string{"held", "free"} {
		if _, _, err := db.Create(ctx, n, hllSpec(11)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Add(ctx, n, storetest.Ints(0, 10), false); err != nil {
			t.Fatal(err)
		}
	}
	lock, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, "SELECT 1 FROM sketchd_sketches WHERE name = 'held' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}

	const deadline = time.Second
	var wg sync.WaitGroup
	var errs [2]error
	var took [2]time.Duration
	for i, name := range []string{"held", "free"} {
		wg.Go(func() {
			if i == 1 {
				time.Sleep(200 * time.Millisecond) // queued behind the first
			}
			c, cancel := context.WithTimeout(ctx, deadline)
			defer cancel()
			start := time.Now()
			_, errs[i] = db.Add(c, name, storetest.Ints(100, 200), false)
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	// The margin is for a loaded machine; without the request's deadline
	// the first write would wait out WriteTimeout, 30 s.
	for i, name := range []string{"held", "free"} {
		if took[i] > deadline+5*time.Second {
			t.Errorf("the write to %s answered after %v (%v); its deadline was %v", name, took[i], errs[i], deadline)
		}
	}
	if errs[0] == nil {
		t.Error("the write to a row locked past its deadline committed")
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := db.Add(c, "held", storetest.Ints(100, 200), false); err != nil {
		t.Errorf("a write once the lock is released: %v", err)
	}
}
