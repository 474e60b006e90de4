package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// TypeBloom is a Bloom filter: membership with no false negatives and a
// stated false-positive rate.
const TypeBloom = "bloom"

// BloomState is a Bloom filter's shape, the items and rate it was made
// for (zero for a filter created from its shape), and its state.
type BloomState struct {
	Bits              int     `json:"bits"`
	Hashes            int     `json:"hashes"`
	ExpectedItems     int64   `json:"expected_items,omitempty"`
	FPP               float64 `json:"fpp,omitempty"`
	BitsSet           int     `json:"bits_set"`
	EstimatedItems    float64 `json:"estimated_items"`
	FalsePositiveRate float64 `json:"false_positive_rate"` // the current rate
	SizeBytes         int     `json:"size_bytes"`
}

// CheckResult is one id of a membership check: Present false means the
// id was never added; true that it was, or is a false positive.
type CheckResult struct {
	ID      ID   `json:"id"`
	Present bool `json:"present"`
}

// Check answers a membership check, one result per id in the order sent.
type Check struct {
	Present           int           `json:"present"` // how many answered present
	FalsePositiveRate float64       `json:"false_positive_rate"`
	Results           []CheckResult `json:"results"`
}

// Check asks a Bloom filter which of ids it may hold
// (POST /v1/sketches/{name}/check). It changes nothing and is retried.
func (c *Client) Check(ctx context.Context, name string, ids []ID) (*Check, error) {
	body, err := idsBody(ids)
	if err != nil {
		return nil, err
	}
	return into[Check](ctx, c, call{method: http.MethodPost, path: sketchPath(name, "check"), body: body, contentType: "application/json", idempotent: true, ok: []int{http.StatusOK}})
}

// Fresh answers a check-and-add: Accepted ids were added, and New are
// those that were new (absent before), as sent and in the order sent; an
// id sent twice is new at most once.
type Fresh struct {
	Accepted int  `json:"accepted"`
	NewCount int  `json:"new_count"`
	New      []ID `json:"new"`
}

// AddNew adds ids to a Bloom filter and answers which were new, in one
// atomic write (POST /v1/sketches/{name}/add?report=new): a product
// backend counts first-seen users with it. An id added before is never
// new; one never added is reported not new at the filter's
// false-positive rate. It is retried with its Idempotency-Key (the server
// replays the first answer); without keys only when opts has
// WithUnsafeRetry, since a retry would find every id already added.
// WithCreate creates a missing filter with the defaults (a million items
// at 1%).
func (c *Client) AddNew(ctx context.Context, name string, ids []ID, opts ...CallOption) (*Fresh, error) {
	cc := callOptions(opts)
	body, err := idsBody(ids)
	if err != nil {
		return nil, err
	}
	q := url.Values{"report": {"new"}}
	if cc.create {
		q.Set("create", "true")
	}
	return into[Fresh](ctx, c, call{method: http.MethodPost, path: sketchPath(name, "add"), query: q, body: body,
		contentType: "application/json", idempotent: cc.retryUnsafe, write: true, ok: []int{http.StatusOK}})
}

// SeriesCheck is a membership check over [from, to) of a Bloom series:
// the union of its buckets there (POST /v1/series/{name}/check).
type SeriesCheck struct {
	Range
	Check
}

// SeriesCheck asks a Bloom series which of ids it may have seen in
// [from, to): over today's bucket, "seen today?".
func (c *Client) SeriesCheck(ctx context.Context, name string, from, to time.Time, ids []ID) (*SeriesCheck, error) {
	body, err := idsBody(ids)
	if err != nil {
		return nil, err
	}
	return into[SeriesCheck](ctx, c, call{method: http.MethodPost, path: seriesPath(name, "check"), query: rangeQuery(from, to),
		body: body, contentType: "application/json", idempotent: true, ok: []int{http.StatusOK}})
}
