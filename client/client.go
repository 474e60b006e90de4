package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// DefaultUserAgent is sent when no WithUserAgent option is given.
const DefaultUserAgent = "sketchd-go-client/1"

// maxResponseBytes bounds how much of an answer the client reads: the
// largest answers are raw HLL downloads (at most 2^17 registers of 7 bits,
// about 115 KiB) and CMS downloads (width × depth counters), and lists of
// at most 1,000 sketches. A server that sends more is refused rather than
// trusted with the client's memory.
const maxResponseBytes = 256 << 20

// Client calls one sketchd server. It is safe for concurrent use; create
// it once and share it.
type Client struct {
	base      *url.URL
	token     string
	hc        *http.Client
	userAgent string
	retry     RetryPolicy
	// noKeys turns Idempotency-Keys off (WithoutIdempotencyKeys).
	noKeys bool
	// tlsConfig and caFile configure the client's own transport for an
	// https server (WithTLSConfig, WithCAFile).
	tlsConfig *tls.Config
	caFile    string
}

// Option configures a Client.
type Option func(*Client)

// WithToken sends `Authorization: Bearer token` on every /v1 call (and
// /metrics, which a server may protect).
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient makes the client send through hc (its transport, timeout,
// proxy). Without it the client uses its own http.Client whose transport
// keeps up to 64 idle connections to the server, so concurrent calls and
// a Batcher's flushes reuse connections, and writes through a 64 KiB
// buffer.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithTLSConfig makes the client's own transport use cfg for an https
// base URL: the certificate authorities it trusts (RootCAs), a client
// certificate for a server that requires one (Certificates, for sketchd's
// -tls-client-ca), a ServerName. The client keeps a copy. HTTP/2 is
// negotiated whenever the server offers it. It cannot be combined with
// WithHTTPClient (configure that client's transport instead).
func WithTLSConfig(cfg *tls.Config) Option { return func(c *Client) { c.tlsConfig = cfg.Clone() } }

// WithCAFile makes the client trust the certificate authorities in the
// PEM file at path, instead of the system's, for an https base URL (a
// server whose certificate a private CA signed). New reads the file and
// returns an error naming it if it holds no certificate. With
// WithTLSConfig it replaces that configuration's RootCAs. It cannot be
// combined with WithHTTPClient.
func WithCAFile(path string) Option { return func(c *Client) { c.caFile = path } }

// WithUserAgent sets the User-Agent header (default DefaultUserAgent).
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithRetry replaces the retry policy (default DefaultRetryPolicy). A
// policy with MaxAttempts 1 turns retries off.
func WithRetry(p RetryPolicy) Option { return func(c *Client) { c.retry = p } }

// WithoutIdempotencyKeys makes the client send writes without an
// Idempotency-Key, as clients before them did: then only the writes that
// are safe to repeat by nature (creates, HLL adds, union, fold, raw PUT,
// deletes) are retried, and Count-Min adds, events and raw merges are
// sent once unless they have WithUnsafeRetry. A server that predates
// Idempotency-Key ignores the header, so a key protects nothing there; use
// this option against such a server to keep counting writes from being
// retried.
func WithoutIdempotencyKeys() Option { return func(c *Client) { c.noKeys = true } }

// New returns a client for the server at baseURL (such as
// "http://localhost:8080"; a path prefix is kept, for a server behind a
// proxy that mounts it under one).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("client: base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("client: base URL %q: scheme must be http or https", baseURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q has no host", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("client: base URL %q: no query or fragment allowed", baseURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	c := &Client{base: u, userAgent: DefaultUserAgent, retry: DefaultRetryPolicy()}
	for _, o := range opts {
		o(c)
	}
	if c.hc != nil && (c.tlsConfig != nil || c.caFile != "") {
		return nil, errors.New("client: WithTLSConfig and WithCAFile configure the client's own transport; with WithHTTPClient, set TLSClientConfig on that client's transport instead")
	}
	if c.caFile != "" {
		pool, err := readCAFile(c.caFile)
		if err != nil {
			return nil, err
		}
		if c.tlsConfig == nil {
			c.tlsConfig = &tls.Config{}
		}
		c.tlsConfig.RootCAs = pool
	}
	if c.hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// Clone keeps ForceAttemptHTTP2, so a TLS configuration of our
		// own still offers HTTP/2.
		tr.TLSClientConfig = c.tlsConfig
		tr.MaxIdleConnsPerHost = 64
		// Add bodies are tens of kilobytes: write them in few system
		// calls.
		tr.WriteBufferSize = 64 << 10
		c.hc = &http.Client{Transport: tr}
	}
	if err := c.retry.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// readCAFile reads the PEM certificates in path into a pool.
