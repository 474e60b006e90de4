package bolt

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// BenchmarkScale builds 100,000 named HLL sketches of mixed sizes (70%
// EXPLICIT with a few ids, 20% SPARSE, 10% FULL at log2m 14), checkpoints,
// and then measures paging through all of them 1,000 at a time, with the
// cache bounded at 256 MiB. It reports the time per page, the heap after
// a GC, the cache and the file size:
//
//	go test -run '^$' -bench Scale -benchtime 3x ./internal/store/bolt
func BenchmarkScale(b *testing.B) {
	const n = 100_000
	s, path := openStore(b, Options{CacheBytes: 256 << 20, CheckpointInterval: time.Hour})
	start := time.Now()
	var wg sync.WaitGroup
	work := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				r := rand.New(rand.NewPCG(uint64(i), 1))
				size := 1 + r.IntN(50)
				switch i % 10 {
				case 0:
					size = 8000 + r.IntN(20000)
				case 1, 2:
					size = 1500 + r.IntN(2000)
				}
				hs := make([]uint64, size)
				for j := range hs {
					hs[j] = r.Uint64()
				}
				if err := addHashes(s, fmt.Sprintf("s:%06d", i), hs, true); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := s.Checkpoint(ctx); err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d sketches in %v", n, time.Since(start))

	counts := map[string]int{}
	s.SketchCounts(func(kind, rep string, k int) { counts[rep] += k })
	if counts["EXPLICIT"]+counts["SPARSE"]+counts["FULL"] != n || counts["FULL"] < n/20 || counts["SPARSE"] < n/10 {
		b.Fatalf("representations %v, want %d mixed sketches", counts, n)
	}
	pages := 0
	var scan time.Duration
	for b.Loop() {
		t0 := time.Now()
		after, seen := "", 0
		for {
			page, more, err := s.List(ctx, "s:", after, 1000)
			if err != nil {
				b.Fatal(err)
			}
			seen += len(page)
			pages++
			if !more {
				break
			}
			after = page[len(page)-1].Name
		}
		scan += time.Since(t0)
		if seen != n {
			b.Fatalf("listed %d sketches, want %d", seen, n)
		}
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	entries, cacheBytes := s.CacheStats()
	fi, _ := os.Stat(path)
	b.ReportMetric(float64(scan.Microseconds())/1000/float64(pages), "ms/page")
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(cacheBytes)/(1<<20), "cache-MiB")
	b.ReportMetric(float64(entries), "cached-sketches")
	b.ReportMetric(float64(fi.Size())/(1<<20), "file-MiB")
	b.Logf("representations %v", counts)
}
