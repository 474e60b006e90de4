// Package pace slows a stream to a rate: a backup read at a bounded
// rate leaves the server's cores and disk to the writers (as
// pg_basebackup's --max-rate does), since the server sends an archive
// only as fast as its reader takes it.
package pace

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Writer passes writes to w at no more than rate bytes a second on
// average since its first write, sleeping after a write that got ahead.
type Writer struct {
	w     io.Writer
	rate  float64
	start time.Time
	n     int64
	// now and sleep are time.Now and time.Sleep, replaced in tests.
	now   func() time.Time
	sleep func(time.Duration)
}

// NewWriter returns a Writer of rate bytes a second (rate > 0) to w.
func NewWriter(w io.Writer, rate float64) *Writer {
	return &Writer{w: w, rate: rate, now: time.Now, sleep: time.Sleep}
}

func (p *Writer) Write(b []byte) (int, error) {
	if p.n == 0 {
		p.start = p.now()
	}
	n, err := p.w.Write(b)
	p.n += int64(n)
	due := p.start.Add(time.Duration(float64(p.n) / p.rate * float64(time.Second)))
	if wait := due.Sub(p.now()); wait > 0 {
		p.sleep(wait)
	}
	return n, err
}

// ParseRate reads a rate in bytes a second: a positive number, with an
// optional suffix k, M or G (thousands, millions, billions): "20M" is
// 20,000,000 bytes a second.
func ParseRate(s string) (float64, error) {
	num, mult := s, 1.0
	switch {
	case strings.HasSuffix(s, "k"):
		num, mult = s[:len(s)-1], 1e3
	case strings.HasSuffix(s, "M"):
		num, mult = s[:len(s)-1], 1e6
	case strings.HasSuffix(s, "G"):
		num, mult = s[:len(s)-1], 1e9
	}
	if num == "" || strings.ContainsAny(num, "eEpPxX_+-") {
		return 0, fmt.Errorf("rate %q: want a number of bytes a second, with k, M or G after it (20M)", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("rate %q: want a number of bytes a second, with k, M or G after it (20M)", s)
	}
	r := v * mult
	if r < 1 || math.IsInf(r, 0) || math.IsNaN(r) {
		return 0, fmt.Errorf("rate %q: want at least 1 byte a second", s)
	}
	return r, nil
}
