package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sketchd/sketchd/client"
)

// BenchmarkBatcherVsSketchload measures the Batcher fed from 8
// goroutines against cmd/sketchload (8 connections, 10,000 ids a
// request, fresh random ids) on the same in-process server. Each load
// runs in a process of its own, so both get the same share of a machine
// others use too. One op is a round that runs every load once, in turn,
// on -ids ids each; the metrics are medians over the rounds, and the
// ratios are the batcher's rate over sketchload's octet-stream rate (the
// same body format) within each round, so that a noisy machine affects
// both sides of a ratio alike. The bar is 0.8.
//
//	go test -run '^$' -bench BatcherVsSketchload -benchtime 5x ./client
func BenchmarkBatcherVsSketchload(b *testing.B) {
	s := startSketchd(b, nil)
	sketchload := buildSketchload(b)
	const ids = 10_000_000
	// Each load returns its ids/s and the CPU time its process spent
	// per id.
	loads := []struct {
		name string
		run  func(round int) (float64, float64)
	}{
		{"sketchload_octet", func(r int) (float64, float64) { return runSketchload(b, sketchload, s.srv.URL, "octet", ids, r) }},
		{"batcher_AddInts_100", func(r int) (float64, float64) { return runBatcherLoad(b, s.srv.URL, 100, ids) }},
		{"batcher_AddInt", func(r int) (float64, float64) { return runBatcherLoad(b, s.srv.URL, 1, ids) }},
		{"sketchload_json", func(r int) (float64, float64) { return runSketchload(b, sketchload, s.srv.URL, "json", ids, r) }},
	}
	rates := make([][]float64, len(loads))
	cpu := make([][]float64, len(loads))
	var ratios [2][]float64
	round := 0
	for b.Loop() {
		round++
		var got [4]float64
		for i, l := range loads {
			var ns float64
			got[i], ns = l.run(round)
			rates[i] = append(rates[i], got[i])
			cpu[i] = append(cpu[i], ns)
		}
		ratios[0] = append(ratios[0], got[1]/got[0])
		ratios[1] = append(ratios[1], got[2]/got[0])
	}
	for i, l := range loads {
		b.ReportMetric(median(rates[i]), l.name+"_ids/s")
		b.ReportMetric(median(cpu[i]), l.name+"_cpu_ns/id")
	}
	b.ReportMetric(median(ratios[0]), "AddInts_100/octet")
	b.ReportMetric(median(ratios[1]), "AddInt/octet")
	b.ReportMetric(0, "ns/op")
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// runSketchload runs sketchload on ids fresh ids and returns its ids/s.
func runSketchload(b *testing.B, bin, target, format string, ids, round int) (float64, float64) {
	cmd := exec.Command(bin, "-target", target, "-c", "8", "-batch", "10000", "-format", format,
		"-prebuilt", "0", "-requests", strconv.Itoa(ids/10000), "-prefix", "sl-"+format, "-create",
		"-json", "-progress", "0", "-seed", strconv.Itoa(round))
	out, err := cmd.Output()
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
	if res.Failed != 0 || res.IDs != int64(ids) {
		b.Fatalf("sketchload: %d ids, %d failed requests", res.IDs, res.Failed)
	}
	return res.IDsPerSecond, cpuPerID(cmd, ids)
}

// cpuPerID is the CPU time (user and system) the finished command spent
// per id, in nanoseconds.
func cpuPerID(cmd *exec.Cmd, ids int) float64 {
	ps := cmd.ProcessState
	return float64((ps.UserTime() + ps.SystemTime()).Nanoseconds()) / float64(ids)
}

// runBatcherLoad runs TestBatcherLoadProcess in a child process and
// returns its ids/s.
func runBatcherLoad(b *testing.B, target string, chunk, ids int) (float64, float64) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestBatcherLoadProcess$")
	cmd.Env = append(os.Environ(), "SKETCHD_BATCHER_LOAD="+target,
		"SKETCHD_BATCHER_IDS="+strconv.Itoa(ids), "SKETCHD_BATCHER_CHUNK="+strconv.Itoa(chunk))
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("batcher load: %v\n%s", err, out)
	}
	_, line, ok := strings.Cut(string(out), "batcher-load: ")
	line, _, _ = strings.Cut(line, "\n")
	var res batcherLoad
	if !ok || json.Unmarshal([]byte(line), &res) != nil || res.Flushed != int64(ids) {
		b.Fatalf("batcher load output:\n%s", out)
	}
	return res.IDsPerSecond, cpuPerID(cmd, ids)
}

// batcherLoad is what TestBatcherLoadProcess reports.
type batcherLoad struct {
	Flushed      int64   `json:"flushed"`
	IDsPerSecond float64 `json:"ids_per_second"`
}

// TestBatcherLoadProcess is the batcher side of
// BenchmarkBatcherVsSketchload, run in a child process: 8 goroutines add
// SKETCHD_BATCHER_IDS fresh random ids, SKETCHD_BATCHER_CHUNK a call,
// through one Batcher to the server at SKETCHD_BATCHER_LOAD; the time
// runs until Close has flushed them all.
func TestBatcherLoadProcess(t *testing.T) {
	target := os.Getenv("SKETCHD_BATCHER_LOAD")
	if target == "" {
		t.Skip("a child process of BenchmarkBatcherVsSketchload, not a test of its own")
	}
	total, err1 := strconv.ParseInt(os.Getenv("SKETCHD_BATCHER_IDS"), 10, 64)
	chunk, err2 := strconv.Atoi(os.Getenv("SKETCHD_BATCHER_CHUNK"))
	if err1 != nil || err2 != nil || chunk < 1 {
		t.Fatalf("SKETCHD_BATCHER_IDS and SKETCHD_BATCHER_CHUNK must be positive integers")
	}
	c, err := client.New(target)
	if err != nil {
		t.Fatal(err)
	}
	bt := client.NewBatcher(c, client.BatcherOptions{Create: true, OnError: func(e *client.BatchError) { t.Error(e) }})
	// The goroutines claim ids a thousand at a time, so the claiming
	// costs the measurement nothing per id.
	const block = 1000
	var next atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), uint64(total)))
			ids := make([]int64, block)
			ctx := context.Background()
			for {
				end := next.Add(block)
				n := int(min(block, total-end+block))
				if n <= 0 {
					return
				}
				for i := range n {
					ids[i] = int64(r.Uint64N(100_000_000))
				}
				for i := 0; i < n; i += chunk {
					var err error
					if chunk == 1 {
						err = bt.AddInt(ctx, "batched", ids[i])
					} else {
						err = bt.AddInts(ctx, "batched", ids[i:min(i+chunk, n)]...)
					}
					if err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if err := bt.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	st := bt.Stats()
	out, _ := json.Marshal(batcherLoad{Flushed: int64(st.Flushed), IDsPerSecond: float64(st.Flushed) / elapsed.Seconds()})
	fmt.Printf("batcher-load: %s\n", out)
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
