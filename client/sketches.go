package client

import (
	"context"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Sketch types.
const (
	TypeHLL   = "hll"
	TypeCMS   = "cms"
	TypeTheta = "theta"  // DataSketches' theta sketch: intersections with their own bounds
	TypeFreq  = "freq"   // DataSketches' tuple sketch with a count per user: the frequency report
	TypeDSHLL = "ds_hll" // DataSketches' HLL sketch: what Spark, Druid and Hive read
	TypeCPC   = "cpc"    // DataSketches' CPC sketch: what Pinot, Hive and Impala read
	// TypeZetaHLL is ZetaSketch's HLL++ sketch: what BigQuery's
	// HLL_COUNT functions and Beam's HllCount read.
	TypeZetaHLL = "zeta_hll"
	// TypeAirliftHLL is airlift's HyperLogLog: what Trino's and Presto's
	// approx_set and HyperLogLog type read.
	TypeAirliftHLL = "airlift_hll"
)

// Sketch describes a stored sketch. Type says which of the groups of
// fields below is filled.
type Sketch struct {
	Name string `json:"name"`
	Type string `json:"type"` // TypeHLL or TypeCMS

	// HLL: parameters, representation (EMPTY, EXPLICIT, SPARSE, FULL),
	// the estimate and its relative standard error (0 when exact).
	Log2m          int     `json:"log2m,omitempty"`
	Regwidth       int     `json:"regwidth,omitempty"`
	Expthresh      int64   `json:"expthresh,omitempty"`
	Sparse         bool    `json:"sparse,omitempty"`
	Representation string  `json:"representation,omitempty"`
	Cardinality    float64 `json:"cardinality,omitempty"`
	StdError       float64 `json:"std_error,omitempty"`
	// Estimator is the HLL estimator behind Cardinality, StdError and
	// the bounds (LowerBound, UpperBound): "postgresql" or "improved".
	Estimator string `json:"estimator,omitempty"`

	// CMS: shape, the error bound it gives, and Total, the sum of all
	// counts.
	Width        int     `json:"width,omitempty"`
	Depth        int     `json:"depth,omitempty"`
	Epsilon      float64 `json:"epsilon,omitempty"`
	Delta        float64 `json:"delta,omitempty"`
	Conservative bool    `json:"conservative,omitempty"`
	TopK         int     `json:"topk,omitempty"`
	DomainBits   int     `json:"domain_bits,omitempty"` // a Count-Min over values in [0, 2^DomainBits)
	Total        int64   `json:"total,omitempty"`

	// Theta and freq: lg_k, the cardinality's bounds at two standard
	// deviations (about 95%; HLL sketches have them too), the sampling
	// rate and the hashes kept; a freq sketch also its estimated
	// impressions.
	LgK         int     `json:"lg_k,omitempty"`
	LowerBound  float64 `json:"lower_bound,omitempty"`
	UpperBound  float64 `json:"upper_bound,omitempty"`
	Theta       float64 `json:"theta,omitempty"`
	Retained    int     `json:"retained,omitempty"`
	Impressions int64   `json:"impressions,omitempty"`

	// ds_hll: LgK, TgtType (HLL_4, HLL_6, HLL_8), Representation (the
	// mode: LIST, SET, HLL), Cardinality with StdError and the bounds.
	// cpc: LgK, Representation (the flavor: EMPTY, SPARSE, HYBRID,
	// PINNED, SLIDING), Cardinality with StdError and the bounds.
	TgtType string `json:"tgt_type,omitempty"`

	// Bloom: shape, the items and rate it was made for, bits set,
	// estimated items and the current false-positive rate.
	Bits              int     `json:"bits,omitempty"`
	Hashes            int     `json:"hashes,omitempty"`
	ExpectedItems     int64   `json:"expected_items,omitempty"`
	FPP               float64 `json:"fpp,omitempty"`
	BitsSet           int     `json:"bits_set,omitempty"`
	EstimatedItems    float64 `json:"estimated_items,omitempty"`
	FalsePositiveRate float64 `json:"false_positive_rate,omitempty"`

	// KLL: k, the item type, the values counted, their min and max (nil
	// while empty), and the rank error of its answers. Retained (above)
	// is the items it keeps.
	K            int      `json:"k,omitempty"`
	Items        string   `json:"items,omitempty"`
	N            int64    `json:"n,omitempty"`
	Min          *float64 `json:"min,omitempty"`
	Max          *float64 `json:"max,omitempty"`
	RankError    float64  `json:"rank_error,omitempty"`
	RankErrorPMF float64  `json:"rank_error_pmf,omitempty"`
	// zeta_hll: Precision, SparsePrecision (0: none), ValueType (the ids
	// it counts: "int64", "string", or "unknown" before the first),
	// NumValues (values added, repeats included), Representation
	// (SPARSE, NORMAL), Cardinality with StdError and the bounds.
	Precision       int    `json:"precision,omitempty"`
	SparsePrecision int    `json:"sparse_precision,omitempty"`
	ValueType       string `json:"value_type,omitempty"`
	NumValues       int64  `json:"num_values,omitempty"`

	// airlift_hll: IndexBits, Representation (SPARSE, DENSE), Cardinality
	// with StdError and the bounds.
	IndexBits int `json:"index_bits,omitempty"`

	SizeBytes int       `json:"size_bytes"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Metric    bool      `json:"metric"`
	// ExpireAfter (an ISO 8601 duration) or ExpireAt is set when the
	// sketch expires, ExpiresAt then says when as of its last write.
	// Past it the sketch is gone (IsNotFound), as if deleted.
	ExpireAfter string     `json:"expire_after,omitempty"`
	ExpireAt    *time.Time `json:"expire_at,omitempty"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
	// FoldedFromLog2m is set only by MergeRaw with WithFold when it
	// folded the stored HLL down: the log2m it had before.
	FoldedFromLog2m int `json:"folded_from_log2m,omitempty"`
}

// CreateRequest is the body of Create. Zero fields take the server's
// defaults (an HLL with log2m 14, regwidth 5, expthresh -1, sparse on; a
// CMS with the default width and depth). Fields of the other type are
// refused (400).
type CreateRequest struct {
	Type string `json:"type,omitempty"` // TypeHLL (default) or TypeCMS

	Log2m    int `json:"log2m,omitempty"`
	Regwidth int `json:"regwidth,omitempty"`
	// Expthresh: -1 automatic, 0 no EXPLICIT, or a power of two up to 8192.
	Expthresh *int64 `json:"expthresh,omitempty"`
	Sparse    *bool  `json:"sparse,omitempty"`

	// A CMS takes Width and Depth, or Epsilon and Delta.
	Width        int     `json:"width,omitempty"`
	Depth        int     `json:"depth,omitempty"`
	Epsilon      float64 `json:"epsilon,omitempty"`
	Delta        float64 `json:"delta,omitempty"`
	Conservative bool    `json:"conservative,omitempty"`
	TopK         int     `json:"topk,omitempty"`
	// DomainBits makes a CMS count integer values in [0, 2^DomainBits),
	// for RangeCount and Quantiles.
	DomainBits int `json:"domain_bits,omitempty"`

	// Theta and freq sketches take LgK (4..26, default 12); ds_hll
	// sketches LgK (4..21, default 12) and TgtType ("HLL_4", the default,
	// "HLL_6" or "HLL_8"); cpc sketches LgK (4..26, default 11).
	LgK     int    `json:"lg_k,omitempty"`
	TgtType string `json:"tgt_type,omitempty"`

	// A Bloom filter takes ExpectedItems and FPP (the false-positive
	// rate it may reach with that many), or Bits and Hashes.
	ExpectedItems int64   `json:"expected_items,omitempty"`
	FPP           float64 `json:"fpp,omitempty"`
	Bits          int     `json:"bits,omitempty"`
	Hashes        int     `json:"hashes,omitempty"`

	// A KLL sketch takes K (8..65535, default 200) and Items (ItemsDouble,
	// the default, or ItemsLong).
	K     int    `json:"k,omitempty"`
	Items string `json:"items,omitempty"`
	// zeta_hll sketches take Precision (10..24, default 15) and
	// SparsePrecision (Precision..25, or 0 for none; nil is Precision+5,
	// at most 25, as BigQuery writes).
	Precision       int  `json:"precision,omitempty"`
	SparsePrecision *int `json:"sparse_precision,omitempty"`

	// airlift_hll sketches take IndexBits (4..16, default 12, approx_set's).
	IndexBits int `json:"index_bits,omitempty"`

	// Metric exports the estimate on /metrics.
	Metric bool `json:"metric,omitempty"`

	// ExpireAfter makes the sketch expire that long after its last
	// write (an ISO 8601 duration of weeks, days, hours, minutes and
	// seconds: "P7D", "PT36H"); ExpireAt at an instant. At most one.
	ExpireAfter string     `json:"expire_after,omitempty"`
	ExpireAt    *time.Time `json:"expire_at,omitempty"`
}

// Expiry is when a sketch expires (SetExpiry): After its last write (an
// ISO 8601 duration such as "P7D") or At an instant; the zero Expiry
// clears it, so the sketch never expires.
type Expiry struct {
	After string
	At    time.Time
}

// SetExpiry sets, changes or clears when the sketch expires (PATCH
// /v1/sketches/{name}) and returns its description. It counts as a
// write, so After runs from it. A bad value is IsInvalid and changes
// nothing; an expired sketch is IsNotFound. It is retried with its
// Idempotency-Key.
func (c *Client) SetExpiry(ctx context.Context, name string, x Expiry) (*Sketch, error) {
	var body map[string]any
	switch {
	case x.After != "" && !x.At.IsZero():
		body = map[string]any{"expire_after": x.After, "expire_at": x.At} // refused by the server, by name
	case x.After != "":
		body = map[string]any{"expire_after": x.After}
	case !x.At.IsZero():
		body = map[string]any{"expire_at": x.At}
	default:
		body = map[string]any{"expire_after": nil}
	}
	cl, err := jsonCall(http.MethodPatch, sketchPath(name), body, true, http.StatusOK)
	if err != nil {
		return nil, err
	}
	cl.write = true
	return into[Sketch](ctx, c, cl)
}

// Create creates the sketch name (PUT /v1/sketches/{name}). created is
// false when it already existed with the same type and parameters (then
// only the metric flag and the expiry are updated); other parameters are a conflict
// (IsConflict). Create is retried with its Idempotency-Key: a retry after
// a lost answer gets the first attempt's answer (created true for the
// sketch it made).
func (c *Client) Create(ctx context.Context, name string, req CreateRequest) (s *Sketch, created bool, err error) {
	return create[Sketch](ctx, c, sketchPath(name), req)
}

// Describe returns the sketch's parameters, representation, estimate
// with its error, size and times (GET /v1/sketches/{name}).
func (c *Client) Describe(ctx context.Context, name string) (*Sketch, error) {
	return c.DescribeWith(ctx, name, "")
}

// DescribeWith is Describe with an HLL sketch's estimate, error and
// bounds from estimator: "" or "postgresql" (postgresql-hll's, the
// default), or "improved" (Ertl's). Another kind with "improved" is
// invalid (IsInvalid).
func (c *Client) DescribeWith(ctx context.Context, name, estimator string) (*Sketch, error) {
	var q url.Values
	if estimator != "" {
		q = url.Values{"estimator": {estimator}}
	}
	return into[Sketch](ctx, c, call{method: http.MethodGet, path: sketchPath(name), query: q, idempotent: true, ok: []int{http.StatusOK}})
}

// Delete removes the sketch (DELETE /v1/sketches/{name}). It is retried
// with its Idempotency-Key: a retry after a lost answer gets the first
// attempt's answer (without keys it finds the sketch gone and reports
// IsNotFound).
func (c *Client) Delete(ctx context.Context, name string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: sketchPath(name), idempotent: true, write: true, ok: []int{http.StatusNoContent}})
	return err
}

