package main

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkHTTPQueries measures the query bars over HTTP against the
// whole service in process: the union of 100 stored FULL log2m=14
// sketches, the intersection of 2 (each method), and a raw download. The
// bar is under 5 ms each (ms/op).
//
//	go test -run '^$' -bench HTTPQueries -count 6 ./cmd/sketchd
func BenchmarkHTTPQueries(b *testing.B) {
	c := startInProcess(b, filepath.Join(b.TempDir(), "sketchd.db"), "-checkpoint-interval", "1h")
	r := rand.New(rand.NewPCG(3, 3))
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("full-%03d", i)
		c.must(b, http.StatusCreated, "PUT", "/v1/sketches/"+names[i], "", nil, nil)
		body := make([]byte, 0, 8*100000)
		for range 100000 {
			body = binary.BigEndian.AppendUint64(body, r.Uint64())
		}
		c.must(b, http.StatusOK, "POST", "/v1/sketches/"+names[i]+"/add", "application/octet-stream", body, nil)
	}
	var desc struct {
		Representation string `json:"representation"`
	}
	c.must(b, http.StatusOK, "GET", "/v1/sketches/"+names[0], "", nil, &desc)
	if desc.Representation != "FULL" {
		b.Fatalf("benchmark sketches are %s, want FULL", desc.Representation)
	}
	union := jsonBody(b, map[string]any{"sketches": names})
	queries := []struct {
		name                      string
		method, path, contentType string
		body                      []byte
	}{
		{"union_100", "POST", "/v1/union", "application/json", union},
		{"intersection_2_mle", "POST", "/v1/intersection", "application/json", jsonBody(b, map[string]any{"sketches": names[:2], "method": "mle"})},
		{"intersection_2_ie", "POST", "/v1/intersection", "application/json", jsonBody(b, map[string]any{"sketches": names[:2], "method": "inclusion_exclusion"})},
		{"raw_download", "GET", "/v1/sketches/" + names[0] + "/raw", "", nil},
		{"describe", "GET", "/v1/sketches/" + names[0], "", nil},
	}
	for _, q := range queries {
		b.Run("query="+q.name, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				status, resp, err := c.do(q.method, q.path, q.contentType, q.body)
				total += time.Since(start)
				if err != nil || status != http.StatusOK {
					b.Fatalf("%s: %d %s %v", q.name, status, resp, err)
				}
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/op")
		})
	}
}
