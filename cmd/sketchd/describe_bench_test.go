package main

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/pgtest"
)

// BenchmarkDescribeVsPostgres measures describe of a FULL log2m=14 HLL
// over HTTP (sketchd in process, bbolt backend, loopback) against its
// peer over the same class of transport: PostgreSQL's hll_cardinality of
// one row holding the same bytes, as a pgx query over its socket. The two
// alternate every iteration; the figures are each one's p50 and their
// ratio (the target is describe within 1.2x):
//
//	go test -run '^$' -bench DescribeVsPostgres -benchtime 2000x -count 6 ./cmd/sketchd
func BenchmarkDescribeVsPostgres(b *testing.B) {
	conn := pgtest.Connect(b)
	c := startInProcess(b, filepath.Join(b.TempDir(), "sketchd.db"), "-checkpoint-interval", "1h")
	c.must(b, http.StatusCreated, "PUT", "/v1/sketches/full", "", nil, nil)
	r := rand.New(rand.NewPCG(8, 8))
	body := make([]byte, 0, 8*100000)
	for range 100000 {
		body = binary.BigEndian.AppendUint64(body, r.Uint64())
	}
	c.must(b, http.StatusOK, "POST", "/v1/sketches/full/add", "application/octet-stream", body, nil)
	raw := c.must(b, http.StatusOK, "GET", "/v1/sketches/full/raw", "", nil, nil)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "CREATE TEMP TABLE describe_bench (id int PRIMARY KEY, h hll)"); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO describe_bench VALUES (1, $1::bytea::hll)", raw); err != nil {
		b.Fatal(err)
	}
	const query = "SELECT hll_cardinality(h) FROM describe_bench WHERE id = $1"
	var sd, pg []time.Duration
	for b.Loop() {
		start := time.Now()
		status, resp, err := c.do("GET", "/v1/sketches/full", "", nil)
		sd = append(sd, time.Since(start))
		if err != nil || status != http.StatusOK {
			b.Fatalf("describe: %d %s %v", status, resp, err)
		}
		start = time.Now()
		var est float64
		if err := conn.QueryRow(ctx, query, 1).Scan(&est); err != nil {
			b.Fatal(err)
		}
		pg = append(pg, time.Since(start))
	}
	p50 := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	s, p := p50(sd), p50(pg)
	b.ReportMetric(float64(s.Nanoseconds())/1e3, "sketchd-p50-us")
	b.ReportMetric(float64(p.Nanoseconds())/1e3, "postgres-p50-us")
	b.ReportMetric(float64(s)/float64(p), "sketchd/postgres")
}
