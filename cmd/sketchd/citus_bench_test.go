package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
)

// BenchmarkCitusIngest measures durable ingest through one sketchd node
// over plain PostgreSQL and over Citus (SKETCHD_CITUS_DSN: a coordinator
// and its workers), the same load on both: 8 clients sending JSON
// bodies of 10,000 fresh random ids each, to one hot HLL (load=hot) or
// spread over 64 HLLs, so that a node's transactions touch several shards
// and, on Citus, both workers (load=spread). Bodies are built before the
// clock starts.
//
//	go test -run '^$' -bench CitusIngest -benchtime 200x ./cmd/sketchd
func BenchmarkCitusIngest(b *testing.B) {
	const clients, batch = 8, 10000
	for _, backend := range []string{"postgres", "citus"} {
		for _, load := range []string{"hot", "spread"} {
			b.Run(fmt.Sprintf("backend=%s/load=%s", backend, load), func(b *testing.B) {
				var dsn string
				if backend == "citus" {
					dsn = pgstoretest.CitusSchema(b, b.TempDir())
				} else {
					dsn = pgstoretest.Schema(b, b.TempDir())
				}
				c := startInProcess(b, filepath.Join(b.TempDir(), "unused.db"), "-postgres", dsn)
				sketches := 1
				if load == "spread" {
					sketches = 64
				}
				for i := range sketches {
					c.must(b, http.StatusCreated, "PUT", fmt.Sprintf("/v1/sketches/s%02d", i), "application/json", []byte(`{"log2m":14}`), nil)
				}
				r := rand.New(rand.NewPCG(7, uint64(b.N)))
				bodies := make([][]byte, b.N)
				for i := range bodies {
					ids := make([]int64, batch)
					for j := range ids {
						ids[j] = int64(r.Uint64())
					}
					bodies[i] = jsonBody(b, map[string]any{"ids": ids})
				}
				var mu sync.Mutex
				next := 0
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for range clients {
					wg.Go(func() {
						for {
							mu.Lock()
							i := next
							next++
							mu.Unlock()
							if i >= b.N {
								return
							}
							path := fmt.Sprintf("/v1/sketches/s%02d/add", i%sketches)
							status, resp, err := c.do("POST", path, "application/json", bodies[i])
							if err != nil || status != http.StatusOK {
								b.Errorf("add: %d %s %v", status, resp, err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "ids/s")
			})
		}
	}
}
