package hll_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/pgtest"
)

// The PostgreSQL peer: hll_cardinality of a FULL log2m=14 sketch and
// hll_union_agg of 100 of them, timed by PostgreSQL itself (EXPLAIN
// ANALYZE's execution time, so the client round trip is not counted
// against it), beside sketchd's Estimate and Union in the same run:
//
//	go test -run '^$' -bench 'PostgreSQL|Estimate|Union' -count 6 ./internal/hll

// pgSketches loads n FULL log2m=14 sketches into a temporary table.
func pgSketches(b *testing.B, conn *pgx.Conn, n int) []*hll.Sketch {
	b.Helper()
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "CREATE TEMP TABLE IF NOT EXISTS bench_sketches (id int, h hll)"); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "TRUNCATE bench_sketches"); err != nil {
		b.Fatal(err)
	}
	out := make([]*hll.Sketch, n)
	for i := range out {
		out[i] = fullSketch(b, uint64(100+i))
		enc, _ := out[i].MarshalBinary()
		if _, err := conn.Exec(ctx, "INSERT INTO bench_sketches VALUES ($1, $2::bytea::hll)", i, enc); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

// pgExecution runs EXPLAIN ANALYZE of query and returns PostgreSQL's
// execution time.
func pgExecution(b *testing.B, conn *pgx.Conn, query string) time.Duration {
	b.Helper()
	var plan string
	if err := conn.QueryRow(context.Background(), "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) "+query).Scan(&plan); err != nil {
		b.Fatal(err)
	}
	var out []struct {
		Execution float64 `json:"Execution Time"`
	}
	if err := json.Unmarshal([]byte(plan), &out); err != nil || len(out) == 0 {
		b.Fatalf("plan %s: %v", plan, err)
	}
	return time.Duration(out[0].Execution * float64(time.Millisecond))
}

func BenchmarkPostgreSQL(b *testing.B) {
	conn := pgtest.Connect(b)
	pgSketches(b, conn, 100)
	b.Run("op=union_agg/sketches=100", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			total += pgExecution(b, conn, "SELECT hll_union_agg(h) FROM bench_sketches")
		}
		b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "pg-ns/op")
	})
	b.Run("op=cardinality", func(b *testing.B) {
		// 100 calls in one statement, so per-statement overhead is shared.
		var total time.Duration
		for b.Loop() {
			total += pgExecution(b, conn, "SELECT sum(hll_cardinality(h)) FROM bench_sketches")
		}
		b.ReportMetric(float64(total.Nanoseconds())/float64(b.N)/100, "pg-ns/op")
	})
}

// BenchmarkUnionAgg is sketchd's side of op=union_agg: 100 FULL log2m=14
// sketches with distinct contents.
func BenchmarkUnionAgg(b *testing.B) {
	ss := make([]*hll.Sketch, 100)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range ss {
		ss[i] = fullSketch(b, r.Uint64())
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := hll.Union(ss...); err != nil {
			b.Fatal(err)
		}
	}
}
