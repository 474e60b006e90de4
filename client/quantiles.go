package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// RangeCount is how many values of a Count-Min over a value domain lie
// in [Lo, Hi]: never below the true count, and with probability
// Confidence at most ErrorBound above it.
type RangeCount struct {
	Lo         uint64  `json:"lo"`
	Hi         uint64  `json:"hi"`
	Estimate   uint64  `json:"estimate"`
	ErrorBound float64 `json:"error_bound"`
	Confidence float64 `json:"confidence"`
	Intervals  int     `json:"intervals"` // dyadic intervals summed
	Total      uint64  `json:"total"`
}

// RangeCount counts the values in [lo, hi] of a Count-Min created with
// DomainBits (GET /v1/sketches/{name}/range).
func (c *Client) RangeCount(ctx context.Context, name string, lo, hi uint64) (*RangeCount, error) {
	return into[RangeCount](ctx, c, call{method: http.MethodGet, path: sketchPath(name, "range"), query: loHiQuery(nil, lo, hi), idempotent: true, ok: []int{http.StatusOK}})
}

func loHiQuery(q url.Values, lo, hi uint64) url.Values {
	if q == nil {
		q = url.Values{}
	}
	q.Set("lo", strconv.FormatUint(lo, 10))
	q.Set("hi", strconv.FormatUint(hi, 10))
	return q
}

// QuantileValue is the value at fraction Q of the values, with the
// values at ranks Q ∓ RankError: nil for an empty sketch.
type QuantileValue struct {
	Q     float64  `json:"q"`
	Value *float64 `json:"value"`
	Lower *float64 `json:"lower"`
	Upper *float64 `json:"upper"`
}

// QuantileAnswer is quantiles of N values: each value's rank is within
// RankError·N of Q·N with probability Confidence.
type QuantileAnswer struct {
	Type       string          `json:"type"`
	N          uint64          `json:"n"`
	RankError  float64         `json:"rank_error"`
	Confidence float64         `json:"confidence"`
	Quantiles  []QuantileValue `json:"quantiles"`
}

// Quantiles returns the values at the fractions qs (each in [0, 1]) of a
// Count-Min with DomainBits or a KLL sketch
// (GET /v1/sketches/{name}/quantile).
func (c *Client) Quantiles(ctx context.Context, name string, qs ...float64) (*QuantileAnswer, error) {
	return into[QuantileAnswer](ctx, c, call{method: http.MethodGet, path: sketchPath(name, "quantile"), query: floatsQuery(nil, "q", qs), idempotent: true, ok: []int{http.StatusOK}})
}

// floatsQuery sets key to the comma-separated fs.
func floatsQuery(q url.Values, key string, fs []float64) url.Values {
	if q == nil {
		q = url.Values{}
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = strconv.FormatFloat(f, 'g', -1, 64)
	}
	q.Set(key, strings.Join(parts, ","))
	return q
}

// SeriesRangeCount is a range count over a series range.
type SeriesRangeCount struct {
	Range
	RangeCount
}

// SeriesRangeCount counts the values in [lo, hi] added over [from, to)
// to a Count-Min series with DomainBits (GET /v1/series/{name}/range).
func (c *Client) SeriesRangeCount(ctx context.Context, name string, from, to time.Time, lo, hi uint64) (*SeriesRangeCount, error) {
	return into[SeriesRangeCount](ctx, c, call{method: http.MethodGet, path: seriesPath(name, "range"), query: loHiQuery(rangeQuery(from, to), lo, hi), idempotent: true, ok: []int{http.StatusOK}})
}

// SeriesQuantiles is quantiles over a series range.
type SeriesQuantiles struct {
	Range
	QuantileAnswer
}

// SeriesQuantiles returns quantiles of the values added over [from, to)
// (GET /v1/series/{name}/quantile): a day's median and p99.
func (c *Client) SeriesQuantiles(ctx context.Context, name string, from, to time.Time, qs ...float64) (*SeriesQuantiles, error) {
	return into[SeriesQuantiles](ctx, c, c.seriesGet(name, "quantile", from, to, "q", qs))
}
