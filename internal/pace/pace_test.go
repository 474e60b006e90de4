package pace

import (
	"bytes"
	"math"
	"testing"
	"time"
)

// TestWriterKeepsItsRate: 10 MB written at 1 MB a second, on a clock
// that moves only when the writer sleeps, take 10 seconds of sleep, and
// every byte arrives.
func TestWriterKeepsItsRate(t *testing.T) {
	var out bytes.Buffer
	clock := time.Unix(0, 0)
	w := NewWriter(&out, 1e6)
	var slept time.Duration
	w.now = func() time.Time { return clock }
	w.sleep = func(d time.Duration) { slept += d; clock = clock.Add(d) }
	chunk := make([]byte, 32<<10)
	total := 0
	for total < 10e6 {
		n := min(len(chunk), 10e6-total)
		if _, err := w.Write(chunk[:n]); err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if out.Len() != 10e6 {
		t.Fatalf("%d bytes arrived, want 10,000,000", out.Len())
	}
	if slept < 9990*time.Millisecond || slept > 10*time.Second {
		t.Errorf("slept %v writing 10 MB at 1 MB/s, want 10 s", slept)
	}
}

// TestWriterDoesNotSleepWhenBehind: a writer behind its rate (the
// network was slower) writes on without sleeping, but for the first
// write's millisecond.
func TestWriterDoesNotSleepWhenBehind(t *testing.T) {
	clock := time.Unix(0, 0)
	w := NewWriter(&bytes.Buffer{}, 1e6)
	w.now = func() time.Time { return clock }
	var slept time.Duration
	w.sleep = func(d time.Duration) { slept += d }
	defer func() {
		if slept > time.Millisecond {
			t.Errorf("slept %v while behind the rate", slept)
		}
	}()
	for range 10 {
		clock = clock.Add(time.Second)
		if _, err := w.Write(make([]byte, 1000)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"1": 1, "20M": 20e6, "1.5G": 1.5e9, "500k": 5e5, "0.5k": 500} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "M", "0", "0.1", "-5M", "+5M", "5m", "5MB", "1e9", "0x10", "NaN", "Inf", "1_000", "20 M"} {
		if got, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) = %v, want an error", in, got)
		}
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"20M", "1", "0.5k", "1e9", "-1", "NaN", "1.5G"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err == nil && (r < 1 || math.IsInf(r, 0) || math.IsNaN(r)) {
			t.Fatalf("ParseRate(%q) = %v, accepted", s, r)
		}
	})
}
