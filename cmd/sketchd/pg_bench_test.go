package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
)

// startPGNodes starts n sketchd nodes in process over one fresh schema.
func startPGNodes(b *testing.B, n int) (dsn string, nodes []*client) {
	b.Helper()
	dsn = pgstoretest.Schema(b, b.TempDir())
	for range n {
		nodes = append(nodes, startInProcess(b, filepath.Join(b.TempDir(), "unused.db"), "-postgres", dsn))
	}
	return dsn, nodes
}

// BenchmarkPostgresQueries measures describe, the union of 10 and the
// intersection of 2 FULL log2m=14 sketches over HTTP against a node on
// the PostgreSQL backend, at rest. The bar is a p99 under 5 ms.
//
//	go test -run '^$' -bench PostgresQueries -benchtime 400x ./cmd/sketchd
func BenchmarkPostgresQueries(b *testing.B) {
	_, nodes := startPGNodes(b, 1)
	c := nodes[0]
	r := rand.New(rand.NewPCG(4, 4))
	names := make([]string, 10)
	for i := range names {
		names[i] = fmt.Sprintf("full-%02d", i)
		c.must(b, http.StatusCreated, "PUT", "/v1/sketches/"+names[i], "", nil, nil)
		body := make([]byte, 0, 8*100000)
		for range 100000 {
			body = binary.BigEndian.AppendUint64(body, r.Uint64())
		}
		c.must(b, http.StatusOK, "POST", "/v1/sketches/"+names[i]+"/add", "application/octet-stream", body, nil)
	}
	queries := []struct {
		name, method, path string
		body               []byte
	}{
		{"describe", "GET", "/v1/sketches/" + names[0], nil},
		{"union_10", "POST", "/v1/union", jsonBody(b, map[string]any{"sketches": names})},
		{"intersection_2", "POST", "/v1/intersection", jsonBody(b, map[string]any{"sketches": names[:2]})},
	}
	for _, q := range queries {
		b.Run("query="+q.name, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				start := time.Now()
				status, resp, err := c.do(q.method, q.path, "application/json", q.body)
				lat = append(lat, time.Since(start))
				if err != nil || status != http.StatusOK {
					b.Fatalf("%s: %d %s %v", q.name, status, resp, err)
				}
			}
			slices.Sort(lat)
			var sum time.Duration
			for _, d := range lat {
				sum += d
			}
			b.ReportMetric(float64(sum.Microseconds())/1000/float64(len(lat)), "ms/op")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkPostgresIngest measures durable ingest of JSON ids, 10,000 a
// request from 8 clients, into one HLL through one and three sketchd nodes
// on the PostgreSQL backend, and its peer: PostgreSQL doing the same work
// itself on 8 connections, each batch as bigint[] to INSERT … SELECT
// hll_add_agg(hll_hash_bigint(x)) FROM unnest($1) ON CONFLICT … hll_union.
// Every batch is fresh random ids; bodies are built before the clock
// starts. The bar: one node ≥ 2.5× the peer (ids/s).
//
//	go test -run '^$' -bench PostgresIngest -benchtime 300x ./cmd/sketchd
func BenchmarkPostgresIngest(b *testing.B) {
	const clients, batch = 8, 10000
	// batches returns b.N batches of fresh ids, seeded by the run.
	batches := func(b *testing.B, seed uint64) [][]int64 {
		r := rand.New(rand.NewPCG(seed, uint64(b.N)))
		out := make([][]int64, b.N)
		for i := range out {
			out[i] = make([]int64, batch)
			for j := range out[i] {
				out[i][j] = int64(r.Uint64())
			}
		}
		return out
	}
	// drive runs b.N units on clients goroutines and reports ids/s.
	drive := func(b *testing.B, do func(worker, i int) error) {
		var next sync.Mutex
		n := 0
		b.ResetTimer()
		start := time.Now()
		var wg sync.WaitGroup
		for w := range clients {
			wg.Go(func() {
				for {
					next.Lock()
					i := n
					n++
					next.Unlock()
					if i >= b.N {
						return
					}
					if err := do(w, i); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "ids/s")
	}

	b.Run("peer=postgres", func(b *testing.B) {
		dsn := pgstoretest.Schema(b, b.TempDir())
		ctx := context.Background()
		conns := make([]*pgx.Conn, clients)
		for i := range conns {
			c, err := pgx.Connect(ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close(ctx)
			conns[i] = c
		}
		if _, err := conns[0].Exec(ctx, `CREATE TABLE bench_hll (name text PRIMARY KEY, hll hll NOT NULL)`); err != nil {
			b.Fatal(err)
		}
		ids := batches(b, 1)
		drive(b, func(w, i int) error {
			_, err := conns[w].Exec(ctx, `INSERT INTO bench_hll (name, hll)
				SELECT 'load', hll_add_agg(hll_hash_bigint(x), 14, 5, -1, 1) FROM unnest($1::bigint[]) x
				ON CONFLICT (name) DO UPDATE SET hll = hll_union(bench_hll.hll, excluded.hll)`, ids[i])
			return err
		})
	})
	for _, n := range []int{1, 3} {
		b.Run("sketchd_nodes="+strconv.Itoa(n), func(b *testing.B) {
			_, nodes := startPGNodes(b, n)
			nodes[0].must(b, http.StatusCreated, "PUT", "/v1/sketches/load", "", nil, nil)
			bodies := make([][]byte, b.N)
			for i, ids := range batches(b, 1) {
				bodies[i] = jsonBody(b, map[string]any{"ids": ids})
			}
			drive(b, func(w, i int) error {
				status, resp, err := nodes[w%n].do("POST", "/v1/sketches/load/add", "application/json", bodies[i])
				if err == nil && status != http.StatusOK {
					err = fmt.Errorf("add: %d %s", status, resp)
				}
				return err
			})
		})
	}
}
