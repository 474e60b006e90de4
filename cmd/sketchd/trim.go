package main

import (
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

// trimmer returns to the system the heap that the embedded store's
// checkpoints let go of (bolt.Options.Released), instead of leaving it
// mapped at the garbage collector's pace.
//
// Without it, a burst of new small sketches left the process at the size
// its heap reached during the burst: the collector's goal is twice the
// heap live at its last cycle, the runtime returns memory above that
// goal only slowly, and with no more allocation no cycle comes to lower
// the goal (100,000 three-id sketches: 60-80 MiB of anonymous memory once
// checkpointed, against 20 after a collection).
//
// The threshold only spares a collection for a trivial release; the gap
// bounds the cost.
//
// A trim is debug.FreeOSMemory: a full collection, then every free page
// handed back. It runs once the checkpoints since the last trim released
// at least minBytes, on a goroutine of its own, and never sooner than gap
// after the last one, where gap is the larger of minGap and 100 times
// what the last trim took: trims cost at most about 1% of a core, plus
// faulting in again what the heap grows back into (a burst of new
// sketches that goes on: 100,000 of them in 10 requests took no more
// CPU with trims than without). A release within the gap is not lost;
// the trim waits for the gap's end, so the heap a burst leaves behind is
// returned within a second of its last checkpoint.
type trimmer struct {
	minBytes int64
	minGap   time.Duration
	log      *slog.Logger
	// free, now and after are debug.FreeOSMemory, time.Now and
	// time.AfterFunc, replaced in tests.
	free  func()
	now   func() time.Time
	after func(time.Duration, func()) *time.Timer

	mu       sync.Mutex
	released int64 // since the last trim
	timer    *time.Timer
	pending  bool
	stopped  bool
	last     time.Time
	gap      time.Duration
}

// Defaults: a release worth trimming is 1 MiB or more (about 2,500
// small sketches), and trims come at most every second.
const (
	trimMinBytes = 1 << 20
	trimMinGap   = time.Second
)

func newTrimmer(log *slog.Logger) *trimmer {
	return &trimmer{
		minBytes: trimMinBytes, minGap: trimMinGap, log: log,
		free: debug.FreeOSMemory, now: time.Now, after: time.AfterFunc,
	}
}

// noteReleased is bolt.Options.Released: bytes of heap a checkpoint let
// go of. It schedules a trim once they add up to minBytes.
func (t *trimmer) noteReleased(bytes int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.released += bytes
	if t.released < t.minBytes || t.pending || t.stopped {
		return
	}
	t.pending = true
	wait := max(0, t.last.Add(t.gap).Sub(t.now()))
	t.timer = t.after(wait, t.trim)
}

// trim returns the free heap to the system and notes when and how long
// it took.
func (t *trimmer) trim() {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return
	}
	released := t.released
	t.released = 0
	t.mu.Unlock()
	start := t.now()
	t.free()
	took := t.now().Sub(start)
	t.mu.Lock()
	t.pending = false
	t.last = t.now()
	t.gap = max(t.minGap, 100*took)
	t.mu.Unlock()
	t.log.Debug("returned the heap checkpoints released to the system", "released_bytes", released, "took", took)
}

// stop cancels a trim not yet started; none starts after it.
func (t *trimmer) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	if t.timer != nil {
		t.timer.Stop()
	}
}
