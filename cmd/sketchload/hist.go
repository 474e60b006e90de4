package main

import (
	"math"
	"math/bits"
	"time"
)

// The histogram is log-linear in the manner of HdrHistogram: values below
// histSub are counted exactly; above that each power of two [2^e, 2^(e+1)) is
// split into histHalf equal buckets. A bucket's width is therefore at most
// 1/histHalf of its lower bound, so a reported percentile (the highest value
// its bucket can hold, clamped to the recorded min and max) is never below
// the true value and at most 1/128 (0.8%) above it. Values are nanoseconds
// and may span the whole uint64 range; nothing is clamped on the way in.
const (
	histSubBits = 8
	histSub     = 1 << histSubBits // exactly counted values 0..histSub-1
	histHalf    = histSub / 2      // buckets per power of two above histSub
	histBuckets = histSub + (64-histSubBits)*histHalf
)

// histogram counts latencies in nanoseconds. The zero value is not usable;
// call newHistogram. It is not safe for concurrent use: each worker keeps its
// own and they are merged at the end of a run.
type histogram struct {
	counts []uint64
	total  uint64
	min    uint64
	max    uint64
	sum    float64 // nanoseconds, float so it cannot overflow
}

// newHistogram returns an empty histogram (about 60 KiB).
func newHistogram() *histogram {
	return &histogram{counts: make([]uint64, histBuckets), min: math.MaxUint64}
}

// histIndex returns the bucket counting v.
func histIndex(v uint64) int {
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits // >= 1
	return histSub + (shift-1)*histHalf + int(v>>uint(shift)) - histHalf
}

// histLowest returns the smallest value counted by bucket i.
func histLowest(i int) uint64 {
	if i < histSub {
		return uint64(i)
	}
	j := i - histSub
	shift := uint(j/histHalf + 1)
	m := uint64(j%histHalf + histHalf)
	return m << shift
}

// histHighest returns the largest value counted by bucket i. For the top
// bucket (m+1)<<shift wraps to 0 and the result is math.MaxUint64, as it
// should be.
func histHighest(i int) uint64 {
	if i < histSub {
		return uint64(i)
	}
	j := i - histSub
	shift := uint(j/histHalf + 1)
	m := uint64(j%histHalf + histHalf)
	return (m+1)<<shift - 1
}

// record counts one observation of d; negative durations count as 0.
func (h *histogram) record(d time.Duration) { h.recordN(d, 1) }

// recordN counts n observations of d (a pipelined round trip answers n
// commands at once).
func (h *histogram) recordN(d time.Duration, n uint64) {
	if n == 0 {
		return
	}
	v := uint64(0)
	if d > 0 {
		v = uint64(d)
	}
	h.counts[histIndex(v)] += n
	h.total += n
	h.sum += float64(v) * float64(n)
	if v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
}

// merge adds o's counts into h.
func (h *histogram) merge(o *histogram) {
	if o.total == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.sum += o.sum
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// reset empties h, keeping its storage.
func (h *histogram) reset() {
	clear(h.counts)
	h.total, h.sum, h.min, h.max = 0, 0, math.MaxUint64, 0
}

// count returns the number of observations.
func (h *histogram) count() uint64 { return h.total }

// quantile returns the value at percentile p (0..100) by nearest rank: the
// smallest recorded value v such that at least p% of observations are <= v,
// up to the bucket resolution. It returns 0 when h is empty.
func (h *histogram) quantile(p float64) uint64 {
	if h.total == 0 {
		return 0
	}
	if p <= 0 {
		return h.min
	}
	if p >= 100 {
		return h.max
	}
	rank := uint64(math.Ceil(p / 100 * float64(h.total)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(max(histHighest(i), h.min), h.max)
		}
	}
	return h.max
}

// mean returns the arithmetic mean in nanoseconds, 0 when empty.
func (h *histogram) mean() float64 {
	if h.total == 0 {
		return 0
	}
	return h.sum / float64(h.total)
}
