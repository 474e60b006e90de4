package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/certs/certstest"
)

// fakeSketchd implements the create and add routes of the HTTP contract
// closely enough to check what the generator sends: it decodes every body by
// its Content-Type, counts ids per sketch and answers 503 to every
// failEvery-th add.
type fakeSketchd struct {
	t         testing.TB
	token     string
	failEvery int
	onAdd     func(n int) // called with the running add count, may be nil

	mu        sync.Mutex
	params    map[string]string // sketch -> create body
	adds      int
	failed    int
	bytes     int64
	received  []int64          // every id of every add body, in arrival order
	accepted  int64            // ids in adds answered 200
	perSketch map[string]int64 // adds per sketch
	keys      []string         // each add's Idempotency-Key
}

func newFakeSketchd(t testing.TB) *fakeSketchd {
	return &fakeSketchd{t: t, params: map[string]string{}, perSketch: map[string]int64{}}
}

func (f *fakeSketchd) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /v1/sketches/{name}", f.create)
	mux.HandleFunc("POST /v1/sketches/{name}/add", f.add)
	return mux
}

func (f *fakeSketchd) authorized(w http.ResponseWriter, r *http.Request) bool {
	if f.token == "" || r.Header.Get("Authorization") == "Bearer "+f.token {
		return true
	}
	problemf(w, http.StatusUnauthorized, "bad token")
	return false
}

