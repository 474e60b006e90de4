package client_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sketchd/sketchd/client"
)

// keyLog records the Idempotency-Key of every request.
type keyLog struct {
	mu   sync.Mutex
	keys map[string][]string // "METHOD path" -> keys, in order
}

func (k *keyLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.mu.Lock()
		if k.keys == nil {
			k.keys = map[string][]string{}
		}
		route := r.Method + " " + r.URL.Path
		k.keys[route] = append(k.keys[route], strings.Join(r.Header.Values("Idempotency-Key"), "|"))
		k.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (k *keyLog) of(route string) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.keys[route]...)
}

var quotedUUID = regexp.MustCompile(`^"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"$`)

// TestKeysOnEveryWrite: every write sends one Idempotency-Key (a quoted
// random UUID), a new one per call; reads send none; and
// WithoutIdempotencyKeys sends none at all.
func TestKeysOnEveryWrite(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	log := &keyLog{}
	s := startSketchd(t, log.wrap)
	c := newClient(t, s)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := c.Create(ctx, "h", client.CreateRequest{Log2m: 11})
	must(err)
	_, _, err = c.Create(ctx, "c", client.CreateRequest{Type: client.TypeCMS})
	must(err)
	_, err = c.AddInts(ctx, "h", []int64{1, 2})
	must(err)
	_, err = c.AddInts(ctx, "h", []int64{3})
	must(err)
	_, err = c.AddItems(ctx, "c", []client.Item{{ID: client.Int(1), Count: 2}})
	must(err)
	_, err = c.AddEvents(ctx, []client.Event{{ID: client.Int(1), Sketches: []string{"h", "c"}}})
	must(err)
	raw, err := c.Raw(ctx, "h", client.RawOptions{})
	must(err)
	_, _, err = c.PutRaw(ctx, "copy", raw.Data)
	must(err)
	_, err = c.MergeRaw(ctx, "copy", raw.Data)
	must(err)
	_, err = c.Fold(ctx, "h", client.FoldRequest{Log2m: 10, Into: "small"})
	must(err)
	_, err = c.Union(ctx, client.UnionRequest{Sketches: []client.Operand{{Sketch: "h"}}, Into: "u"})
	must(err)
	_, err = c.Union(ctx, client.UnionRequest{Sketches: []client.Operand{{Sketch: "h"}}})
	must(err)
	_, _, err = c.CreateSeries(ctx, "s", client.SeriesRequest{Levels: map[string]string{"day": "P30D"}})
	must(err)
	_, err = c.AddSeriesInts(ctx, "s", time.Time{}, []int64{1})
	must(err)
	must(c.DeleteSeries(ctx, "s"))
	must(c.Delete(ctx, "copy"))
	_, err = c.Describe(ctx, "h")
	must(err)

	seen := map[string]bool{}
	for route, n := range map[string]int{
		"PUT /v1/sketches/h": 1, "PUT /v1/sketches/c": 1, "POST /v1/sketches/h/add": 2, "POST /v1/sketches/c/add": 1,
		"POST /v1/events": 1, "PUT /v1/sketches/copy/raw": 1, "POST /v1/sketches/copy/raw": 1, "POST /v1/sketches/h/fold": 1,
		"PUT /v1/series/s": 1, "POST /v1/series/s/add": 1, "DELETE /v1/series/s": 1, "DELETE /v1/sketches/copy": 1,
	} {
		keys := log.of(route)
		if len(keys) != n {
			t.Fatalf("%s sent %d times, want %d", route, len(keys), n)
		}
		for _, k := range keys {
			if !quotedUUID.MatchString(k) || seen[k] {
				t.Errorf("%s sent Idempotency-Key %q; want a new quoted UUID per call", route, k)
			}
			seen[k] = true
		}
	}
	// The stored union has a key, the plain one none; reads none.
	if u := log.of("POST /v1/union"); len(u) != 2 || !quotedUUID.MatchString(u[0]) || u[1] != "" {
		t.Errorf("union keys = %q; want one for the union stored into, none for the other", u)
	}
	for _, route := range []string{"GET /v1/sketches/h", "GET /v1/sketches/h/raw"} {
		if k := log.of(route); len(k) != 1 || k[0] != "" {
			t.Errorf("%s sent Idempotency-Key %q", route, k)
		}
	}

	nk := newClient(t, s, client.WithoutIdempotencyKeys())
	_, err = nk.AddItems(ctx, "c", []client.Item{{ID: client.Int(1), Count: 2}})
	must(err)
	if k := log.of("POST /v1/sketches/c/add"); len(k) != 2 || k[1] != "" {
		t.Errorf("WithoutIdempotencyKeys sent %q", k)
	}
}

// dropAnswers lets the first n requests to a path ending in suffix reach
// the server, then drops their answers (the connection is reset), as a
// node killed or a load balancer timing out after the commit would.
type dropAnswers struct {
	suffix string
	n      atomic.Int64
	seen   atomic.Int64
	keys   sync.Map // key -> attempts
}

func (d *dropAnswers) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, d.suffix) {
			next.ServeHTTP(w, r)
			return
		}
		d.seen.Add(1)
		if d.n.Add(-1) < 0 {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(httptest.NewRecorder(), r) // applied; the answer is lost
		reset(w, r)
	})
}

