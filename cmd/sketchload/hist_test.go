package main

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestHistogramBuckets(t *testing.T) {
	t.Parallel()
	values := []uint64{0, 1, 127, 128, 255, 256, 257, 511, 512, 1000, 1 << 20, 1<<20 + 1, 123456789, 1 << 40, math.MaxUint64 - 1, math.MaxUint64}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		values = append(values, rng.Uint64()>>rng.UintN(64))
	}
	for _, v := range values {
		i := histIndex(v)
		if i < 0 || i >= histBuckets {
			t.Fatalf("histIndex(%d) = %d, want 0..%d", v, i, histBuckets-1)
		}
		lo, hi := histLowest(i), histHighest(i)
		if v < lo || v > hi {
			t.Fatalf("value %d in bucket %d = [%d, %d], want inside", v, i, lo, hi)
		}
		if i >= histSub && float64(hi-lo) > float64(lo)/histHalf {
			t.Fatalf("bucket %d = [%d, %d] is %d wide, want at most lowest/%d", i, lo, hi, hi-lo, histHalf)
		}
	}
	// Buckets tile the number line without gaps or overlaps.
	for i := range histBuckets - 1 {
		if got := histIndex(histHighest(i) + 1); got != i+1 {
			t.Fatalf("histIndex(histHighest(%d)+1) = %d, want %d", i, got, i+1)
		}
		if histLowest(i+1) != histHighest(i)+1 {
			t.Fatalf("histLowest(%d) = %d, want histHighest(%d)+1 = %d", i+1, histLowest(i+1), i, histHighest(i)+1)
		}
	}
	if got := histHighest(histBuckets - 1); got != math.MaxUint64 {
		t.Fatalf("histHighest(last) = %d, want MaxUint64", got)
	}
}

func TestHistogramQuantiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		values []uint64 // recorded once each
		p      float64
		want   uint64 // exact nearest-rank answer
	}{
		{"small exact median", seq(0, 255, 1), 50, 127},
		{"small exact p90", seq(0, 255, 1), 90, 230},
		{"min", seq(1000, 10_000_000, 1000), 0, 1000},
		{"p50", seq(1000, 10_000_000, 1000), 50, 5_000_000},
		{"p90", seq(1000, 10_000_000, 1000), 90, 9_000_000},
		{"p99", seq(1000, 10_000_000, 1000), 99, 9_900_000},
		{"p99.9", seq(1000, 10_000_000, 1000), 99.9, 9_990_000},
		{"max", seq(1000, 10_000_000, 1000), 100, 10_000_000},
		{"single", []uint64{42_000_000}, 99, 42_000_000},
		{"skewed p99", append(repeat(1_000_000, 990), repeat(50_000_000, 10)...), 99, 1_000_000},
		{"skewed p99.9", append(repeat(1_000_000, 990), repeat(50_000_000, 10)...), 99.9, 50_000_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHistogram()
			for _, v := range tt.values {
				h.record(time.Duration(v))
			}
			got := h.quantile(tt.p)
			// Never below the true value, at most one bucket width above.
			if got < tt.want || float64(got-tt.want) > float64(tt.want)/histHalf {
				t.Errorf("quantile(%v) = %d, want %d (+%.2f%%)", tt.p, got, tt.want, 100.0/histHalf)
			}
		})
	}
}

func TestHistogramMergeAndEdges(t *testing.T) {
	t.Parallel()
	whole, a, b := newHistogram(), newHistogram(), newHistogram()
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 20000 {
		d := time.Duration(rng.ExpFloat64() * float64(time.Millisecond))
		whole.record(d)
		if i%2 == 0 {
			a.record(d)
		} else {
			b.recordN(d, 1)
		}
	}
	a.merge(b)
	a.merge(newHistogram()) // merging an empty one changes nothing
	for _, p := range []float64{0, 10, 50, 90, 99, 99.9, 100} {
		if got, want := a.quantile(p), whole.quantile(p); got != want {
			t.Errorf("merged quantile(%v) = %d, want %d", p, got, want)
		}
	}
	if a.count() != 20000 {
		t.Errorf("merged count = %d, want 20000", a.count())
	}
	if math.Abs(a.mean()-whole.mean()) > 1e-6*whole.mean() {
		t.Errorf("merged mean = %v, want %v", a.mean(), whole.mean())
	}

	h := newHistogram()
	if got := h.quantile(50); got != 0 {
		t.Errorf("empty quantile(50) = %d, want 0", got)
	}
	h.record(-time.Second)
	if got := h.quantile(100); got != 0 {
		t.Errorf("negative duration recorded as %d, want 0", got)
	}
	h.recordN(time.Millisecond, 0)
	if h.count() != 1 {
		t.Errorf("recordN(_, 0) counted: count = %d, want 1", h.count())
	}
	h.recordN(time.Millisecond, 99)
	if got := h.quantile(50); got != uint64(time.Millisecond) {
		t.Errorf("quantile(50) after recordN = %d, want %d", got, time.Millisecond)
	}
	h.reset()
	if h.count() != 0 || h.quantile(99) != 0 {
		t.Errorf("after reset count = %d, quantile(99) = %d, want 0, 0", h.count(), h.quantile(99))
	}
}

func seq(from, to, step uint64) []uint64 {
	var out []uint64
	for v := from; v <= to; v += step {
		out = append(out, v)
	}
	return out
}

func repeat(v uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func BenchmarkHistogramRecord(b *testing.B) {
	h := newHistogram()
	d := time.Duration(1)
	b.ReportAllocs()
	for b.Loop() {
		h.record(d)
		d = d*7 + 3
		if d > time.Minute {
			d = 1
		}
	}
}
