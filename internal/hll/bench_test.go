package hll_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/axiomhq/hyperloglog"
	"golang.org/x/sys/unix"

	"github.com/sketchd/sketchd/internal/hll"
)

// The peer is axiomhq/hyperloglog at precision 14 (dense), measured in the
// same run. It hashes differently and cannot produce the storage format;
// it is here only for speed. Run with:
//
//	go test -run '^$' -bench . -count 10 ./internal/hll | tee new.txt; benchstat new.txt

const benchLog2m = 14

func fullSketch(b *testing.B, seed uint64) *hll.Sketch {
	b.Helper()
	s, err := hll.New(hll.DefaultParams())
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, seed))
	for range 1 << 20 {
		s.AddHash(r.Uint64())
	}
	if s.Representation() != hll.Full {
		b.Fatalf("sketch is %v, want FULL", s.Representation())
	}
	return s
}

func axiomSketch(b *testing.B, seed uint64) *hyperloglog.Sketch {
	b.Helper()
	s, err := hyperloglog.NewSketch(benchLog2m, false)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, seed))
	for range 1 << 20 {
		s.InsertHash(r.Uint64())
	}
	return s
}

// hashes returns a pre-generated ring of random hashes so the benchmarks
// measure the add, not the generator.
func hashes() []uint64 {
	r := rand.New(rand.NewPCG(9, 9))
	hs := make([]uint64, 1<<16)
	for i := range hs {
		hs[i] = r.Uint64()
	}
	return hs
}

func BenchmarkAddHash(b *testing.B) {
	hs := hashes()
	b.Run("impl=sketchd", func(b *testing.B) {
		s := fullSketch(b, 1)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s.AddHash(hs[i&(len(hs)-1)])
			i++
		}
	})
	b.Run("impl=axiomhq", func(b *testing.B) {
		s := axiomSketch(b, 1)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s.InsertHash(hs[i&(len(hs)-1)])
			i++
		}
	})
}

// BenchmarkAddHashesFull adds one request's worth of hashes (10,000) to a
// FULL log2m=14 sketch, what ingest does once a sketch is full: the batch
// (AddHashes, which keeps what changed for the log) against one AddHash
// call per hash, and axiomhq's InsertHash per hash as the outside peer.
func BenchmarkAddHashesFull(b *testing.B) {
	hs := hashes()
	batches := len(hs) / 10000
	b.Run("impl=batch", func(b *testing.B) {
		s := fullSketch(b, 1)
		changed := make([]uint64, 0, 10000)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			changed = s.AddHashes(hs[i%batches*10000:][:10000], changed[:0])
			i++
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10000, "ns/hash")
	})
	b.Run("impl=per-hash", func(b *testing.B) {
		s := fullSketch(b, 1)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			for _, h := range hs[i%batches*10000:][:10000] {
				s.AddHash(h)
			}
			i++
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10000, "ns/hash")
	})
	b.Run("impl=axiomhq", func(b *testing.B) {
		s := axiomSketch(b, 1)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			for _, h := range hs[i%batches*10000:][:10000] {
				s.InsertHash(h)
			}
			i++
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10000, "ns/hash")
	})
}

// BenchmarkAddBatchToNew adds one request's worth of hashes (10,000) to
// a new sketch, what a write to a sketch created moments ago, or the
// PostgreSQL backend's per-request delta, does. The peer starts from a new
// sketch too (sparse, as it would be).
func BenchmarkAddBatchToNew(b *testing.B) {
	hs := hashes()[:10000]
	b.Run("impl=sketchd", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, _ := hll.New(hll.DefaultParams())
			s.AddHashes(hs, nil)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(hs)), "ns/id")
	})
	b.Run("impl=axiomhq", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, _ := hyperloglog.NewSketch(benchLog2m, true)
			for _, h := range hs {
				s.InsertHash(h)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(hs)), "ns/id")
	})
}

// BenchmarkAddInt64 includes hashing the id (hll_hash_bigint).
func BenchmarkAddInt64(b *testing.B) {
	s := fullSketch(b, 2)
	b.ReportAllocs()
	var v int64
	for b.Loop() {
		s.AddInt64(v)
		v++
	}
}

func BenchmarkEstimate(b *testing.B) {
	b.Run("impl=sketchd", func(b *testing.B) {
		s := fullSketch(b, 3)
		b.ReportAllocs()
		for b.Loop() {
			s.Estimate()
		}
	})
	b.Run("impl=axiomhq", func(b *testing.B) {
		s := axiomSketch(b, 3)
		b.ReportAllocs()
		for b.Loop() {
			s.Estimate()
		}
	})
}