// ListOptions selects a page of List.
type ListOptions struct {
	Prefix string // only names starting with this
	After  string // only names after this: the previous page's Next
	Limit  int    // 1..1000; 0 is the server's default (100)
}

// SketchList is a page of sketches in name order.
type SketchList struct {
	Sketches []Sketch `json:"sketches"`
	// Next is ListOptions.After for the next page; "" on the last page.
	Next string `json:"next,omitempty"`
}

// List returns a page of sketches (GET /v1/sketches). All walks every
// page.
func (c *Client) List(ctx context.Context, opts ListOptions) (*SketchList, error) {
	return into[SketchList](ctx, c, call{method: http.MethodGet, path: "/v1/sketches", query: listQuery(opts), idempotent: true, ok: []int{http.StatusOK}})
}

// All yields every sketch whose name starts with prefix, in name order,
// fetching pages of 1,000 as it goes. It stops at the first error, which
// it yields.
func (c *Client) All(ctx context.Context, prefix string) iter.Seq2[Sketch, error] {
	return func(yield func(Sketch, error) bool) {
		opts := ListOptions{Prefix: prefix, Limit: 1000}
		for {
			page, err := c.List(ctx, opts)
			if err != nil {
				yield(Sketch{}, err)
				return
			}
			for _, s := range page.Sketches {
				if !yield(s, nil) {
					return
				}
			}
			if page.Next == "" {
				return
			}
			opts.After = page.Next
		}
	}
}

