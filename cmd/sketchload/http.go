package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// respKeep is how much of an answer body a worker keeps to find "accepted";
// the rest is drained so the connection can be reused.
const respKeep = 4 << 10

// httpDriver holds what every HTTP worker shares: one client and transport,
// the add URL of each sketch and the prebuilt bodies.
type httpDriver struct {
	cfg    *config
	client *http.Client
	names  []string
	urls   []string // add URL per sketch, with the format's query
	ctype  string
	auth   string      // Authorization header value, "" for none
	pool   [][]byte    // prebuilt bodies, read-only once built
	closed atomic.Bool // close idle connections once
	// keyPrefix starts each add's Idempotency-Key (with -idempotency-keys):
	// random per run, so runs never replay each other's keys.
	keyPrefix string
}

// newHTTPDriver sets up the transport: one for all workers, with an idle
// connection kept per worker so keep-alive never runs short.
func newHTTPDriver(cfg *config) *httpDriver {
	tr := &http.Transport{
		Proxy: nil, // measure the target, never a proxy from the environment
		DialContext: (&net.Dialer{
			Timeout:   5 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          2 * cfg.conc,
		MaxIdleConnsPerHost:   2 * cfg.conc,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		WriteBufferSize:       64 << 10,
		ReadBufferSize:        16 << 10,
	}
	if cfg.roots != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: cfg.roots}
	}
	d := &httpDriver{
		cfg:    cfg,
		client: &http.Client{Transport: tr, Timeout: cfg.timeout},
		names:  cfg.names(),
		ctype:  cfg.format.contentType(),
	}
	if cfg.token != "" {
		d.auth = "Bearer " + cfg.token
	}
	if cfg.keys {
		var b [8]byte
		rand.Read(b[:])
		d.keyPrefix = "sketchload-" + hex.EncodeToString(b[:]) + "-"
	}
	for _, n := range d.names {
		d.urls = append(d.urls, cfg.target+"/v1/sketches/"+url.PathEscape(n)+"/add"+cfg.format.query())
	}
	return d
}

// problem is the part of an application/problem+json answer worth showing.
type problem struct {
	Title  string `json:"title"`
	Detail string `json:"detail"`
}

// create makes every sketch with PUT; 201 (created) and 200 (exists with the
// same parameters) are fine, anything else stops the run with the server's
// detail.
func (d *httpDriver) create(ctx context.Context) error {
	body := fmt.Sprintf(`{"type":"hll","log2m":%d,"regwidth":%d}`, d.cfg.log2m, d.cfg.regwidth)
	for _, n := range d.names {
		u := d.cfg.target + "/v1/sketches/" + url.PathEscape(n)
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, strings.NewReader(body))
		if err != nil {
			return fmt.Errorf("create %q: %w", n, err)
		}
		req.Header.Set("Content-Type", "application/json")
		if d.auth != "" {
			req.Header.Set("Authorization", d.auth)
		}
		resp, err := d.client.Do(req)
		if err != nil {
			return fmt.Errorf("create %q: %w", n, err)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("create %q: read answer: %w", n, err)
		}
		if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated {
			continue
		}
		var p problem
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &p) == nil && (p.Title != "" || p.Detail != "") {
			msg = strings.TrimSpace(p.Title + ": " + p.Detail)
		}
		return fmt.Errorf("create %q: %s: %s", n, resp.Status, msg)
	}
	return nil
}

// buildPool prebuilds n bodies (body j holds batch index j's ids) so the
// run itself only sends bytes. Ids come from their own random stream, apart
// from the workers'.
func (d *httpDriver) buildPool(n int) {
	g := newIDGen(d.cfg.dist, d.cfg.ids, d.cfg.zipfS, d.cfg.seed, poolStream)
	f, neg := d.cfg.format, d.cfg.negative
	d.pool = buildPool(n, d.cfg.batch, g, func(dst []byte, ids []int64) []byte {
		if neg {
			negate(ids)
		}
		return appendBody(dst, f, ids)
	})
}

// poolStream is the random stream of the prebuilt pool; workers use 1…c.
const poolStream = 1 << 32

// newWorker returns worker i.
func (d *httpDriver) newWorker(i int) *httpWorker {
	w := &httpWorker{
		d:    d,
		gen:  newIDGen(d.cfg.dist, d.cfg.ids, d.cfg.zipfS, d.cfg.seed, uint64(i)+1),
		resp: make([]byte, respKeep),
		body: newReqBody(),
	}
	if d.cfg.prebuilt == 0 {
		w.ids = make([]int64, d.cfg.batch)
		w.buf = make([]byte, 0, bodyCap(d.cfg.batch))
	}
	return w
}

// closeIdle drops the kept-alive connections at the end of a run.
func (d *httpDriver) closeIdle() {
	if d.closed.CompareAndSwap(false, true) {
		d.client.CloseIdleConnections()
	}
}

