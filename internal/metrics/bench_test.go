package metrics_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/sketchd/sketchd/internal/metrics"
)

// BenchmarkScrape measures one /metrics scrape minus the network: Gather
// (which calls the Source) plus text encoding, with 1,000 opted-in sketches
// and every event family populated. b.SetBytes is the exposition size.
func BenchmarkScrape(b *testing.B) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, metrics.Options{Version: "bench", Source: newFakeSource(1000)})
	routes := []string{
		"/v1/sketches", "/v1/sketches/{name}", "/v1/sketches/{name}/add", "/v1/events",
		"/v1/sketches/{name}/frequency", "/v1/sketches/{name}/top", "/v1/union",
		"/v1/intersection", "/v1/sketches/{name}/fold", "/v1/sketches/{name}/raw",
		"/metrics", "/healthz", "/readyz", "/openapi.yaml", metrics.RouteUnmatched,
	}
	for _, r := range routes {
		for _, code := range []int{200, 400, 404, 500} {
			m.ObserveHTTP(r, "GET", code, time.Millisecond, 10, 10)
			m.ObserveHTTP(r, "POST", code, time.Millisecond, 10, 10)
		}
	}
	exerciseAll(m)

	var buf bytes.Buffer
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	var series float64
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		mfs, err := reg.Gather()
		if err != nil {
			b.Fatal(err)
		}
		enc := expfmt.NewEncoder(&buf, format)
		series = 0
		for _, mf := range mfs {
			series += float64(len(mf.GetMetric()))
			if err := enc.Encode(mf); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(buf.Len()))
	}
	b.ReportMetric(series, "series/op")
}

// BenchmarkObserveHTTP measures the per-request cost the server pays.
func BenchmarkObserveHTTP(b *testing.B) {
	m := metrics.New(prometheus.NewRegistry(), metrics.Options{})
	b.ReportAllocs()
	for b.Loop() {
		m.ObserveHTTP("/v1/sketches/{name}/add", "POST", 200, 1500*time.Microsecond, 80000, 16)
	}
}