// ParquetPage is a page of sketches as one Parquet file.
type ParquetPage struct {
	// Body streams the file: a row per sketch in name order, with the
	// columns name, kind, parameters (the JSON object Create takes),
	// estimate and bytes (exactly what Raw gives). Read it to its end
	// and close it. A read error means the server cut the file short
	// (damage found, or a failure, after it had begun): what was read
	// is not a whole file.
	Body io.ReadCloser
	// Next is ListOptions.After for the next page; "" on the last page.
	Next string
	// Unreadable names (quoted, comma separated) the stored sketches the
	// page leaves out because their records cannot be decoded.
	Unreadable string
}

// ListParquet returns a page of sketches as one Parquet file (GET
// /v1/sketches?format=parquet), pages as List's. The file is streamed:
// the caller reads and closes Body.
func (c *Client) ListParquet(ctx context.Context, opts ListOptions) (*ParquetPage, error) {
	q := listQuery(opts)
	q.Set("format", "parquet")
	r, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/sketches", query: q, idempotent: true, stream: true, ok: []int{http.StatusOK}})
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(r.header.Get("Content-Type")); mt != "application/vnd.apache.parquet" {
		r.stream.Close()
		return nil, fmt.Errorf("client: GET /v1/sketches?format=parquet answered %s, not a Parquet file", r.header.Get("Content-Type"))
	}
	return &ParquetPage{Body: r.stream, Next: r.header.Get("Sketchd-Next"), Unreadable: r.header.Get("Sketchd-Unreadable")}, nil
}

func listQuery(opts ListOptions) url.Values {
	q := url.Values{}
	if opts.Prefix != "" {
		q.Set("prefix", opts.Prefix)
	}
	if opts.After != "" {
		q.Set("after", opts.After)
	}
	if opts.Limit != 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	return q
}
