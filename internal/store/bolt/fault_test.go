package bolt

import (
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/sketch"
)

// faults is a log fault hook the test steers: fn decides the outcome of
// each "write" and "fdatasync" of a log segment.
type faults struct {
	mu sync.Mutex
	fn func(op string) error
}

func (f *faults) hook(op string) error {
	f.mu.Lock()
	fn := f.fn
	f.mu.Unlock()
	if fn == nil {
		return nil
	}
	return fn(op)
}

func (f *faults) set(fn func(op string) error) {
	f.mu.Lock()
	f.fn = fn
	f.mu.Unlock()
}

var errInjected = errors.New("injected EIO")

// failing fails every operation named op.
func failing(op string) func(string) error {
	return func(o string) error {
		if o == op {
			return errInjected
		}
		return nil
	}
}

// TestLogFailureLeavesMemoryDurable: after a log write or fdatasync fails,
// the change it carried is not visible, is refused with Unavailable, never
// reaches bbolt (not even through a checkpoint that was waiting for that
// sync), and the store is not ready; once the log works again the store
// recovers by itself, and a reopen shows exactly the acknowledged writes.
func TestLogFailureLeavesMemoryDurable(t *testing.T) {
	for _, op := range []string{"write", "fdatasync"} {
		t.Run(op, func(t *testing.T) {
			f := &faults{}
			s, path := openStore(t, Options{CheckpointInterval: time.Hour, logFault: f.hook})
			r := rand.New(rand.NewPCG(8, 9))
			mustCreate(t, s, "h", hllSpec(11))
			acked := randomHashes(r, 500)
			if err := addHashes(s, "h", acked, false); err != nil {
				t.Fatal(err)
			}
			want := expectHLL(t, hllParams(11), acked)

			// The failing sync waits until a checkpoint has taken its
			// position, which then includes the unsynced record.
			inSync, proceed := make(chan struct{}), make(chan struct{})
			var once sync.Once
			f.set(func(o string) error {
				if o != op {
					return nil
				}
				once.Do(func() { close(inSync); <-proceed })
				return errInjected
			})
			lost := randomHashes(r, 500)
			addDone := make(chan error, 1)
			go func() { addDone <- addHashes(s, "h", lost, false) }()
			<-inSync
			cpDone := make(chan error, 1)
			go func() { cpDone <- s.Checkpoint(ctx) }()
			time.Sleep(20 * time.Millisecond) // let the checkpoint take its copy and wait
			close(proceed)
			if err := <-addDone; sketch.KindOf(err) != sketch.Unavailable {
				t.Fatalf("add whose %s failed = %v, want Unavailable", op, err)
			}
			if err := <-cpDone; err == nil {
				t.Fatal("a checkpoint covering a failed sync succeeded")
			}
			if s.Ready() {
				t.Error("Ready() with a failed log")
			}
			// While the log still fails, a checkpoint rebuilds memory but
			// cannot restart the log.
			if err := s.Checkpoint(ctx); err == nil {
				t.Fatal("Checkpoint restarted a log whose syncs still fail")
			}
			if got := rawOf(t, s, "h"); !slices.Equal(got, want) {
				t.Fatal("the write whose sync failed is visible")
			}
			if err := addHashes(s, "h", randomHashes(r, 10), false); sketch.KindOf(err) != sketch.Unavailable {
				t.Fatalf("write with a failed log = %v, want Unavailable", err)
			}

			f.set(nil)
			waitReady(t, s)
			more := randomHashes(r, 300)
			if err := addHashes(s, "h", more, false); err != nil {
				t.Fatalf("write after the log recovered: %v", err)
			}
			want = expectHLL(t, hllParams(11), acked, more)
			if got := rawOf(t, s, "h"); !slices.Equal(got, want) {
				t.Fatal("after recovery the sketch is not that of the acknowledged ids")
			}
			s.Close()
			s = reopen(t, path, Options{})
			if got := rawOf(t, s, "h"); !slices.Equal(got, want) {
				t.Fatal("after reopen the sketch is not that of the acknowledged ids")
			}
		})
	}
}