func readCAFile(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("client: CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("client: CA file %s holds no PEM certificate", path)
	}
	return pool, nil
}

// CallOption changes one call.
type CallOption func(*callConfig)

type callConfig struct {
	create      bool
	fold        bool
	items       string // a KLL upload's ?items=
	retryUnsafe bool
	format      string
}

// WithCreate makes an add (or events) call create missing sketches with
// the default parameters (?create=true): a Count-Min sketch for AddItems,
// an HLL otherwise. Series are never created by an add; a series add
// with it fails before sending.
func WithCreate() CallOption { return func(c *callConfig) { c.create = true } }

// WithFold lets MergeRaw fold the stored HLL down to an upload with fewer
// registers (?fold=true; lossy: the sketch keeps fewer registers from
// then on) rather than refuse it as a conflict.
func WithFold() CallOption { return func(c *callConfig) { c.fold = true } }

// WithFormat names the sketch type uploaded bytes are in (?format=, for
// PutRaw and MergeRaw: "hll", "cms", "theta", "freq"), instead of letting
// the server recognize it from the preamble.
func WithFormat(sketchType string) CallOption { return func(c *callConfig) { c.format = sketchType } }

// WithUnsafeRetry lets a call that is not safe to repeat (a Count-Min add,
// events, a raw merge) be retried like the others. A retry after a lost
// answer may then apply the write twice (a Count-Min counter counts the
// same ids again): use it when an overcount is better than a gap.
func WithUnsafeRetry() CallOption { return func(c *callConfig) { c.retryUnsafe = true } }

func callOptions(opts []CallOption) callConfig {
	var cc callConfig
	for _, o := range opts {
		o(&cc)
	}
	return cc
}

// call is one logical request: it may be sent several times. Each route
// is a method that builds a call, sends it with do and decodes the
// answer; a new route (series, say) is a new file of such methods and a
// line in compat_test.go's table, which fails until the spec and the
// client agree.
type call struct {
	method string
	path   string // escaped, below the base URL
	query  url.Values
	header http.Header
	// body is sent afresh on every attempt; nil sends none.
	body        []byte
	contentType string
	// idempotent calls are retried on every retryable failure; others only
	// when nothing can have reached the server.
	idempotent bool
	// write calls change the server: each is sent with an
	// Idempotency-Key of its own, the same on every attempt, which makes
	// every retry safe (the server applies the write once and replays
	// its answer), so they are retried as idempotent calls are.
	write bool
	// ok lists the statuses that are answers rather than problems.
	ok []int
	// key is the write's Idempotency-Key (set by do).
	key string
	// stream leaves the body of an answer with a status in ok unread,
	// in response.stream, for the caller to read and close.
	stream bool
}

// response is a buffered answer, or with call.stream an answer whose
// body is still to be read.
type response struct {
	status int
	header http.Header
	body   []byte
	stream io.ReadCloser
}

