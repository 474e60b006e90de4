package bolt

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
)

// BenchmarkAddUnderReaders measures the latency of a 1,000-id add while
// other clients loop over 8-way intersections and unions of 100 of the
// same sketches, with a checkpoint every 100 ms; "readers=none" is the
// same store and checkpoints without the readers, and "readers=cpu-only"
// runs the same intersections and unions on private copies that touch no
// store, so it shows what the readers cost in CPU alone (the machine's
// cores are shared) apart from any waiting on the store's locks:
//
//	go test -run '^$' -bench AddUnderReaders -benchtime 2000x ./internal/store/bolt
func BenchmarkAddUnderReaders(b *testing.B) {
	for _, readers := range []string{"none", "cpu-only", "intersect8+union100"} {
		b.Run("readers="+readers, func(b *testing.B) { benchAddUnderReaders(b, readers) })
	}
}

func benchAddUnderReaders(b *testing.B, readers string) {
	const sketches = 100
	s, _ := openStore(b, Options{CheckpointInterval: 100 * time.Millisecond})
	names := make([]string, sketches)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range names {
		names[i] = fmt.Sprintf("u:%03d", i)
		mustCreate(b, s, names[i], hllSpec(14))
		if err := addHashes(s, names[i], randomHashes(r, 20000), false); err != nil {
			b.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	view := func(ns []string, fn func([]*hll.Sketch) error) error { return viewHLL(s, ns, fn) }
	if readers == "cpu-only" {
		private := map[string]*hll.Sketch{}
		viewHLL(s, names, func(hs []*hll.Sketch) error {
			for i, h := range hs {
				private[names[i]] = h.Clone()
			}
			return nil
		})
		view = func(ns []string, fn func([]*hll.Sketch) error) error {
			hs := make([]*hll.Sketch, len(ns))
			for i, n := range ns {
				hs[i] = private[n]
			}
			return fn(hs)
		}
	}
	if readers != "none" {
		wg.Add(2)
		go func() { // 8-way intersections
			defer wg.Done()
			r := rand.New(rand.NewPCG(7, 8))
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := r.IntN(sketches - 8)
				ns := names[start : start+8]
				err := view(ns, func(hs []*hll.Sketch) error {
					_, err := sketch.Intersect(ns, hs, sketch.MethodInclusionExclusion)
					return err
				})
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
		go func() { // unions of all 100
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := view(names, func(hs []*hll.Sketch) error {
					_, err := hll.Union(hs...)
					return err
				})
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	var lat []time.Duration
	hs := make([]uint64, 1000)
	for b.Loop() {
		for i := range hs {
			hs[i] = r.Uint64()
		}
		name := names[r.IntN(sketches)]
		t0 := time.Now()
		if err := addHashes(s, name, hs, false); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	close(stop)
	wg.Wait()
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
}

// viewHLL runs fn with the HLL sketches names.
func viewHLL(s *DB, names []string, fn func([]*hll.Sketch) error) error {
	return s.View(ctx, names, func(sks []sketch.Sketch) error {
		hs := make([]*hll.Sketch, len(sks))
		for i, sk := range sks {
			hs[i], _ = sketch.HLLOf(sk)
		}
		return fn(hs)
	})
}
