package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// result is the outcome of a measured run; its JSON form (-json) is what
// scripts read, so its field names are kept stable.
type result struct {
	Mode        string  `json:"mode"` // "http", "redis" or "postgres"
	Target      string  `json:"target"`
	Format      string  `json:"format"` // body format, "resp" for Redis
	Concurrency int     `json:"concurrency"`
	Batch       int     `json:"batch"`              // ids per request (PFADD command)
	Pipeline    int     `json:"pipeline,omitempty"` // Redis commands per round trip
	Sketches    int     `json:"sketches"`
	Dist        string  `json:"dist"`
	Rate        float64 `json:"rate,omitempty"` // requested requests/s in open-loop mode
	Prebuilt    int     `json:"prebuilt"`       // bodies built before the clock started
	// PoolPasses is how many times, on average, each prebuilt body was sent
	// (ids_sent / ids in the pool); above 1 the run repeats ids.
	PoolPasses float64 `json:"pool_passes,omitempty"`

	DurationSeconds   float64          `json:"duration_seconds"`
	Requests          int64            `json:"requests"` // completed, ok or failed
	OKRequests        int64            `json:"ok_requests"`
	FailedRequests    int64            `json:"failed_requests"`
	Failures          map[string]int64 `json:"failures"` // by HTTP status, "transport", "timeout", "redis:ERR"…
	IDs               int64            `json:"ids"`      // ids in successful requests
	IDsSent           int64            `json:"ids_sent"` // ids in all completed requests
	Accepted          int64            `json:"accepted"` // sum of "accepted" in HTTP answers
	IDsPerSecond      float64          `json:"ids_per_second"`
	RequestsPerSecond float64          `json:"requests_per_second"`
	BytesSent         int64            `json:"bytes_sent"` // request body bytes (Redis: command bytes)
	Latency           latency          `json:"latency_ms"`
	Interrupted       bool             `json:"interrupted,omitempty"`
}

