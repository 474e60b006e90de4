package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sketchd/sketchd/client"
)

// BenchmarkBatcherVsSketchload measures the Batcher fed from 8
// goroutines against cmd/sketchload (8 connections, 10,000 ids a
// request, fresh random ids) on the same in-process server in the same
// run. One op is one id; ids/s is the figure to compare (the bar: the
// batcher at least 80% of sketchload with the same body format).
//
//	go test -run '^$' -bench BatcherVsSketchload -benchtime 20000000x -count 3 ./client
func BenchmarkBatcherVsSketchload(b *testing.B) {
	s := startSketchd(b, nil)
	sketchload := buildSketchload(b)
	c := newClient(b, s)

	for _, format := range []string{"octet", "json"} {
		b.Run("peer=sketchload/format="+format, func(b *testing.B) {
			requests := max(8, (b.N+9999)/10000)
			out, err := exec.Command(sketchload, "-target", s.srv.URL, "-c", "8", "-batch", "10000", "-format", format,
				"-prebuilt", "0", "-requests", strconv.Itoa(requests), "-prefix", "sl-"+format, "-create",
				"-json", "-progress", "0", "-seed", strconv.Itoa(b.N)).Output()
			if err != nil {
				b.Fatalf("sketchload: %v\n%s", err, out)
			}
			var res struct {
				IDs          int64   `json:"ids"`
				IDsPerSecond float64 `json:"ids_per_second"`
				Failed       int64   `json:"failed_requests"`
			}
			if err := json.Unmarshal(out, &res); err != nil {
				b.Fatalf("sketchload output %q: %v", out, err)
			}
			if res.Failed != 0 || res.IDs != int64(requests)*10000 {
				b.Fatalf("sketchload: %d ids, %d failed requests", res.IDs, res.Failed)
			}
			b.ReportMetric(res.IDsPerSecond, "ids/s")
			b.ReportMetric(0, "ns/op")
		})
	}

	for _, mode := range []struct {
		name  string
		chunk int // ids an add call carries
	}{{"AddInt", 1}, {"AddInts_100", 100}} {
		b.Run("batcher="+mode.name, func(b *testing.B) {
			bt := client.NewBatcher(c, client.BatcherOptions{Create: true, OnError: func(e *client.BatchError) { b.Error(e) }})
			var seed atomic.Uint64
			var next atomic.Int64 // ids handed out, so the 8 goroutines add b.N in all
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed.Add(1), uint64(b.N)))
					ids := make([]int64, mode.chunk)
					ctx := context.Background()
					for {
						n := int(min(int64(mode.chunk), int64(b.N)-next.Add(int64(mode.chunk))+int64(mode.chunk)))
						if n <= 0 {
							return
						}
						for i := range n {
							ids[i] = int64(r.Uint64N(100_000_000))
						}
						var err error
						if mode.chunk == 1 {
							err = bt.AddInt(ctx, "batched", ids[0])
						} else {
							err = bt.AddInts(ctx, "batched", ids[:n]...)
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if err := bt.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			if st := bt.Stats(); st.Flushed != uint64(b.N) {
				b.Fatalf("flushed %d of %d ids", st.Flushed, b.N)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ids/s")
		})
	}
}

// buildSketchload builds cmd/sketchload into a temporary directory.
func buildSketchload(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "sketchload")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/sketchload").CombinedOutput()
	if err != nil {
		b.Fatalf("building sketchload: %v\n%s", err, out)
	}
	return bin
}

// BenchmarkBatcherAddInt is the batcher's own cost per id, from 8
// goroutines, against a server that answers at once without work.
func BenchmarkBatcherAddInt(b *testing.B) {
	srv := httptestServer(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, `{"accepted":%d}`, n/8)
	}))
	c, err := client.New(srv)
	if err != nil {
		b.Fatal(err)
	}
	bt := client.NewBatcher(c, client.BatcherOptions{})
	b.SetParallelism(4) // 8 goroutines on 2 processors
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for i := int64(0); pb.Next(); i++ {
			if err := bt.AddInt(ctx, "a", i); err != nil {
				b.Error(err)
				return
			}
		}
	})
	if err := bt.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
}
