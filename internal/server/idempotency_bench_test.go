package server

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
)

// BenchmarkAddKeys measures what an Idempotency-Key costs a durable add:
// 8 clients each sending adds of 10,000 fresh random JSON ids over HTTP
// to a sketch of their own run, without and with a new key on each, over
// the test backend (bolt unless SKETCHD_TEST_BACKEND says otherwise).
// Compare the two with
//
//	go test -run '^$' -bench AddKeys -count 6 ./internal/server > keys.txt
//	benchstat -col /keys keys.txt
func BenchmarkAddKeys(b *testing.B) {
	e := newEnv(b)
	e.validate = false
	var run atomic.Int64
	for _, keys := range []string{"off", "on"} {
		b.Run("keys="+keys, func(b *testing.B) {
			name := fmt.Sprintf("bench-%s-%d", keys, run.Add(1))
			e.create(b, name, `{}`)
			url := e.srv.URL + "/v1/sketches/" + name + "/add"
			var seq atomic.Int64
			b.SetParallelism(4) // 8 clients on 2 processors
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				r := rand.New(rand.NewPCG(uint64(seq.Add(1)), 7))
				body := make([]byte, 0, 200<<10)
				for pb.Next() {
					body = append(body[:0], `{"ids":[`...)
					for i := range 10_000 {
						if i > 0 {
							body = append(body, ',')
						}
						body = strconv.AppendUint(body, r.Uint64N(100_000_000), 10)
					}
					body = append(body, "]}"...)
					req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					if keys == "on" {
						req.Header.Set(headerKey, fmt.Sprintf(`"%s-%d"`, name, seq.Add(1)<<32|int64(r.Uint32())))
					}
					resp, err := e.srv.Client().Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("add = %d", resp.StatusCode)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)*10_000/b.Elapsed().Seconds(), "ids/s")
		})
	}
}