func (f *fakeSketchd) create(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) {
		return
	}
	if r.Header.Get("Content-Type") != "application/json" {
		problemf(w, http.StatusUnsupportedMediaType, "want application/json")
		return
	}
	b, _ := io.ReadAll(r.Body)
	var p struct {
		Type     string `json:"type"`
		Log2m    int    `json:"log2m"`
		Regwidth int    `json:"regwidth"`
	}
	if err := json.Unmarshal(b, &p); err != nil || p.Type != "hll" {
		problemf(w, http.StatusBadRequest, "bad params")
		return
	}
	name := r.PathValue("name")
	f.mu.Lock()
	defer f.mu.Unlock()
	if old, ok := f.params[name]; ok {
		if old != string(b) {
			problemf(w, http.StatusConflict, "sketch exists with other parameters")
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	f.params[name] = string(b)
	w.WriteHeader(http.StatusCreated)
}

// uuidBody tells a body of UUID-like ids from the other JSON ones.
var uuidBody = regexp.MustCompile(`^\{"ids":\["[0-9a-f]{8}-`)

func (f *fakeSketchd) add(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) {
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		problemf(w, http.StatusBadRequest, "read: %v", err)
		return
	}
	var fm format
	switch ct := r.Header.Get("Content-Type"); {
	case ct == "application/json" && uuidBody.Match(body):
		fm = formatJSONUUID
	case ct == "application/json" && bytes.Contains(body, []byte(`"`+textIDPrefix)):
		fm = formatJSONText
	case ct == "application/json":
		fm = formatJSON
	case ct == "application/x-ndjson":
		fm = formatNDJSON
	case strings.HasPrefix(ct, "text/plain") && r.URL.Query().Get("id_type") == "int":
		fm = formatText
	case ct == "application/octet-stream":
		fm = formatOctet
	default:
		problemf(w, http.StatusUnsupportedMediaType, "content type %q (query %q)", ct, r.URL.RawQuery)
		return
	}
	ids, err := decodeBody(fm, body)
	if err != nil {
		problemf(w, http.StatusBadRequest, "%v", err)
		return
	}
	name := r.PathValue("name")
	f.mu.Lock()
	if _, ok := f.params[name]; !ok {
		f.mu.Unlock()
		problemf(w, http.StatusNotFound, "no sketch %q", name)
		return
	}
	f.adds++
	n := f.adds
	f.keys = append(f.keys, r.Header.Get("Idempotency-Key"))
	f.bytes += int64(len(body))
	f.received = append(f.received, ids...)
	f.perSketch[name]++
	fail := f.failEvery > 0 && n%f.failEvery == 0
	if fail {
		f.failed++
	} else {
		f.accepted += int64(len(ids))
	}
	f.mu.Unlock()
	if f.onAdd != nil {
		f.onAdd(n)
	}
	if fail {
		w.Header().Set("Retry-After", "1")
		problemf(w, http.StatusServiceUnavailable, "overloaded")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"accepted": `+strconv.Itoa(len(ids))+"}\n")
}

func problemf(w http.ResponseWriter, status int, format string, a ...any) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"type": "about:blank", "title": http.StatusText(status), "status": status, "detail": fmt.Sprintf(format, a...)})
	_, _ = w.Write(b)
}

// runJSON runs the command with -json and decodes what it prints.
func runJSON(t *testing.T, ctx context.Context, args ...string) (*result, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(ctx, append([]string{"-json", "-progress", "0"}, args...), &out, &errOut)
	if out.Len() == 0 {
		return nil, errOut.String(), err
	}
	var res result
	if derr := json.Unmarshal(out.Bytes(), &res); derr != nil {
		t.Fatalf("result is not JSON (%v): %s", derr, out.String())
	}
	return &res, errOut.String(), err
}

func TestRunHTTPFormats(t *testing.T) {
	t.Parallel()
	const (
		requests  = 40
		batch     = 37
		failEvery = 7
	)
	for _, fm := range allFormats {
		t.Run(fm.String(), func(t *testing.T) {
			t.Parallel()
			fake := newFakeSketchd(t)
			fake.token, fake.failEvery = "s3cret", failEvery
			srv := httptest.NewServer(fake.handler())
			defer srv.Close()

			res, stderr, err := runJSON(t, t.Context(), "-target", srv.URL+"/", "-format", fm.String(),
				"-c", "3", "-batch", strconv.Itoa(batch), "-requests", strconv.Itoa(requests),
				"-sketches", "3", "-dist", "sequential", "-prebuilt", "0",
				"-create", "-log2m", "12", "-regwidth", "6", "-token", "s3cret", "-max-backoff", "1ms")
			if err != nil {
				t.Fatalf("run: %v (stderr %s)", err, stderr)
			}
			srv.Close() // waits for the handlers: the fake's fields are final
			fails := requests / failEvery
			if res.Requests != requests || res.OKRequests != requests-int64(fails) || res.FailedRequests != int64(fails) {
				t.Errorf("requests %d ok %d failed %d, want %d %d %d", res.Requests, res.OKRequests, res.FailedRequests, requests, requests-fails, fails)
			}
			if want := map[string]int64{"503": int64(fails)}; !maps.Equal(res.Failures, want) {
				t.Errorf("failures = %v, want %v", res.Failures, want)
			}
			if res.IDs != (requests-int64(fails))*batch || res.IDsSent != requests*batch {
				t.Errorf("ids %d sent %d, want %d %d", res.IDs, res.IDsSent, (requests-fails)*batch, requests*batch)
			}
			if res.Accepted != res.IDs || fake.accepted != res.IDs {
				t.Errorf("accepted: result %d, server %d, want both %d", res.Accepted, fake.accepted, res.IDs)
			}
			if res.BytesSent != fake.bytes {
				t.Errorf("bytes_sent = %d, server read %d", res.BytesSent, fake.bytes)
			}
			if res.Latency.Count != uint64(res.OKRequests) || res.Latency.Max < res.Latency.P50 || res.Latency.P50 <= 0 {
				t.Errorf("latency %+v, want %d samples, 0 < p50 <= max", res.Latency, res.OKRequests)
			}
			if res.Mode != "http" || res.Format != fm.String() || res.Batch != batch || res.Concurrency != 3 || res.PoolPasses != 0 {
				t.Errorf("echoed settings %s/%s/%d/%d", res.Mode, res.Format, res.Batch, res.Concurrency)
			}
			// Sequential ids built during the run: every batch distinct,
			// together exactly 0 … requests·batch-1.
			got := slices.Sorted(slices.Values(fake.received))
			for i, id := range got {
				if id != int64(i) {
					t.Fatalf("server saw ids %v… (sorted), want 0…%d each once", got[:min(i+3, len(got))], requests*batch-1)
				}
			}
			if len(got) != requests*batch {
				t.Errorf("server saw %d ids, want %d", len(got), requests*batch)
			}
			wantParams := `{"type":"hll","log2m":12,"regwidth":6}`
			for _, n := range []string{"load-0", "load-1", "load-2"} {
				if fake.params[n] != wantParams {
					t.Errorf("sketch %s created with %q, want %q", n, fake.params[n], wantParams)
				}
				if c := fake.perSketch[n]; c < requests/3 || c > requests/3+1 {
					t.Errorf("sketch %s got %d adds, want %d or %d (round robin)", n, c, requests/3, requests/3+1)
				}
			}
		})
	}
}

func TestRunHTTPModes(t *testing.T) {
	t.Parallel()
	t.Run("prebuilt pool reuses its bodies", func(t *testing.T) {
		t.Parallel()
		fake := newFakeSketchd(t)
		srv := httptest.NewServer(fake.handler())
		defer srv.Close()
		res, stderr, err := runJSON(t, t.Context(), "-target", srv.URL, "-create", "-c", "2",
			"-batch", "10", "-requests", "20", "-prebuilt", "4", "-dist", "sequential", "-format", "octet")
		if err != nil {
			t.Fatalf("run: %v (stderr %s)", err, stderr)
		}
		srv.Close()
		if res.IDs != 200 || res.Prebuilt != 4 || res.PoolPasses != 5 {
			t.Errorf("ids %d prebuilt %d pool passes %v, want 200, 4 and 5", res.IDs, res.Prebuilt, res.PoolPasses)
		}
		distinct := slices.Compact(slices.Sorted(slices.Values(fake.received)))
		if len(distinct) != 40 || distinct[0] != 0 || distinct[39] != 39 {
			t.Errorf("distinct ids %v, want 0…39 (4 bodies of 10)", head(distinct))
		}
	})
	t.Run("idempotency keys", func(t *testing.T) {
		t.Parallel()
		fake := newFakeSketchd(t)
		srv := httptest.NewServer(fake.handler())
		defer srv.Close()
		args := []string{"-target", srv.URL, "-create", "-c", "3", "-batch", "10", "-requests", "40", "-prebuilt", "4"}
		if _, stderr, err := runJSON(t, t.Context(), append(args, "-idempotency-keys")...); err != nil {
			t.Fatalf("run: %v (stderr %s)", err, stderr)
		}
		if _, stderr, err := runJSON(t, t.Context(), append(args, "-idempotency-keys")...); err != nil {
			t.Fatalf("second run: %v (stderr %s)", err, stderr)
		}
		if _, stderr, err := runJSON(t, t.Context(), args...); err != nil {
			t.Fatalf("run without keys: %v (stderr %s)", err, stderr)
		}
		srv.Close()
		// Two runs with keys: 80 adds, each with a key of its own, none
		// shared between the runs; the run without keys sends none.
		keyed := map[string]bool{}
		for i, k := range fake.keys {
			if i >= 80 {
				if k != "" {
					t.Errorf("add %d without -idempotency-keys sent key %q", i, k)
				}
				continue
			}
			if k == "" || keyed[k] {
				t.Errorf("add %d sent key %q: want a new key per add", i, k)
			}
			keyed[k] = true
		}
		if len(fake.keys) != 120 {
			t.Errorf("%d adds, want 120", len(fake.keys))
		}
	})
	t.Run("open loop at a fixed rate", func(t *testing.T) {
		t.Parallel()
		fake := newFakeSketchd(t)
		srv := httptest.NewServer(fake.handler())
		defer srv.Close()
		res, stderr, err := runJSON(t, t.Context(), "-target", srv.URL, "-create", "-c", "4",
			"-batch", "1000", "-requests", "30", "-rate", "3000", "-format", "ndjson", "-prebuilt", "8")
		if err != nil {
			t.Fatalf("run: %v (stderr %s)", err, stderr)
		}
		srv.Close()
		if res.Requests != 30 || res.IDs != 30_000 || res.Rate != 3000 || fake.adds != 30 {
			t.Errorf("requests %d ids %d rate %v server adds %d, want 30 30000 3000 30", res.Requests, res.IDs, res.Rate, fake.adds)
		}
	})
	t.Run("duration limit and warmup", func(t *testing.T) {
		t.Parallel()
		fake := newFakeSketchd(t)
		srv := httptest.NewServer(fake.handler())
		defer srv.Close()
		res, stderr, err := runJSON(t, t.Context(), "-target", srv.URL, "-create", "-c", "2",
			"-batch", "100", "-duration", "150ms", "-warmup", "50ms", "-sketches", "2", "-pick", "random", "-prebuilt", "8")
		if err != nil {
			t.Fatalf("run: %v (stderr %s)", err, stderr)
		}
		srv.Close()
		// The warmup's adds reach the server but not the result.
		if res.Requests == 0 || int64(fake.adds) <= res.Requests || res.IDs != res.Requests*100 {
			t.Errorf("result requests %d ids %d, server adds %d: want 0 < result < server, ids = 100·requests", res.Requests, res.IDs, fake.adds)
		}
		if res.DurationSeconds < 0.15 {
			t.Errorf("duration_seconds = %v, want >= 0.15", res.DurationSeconds)
		}
	})
	t.Run("interrupt prints what ran", func(t *testing.T) {
		t.Parallel()
		fake := newFakeSketchd(t)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		fake.onAdd = func(n int) {
			if n == 5 {
				cancel()
			}
		}
		srv := httptest.NewServer(fake.handler())
		defer srv.Close()
		res, stderr, err := runJSON(t, ctx, "-target", srv.URL, "-create", "-c", "2", "-batch", "10", "-requests", "1000", "-prebuilt", "8")
		if err != nil {
			t.Fatalf("run: %v (stderr %s)", err, stderr)
		}
		srv.Close()
		// Adds in flight when the context ended are not counted.
		if !res.Interrupted || res.Requests < 1 || res.Requests > int64(fake.adds) || fake.adds >= 1000 {
			t.Errorf("interrupted %v after %d requests, server %d adds: want interrupted, 1 <= requests <= server < 1000", res.Interrupted, res.Requests, fake.adds)
		}
	})
	t.Run("missing sketches fail with a hint", func(t *testing.T) {
		t.Parallel()
		fake := newFakeSketchd(t)
		srv := httptest.NewServer(fake.handler())
		defer srv.Close()
		res, _, err := runJSON(t, t.Context(), "-target", srv.URL, "-batch", "5", "-requests", "6", "-prebuilt", "2")
		if !errors.Is(err, ErrNoSuccess) || !strings.Contains(err.Error(), "-create") {
			t.Fatalf("run error = %v, want ErrNoSuccess with a -create hint", err)
		}
		if res == nil || res.Failures["404"] != 6 || res.IDs != 0 {
			t.Errorf("result %+v, want 6 failures by 404 and no ids", res)
		}
	})
	t.Run("create conflict stops the run", func(t *testing.T) {
		t.Parallel()
		fake := newFakeSketchd(t)
		fake.params["load-0"] = `{"type":"hll","log2m":11,"regwidth":5}`
		srv := httptest.NewServer(fake.handler())
		defer srv.Close()
		_, _, err := runJSON(t, t.Context(), "-target", srv.URL, "-create", "-requests", "1")
		if err == nil || !strings.Contains(err.Error(), "409") || !strings.Contains(err.Error(), "other parameters") {
			t.Fatalf("run error = %v, want a 409 with the server's detail", err)
		}
	})
	t.Run("wrong token", func(t *testing.T) {
		t.Parallel()
		fake := newFakeSketchd(t)
		fake.token = "right"
		srv := httptest.NewServer(fake.handler())
		defer srv.Close()
		_, _, err := runJSON(t, t.Context(), "-target", srv.URL, "-create", "-token", "wrong", "-requests", "1")
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("run error = %v, want a 401 from create", err)
		}
	})
	t.Run("server gone", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		res, _, err := runJSON(t, t.Context(), "-target", srv.URL, "-requests", "3", "-c", "1", "-timeout", "2s", "-prebuilt", "1")
		if !errors.Is(err, ErrNoSuccess) || res == nil || res.Failures["transport"] != 3 {
			t.Fatalf("run error %v, result %+v, want ErrNoSuccess and 3 transport failures", err, res)
		}
	})
}

func TestRunTextOutput(t *testing.T) {
	t.Parallel()
	fake := newFakeSketchd(t)
	fake.failEvery = 2
	srv := httptest.NewServer(fake.handler())
	defer srv.Close()
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"-target", srv.URL, "-create", "-requests", "4", "-batch", "1000", "-c", "1", "-progress", "0", "-max-backoff", "0", "-prebuilt", "2"}, &out, &errOut)
	if err != nil {
		t.Fatalf("run: %v (%s)", err, errOut.String())
	}
	for _, want := range []string{"2 ok, 2 failed", "2,000 acknowledged", "ids/s", "p99", "failures    503: 2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestParseAccepted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		want   int64
		wantOK bool
	}{
		{`{"accepted": 10000}`, 10000, true},
		{`{"accepted":0}`, 0, true},
		{"{\n  \"accepted\" :\t42\n}", 42, true},
		{`{"accepted": 9223372036854775807}`, 9223372036854775807, true},
		{`{"accepted": 9223372036854775808}`, 0, false},
		{`{"accepted": -1}`, 0, false},
		{`{"accepted": "12"}`, 0, false},
		{`{"accepted"}`, 0, false},
		{`{"count": 12}`, 0, false},
		{``, 0, false},
	}
	for _, tt := range tests {
		got, ok := parseAccepted([]byte(tt.in))
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("parseAccepted(%q) = %d, %v, want %d, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func FuzzParseAccepted(f *testing.F) {
	for _, s := range []string{`{"accepted": 10000}`, `{"accepted":1e3}`, `{"accepted": 99999999999999999999}`, `{"x":{"accepted":3}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := parseAccepted(b)
		if got < 0 || (!ok && got != 0) {
			t.Fatalf("parseAccepted(%q) = %d, %v", b, got, ok)
		}
		// On a JSON object whose only "accepted" is a top-level integer,
		// the scan agrees with a real decoder.
		var v map[string]json.RawMessage
		if bytes.Count(b, []byte(`"accepted"`)) != 1 || json.Unmarshal(b, &v) != nil {
			return
		}
		raw, present := v["accepted"]
		if !present {
			return
		}
		want, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || raw[0] == '-' { // answers never carry a sign, not even -0
			return
		}
		if !ok || got != want {
			t.Fatalf("parseAccepted(%q) = %d, %v, want %d, true", b, got, ok, want)
		}
	})
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"1", time.Second},
		{" 120 ", 2 * time.Minute},
		{"0", 0},
		{"", 0},
		{"-3", 0},
		{"soon", 0},
		{"Sun, 22 Nov 2026 12:00:05 GMT", 5 * time.Second},
		{"Sun, 22 Nov 2026 11:00:00 GMT", 0},
		{"99999999999", 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestRunHTTPS: against an https target whose certificate a private CA
// signed, -ca-file makes every add succeed; without it the run stops at
// the certificate.
func TestRunHTTPS(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t, "sketchload-test")
	fake := newFakeSketchd(t)
	srv := httptest.NewUnstartedServer(fake.handler())
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Server(t, "server").TLS}}
	srv.StartTLS()
	defer srv.Close()

	res, stderr, err := runJSON(t, t.Context(), "-target", srv.URL, "-ca-file", ca.File, "-create", "-c", "2",
		"-batch", "10", "-requests", "20", "-prebuilt", "0", "-dist", "sequential")
	if err != nil {
		t.Fatalf("run: %v (stderr %s)", err, stderr)
	}
	srv.Close()
	if res.OKRequests != 20 || fake.accepted != 200 {
		t.Errorf("ok requests %d, accepted %d, want 20 and 200", res.OKRequests, fake.accepted)
	}

	srv = httptest.NewUnstartedServer(fake.handler())
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Server(t, "server").TLS}}
	srv.StartTLS()
	defer srv.Close()
	_, _, err = runJSON(t, t.Context(), "-target", srv.URL, "-create", "-requests", "5")
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("run without -ca-file = %v, want the certificate refused", err)
	}
}
