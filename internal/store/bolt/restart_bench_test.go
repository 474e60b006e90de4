package bolt

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// processCPU returns the CPU time the process has used (every thread:
// the garbage collector's too).
func processCPU(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func envInt(tb testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		tb.Fatalf("%s=%q: want a whole number", name, v)
	}
	return n
}

// BenchmarkRestart measures Open after a crash of a store holding
// SKETCHD_RESTART_BENCH_SETTLED checkpointed small sketches (default a
// million) and SKETCHD_RESTART_BENCH_UNSETTLED new ones in the log only
// (default 20,000: the most the default CheckpointSketches lets wait
// before writes are refused), EXPLICIT HLLs of 3 ids; the new ones are
// written with checkpoints held off, then the store is abandoned as by
// kill -9 (Crash) and opened with the default options. The peer is Open
// of the same store after a clean Close, in the same iteration. Figures:
// the process CPU of each Open, and the Go heap right after the crashed
// Open (live and garbage: what it left behind):
//
//	go test -run '^$' -bench Restart -benchtime 3x -count 2 ./internal/store/bolt
func BenchmarkRestart(b *testing.B) {
	settled := envInt(b, "SKETCHD_RESTART_BENCH_SETTLED", 1_000_000)
	unsettled := envInt(b, "SKETCHD_RESTART_BENCH_UNSETTLED", 20_000)
	path := filepath.Join(b.TempDir(), "sketchd.db")
	hold := Options{CheckpointInterval: 24 * time.Hour, CheckpointBytes: 1 << 40, CacheBytes: 1 << 40, CheckpointSketches: 1 << 30}
	s, err := Open(path, hold)
	if err != nil {
		b.Fatal(err)
	}
	if err := createSmall(s, 0, settled); err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	var crashed, clean time.Duration
	var peak uint64
	next := settled
	for b.Loop() {
		b.StopTimer()
		if s, err = Open(path, hold); err != nil {
			b.Fatal(err)
		}
		if err := createSmall(s, next, next+unsettled); err != nil {
			b.Fatal(err)
		}
		next += unsettled
		s.Crash()
		runtime.GC()
		b.StartTimer()
		cpu0 := processCPU(b)
		s, err = Open(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		crashed += processCPU(b) - cpu0
		b.StopTimer()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		cpu0 = processCPU(b)
		if s, err = Open(path, Options{}); err != nil {
			b.Fatal(err)
		}
		clean += processCPU(b) - cpu0
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(crashed.Milliseconds())/float64(b.N), "crashed-open-cpu-ms")
	b.ReportMetric(float64(clean.Milliseconds())/float64(b.N), "clean-open-cpu-ms")
	b.ReportMetric(float64(peak)/(1<<20), "heap-after-crashed-open-MiB")
}