// waitReady waits (at most 10s) for the store to recover its log.
func waitReady(tb testing.TB, s *DB) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !s.Ready() {
		if time.Now().After(deadline) {
			tb.Fatal("the store did not recover its log within 10s of it working again")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLogFailureCMSRetries: concurrent CMS clients whose adds share
// syncs; some syncs fail, and every client retries a failed add until it
// is acknowledged. Each id's count must end exactly at its acknowledged
// adds: a failed add is not counted, and its retry counts once. The same
// after a reopen.
func TestLogFailureCMSRetries(t *testing.T) {
	f := &faults{}
	s, path := openStore(t, Options{CheckpointInterval: time.Hour, logFault: f.hook})
	spec := sketch.Spec{Params: sketch.CMSParams{Params: cms.Params{Width: 2000, Depth: 5}}}
	mustCreate(t, s, "c", spec)
	var syncs atomic.Int64
	f.set(func(op string) error {
		if op != "fdatasync" {
			return nil
		}
		time.Sleep(time.Millisecond) // let writers pile up into shared syncs
		if n := syncs.Add(1); n%15 == 7 && n < 100 {
			return errInjected
		}
		return nil
	})
	const clients, adds = 6, 40
	var failures atomic.Int64
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			items := []cms.Item{{ID: cms.IntID(int64(c)), Count: 1}, {ID: cms.TextID("shared"), Count: 2}}
			for range adds {
				for try := 0; ; try++ {
					err := addItems(s, "c", items)
					if err == nil {
						break
					}
					if sketch.KindOf(err) != sketch.Unavailable || try > 1000 {
						t.Errorf("client %d: %v", c, err)
						return
					}
					failures.Add(1)
					time.Sleep(5 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	if failures.Load() == 0 {
		t.Fatal("no add failed; the test proves nothing")
	}
	check := func(s *DB) {
		t.Helper()
		err := viewCMS(s, "c", func(c *cms.Sketch) error {
			for id := range clients {
				if got := c.EstimateInt(int64(id)); got != adds {
					t.Errorf("count of client %d = %d, want its %d acknowledged adds", id, got, adds)
				}
			}
			if got := c.EstimateText([]byte("shared")); got != 2*clients*adds {
				t.Errorf("shared count = %d, want %d", got, 2*clients*adds)
			}
			if got := c.Total(); got != 3*clients*adds {
				t.Errorf("total = %d, want %d", got, 3*clients*adds)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	waitReady(t, s)
	check(s)
	t.Logf("%d failed adds retried", failures.Load())
	s.Close()
	check(reopen(t, path, Options{}))
}

// TestNoEmptySegments: checkpoints that fail, here because the log's
// syncs keep failing, leave no segment files behind, and once the log
// works again exactly one segment remains.
//
// The test waits for each count instead of taking it once, because a
// correct store holds one more segment for a moment in both places:
// while the log fails, the checkpoint loop retries recovery every second
// on its own, and each try holds its new segment until the probe sync
// fails and it removes it; and Ready turns true as soon as wal.reset
// clears the failure, while reset still closes and removes the old
// segments, whose records the recovery already checkpointed. A segment
// left behind stays, so the wait still fails on one.
func TestNoEmptySegments(t *testing.T) {
	f := &faults{}
	s, path := openStore(t, Options{CheckpointInterval: time.Hour, logFault: f.hook})
	mustCreate(t, s, "h", hllSpec(10))
	count := func() int {
		t.Helper()
		entries, err := os.ReadDir(path + ".wal")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".log") {
				n++
			}
		}
		return n
	}
	waitSegments := func(want int, when string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			n := count()
			if n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d segment files %s, want %d", n, when, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	before := count()
	f.set(failing("fdatasync"))
	if err := addHashes(s, "h", []uint64{1 << 40}, false); err == nil {
		t.Fatal("add acknowledged with failing syncs")
	}
	for range 5 {
		if err := s.Checkpoint(ctx); err == nil {
			t.Fatal("checkpoint succeeded with failing syncs")
		}
	}
	waitSegments(before, "after failed checkpoints")
	f.set(nil)
	waitReady(t, s)
	waitSegments(1, "after the log recovered")
}

// TestLogFailureDuringWrite: a log that fails while a write runs (the
// flusher's fdatasync failing after the write checked the log, before it
// appended its record) answers that write as unavailable, as every other
// write during the failure, never as an internal error; the write is not
// applied once the store has recovered.
func TestLogFailureDuringWrite(t *testing.T) {
	s, _ := openStore(t, Options{CheckpointInterval: time.Hour})
	spec := sketch.Spec{Params: sketch.CMSParams{Params: cms.Params{Width: 200, Depth: 3}}}
	mustCreate(t, s, "c", spec)
	b, err := spec.Params.Kind().Prepare(sketch.IDs([]cms.ID{cms.IntID(7)}))
	if err != nil {
		t.Fatal(err)
	}
	err = s.update(ctx, []string{"c"}, func(t *tx) error {
		s.wal.mu.Lock()
		s.wal.failLocked(errInjected)
		s.wal.mu.Unlock()
		return t.add(t.es[0], b)
	})
	if kind := sketch.KindOf(err); kind != sketch.Unavailable {
		t.Fatalf("a write during a log failure: %v (%v), want Unavailable", err, kind)
	}
	waitReady(t, s)
	err = viewCMS(s, "c", func(c *cms.Sketch) error {
		if got := c.EstimateInt(7); got != 0 {
			t.Errorf("the failed write counted: %d", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
