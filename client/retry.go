package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"
)

// RetryPolicy says how often and how patiently a call is repeated.
//
// What is retried: a 503 answer (the server is overloaded or draining;
// its Retry-After is honoured), a refused or reset connection, and a
// timeout of the HTTP client or its connection, but never the caller's
// own context ending. Every call is retried: reads, and every write,
// because each write is sent with an Idempotency-Key of its own (the
// same on each attempt), with which the server applies it once and
// answers a retry with the first attempt's answer. A 409 saying an
// earlier attempt is still running (KindKeyInFlight) is retried too.
//
// With WithoutIdempotencyKeys (for a server that predates them) only
// calls safe to repeat by nature are retried: reads, creates (the same
// parameters again answer 200), HLL adds (a register keeps its maximum,
// so adding an id twice changes nothing), union, fold, raw uploads that
// replace (PUT) and deletes. Count-Min adds, events and raw merges (POST
// …/raw) add counters: if an answer is lost after the server committed,
// a retry counts the same ids again, so they are sent once unless the
// call has WithUnsafeRetry. Any call is retried when its connection could
// not even be opened, because then nothing reached the server.
type RetryPolicy struct {
	// MaxAttempts counts the first attempt: 1 means no retries.
	MaxAttempts int
	// BaseDelay is the pause before the first retry; each further retry
	// doubles it up to MaxDelay. The pause actually taken is drawn
	// uniformly from [d/2, d] (jitter), so clients that failed together
	// do not come back together.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxRetryAfter is the longest Retry-After the client waits out; a
	// 503 asking for longer is returned to the caller at once.
	MaxRetryAfter time.Duration
}

// DefaultRetryPolicy is 4 attempts, 50 ms doubling to at most 2 s, and a
// Retry-After of up to 30 s honoured.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 4, BaseDelay: 50 * time.Millisecond, MaxDelay: 2 * time.Second, MaxRetryAfter: 30 * time.Second}
}

func (p RetryPolicy) validate() error {
	switch {
	case p.MaxAttempts < 1:
		return fmt.Errorf("client: RetryPolicy.MaxAttempts %d: want at least 1", p.MaxAttempts)
	case p.BaseDelay < 0 || p.MaxDelay < p.BaseDelay:
		return fmt.Errorf("client: RetryPolicy delays %v..%v: want 0 <= BaseDelay <= MaxDelay", p.BaseDelay, p.MaxDelay)
	case p.MaxRetryAfter < 0:
		return fmt.Errorf("client: RetryPolicy.MaxRetryAfter %v is negative", p.MaxRetryAfter)
	}
	return nil
}

// backoff is the jittered pause after the attempt-th failure (1-based).
func (p RetryPolicy) backoff(attempt int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < attempt && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// classify says whether an attempt's outcome may be retried, and the
// server's Retry-After if it gave one.
func (cl *Client) classify(ctx context.Context, c call, resp *response, err error) (bool, time.Duration) {
	if ctx.Err() != nil {
		return false, 0
	}
	if err != nil {
		if notSent(err) {
			return true, 0
		}
		return c.idempotent && transient(err), 0
	}
	if resp.status == http.StatusServiceUnavailable && c.idempotent {
		return true, retryAfter(resp.header.Get("Retry-After"), time.Now())
	}
	if resp.status == http.StatusConflict && c.key != "" && problemFrom(resp, c.method, c.path).Kind() == KindKeyInFlight {
		// An earlier attempt of this call is still running: ask again
		// once it has been answered, for its answer.
		return true, retryAfter(resp.header.Get("Retry-After"), time.Now())
	}
	return false, 0
}

// notSent reports a failure to connect: no byte of the request left.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// transient reports the connection failures worth another try.
func transient(err error) bool {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.As(err, &ne) && ne.Timeout():
		return true
	}
	return false
}

// retryAfter parses a Retry-After value: delay-seconds or an HTTP date
// (RFC 9110 §10.2.3). Anything else, or a date in the past, is 0.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
