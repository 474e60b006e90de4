package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sketchd/sketchd/client"
)

// quick is a retry policy with millisecond pauses, for tests.
var quick = client.WithRetry(client.RetryPolicy{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond, MaxRetryAfter: 5 * time.Second})

// faults fails the first n requests whose path ends with suffix with
// fail, then passes requests to the real server; it counts the matching
// requests.
type faults struct {
	suffix string
	mu     sync.Mutex
	n      int64
	fail   func(w http.ResponseWriter, r *http.Request)
	seen   atomic.Int64
}

func newFaults(suffix string, n int64, fail func(http.ResponseWriter, *http.Request)) *faults {
	return &faults{suffix: suffix, n: n, fail: fail}
}

// reset starts counting afresh, failing the next n requests with fail.
func (f *faults) reset(n int64, fail func(http.ResponseWriter, *http.Request)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen.Store(0)
	f.n, f.fail = n, fail
}

func (f *faults) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, f.suffix) {
			f.mu.Lock()
			n, fail := f.n, f.fail
			f.mu.Unlock()
			if f.seen.Add(1) <= n {
				fail(w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// unavailable answers 503 as the server does when overloaded, with the
// given Retry-After.
func unavailable(retryAfter string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"type":"urn:sketchd:problem:unavailable","title":"Service Unavailable","status":503,"detail":"too many writes in progress; retry shortly"}`))
	}
}

// reset closes the connection without answering.
func reset(w http.ResponseWriter, r *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0) // an RST rather than a FIN
	}
	conn.Close()
}

func TestRetryOn503(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		// add adds ids to the sketch and returns their number.
		cms    bool
		add    func(c *client.Client, opts ...client.CallOption) (int, error)
		unsafe bool
	}{
		{"hll AddInts", false, func(c *client.Client, o ...client.CallOption) (int, error) {
			return c.AddInts(ctx, "s", []int64{1, 2, 3}, o...)
		}, false},
		{"hll AddStrings", false, func(c *client.Client, o ...client.CallOption) (int, error) {
			return c.AddStrings(ctx, "s", []string{"a", "b", "c"}, o...)
		}, false},
		{"hll AddHashes", false, func(c *client.Client, o ...client.CallOption) (int, error) {
			return c.AddHashes(ctx, "s", []int64{1 << 40, 2 << 40, 3 << 40}, o...)
		}, false},
		{"cms AddItems", true, func(c *client.Client, o ...client.CallOption) (int, error) {
			return c.AddItems(ctx, "s", []client.Item{{ID: client.Int(1), Count: 2}, {ID: client.Int(2), Count: 1}}, o...)
		}, true},
		{"cms AddEvents", true, func(c *client.Client, o ...client.CallOption) (int, error) {
			return c.AddEvents(ctx, []client.Event{{ID: client.Int(1), Sketches: []string{"s"}}, {ID: client.Int(2), Sketches: []string{"s"}},
				{ID: client.Int(1), Sketches: []string{"s"}}}, o...)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			suffix := "/add"
			if strings.Contains(tc.name, "Events") {
				suffix = "/events"
			}
			f := newFaults(suffix, 2, unavailable("0"))
			s := startSketchd(t, f.wrap)
			c := newClient(t, s, quick)
			typ := client.TypeHLL
			if tc.cms {
				typ = client.TypeCMS
			}
			if _, _, err := c.Create(ctx, "s", client.CreateRequest{Type: typ}); err != nil {
				t.Fatal(err)
			}
			n, err := tc.add(c)
			sk, derr := c.Describe(ctx, "s")
			if derr != nil {
				t.Fatal(derr)
			}
			if !tc.unsafe {
				if err != nil || n != 3 || f.seen.Load() != 3 || sk.Cardinality != 3 {
					t.Fatalf("add = %d, %v after %d requests, cardinality %v; want 3 added on the third request", n, err, f.seen.Load(), sk.Cardinality)
				}
				return
			}
			// With its Idempotency-Key a counting add is retried too.
			if err != nil || n != 3 && n != 2 || f.seen.Load() != 3 || sk.Total != 3 {
				t.Fatalf("add = %d, %v after %d requests, total %d; want 3 counted on the third request", n, err, f.seen.Load(), sk.Total)
			}
			// Without keys (a server that predates them) it is not
			// retried: the first 503 is the answer, nothing was added.
			c = newClient(t, s, quick, client.WithoutIdempotencyKeys())
			f.reset(2, unavailable("0"))
			n, err = tc.add(c)
			sk, _ = c.Describe(ctx, "s")
			var p *client.Problem
			if !client.IsUnavailable(err) || !errors.As(err, &p) || p.RetryAfter != 0 || f.seen.Load() != 1 || sk.Total != 3 {
				t.Fatalf("add without keys = %d, %v after %d requests, total %d; want the 503 after one request", n, err, f.seen.Load(), sk.Total)
			}
			// Opting in retries it like the others.
			f.reset(2, unavailable("0"))
			n, err = tc.add(c, client.WithUnsafeRetry())
			sk, _ = c.Describe(ctx, "s")
			if err != nil || n != 3 && n != 2 || f.seen.Load() != 3 || sk.Total != 6 {
				t.Fatalf("add with WithUnsafeRetry = %d, %v after %d requests, total %d; want 3 counted on the third request", n, err, f.seen.Load(), sk.Total)
			}
		})
	}
}

func TestRetryReadsAndCreates(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFaults("/s", 2, unavailable("0"))
	s := startSketchd(t, f.wrap)
	c := newClient(t, s, quick)
	if _, created, err := c.Create(ctx, "s", client.CreateRequest{}); err != nil || !created || f.seen.Load() != 3 {
		t.Fatalf("Create = %v, %v after %d requests", created, err, f.seen.Load())
	}
	f.reset(2, unavailable("0"))
	if _, err := c.Describe(ctx, "s"); err != nil || f.seen.Load() != 3 {
		t.Fatalf("Describe = %v after %d requests", err, f.seen.Load())
	}
	// Always unavailable: MaxAttempts requests, then the problem.
	f.reset(1<<30, unavailable("0"))
	if _, err := c.Describe(ctx, "s"); !client.IsUnavailable(err) || f.seen.Load() != 4 {
		t.Fatalf("Describe from a server always 503 = %v after %d requests; want 503 after 4", err, f.seen.Load())
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFaults("/s", 1, unavailable("1"))
	s := startSketchd(t, f.wrap)
	c := newClient(t, s, quick)
	if _, _, err := c.Create(ctx, "s", client.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	// The first attempt was answered 503 with Retry-After: 1; the second
	// must not have come sooner, though the policy's own pause is 1 ms.
	f.reset(1, unavailable("1"))
	start := time.Now()
	if _, err := c.Describe(ctx, "s"); err != nil || f.seen.Load() != 2 {
		t.Fatalf("Describe = %v after %d requests", err, f.seen.Load())
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("retried after %v, before the server's Retry-After of 1s", waited)
	}

	// A Retry-After longer than MaxRetryAfter is answered at once.
	f.reset(1, unavailable("60"))
	_, err := c.Describe(ctx, "s")
	var p *client.Problem
	if !errors.As(err, &p) || p.Status != 503 || p.RetryAfter != time.Minute || f.seen.Load() != 1 {
		t.Fatalf("Describe with Retry-After 60 = %v (%+v) after %d requests; want the 503 at once", err, p, f.seen.Load())
	}

	// A deadline that ends before the pause: the 503 is returned at once
	// rather than slept on. The pause is the longest the policy waits
	// out and the deadline a second shorter, so that only a request
	// taking 4s (not one slowed by a loaded machine) ends it first.
	f.reset(1, unavailable("5"))
	short, cancel := context.WithTimeout(ctx, 4*time.Second)
	defer cancel()
	if _, err := c.Describe(short, "s"); !client.IsUnavailable(err) || f.seen.Load() != 1 {
		t.Fatalf("Describe with a 4s deadline and Retry-After 5 = %v after %d requests", err, f.seen.Load())
	}
}

func TestRetryOnConnectionReset(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFaults("/add", 2, reset)
	s := startSketchd(t, f.wrap)
	c := newClient(t, s, quick)
	if _, _, err := c.Create(ctx, "h", client.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Create(ctx, "c", client.CreateRequest{Type: client.TypeCMS}); err != nil {
		t.Fatal(err)
	}
	if n, err := c.AddInts(ctx, "h", []int64{1, 2}); err != nil || n != 2 || f.seen.Load() != 3 {
		t.Fatalf("AddInts over resets = %d, %v after %d requests; want 2 on the third", n, err, f.seen.Load())
	}
	f.reset(2, reset)
	if n, err := c.AddItems(ctx, "c", []client.Item{{ID: client.Int(1), Count: 1}}); err != nil || n != 1 || f.seen.Load() != 3 {
		t.Fatalf("AddItems over resets = %d, %v after %d requests; want 1 on the third", n, err, f.seen.Load())
	}
	f.reset(2, reset)
	c = newClient(t, s, quick, client.WithoutIdempotencyKeys())
	_, err := c.AddItems(ctx, "c", []client.Item{{ID: client.Int(1), Count: 1}})
	if err == nil || client.StatusOf(err) != 0 || f.seen.Load() != 1 {
		t.Fatalf("AddItems without keys over a reset = %v after %d requests; want the transport error after one", err, f.seen.Load())
	}
}

func TestRetryOnTimeout(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	release := make(chan struct{})
	defer close(release)
	stall := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	f := newFaults("/s", 1, stall)
	s := startSketchd(t, f.wrap)
	// Each attempt has 3s: the stalled one uses them up; the next must
	// finish within them, on a loaded machine too.
	c := newClient(t, s, quick, client.WithHTTPClient(&http.Client{Timeout: 3 * time.Second}))
	if _, _, err := c.Create(ctx, "s", client.CreateRequest{}); err != nil || f.seen.Load() != 2 {
		t.Fatalf("Create after a timeout = %v after %d requests; want success on the second", err, f.seen.Load())
	}
	// The caller's own deadline is not retried. It leaves a loaded
	// machine a second to bring the request to the stalling server.
	f.reset(1, stall)
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := c.Describe(short, "s"); !errors.Is(err, context.DeadlineExceeded) || f.seen.Load() != 1 {
		t.Fatalf("Describe past the caller's deadline = %v after %d requests", err, f.seen.Load())
	}
}

// countingTransport counts round trips.
type countingTransport struct {
	n  atomic.Int64
	rt http.RoundTripper
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.rt.RoundTrip(r)
}

func TestRetryWhenRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	tr := &countingTransport{rt: http.DefaultTransport}
	c, err := client.New("http://"+addr, quick, client.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Describe(t.Context(), "s"); err == nil || tr.n.Load() != 4 {
		t.Fatalf("Describe of a closed port = %v after %d attempts, want an error after 4", err, tr.n.Load())
	}
	// Nothing reached a server, so even a Count-Min add may be retried.
	tr.n.Store(0)
	if _, err := c.AddItems(t.Context(), "s", []client.Item{{ID: client.Int(1), Count: 1}}); err == nil || tr.n.Load() != 4 {
		t.Fatalf("AddItems to a closed port = %v after %d attempts, want an error after 4", err, tr.n.Load())
	}
}
