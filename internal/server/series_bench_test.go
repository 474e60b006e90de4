package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/pgtest"
)

// BenchmarkSeriesIngest measures durable HTTP ingest of JSON int ids
// (10,000 a request, 8 clients) into a plain sketch and into a series
// with hour, day and month levels, in the same run. The bar: the series
// at ≥ 0.6× the sketch (ratio reported on the series run).
//
//	go test -run '^$' -bench SeriesIngest -count 6 ./internal/server
func BenchmarkSeriesIngest(b *testing.B) {
	e := newEnv(b)
	e.validate = false
	must(b, e.send(b, http.MethodPut, "/v1/sketches/plain", "", ""), http.StatusCreated, "create sketch")
	must(b, e.send(b, http.MethodPut, "/v1/series/three", "application/json", `{"levels":{"hour":"P14D","day":"P400D","month":"P5Y"}}`), http.StatusCreated, "create series")
	bodies := make([][]byte, 64)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range bodies {
		var buf bytes.Buffer
		buf.WriteString(`{"ids":[`)
		for j := range 10000 {
			if j > 0 {
				buf.WriteByte(',')
			}
			fmt.Fprint(&buf, r.Int64N(1<<50))
		}
		buf.WriteString(`]}`)
		bodies[i] = buf.Bytes()
	}
	var plain float64
	for _, target := range []string{"/v1/sketches/plain/add", "/v1/series/three/add"} {
		name := map[bool]string{true: "sketch", false: "series"}[target == "/v1/sketches/plain/add"]
		b.Run("into="+name, func(b *testing.B) {
			var ids atomic.Int64
			start := time.Now()
			for b.Loop() {
				var wg sync.WaitGroup
				for c := range 8 {
					wg.Go(func() {
						rq := request{Method: "POST", Path: target, Body: bytes.NewReader(bodies[c%len(bodies)]), Header: []string{"Content-Type: application/json"}}
						if resp, err := e.try(b, rq); err != nil || resp.Status != http.StatusOK {
							b.Errorf("%s: %v %v", target, resp, err)
						}
						ids.Add(10000)
					})
				}
				wg.Wait()
			}
			rate := float64(ids.Load()) / time.Since(start).Seconds()
			b.ReportMetric(rate, "ids/s")
			if target == "/v1/sketches/plain/add" {
				plain = rate
			} else if plain > 0 {
				b.ReportMetric(rate/plain, "x_plain")
			}
		})
	}
}

// BenchmarkSeriesQueries builds 400 days of a log2m-14 series with hour
// (14 days), day (400 days) and month (5 years) levels, 2,000 ids a day,
// by running the store's clock through the past, then measures over HTTP
// a count over 400 days (bar: under 5 ms) and a 365-point rolling 30-day
// line (bar: under 100 ms and ≥ 10× faster than PostgreSQL's window query
// over the same daily buckets, measured in the same run when PostgreSQL
// is there: "pg_ms/op").
//
//	go test -run '^$' -bench SeriesQueries -count 6 ./internal/server
func BenchmarkSeriesQueries(b *testing.B) {
	var clock atomic.Pointer[time.Time]
	realNow := time.Now()
	clock.Store(&realNow)
	e := newEnv(b, withClock(func() time.Time { return *clock.Load() }))
	e.validate = false
	must(b, e.send(b, http.MethodPut, "/v1/series/s", "application/json", `{"tz":"America/New_York","levels":{"hour":"P14D","day":"P400D","month":"P5Y"}}`), http.StatusCreated, "create")
	r := rand.New(rand.NewPCG(2, 2))
	for d := 405; d >= 0; d-- {
		at := realNow.AddDate(0, 0, -d)
		clock.Store(&at)
		body := make([]byte, 0, 8*2000)
		for range 2000 {
			body = binary.BigEndian.AppendUint64(body, uint64(r.Int64N(5_000_000)))
		}
		must(b, e.send(b, "POST", "/v1/series/s/add?ts="+rfc(at), "application/octet-stream", string(body)), http.StatusOK, "add")
	}
	clock.Store(&realNow)
	ny, _ := time.LoadLocation("America/New_York")
	today := realNow.In(ny)
	day0 := time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, ny)
	count := "/v1/series/s/count?from=" + rfc(day0.AddDate(0, 0, -399).Add(5*time.Hour)) + "&to=" + rfc(realNow.Truncate(time.Hour))
	line := "/v1/series/s/timeseries?step=P1D&window=P30D&from=" + rfc(day0.AddDate(0, 0, -364)) + "&to=" + rfc(day0.AddDate(0, 0, 1))
	for _, q := range []struct{ name, path string }{{"count_400_days", count}, {"rolling_30d_365_points", line}} {
		b.Run("query="+q.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				resp := e.get(b, q.path)
				total += time.Since(start)
				if resp.Status != http.StatusOK {
					b.Fatalf("%s: %v", q.name, resp)
				}
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/op")
		})
	}
	b.Run("query=rolling_30d_365_points_postgresql", func(b *testing.B) {
		conn := pgtest.Connect(b)
		ctx := b.Context()
		table := fmt.Sprintf("bench_days_%d", time.Now().UnixNano())
		if _, err := conn.Exec(ctx, "CREATE TEMP TABLE "+table+" (day date PRIMARY KEY, h hll)"); err != nil {
			b.Fatal(err)
		}
		for d := day0.AddDate(0, 0, -364-29); !d.After(day0); d = d.AddDate(0, 0, 1) {
			raw := must(b, e.get(b, "/v1/series/s/raw?format=hex&from="+rfc(d)+"&to="+rfc(d.AddDate(0, 0, 1))), http.StatusOK, "day").Body
			if _, err := conn.Exec(ctx, "INSERT INTO "+table+" VALUES ($1, $2::hll)", d.Format("2006-01-02"), string(raw)); err != nil {
				b.Fatal(err)
			}
		}
		q := "SELECT day, hll_cardinality(hll_union_agg(h) OVER (ORDER BY day ROWS 29 PRECEDING)) FROM " + table + " ORDER BY day"
		var total time.Duration
		for b.Loop() {
			start := time.Now()
			rows, err := conn.Query(ctx, q)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				n++
			}
			rows.Close()
			total += time.Since(start)
			if n != 365+29 {
				b.Fatalf("%d rows", n)
			}
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/op")
	})
}
