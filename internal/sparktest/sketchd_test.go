package sparktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/api"
	"github.com/sketchd/sketchd/internal/metrics"
	"github.com/sketchd/sketchd/internal/server"
	"github.com/sketchd/sketchd/internal/store/bolt"
	"github.com/sketchd/sketchd/internal/store/bolt/bolttest"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// sketchd is a live sketchd for a test: the server over a real store (the
// embedded backend, in the test's temporary directory), served by
// httptest, and called over HTTP as a reader would call it.
type sketchd struct {
	url string
	c   *http.Client
}

func newSketchd(tb testing.TB) *sketchd {
	tb.Helper()
	db := storetest.Open(tb, bolttest.Backend(bolt.Options{}))
	reg := metrics.NewRegistry()
	s := server.New(server.DefaultConfig(), server.Deps{
		Store: db.Store, Metrics: metrics.New(reg, metrics.Options{}),
		MetricsHandler: metrics.Handler(reg, nil), OpenAPI: api.Spec(),
	})
	srv := httptest.NewServer(s)
	tb.Cleanup(srv.Close)
	return &sketchd{url: srv.URL, c: srv.Client()}
}

// do sends a request and returns the answer's body, failing tb unless
// the status is want.
func (d *sketchd) do(tb testing.TB, method, path, ctype string, body []byte, want int) []byte {
	tb.Helper()
	req, err := http.NewRequest(method, d.url+path, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := d.c.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	if resp.StatusCode != want {
		tb.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, clip(string(b)), want)
	}
	return b
}

// obj is a JSON answer.
type obj map[string]any

func (d *sketchd) json(tb testing.TB, method, path string, body any, want int) obj {
	tb.Helper()
	var in []byte
	if body != nil {
		var err error
		if in, err = json.Marshal(body); err != nil {
			tb.Fatal(err)
		}
	}
	out := d.do(tb, method, path, "application/json", in, want)
	var o obj
	if err := json.Unmarshal(out, &o); err != nil {
		tb.Fatalf("%s %s answered %s: %v", method, path, clip(string(out)), err)
	}
	return o
}

// create makes a sketch with the given parameters.
func (d *sketchd) create(tb testing.TB, name string, params obj) {
	tb.Helper()
	d.json(tb, http.MethodPut, "/v1/sketches/"+name, params, http.StatusCreated)
}

// add posts a JSON add body ({"ids": …}, {"items": …} or {"values": …}).
func (d *sketchd) add(tb testing.TB, name string, body obj) {
	tb.Helper()
	d.json(tb, http.MethodPost, "/v1/sketches/"+name+"/add", body, http.StatusOK)
}

func (d *sketchd) describe(tb testing.TB, name string) obj {
	tb.Helper()
	return d.json(tb, http.MethodGet, "/v1/sketches/"+name, nil, http.StatusOK)
}

// raw downloads a sketch's bytes (query: "" or "?…").
func (d *sketchd) raw(tb testing.TB, name, query string) []byte {
	tb.Helper()
	return d.do(tb, http.MethodGet, "/v1/sketches/"+name+"/raw"+query, "", nil, http.StatusOK)
}

// upload creates name from bytes (PUT …/raw) and returns its description.
func (d *sketchd) upload(tb testing.TB, name, query string, b []byte) obj {
	tb.Helper()
	out := d.do(tb, http.MethodPut, "/v1/sketches/"+name+"/raw"+query, "application/octet-stream", b, http.StatusCreated)
	var o obj
	if err := json.Unmarshal(out, &o); err != nil {
		tb.Fatal(err)
	}
	return o
}

// union answers POST /v1/union of names.
func (d *sketchd) union(tb testing.TB, names ...string) obj {
	tb.Helper()
	return d.json(tb, http.MethodPost, "/v1/union", obj{"sketches": names}, http.StatusOK)
}

// get answers a GET of path with a JSON body.
func (d *sketchd) get(tb testing.TB, path string) obj {
	tb.Helper()
	return d.json(tb, http.MethodGet, path, nil, http.StatusOK)
}

// num reads a number member of an answer.
func (o obj) num(tb testing.TB, key string) float64 {
	tb.Helper()
	v, ok := o[key].(float64)
	if !ok {
		tb.Fatalf("answer has %s = %#v, not a number: %v", key, o[key], o)
	}
	return v
}

// str reads a string member of an answer.
func (o obj) str(tb testing.TB, key string) string {
	tb.Helper()
	v, ok := o[key].(string)
	if !ok {
		tb.Fatalf("answer has %s = %#v, not a string: %v", key, o[key], o)
	}
	return v
}

// list reads the member key of every element of the array member arr.
func (o obj) list(tb testing.TB, arr, key string) []float64 {
	tb.Helper()
	a, ok := o[arr].([]any)
	if !ok {
		tb.Fatalf("answer has %s = %#v, not an array", arr, o[arr])
	}
	out := make([]float64, len(a))
	for i, e := range a {
		m, ok := e.(map[string]any)
		f, isNum := m[key].(float64)
		if !ok || !isNum {
			tb.Fatalf("%s[%d] = %#v has no number %s", arr, i, e, key)
		}
		out[i] = f
	}
	return out
}

// ids returns lo..hi-1 as JSON ids: integers, or their decimal strings.
func ids(lo, hi int64, strs bool) []any {
	out := make([]any, 0, hi-lo)
	for v := lo; v < hi; v++ {
		if strs {
			out = append(out, fmt.Sprint(v))
		} else {
			out = append(out, v)
		}
	}
	return out
}

// rounded is how Spark's hll_sketch_estimate and theta_sketch_estimate
// answer an estimate: Java's Math.round, half up.
func rounded(x float64) int64 { return int64(math.Floor(x + 0.5)) }

// csv joins numbers for a query string.
func csv[T int | int64 | float64](xs []T) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}
