package client

import (
	"context"
	"encoding/binary"
	"math"
	"net/http"
	"net/url"
	"time"
)

// TypeKLL is a KLL quantile sketch (Apache DataSketches): quantiles,
// ranks, CDFs and PMFs of the values added, with a rank error.
const TypeKLL = "kll"

// Item types of a KLL sketch (CreateRequest.Items).
const (
	ItemsDouble = "double"
	ItemsLong   = "long"
)

// KLLState is a KLL sketch's parameters and state.
type KLLState struct {
	K            int      `json:"k"`
	Items        string   `json:"items"`
	N            int64    `json:"n"`
	Min          *float64 `json:"min,omitempty"` // nil while empty
	Max          *float64 `json:"max,omitempty"`
	Retained     int      `json:"retained"`
	RankError    float64  `json:"rank_error"`     // normalized, single-sided, 99% confidence
	RankErrorPMF float64  `json:"rank_error_pmf"` // double-sided
	SizeBytes    int      `json:"size_bytes"`
}

// Adding values to a KLL sketch counts them: these are retried with their
// Idempotency-Key (the server applies them once), and without keys only
// when opts has WithUnsafeRetry. They go as big-endian octets.

// AddValues adds doubles to a KLL sketch of doubles (each finite).
func (c *Client) AddValues(ctx context.Context, name string, values []float64, opts ...CallOption) (int, error) {
	return c.addBody(ctx, name, "application/octet-stream", doublesBody(values), false, opts)
}

// AddLongs adds integers to a KLL sketch of longs.
func (c *Client) AddLongs(ctx context.Context, name string, values []int64, opts ...CallOption) (int, error) {
	return c.addBody(ctx, name, "application/octet-stream", intsBody(values), false, opts)
}

func doublesBody(vs []float64) []byte {
	b := make([]byte, 0, 8*len(vs))
	for _, v := range vs {
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// AddSeriesValues adds doubles stamped ts to a KLL series of doubles.
func (c *Client) AddSeriesValues(ctx context.Context, name string, ts time.Time, values []float64, opts ...CallOption) (int, error) {
	return c.addSeries(ctx, name, ts, "application/octet-stream", doublesBody(values), false, opts)
}

// AddSeriesLongs adds integers stamped ts to a KLL series of longs.
func (c *Client) AddSeriesLongs(ctx context.Context, name string, ts time.Time, values []int64, opts ...CallOption) (int, error) {
	return c.addSeries(ctx, name, ts, "application/octet-stream", intsBody(values), false, opts)
}

// RankValue is a value's normalized rank, with the band Lower..Upper
// (rank ∓ RankError) the true rank is in with the answer's confidence.
type RankValue struct {
	Value float64 `json:"value"`
	Rank  float64 `json:"rank"`
	Lower float64 `json:"lower"`
	Upper float64 `json:"upper"`
}

// RankAnswer is the ranks of values in a KLL sketch.
type RankAnswer struct {
	Type       string      `json:"type"`
	N          uint64      `json:"n"`
	RankError  float64     `json:"rank_error"`
	Confidence float64     `json:"confidence"`
	Ranks      []RankValue `json:"ranks"`
}

// Distribution is a KLL sketch's CDF or PMF over split points: m+1
// values for m points, with the band Lower..Upper (∓ RankError).
type Distribution struct {
	Type        string    `json:"type"`
	N           uint64    `json:"n"`
	RankError   float64   `json:"rank_error"`
	Confidence  float64   `json:"confidence"`
	SplitPoints []float64 `json:"split_points"`
	Values      []float64 `json:"values"`
	Lower       []float64 `json:"lower"`
	Upper       []float64 `json:"upper"`
}

// Rank returns the normalized ranks of values (the share of values at
// most each) in a KLL sketch (GET /v1/sketches/{name}/rank).
func (c *Client) Rank(ctx context.Context, name string, values ...float64) (*RankAnswer, error) {
	return into[RankAnswer](ctx, c, call{method: http.MethodGet, path: sketchPath(name, "rank"), query: floatsQuery(nil, "value", values), idempotent: true, ok: []int{http.StatusOK}})
}

// CDF returns a KLL sketch's CDF at split points (strictly increasing)
// (GET /v1/sketches/{name}/cdf).
func (c *Client) CDF(ctx context.Context, name string, splits ...float64) (*Distribution, error) {
	return into[Distribution](ctx, c, call{method: http.MethodGet, path: sketchPath(name, "cdf"), query: floatsQuery(nil, "split", splits), idempotent: true, ok: []int{http.StatusOK}})
}

// PMF returns a KLL sketch's PMF between split points
// (GET /v1/sketches/{name}/pmf).
func (c *Client) PMF(ctx context.Context, name string, splits ...float64) (*Distribution, error) {
	return into[Distribution](ctx, c, call{method: http.MethodGet, path: sketchPath(name, "pmf"), query: floatsQuery(nil, "split", splits), idempotent: true, ok: []int{http.StatusOK}})
}

// SeriesRanks is a RankAnswer over a series range.
type SeriesRanks struct {
	Range
	RankAnswer
}

// SeriesDistribution is a Distribution over a series range.
type SeriesDistribution struct {
	Range
	Distribution
}

// SeriesRank returns ranks of values over [from, to) of a KLL series.
func (c *Client) SeriesRank(ctx context.Context, name string, from, to time.Time, values ...float64) (*SeriesRanks, error) {
	return into[SeriesRanks](ctx, c, c.seriesGet(name, "rank", from, to, "value", values))
}

// SeriesCDF returns the CDF over [from, to) of a KLL series.
func (c *Client) SeriesCDF(ctx context.Context, name string, from, to time.Time, splits ...float64) (*SeriesDistribution, error) {
	return into[SeriesDistribution](ctx, c, c.seriesGet(name, "cdf", from, to, "split", splits))
}

// SeriesPMF returns the PMF over [from, to) of a KLL series.
func (c *Client) SeriesPMF(ctx context.Context, name string, from, to time.Time, splits ...float64) (*SeriesDistribution, error) {
	return into[SeriesDistribution](ctx, c, c.seriesGet(name, "pmf", from, to, "split", splits))
}

func (c *Client) seriesGet(name, route string, from, to time.Time, key string, fs []float64) call {
	return call{method: http.MethodGet, path: seriesPath(name, route), query: floatsQuery(rangeQuery(from, to), key, fs), idempotent: true, ok: []int{http.StatusOK}}
}

// WithLongs makes PutRaw and MergeRaw take a KLL upload as a sketch of
// longs (?items=long), and WithDoubles as a sketch of doubles
// (?items=double): DataSketches' libraries do not say in their bytes
// whether a KLL sketch keeps doubles or longs (sketchd's own downloads
// do). Without either, the sketch uploaded into says it; an upload of a
// library's KLL bytes that would create a sketch needs one of them.
func WithLongs() CallOption { return func(c *callConfig) { c.items = ItemsLong } }

// WithDoubles: see WithLongs.
func WithDoubles() CallOption { return func(c *callConfig) { c.items = ItemsDouble } }

func rawQuery(q url.Values, cc callConfig) url.Values {
	if cc.items != "" {
		if q == nil {
			q = url.Values{}
		}
		q.Set("items", cc.items)
	}
	return q
}