// TestLostAnswersCountOnce: with answers lost after the server applied
// the write, the client's retries (one key per call) leave Count-Min,
// events and a Count-Min batcher's totals at exactly what was sent; the
// same run without keys (retried anyway) counts the lost ones twice,
// which shows the test can tell.
func TestLostAnswersCountOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, keys := range []bool{true, false} {
		add := &dropAnswers{suffix: "/add"}
		ev := &dropAnswers{suffix: "/events"}
		s := startSketchd(t, func(h http.Handler) http.Handler { return add.wrap(ev.wrap(h)) })
		opts := []client.Option{quick}
		var call []client.CallOption
		if !keys {
			opts = append(opts, client.WithoutIdempotencyKeys())
			call = append(call, client.WithUnsafeRetry())
		}
		c := newClient(t, s, opts...)
		if _, _, err := c.Create(ctx, "c", client.CreateRequest{Type: client.TypeCMS}); err != nil {
			t.Fatal(err)
		}
		add.n.Store(2)
		if n, err := c.AddItems(ctx, "c", []client.Item{{ID: client.Int(1), Count: 5}}, call...); err != nil || n != 1 {
			t.Fatalf("AddItems = %d, %v", n, err)
		}
		ev.n.Store(1)
		if n, err := c.AddEvents(ctx, []client.Event{{ID: client.Int(2), Sketches: []string{"c"}}}, call...); err != nil || n != 1 {
			t.Fatalf("AddEvents = %d, %v", n, err)
		}
		b := client.NewBatcher(c, client.BatcherOptions{CountMin: true})
		b.AddInts(ctx, "c", 3, 3, 4)
		add.n.Store(1)
		err := b.Close(ctx)
		sk, derr := c.Describe(ctx, "c")
		if derr != nil {
			t.Fatal(derr)
		}
		if keys {
			if err != nil || sk.Total != 5+1+3 {
				t.Fatalf("with keys: batcher %v, total %d; want 9, each write once", err, sk.Total)
			}
			if add.seen.Load() != 3+2 || ev.seen.Load() != 2 {
				t.Fatalf("with keys: %d adds and %d events sent; want the retries (5 and 2)", add.seen.Load(), ev.seen.Load())
			}
			continue
		}
		// Without keys the retries count again: 3×5 + 2×1, and the
		// batcher (sent once without keys) loses its answer: an error.
		if sk.Total != 3*5+2*1+3 || err == nil {
			t.Fatalf("without keys: batcher %v, total %d; want 20 (the double counts) and an error", err, sk.Total)
		}
	}
}

// TestRetryWhileInFlight: a 409 saying the key's first request is still
// running is retried (after its Retry-After), with the same key.
func TestRetryWhileInFlight(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var keys []string
	url := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		n := len(keys)
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte(`{"type":"urn:sketchd:problem:idempotency-key-in-flight","title":"Conflict","status":409,"detail":"in progress"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Idempotent-Replayed", "true")
		w.Write([]byte(`{"accepted":1}`))
	}))
	c, err := client.New(url, quick)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.AddItems(t.Context(), "c", []client.Item{{ID: client.Int(1), Count: 1}}); err != nil || n != 1 {
		t.Fatalf("AddItems = %d, %v", n, err)
	}
	if len(keys) != 2 || keys[0] != keys[1] || keys[0] == "" {
		t.Fatalf("keys sent %q; want one key twice", keys)
	}
	// A plain conflict is not retried.
	mu.Lock()
	keys = nil
	mu.Unlock()
	plain := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusConflict)
		w.Write([]byte(`{"type":"urn:sketchd:problem:conflict","title":"Conflict","status":409,"detail":"other parameters"}`))
	}))
	c, _ = client.New(plain, quick)
	if _, _, err := c.Create(t.Context(), "c", client.CreateRequest{}); !client.IsConflict(err) || len(keys) != 1 {
		t.Fatalf("Create against a conflict = %v after %d requests", err, len(keys))
	}
}

// TestServerWithoutKeys: a server that predates Idempotency-Key ignores
// the header, and every call works against it as before.
func TestServerWithoutKeys(t *testing.T) {
	t.Parallel()
	var sawKey atomic.Bool
	url := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Idempotency-Key") != "" {
			sawKey.Store(true)
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPut:
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte(`{"name":"c","type":"cms"}`))
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Write([]byte(`{"accepted":1}`))
		}
	}))
	c, err := client.New(url, quick)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, created, err := c.Create(ctx, "c", client.CreateRequest{Type: client.TypeCMS}); err != nil || !created {
		t.Fatalf("Create = %v, %v", created, err)
	}
	if n, err := c.AddItems(ctx, "c", []client.Item{{ID: client.Int(1), Count: 1}}); err != nil || n != 1 {
		t.Fatalf("AddItems = %d, %v", n, err)
	}
	if n, err := c.AddEvents(ctx, []client.Event{{ID: client.Int(1), Sketches: []string{"c"}}}); err != nil || n != 1 {
		t.Fatalf("AddEvents = %d, %v", n, err)
	}
	if err := c.Delete(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if !sawKey.Load() {
		t.Fatal("the client sent no Idempotency-Key")
	}
}
