package bolt

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/sketch"
)

// TestMain removes the benchmarks' shared stores once every test and
// benchmark has run.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, f := range benchFixtures {
		f.s.Close()
		os.RemoveAll(f.dir)
	}
	os.Exit(code)
}

// benchFixture is a store built once per test binary and shared by the
// runs of a benchmark (-count), so its peers run interleaved on it.
type benchFixture struct {
	s   *DB
	dir string
	n   int
}

var (
	benchFixturesMu sync.Mutex
	benchFixtures   = map[string]*benchFixture{}
)

// listBenchSketches is how many sketches BenchmarkListPage holds:
// SKETCHD_LIST_BENCH_SKETCHES, default a million.
func listBenchSketches(tb testing.TB) int {
	n := 1_000_000
	if v := os.Getenv("SKETCHD_LIST_BENCH_SKETCHES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 2000 {
			tb.Fatalf("SKETCHD_LIST_BENCH_SKETCHES=%q: want a whole number >= 2000", v)
		}
	}
	return n
}

// smallSketchStore returns a store holding n EXPLICIT HLLs of 3 ids
// each, named %08d, checkpointed (settled) or all changed since the last
// checkpoint (unsettled), built on first use.
func smallSketchStore(tb testing.TB, n int, settled bool) *DB {
	tb.Helper()
	key := fmt.Sprintf("small-%d-%v", n, settled)
	benchFixturesMu.Lock()
	defer benchFixturesMu.Unlock()
	if f := benchFixtures[key]; f != nil {
		return f.s
	}
	dir, err := os.MkdirTemp("", "sketchd-bench-")
	if err != nil {
		tb.Fatal(err)
	}
	s, err := Open(filepath.Join(dir, "sketchd.db"), Options{
		CheckpointInterval: 24 * time.Hour, CheckpointBytes: 1 << 40, CacheBytes: 1 << 40, CheckpointSketches: 1 << 30,
	})
	if err != nil {
		tb.Fatal(err)
	}
	benchFixtures[key] = &benchFixture{s: s, dir: dir, n: n}
	start := time.Now()
	if err := createSmall(s, 0, n); err != nil {
		tb.Fatal(err)
	}
	if settled {
		if err := s.Checkpoint(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Logf("built %d sketches (settled %v) in %v", n, settled, time.Since(start))
	return s
}

// createSmall creates the sketches %08d for i in [from, to), each with
// the ids 3i, 3i+1, 3i+2, a thousand sketches a write, retrying writes
// refused while a checkpoint runs.
func createSmall(s *DB, from, to int) error {
	evs := make([]sketch.Event, 0, 3000)
	for i := from; i < to; {
		evs = evs[:0]
		for ; i < to && len(evs) < cap(evs); i++ {
			name := fmt.Sprintf("%08d", i)
			for j := range 3 {
				evs = append(evs, sketch.Event{ID: cms.IntID(int64(3*i + j)), Sketches: []string{name}})
			}
		}
		for {
			_, err := s.AddEvents(ctx, evs, true)
			if sketch.KindOf(err) == sketch.Unavailable {
				time.Sleep(5 * time.Millisecond) // a checkpoint runs: as a client would
				continue
			}
			if err != nil {
				return err
			}
			break
		}
	}
	return nil
}

// threadCPU returns the CPU time the calling thread has used; with the
// goroutine locked to its thread it is the CPU of the work the goroutine
// did itself, whatever else runs on the machine.
func threadCPU(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkListPage lists a page of 1,000 sketches from a random place in
// a store of a million small ones (SKETCHD_LIST_BENCH_SKETCHES), all
// changed since the last checkpoint (unsettled), and the same page of a
// store holding the same sketches checkpointed (settled) as the peer,
// alternately in each iteration. Both stores are built once per binary.
// The figures are the CPU of the listing goroutine (locked to its
// thread), steady on a busy machine where ns/op is not, and their ratio:
//
//	go test -run '^$' -bench ListPage -benchtime 100x -count 6 ./internal/store/bolt
func BenchmarkListPage(b *testing.B) {
	n := listBenchSketches(b)
	unsettled := smallSketchStore(b, n, false)
	settled := smallSketchStore(b, n, true)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := rand.New(rand.NewPCG(7, 7))
	page := func(s *DB, after string) time.Duration {
		cpu0 := threadCPU(b)
		page, more, err := s.List(ctx, "", after, 1000)
		if err != nil || len(page) != 1000 || !more {
			b.Fatalf("List after %s: %d sketches, more %v, %v", after, len(page), more, err)
		}
		return threadCPU(b) - cpu0
	}
	var cpuU, cpuS time.Duration
	b.ReportAllocs()
	for b.Loop() {
		after := fmt.Sprintf("%08d", r.IntN(n-1000))
		cpuU += page(unsettled, after)
		cpuS += page(settled, after)
	}
	b.ReportMetric(float64(cpuU.Microseconds())/float64(b.N), "unsettled-cpu-us/page")
	b.ReportMetric(float64(cpuS.Microseconds())/float64(b.N), "settled-cpu-us/page")
	b.ReportMetric(float64(cpuU)/float64(cpuS), "unsettled/settled")
}
