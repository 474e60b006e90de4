package server

import (
	"bytes"
	"encoding/binary"
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
// 8 clients each sending adds of 10,000 fresh random ids over HTTP (JSON
// ints, or big-endian int64s with format=octet) to one sketch, without and
// with a new key on each, over the test backend (bolt unless
// SKETCHD_TEST_BACKEND says otherwise). Each run has a store of its own.
// cpu-ms/op is the CPU time the process (server and clients) spent per
// request, which a shared machine's load disturbs less than ids/s.
// Compare the two with
//
//	go test -run '^$' -bench AddKeys -count 10 ./internal/server > keys.txt
//	benchstat -col /keys keys.txt
func BenchmarkAddKeys(b *testing.B) {
	for _, format := range []string{"json", "octet"} {
		for _, keys := range []string{"off", "on"} {
			b.Run("format="+format+"/keys="+keys, func(b *testing.B) { benchmarkAddKeys(b, format, keys == "on") })
		}
	}
}

func benchmarkAddKeys(b *testing.B, format string, keys bool) {
	e := newEnv(b)
	e.validate = false
	e.create(b, "bench", `{}`)
	url := e.srv.URL + "/v1/sketches/bench/add"
	ctype := "application/json"
	if format == "octet" {
		ctype = "application/octet-stream"
	}
	var seq atomic.Int64
	b.SetParallelism(4) // 8 clients on 2 processors
	cpu0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(uint64(seq.Add(1)), 7))
		body := make([]byte, 0, 200<<10)
		for pb.Next() {
			body = appendBenchIDs(body[:0], r, format)
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			req.Header.Set("Content-Type", ctype)
			if keys {
				req.Header.Set(headerKey, fmt.Sprintf(`"bench-%d"`, seq.Add(1)))
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
}

// appendBenchIDs appends 10,000 random ids below 10^8 as a JSON or octet
// add body.
func appendBenchIDs(body []byte, r *rand.Rand, format string) []byte {
	if format == "octet" {
		for range 10_000 {
			body = binary.BigEndian.AppendUint64(body, r.Uint64N(100_000_000))
		}
		return body
	}
	body = append(body, `{"ids":[`...)
	for i := range 10_000 {
		if i > 0 {
			body = append(body, ',')
		}
		body = strconv.AppendUint(body, r.Uint64N(100_000_000), 10)
	}
	return append(body, "]}"...)
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
