package server

import (
	"encoding/binary"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"
)

// BenchmarkFrequencyReportHTTP measures GET …/frequency_report over HTTP
// on a freq sketch (lg_k 12) of 200,000 impressions by about 50,000 users
// with Zipf-distributed frequencies. The bar: under 1 ms.
//
//	go test -run '^$' -bench FrequencyReportHTTP -count 6 ./internal/server
func BenchmarkFrequencyReportHTTP(b *testing.B) {
	e := newEnv(b)
	e.validate = false
	e.create(b, "f", `{"type":"freq"}`)
	r := rand.New(rand.NewPCG(4, 4))
	z := rand.NewZipf(r, 1.2, 1, 50_000)
	body := make([]byte, 0, 8*200_000)
	for range 200_000 {
		body = binary.BigEndian.AppendUint64(body, z.Uint64())
	}
	must(b, e.send(b, "POST", "/v1/sketches/f/add", "application/octet-stream", string(body)), http.StatusOK, "add")
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		resp := e.get(b, "/v1/sketches/f/frequency_report?max=10")
		total += time.Since(start)
		if resp.Status != http.StatusOK {
			b.Fatal(resp)
		}
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/op")
}
