package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// RawOptions shapes a download.
type RawOptions struct {
	// Hex asks for the text PostgreSQL prints for an hll (`\x` and
	// lower-case hex) instead of the bytes.
	Hex bool
	// Log2m, if not 0, folds an HLL to it on the way out.
	Log2m int
	// Layout, for a freq sketch, picks the summary layout: "java" (Java's
	// IntegerSummary, the server's default) or "cpp" (the C++ and Python
	// int32). Empty leaves the server's default, which serves bytes kept
	// as uploaded unchanged.
	Layout string
	// Compressed asks for a theta sketch's compressed form (DataSketches
	// serial version 4).
	Compressed bool
	// IfNoneMatch is an ETag from an earlier download: if the sketch has
	// not changed since, the answer is NotModified and carries no data.
	IfNoneMatch string
}

// Raw is a downloaded sketch.
type Raw struct {
	Data        []byte // storage-format bytes, or `\x…` text with Hex
	ETag        string // changes whenever the bytes do
	NotModified bool   // RawOptions.IfNoneMatch still matches; Data is empty
}

// Raw downloads the sketch in its kind's format: the HLL storage format,
// the CMS format, DataSketches' theta or tuple format (GET
// /v1/sketches/{name}/raw).
func (c *Client) Raw(ctx context.Context, name string, opts RawOptions) (*Raw, error) {
	q := url.Values{}
	if opts.Hex {
		q.Set("format", "hex")
	}
	if opts.Log2m != 0 {
		q.Set("log2m", strconv.Itoa(opts.Log2m))
	}
	if opts.Layout != "" {
		q.Set("layout", opts.Layout)
	}
	if opts.Compressed {
		q.Set("compressed", "true")
	}
	var h http.Header
	if opts.IfNoneMatch != "" {
		h = http.Header{"If-None-Match": {opts.IfNoneMatch}}
	}
	r, err := c.do(ctx, call{method: http.MethodGet, path: sketchPath(name, "raw"), query: q, header: h, idempotent: true,
		ok: []int{http.StatusOK, http.StatusNotModified}})
	if err != nil {
		return nil, err
	}
	out := &Raw{ETag: r.header.Get("ETag"), NotModified: r.status == http.StatusNotModified}
	if !out.NotModified {
		out.Data = r.body
	}
	return out, nil
}

// PutRaw creates or replaces the sketch from uploaded bytes of any kind
// the server reads (PUT /v1/sketches/{name}/raw); created is true when it
// did not exist. WithFormat names the bytes' kind; WithLongs or
// WithDoubles says what a KLL upload keeps, which a library's bytes do
// not (a new sketch from them needs one). It is retried: replacing with
// the same bytes again gives the same sketch.
func (c *Client) PutRaw(ctx context.Context, name string, data []byte, opts ...CallOption) (s *Sketch, created bool, err error) {
	var q url.Values
	cc := callOptions(opts)
	if cc.format != "" {
		q = url.Values{"format": {cc.format}}
	}
	q = rawQuery(q, cc)
	r, err := c.do(ctx, call{method: http.MethodPut, path: sketchPath(name, "raw"), query: q, body: data, contentType: "application/octet-stream",
		idempotent: true, write: true, ok: []int{http.StatusOK, http.StatusCreated}})
	if err != nil {
		return nil, false, err
	}
	s = new(Sketch)
	return s, r.status == http.StatusCreated, decode(r, s)
}

// MergeRaw unions uploaded bytes into the stored sketch
// (POST /v1/sketches/{name}/raw), which keeps its parameters: an HLL
// upload with fewer registers is a conflict unless opts has WithFold,
// and then the answer's FoldedFromLog2m says what the sketch had.
// WithLongs or WithDoubles says what a KLL upload keeps (without, the
// stored sketch says it). Merging a Count-Min
// or KLL sketch adds its counts; MergeRaw is retried with its
// Idempotency-Key, and without keys only when opts has WithUnsafeRetry
// (an HLL merge is safe to repeat).
func (c *Client) MergeRaw(ctx context.Context, name string, data []byte, opts ...CallOption) (*Sketch, error) {
	cc := callOptions(opts)
	q := rawQuery(foldQuery(cc), cc)
	r, err := c.do(ctx, call{method: http.MethodPost, path: sketchPath(name, "raw"), query: q, body: data, contentType: "application/octet-stream",
		idempotent: cc.retryUnsafe, write: true, ok: []int{http.StatusOK}})
	if err != nil {
		return nil, err
	}
	s := new(Sketch)
	return s, decode(r, s)
}

// foldQuery is the query of an upload that may fold (WithFold) and name
// its format (WithFormat).
func foldQuery(cc callConfig) url.Values {
	q := url.Values{}
	if cc.fold {
		q.Set("fold", "true")
	}
	if cc.format != "" {
		q.Set("format", cc.format)
	}
	return q
}
