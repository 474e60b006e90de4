package client

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// Importing history: a bucket of a series can be written from a sketch
// built elsewhere (PostgreSQL's hll_add_agg per day, Spark, another
// sketchd), in any format the series' kind reads. A replaced or merged
// bucket also rolls up into the coarser buckets of the series that hold
// it, as adds stamped inside it would have: a Count-Min import adds its
// counts to them. So the import calls are not retried unless opts has
// WithUnsafeRetry (safe for HLL series, whose merges are maxima).
// WithFold lets a sketch with more registers be folded down to the
// series' parameters; WithFormat names the bytes' kind.

// BucketImport is one bucket to import: its level, its start (a bucket
// edge in the series' zone) and a sketch's bytes.
type BucketImport struct {
	Level string
	Start time.Time
	Data  []byte
}

// BucketsImported is the answer of an import: every bucket written, in
// (level, start) order, with its Action: "replaced", "merged", or
// "rolled_up" for a coarser bucket holding an imported one.
type BucketsImported struct {
	Buckets []ImportedBucket `json:"buckets"`
}

// ImportedBucket is one bucket an import wrote.
type ImportedBucket struct {
	Level  string    `json:"level"`
	Start  time.Time `json:"start"`
	Action string    `json:"action"`
}

// PutBucket replaces one bucket of the series with data
// (PUT /v1/series/{name}/buckets/{level}/{start}).
func (c *Client) PutBucket(ctx context.Context, name, level string, start time.Time, data []byte, opts ...CallOption) (*BucketsImported, error) {
	return c.importCall(ctx, http.MethodPut, seriesPath(name, "buckets", level, url.PathEscape(start.Format(time.RFC3339))), data, "application/octet-stream", opts)
}

// MergeBucket unions data into one bucket of the series
// (POST /v1/series/{name}/buckets/{level}/{start}).
func (c *Client) MergeBucket(ctx context.Context, name, level string, start time.Time, data []byte, opts ...CallOption) (*BucketsImported, error) {
	return c.importCall(ctx, http.MethodPost, seriesPath(name, "buckets", level, url.PathEscape(start.Format(time.RFC3339))), data, "application/octet-stream", opts)
}

// ImportBuckets replaces many buckets in one all-or-nothing request
// (PUT /v1/series/{name}/buckets, NDJSON): a year of daily sketches in
// one call. The server takes at most 10,000 buckets a request, within its
// -max-body.
func (c *Client) ImportBuckets(ctx context.Context, name string, buckets []BucketImport, opts ...CallOption) (*BucketsImported, error) {
	body, err := importBody(buckets)
	if err != nil {
		return nil, err
	}
	return c.importCall(ctx, http.MethodPut, seriesPath(name, "buckets"), body, "application/x-ndjson", opts)
}

// MergeBuckets unions many sketches into their buckets in one
// all-or-nothing request (POST /v1/series/{name}/buckets).
func (c *Client) MergeBuckets(ctx context.Context, name string, buckets []BucketImport, opts ...CallOption) (*BucketsImported, error) {
	body, err := importBody(buckets)
	if err != nil {
		return nil, err
	}
	return c.importCall(ctx, http.MethodPost, seriesPath(name, "buckets"), body, "application/x-ndjson", opts)
}

// importBody writes one JSON line a bucket, its bytes in base64.
func importBody(buckets []BucketImport) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, bk := range buckets {
		line := struct {
			Level string `json:"level"`
			Start string `json:"start"`
			Bytes string `json:"bytes"`
		}{bk.Level, bk.Start.Format(time.RFC3339), base64.StdEncoding.EncodeToString(bk.Data)}
		if err := enc.Encode(line); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

func (c *Client) importCall(ctx context.Context, method, path string, body []byte, contentType string, opts []CallOption) (*BucketsImported, error) {
	cc := callOptions(opts)
	return into[BucketsImported](ctx, c, call{method: method, path: path, query: foldQuery(cc), body: body, contentType: contentType,
		idempotent: cc.retryUnsafe, write: true, ok: []int{http.StatusOK}})
}