// latency summarises successful requests, in milliseconds. In open-loop
// mode it is measured from each request's scheduled send time.
type latency struct {
	Count uint64  `json:"count"`
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

// newResult turns a measured phase into a result.
func newResult(cfg *config, r phaseResult) *result {
	t := r.tally
	res := &result{
		Mode:            "http",
		Target:          cfg.target,
		Format:          cfg.format.String(),
		Concurrency:     cfg.conc,
		Batch:           cfg.batch,
		Sketches:        cfg.sketches,
		Dist:            cfg.dist.String(),
		Rate:            cfg.rate,
		Prebuilt:        cfg.prebuilt,
		DurationSeconds: r.elapsed.Seconds(),
		Requests:        t.requests,
		OKRequests:      t.ok,
		FailedRequests:  t.requests - t.ok,
		Failures:        t.failures,
		IDs:             t.ids,
		IDsSent:         t.idsSent,
		Accepted:        t.accepted,
		BytesSent:       t.bytes,
		Interrupted:     r.interrupted,
	}
	if cfg.postgres != "" {
		// The connection string may hold a password: it is not printed.
		res.Mode, res.Target, res.Format = "postgres", "sketchload_hll", "bigint[]"
	}
	if cfg.redis != "" {
		res.Mode, res.Target, res.Format, res.Pipeline = "redis", cfg.redis, "resp", cfg.pipeline
	}
	if cfg.prebuilt > 0 {
		res.PoolPasses = math.Round(float64(t.idsSent)/float64(cfg.prebuilt*cfg.batch)*100) / 100
	}
	if s := r.elapsed.Seconds(); s > 0 {
		res.IDsPerSecond = float64(t.ids) / s
		res.RequestsPerSecond = float64(t.requests) / s
	}
	h := t.hist
	ms := func(ns uint64) float64 { return math.Round(float64(ns)/1e3) / 1e3 }
	res.Latency = latency{Count: h.count()}
	if h.count() > 0 {
		res.Latency.Min = ms(h.quantile(0))
		res.Latency.Mean = ms(uint64(h.mean()))
		res.Latency.P50 = ms(h.quantile(50))
		res.Latency.P90 = ms(h.quantile(90))
		res.Latency.P99 = ms(h.quantile(99))
		res.Latency.P999 = ms(h.quantile(99.9))
		res.Latency.Max = ms(h.quantile(100))
	}
	return res
}

// writeJSON prints res as indented JSON.
func (res *result) writeJSON(w io.Writer) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// writeText prints res for a person.
func (res *result) writeText(w io.Writer) error {
	var b strings.Builder
	unit := "request"
	if res.Mode == "redis" {
		unit = "PFADD"
	}
	fmt.Fprintf(&b, "target      %s %s (%s, %d ids a %s, %d clients", res.Mode, res.Target, res.Format, res.Batch, unit, res.Concurrency)
	if res.Pipeline > 0 {
		fmt.Fprintf(&b, ", pipeline %d", res.Pipeline)
	}
	fmt.Fprintf(&b, ", %d %s, %s ids", res.Sketches, plural(res.Sketches, "sketch", "sketches"), res.Dist)
	if res.Rate > 0 {
		fmt.Fprintf(&b, ", open loop at %s/s", groupDigits(res.Rate))
	}
	b.WriteString(")\n")
	fmt.Fprintf(&b, "elapsed     %s", time.Duration(res.DurationSeconds*float64(time.Second)).Round(time.Millisecond))
	if res.Interrupted {
		b.WriteString(" (interrupted)")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "requests    %s ok, %s failed, %s req/s\n", groupDigits(float64(res.OKRequests)), groupDigits(float64(res.FailedRequests)), groupDigits(res.RequestsPerSecond))
	fmt.Fprintf(&b, "ids         %s acknowledged, %s ids/s\n", groupDigits(float64(res.IDs)), groupDigits(res.IDsPerSecond))
	if res.Mode == "http" && res.Accepted != res.IDs {
		fmt.Fprintf(&b, "accepted    %s (answers' \"accepted\" differ from ids sent)\n", groupDigits(float64(res.Accepted)))
	}
	if res.PoolPasses > 1 {
		fmt.Fprintf(&b, "ids repeat  each of the %d prebuilt bodies was sent %.1f times (-prebuilt 0 sends fresh ids)\n", res.Prebuilt, res.PoolPasses)
	}
	mbps := 0.0
	if res.DurationSeconds > 0 {
		mbps = float64(res.BytesSent) / 1e6 / res.DurationSeconds
	}
	fmt.Fprintf(&b, "bytes sent  %.1f MB (%.1f MB/s)\n", float64(res.BytesSent)/1e6, mbps)
	l := res.Latency
	if l.Count > 0 {
		fmt.Fprintf(&b, "latency     p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  (mean %s, successful requests)\n",
			fmtMS(l.P50), fmtMS(l.P90), fmtMS(l.P99), fmtMS(l.P999), fmtMS(l.Max), fmtMS(l.Mean))
	}
	if len(res.Failures) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(res.Failures)) {
			parts = append(parts, fmt.Sprintf("%s: %d", k, res.Failures[k]))
		}
		fmt.Fprintf(&b, "failures    %s\n", strings.Join(parts, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fmtMS renders milliseconds with sensible precision.
func fmtMS(ms float64) string {
	switch {
	case ms >= 100:
		return fmt.Sprintf("%.0fms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1fms", ms)
	}
	return fmt.Sprintf("%.3fms", ms)
}

// groupDigits renders v rounded to an integer with thousands separators
// (values under 100 keep one decimal).
func groupDigits(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	if math.Abs(v) < 100 && v != math.Trunc(v) {
		return fmt.Sprintf("%.1f", v)
	}
	s := fmt.Sprintf("%.0f", math.Abs(v))
	var b strings.Builder
	if v < 0 && s != "0" {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// plural picks the word form for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
