package server

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkAddKeys measures what an Idempotency-Key costs a durable add:
// 8 clients each sending adds of 10,000 fresh random JSON ids over HTTP
// to a sketch of their own run, without and with a new key on each, over
// the test backend (bolt unless SKETCHD_TEST_BACKEND says otherwise).
// Each run has a store of its own. cpu-ms/op is the CPU time the process
// (server and clients) spent per request, which a shared machine's load
// disturbs less than ids/s. Compare the two with
//
//	go test -run '^$' -bench AddKeys -count 6 ./internal/server > keys.txt
//	benchstat -col /keys keys.txt
func BenchmarkAddKeys(b *testing.B) {
	for _, keys := range []string{"off", "on"} {
		b.Run("keys="+keys, func(b *testing.B) {
			e := newEnv(b)
			e.validate = false
			name := "bench-" + keys
			e.create(b, name, `{}`)
			url := e.srv.URL + "/v1/sketches/" + name + "/add"
			var seq atomic.Int64
			b.SetParallelism(4) // 8 clients on 2 processors
			cpu0 := cpuTime()
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
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