func BenchmarkUnion(b *testing.B) {
	for _, n := range []int{2, 100} {
		b.Run(benchName("impl=sketchd", n), func(b *testing.B) {
			ss := make([]*hll.Sketch, n)
			for i := range ss {
				ss[i] = fullSketch(b, uint64(10+i))
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := hll.Union(ss...); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(benchName("impl=axiomhq", n), func(b *testing.B) {
			ss := make([]*hyperloglog.Sketch, n)
			for i := range ss {
				ss[i] = axiomSketch(b, uint64(10+i))
			}
			b.ReportAllocs()
			for b.Loop() {
				u := ss[0].Clone()
				for _, s := range ss[1:] {
					if err := u.Merge(s); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkMergeInto merges one FULL sketch into another in place, the
// step of a sliding window or a running union.
func BenchmarkMergeInto(b *testing.B) {
	b.Run("impl=sketchd", func(b *testing.B) {
		dst, src := fullSketch(b, 20), fullSketch(b, 21)
		b.ReportAllocs()
		for b.Loop() {
			if err := dst.Union(src); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=axiomhq", func(b *testing.B) {
		dst, src := axiomSketch(b, 20), axiomSketch(b, 21)
		b.ReportAllocs()
		for b.Loop() {
			if err := dst.Merge(src); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkUnionEstimate counts the union of two FULL sketches without
// keeping it: what each point of a rolling line costs. sketchd reads the
// number off the two register arrays (RegisterEstimate); the peer has to
// build the union to estimate it.
func BenchmarkUnionEstimate(b *testing.B) {
	b.Run("impl=sketchd", func(b *testing.B) {
		x, y := fullSketch(b, 30), fullSketch(b, 31)
		ra, rb := x.Registers(nil), y.Registers(nil)
		b.ReportAllocs()
		for b.Loop() {
			hll.RegisterEstimate(hll.DefaultParams(), ra, rb)
		}
	})
	b.Run("impl=axiomhq", func(b *testing.B) {
		x, y := axiomSketch(b, 30), axiomSketch(b, 31)
		b.ReportAllocs()
		for b.Loop() {
			u := x.Clone()
			if err := u.Merge(y); err != nil {
				b.Fatal(err)
			}
			u.Estimate()
		}
	})
}

func benchName(impl string, n int) string {
	return fmt.Sprintf("%s/sketches=%d", impl, n)
}

func BenchmarkEncode(b *testing.B) {
	s := fullSketch(b, 4)
	buf := make([]byte, 0, s.SizeBytes())
	b.SetBytes(int64(s.SizeBytes()))
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = s.AppendBinary(buf[:0])
	}
}

func BenchmarkDecode(b *testing.B) {
	s := fullSketch(b, 5)
	enc, _ := s.MarshalBinary()
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := hll.Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnionCPU is BenchmarkUnion of 2 and BenchmarkMergeInto with
// the peer in the same iteration. Each iteration, with sketchd and then
// with axiomhq: the union of two FULL sketches (a new sketch); a merge of
// one into a running union that already holds it (merge: what
// BenchmarkMergeInto measures); and a merge into a fresh copy of another
// (fresh merge, the copy untimed). The figures are the CPU of the
// benchmark's thread (locked to it) per operation, which a loaded machine
// inflates far less than ns/op, and sketchd's over axiomhq's (the bar is
// at most 1):
//
//	go test -run '^$' -bench UnionCPU -benchtime 3000x -count 6 ./internal/hll
func BenchmarkUnionCPU(b *testing.B) {
	x, y := fullSketch(b, 40), fullSketch(b, 41)
	into := x.Clone()
	ax, ay := axiomSketch(b, 40), axiomSketch(b, 41)
	aInto := ax.Clone()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu, peer [3]time.Duration
	for b.Loop() {
		t0 := threadCPU(b)
		if _, err := hll.Union(x, y); err != nil {
			b.Fatal(err)
		}
		t1 := threadCPU(b)
		if err := into.Union(y); err != nil {
			b.Fatal(err)
		}
		t2 := threadCPU(b)
		fresh := x.Clone()
		t3 := threadCPU(b)
		if err := fresh.Union(y); err != nil {
			b.Fatal(err)
		}
		t4 := threadCPU(b)
		cpu[0], cpu[1], cpu[2] = cpu[0]+t1-t0, cpu[1]+t2-t1, cpu[2]+t4-t3

		t0 = threadCPU(b)
		u := ax.Clone()
		if err := u.Merge(ay); err != nil {
			b.Fatal(err)
		}
		t1 = threadCPU(b)
		if err := aInto.Merge(ay); err != nil {
			b.Fatal(err)
		}
		t2 = threadCPU(b)
		aFresh := ax.Clone()
		t3 = threadCPU(b)
		if err := aFresh.Merge(ay); err != nil {
			b.Fatal(err)
		}
		t4 = threadCPU(b)
		peer[0], peer[1], peer[2] = peer[0]+t1-t0, peer[1]+t2-t1, peer[2]+t4-t3
	}
	n := float64(b.N)
	for i, what := range []string{"union", "merge", "fresh-merge"} {
		b.ReportMetric(float64(cpu[i].Nanoseconds())/n/1e3, what+"-cpu-us")
		b.ReportMetric(float64(peer[i].Nanoseconds())/n/1e3, "axiomhq-"+what+"-cpu-us")
		b.ReportMetric(float64(cpu[i])/float64(peer[i]), what+"/axiomhq")
	}
}

// threadCPU is the CPU time of the calling thread, to the nanosecond
// (getrusage's per-thread figure moves only at scheduler ticks, too
// coarse for operations of microseconds).
func threadCPU(tb testing.TB) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ts.Nano())
}