// httpWorker sends adds one at a time with its own buffers.
type httpWorker struct {
	d    *httpDriver
	gen  *idGen
	ids  []int64 // batch of ids, when bodies are built during the run
	buf  []byte  // body under construction, likewise
	resp []byte  // head of each answer
	body *reqBody
}

func (w *httpWorker) close() { w.d.closeIdle() }

// do sends one add: body from the pool (or built now), sketch by round robin
// or at random, then reads the answer.
func (w *httpWorker) do(ctx context.Context, batch uint64, _ int) outcome {
	d := w.d
	sk := pickSketch(batch, len(d.urls), d.cfg.random, w.gen.rng)
	w.body.wait() // the transport is done with the previous body
	var data []byte
	if len(d.pool) > 0 {
		data = d.pool[batch%uint64(len(d.pool))]
	} else {
		w.gen.fill(w.ids, batch)
		if d.cfg.negative {
			negate(w.ids)
		}
		w.buf = appendBody(w.buf[:0], d.cfg.format, w.ids)
		data = w.buf
	}
	o := outcome{requests: 1, idsSent: int64(d.cfg.batch), bytes: int64(len(data)), failKey: "transport"}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.urls[sk], w.body.load(data))
	if err != nil {
		w.body.abandon()
		o.failKey = "request"
		return o
	}
	req.ContentLength = int64(len(data))
	req.Header.Set("Content-Type", d.ctype)
	if d.auth != "" {
		req.Header.Set("Authorization", d.auth)
	}
	if d.keyPrefix != "" {
		// batch numbers every unit of the run once.
		req.Header.Set("Idempotency-Key", d.keyPrefix+strconv.FormatUint(batch, 10))
	}
	resp, err := d.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			o.canceled = true
		} else if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			o.failKey = "timeout"
		}
		return o
	}
	n, _ := io.ReadFull(resp.Body, w.resp)
	_, rerr := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if rerr != nil && ctx.Err() != nil {
		o.canceled = true
		return o
	}
	if resp.StatusCode/100 == 2 && rerr == nil {
		o.ok = 1
		o.ids = int64(d.cfg.batch)
		if acc, ok := parseAccepted(w.resp[:n]); ok {
			o.accepted = acc
		}
		return o
	}
	if rerr != nil {
		return o // answer cut off: a transport failure
	}
	o.failKey = strconv.Itoa(resp.StatusCode)
	if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests {
		o.backoff = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return o
}

// parseAccepted finds the integer value of "accepted" in an add answer
// without decoding the whole document (a scan, so it costs no allocation).
// It reports false when the key is missing or its value is not a
// non-negative integer.
func parseAccepted(b []byte) (int64, bool) {
	i := bytes.Index(b, []byte(`"accepted"`))
	if i < 0 {
		return 0, false
	}
	b = b[i+len(`"accepted"`):]
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 || b[0] != ':' {
		return 0, false
	}
	b = bytes.TrimLeft(b[1:], " \t\r\n")
	var v int64
	digits := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		if v > (1<<63-1-int64(c-'0'))/10 {
			return 0, false
		}
		v = v*10 + int64(c-'0')
		digits++
	}
	if digits == 0 {
		return 0, false
	}
	return v, true
}

// parseRetryAfter reads a Retry-After value: delay-seconds or an HTTP date
// (relative to now). Anything else, or a time in the past, is 0.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// reqBody is a request body a worker reuses. The transport may still read
// and close a body after Client.Do returns (net/http's RoundTrip contract),
// so the worker waits for Close before reloading it or rewriting the bytes
// under it.
type reqBody struct {
	r        bytes.Reader
	closed   chan struct{} // receives once per load, when the transport closes it
	open     atomic.Bool
	inFlight bool // used by the owning worker only
}

func newReqBody() *reqBody { return &reqBody{closed: make(chan struct{}, 1)} }

// load points the body at data; call wait first.
func (b *reqBody) load(data []byte) *reqBody {
	b.r.Reset(data)
	b.open.Store(true)
	b.inFlight = true
	return b
}

// wait blocks until the transport has closed the last loaded body.
func (b *reqBody) wait() {
	if b.inFlight {
		<-b.closed
		b.inFlight = false
	}
}

// abandon marks a loaded body that was never handed to the transport.
func (b *reqBody) abandon() {
	b.open.Store(false)
	b.inFlight = false
}

// Read reads from the loaded data.
func (b *reqBody) Read(p []byte) (int, error) { return b.r.Read(p) }

// Close tells the owning worker the transport is done with the body.
func (b *reqBody) Close() error {
	if b.open.CompareAndSwap(true, false) {
		b.closed <- struct{}{}
	}
	return nil
}