// escapePath returns /v1/sketches/{name}… with name escaped as one path
// segment.
func sketchPath(name string, rest ...string) string {
	p := "/v1/sketches/" + url.PathEscape(name)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// do sends c, retrying as the policy and c.idempotent allow, and returns
// an answer whose status is one of c.ok. Any other answer is a *Problem.
func (cl *Client) do(ctx context.Context, c call) (*response, error) {
	u := *cl.base
	u.RawPath = cl.base.EscapedPath() + c.path
	var err error
	if u.Path, err = url.PathUnescape(u.RawPath); err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", c.method, c.path, err)
	}
	u.RawQuery = c.query.Encode()
	target := u.String()
	requestID := newRequestID()
	if c.write && !cl.noKeys {
		c.key = newKey()
		c.idempotent = true
	}
	for attempt := 1; ; attempt++ {
		resp, err := cl.send(ctx, c, target, requestID)
		retryable, after := cl.classify(ctx, c, resp, err)
		if !retryable || attempt >= cl.retry.MaxAttempts {
			if err != nil {
				return nil, err
			}
			if !statusIn(resp.status, c.ok) {
				return nil, problemFrom(resp, c.method, c.path)
			}
			return resp, nil
		}
		wait := cl.retry.backoff(attempt)
		if after > wait {
			wait = after
		}
		if after > cl.retry.MaxRetryAfter {
			// The server asks for a longer pause than the caller allows:
			// report its answer rather than sleep past the budget.
			return nil, problemFrom(resp, c.method, c.path)
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			if err != nil {
				return nil, err
			}
			return nil, problemFrom(resp, c.method, c.path)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// send makes one attempt.
func (cl *Client) send(ctx context.Context, c call, target, requestID string) (*response, error) {
	var body io.Reader
	if c.body != nil {
		body = bytes.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, target, body)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", c.method, c.path, err)
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	if c.contentType != "" {
		req.Header.Set("Content-Type", c.contentType)
	}
	req.Header.Set("User-Agent", cl.userAgent)
	req.Header.Set("X-Request-ID", requestID)
	if c.key != "" {
		req.Header.Set("Idempotency-Key", `"`+c.key+`"`)
	}
	if cl.token != "" {
		req.Header.Set("Authorization", "Bearer "+cl.token)
	}
	resp, err := cl.hc.Do(req)
	if err != nil {
		return nil, &transportError{method: c.method, path: c.path, err: err}
	}
	if c.stream && statusIn(resp.StatusCode, c.ok) {
		return &response{status: resp.StatusCode, header: resp.Header, stream: resp.Body}, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, &transportError{method: c.method, path: c.path, err: err}
	}
	if len(b) > maxResponseBytes {
		return nil, fmt.Errorf("client: %s %s: answer larger than %d bytes", c.method, c.path, maxResponseBytes)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// transportError is a failure to get an answer at all.
type transportError struct {
	method, path string
	err          error
}

func (e *transportError) Error() string {
	return fmt.Sprintf("client: %s %s: %v", e.method, e.path, e.err)
}

func (e *transportError) Unwrap() error { return e.err }

func statusIn(s int, ok []int) bool {
	for _, o := range ok {
		if s == o {
			return true
		}
	}
	return false
}

// decode reads a JSON answer into v.
func decode(r *response, v any) error {
	if err := json.Unmarshal(r.body, v); err != nil {
		return fmt.Errorf("client: decoding the answer: %w", err)
	}
	return nil
}

// into makes the call and decodes its answer into a new T.
func into[T any](ctx context.Context, c *Client, cl call) (*T, error) {
	r, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := new(T)
	return out, decode(r, out)
}

// create PUTs req to path, retried (the same request again is
// harmless), and decodes the answer; created reports a 201 (a 200 means
// it existed as asked).
func create[T any](ctx context.Context, c *Client, path string, req any) (out *T, created bool, err error) {
	cl, err := jsonCall(http.MethodPut, path, req, true, http.StatusOK, http.StatusCreated)
	if err != nil {
		return nil, false, err
	}
	cl.write = true
	r, err := c.do(ctx, cl)
	if err != nil {
		return nil, false, err
	}
	out = new(T)
	return out, r.status == http.StatusCreated, decode(r, out)
}

// jsonCall is a call with a JSON body.
func jsonCall(method, path string, in any, idempotent bool, ok ...int) (call, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return call{}, fmt.Errorf("client: encoding the request: %w", err)
	}
	return call{method: method, path: path, body: b, contentType: "application/json", idempotent: idempotent, ok: ok}, nil
}

// newKey returns a random (version 4) UUID, the key the draft suggests.
func newKey() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func newRequestID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
