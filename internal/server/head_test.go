package server

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
)

// TestHeadAnswersLikeGet: HEAD on every GET route (as curl -I sends it)
// answers GET's status and headers without a body, for found and missing
// sketches alike; a 405 lists HEAD beside GET.
func TestHeadAnswersLikeGet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.send(t, "PUT", "/v1/sketches/h", "", "")
	e.send(t, "POST", "/v1/sketches/h/add", "application/json", `{"ids":[1,2,3]}`)
	e.send(t, "PUT", "/v1/sketches/c", "application/json", `{"type":"cms","topk":3}`)
	e.send(t, "POST", "/v1/sketches/c/add", "application/json", `{"items":[{"id":1,"count":2}]}`)
	e.send(t, "PUT", "/v1/sketches/f", "application/json", `{"type":"freq"}`)
	e.send(t, "POST", "/v1/sketches/f/add", "application/json", `{"ids":[1,1,2]}`)
	e.send(t, "PUT", "/v1/sketches/r", "application/json", `{"type":"cms","domain_bits":10}`)
	e.send(t, "POST", "/v1/sketches/r/add", "application/json", `{"ids":[1,5,900]}`)
	e.send(t, "PUT", "/v1/sketches/q", "application/json", `{"type":"kll"}`)
	e.send(t, "POST", "/v1/sketches/q/add", "application/json", `{"values":[1.5,2,7]}`)
	// A backend that keeps no series answers their routes 501: they are
	// checked over the backends that keep them.
	_, hasSeries := e.db.Store.(SeriesStore)
	if hasSeries {
		e.send(t, "PUT", "/v1/series/s", "application/json", `{"levels":{"day":"P30D"}}`)
		e.send(t, "POST", "/v1/series/s/add", "application/json", `{"ids":[1,2,3]}`)
	}
	day := time.Now().UTC().Truncate(24 * time.Hour)
	rng := "?from=" + day.Format(time.RFC3339) + "&to=" + day.AddDate(0, 0, 1).Format(time.RFC3339)

	// A concrete path for every GET route, with an existing and a missing
	// sketch where the route names one.
	paths := map[string][]string{
		"/v1/sketches/{name}/frequency":        {"/v1/sketches/c/frequency?id=1", "/v1/sketches/nope/frequency?id=1", "/v1/sketches/c/frequency"},
		"/v1/sketches/{name}/top":              {"/v1/sketches/c/top?k=2", "/v1/sketches/h/top"},
		"/v1/sketches/{name}/frequency_report": {"/v1/sketches/f/frequency_report", "/v1/sketches/h/frequency_report"},
		"/v1/sketches/{name}/raw":              {"/v1/sketches/h/raw", "/v1/sketches/h/raw?format=hex", "/v1/sketches/nope/raw"},
		"/v1/sketches/{name}":                  {"/v1/sketches/h", "/v1/sketches/c", "/v1/sketches/nope"},
		"/v1/sketches":                         {"/v1/sketches", "/v1/sketches?limit=0"},
		"/v1/series/{name}":                    {"/v1/series/s", "/v1/series/nope"},
		"/v1/series/{name}/count":              {"/v1/series/s/count" + rng, "/v1/series/s/count"},
		"/v1/series/{name}/raw":                {"/v1/series/s/raw" + rng, "/v1/series/nope/raw" + rng},
		"/v1/series/{name}/timeseries":         {"/v1/series/s/timeseries" + rng, "/v1/series/s/timeseries"},
		"/v1/series/{name}/top":                {"/v1/series/s/top" + rng},
		"/v1/series/{name}/frequency_report":   {"/v1/series/s/frequency_report" + rng},
		"/v1/sketches/{name}/range":            {"/v1/sketches/r/range?lo=0&hi=10", "/v1/sketches/c/range?lo=0&hi=10", "/v1/sketches/r/range"},
		"/v1/sketches/{name}/quantile":         {"/v1/sketches/r/quantile?q=0.5", "/v1/sketches/nope/quantile?q=0.5"},
		"/v1/series/{name}/range":              {"/v1/series/s/range" + rng + "&lo=0&hi=3"},
		"/v1/series/{name}/quantile":           {"/v1/series/s/quantile" + rng + "&q=0.5"},
		"/v1/sketches/{name}/rank":             {"/v1/sketches/q/rank?value=2", "/v1/sketches/h/rank?value=2"},
		"/v1/sketches/{name}/cdf":              {"/v1/sketches/q/cdf?split=1,5", "/v1/sketches/q/cdf?split=5,1"},
		"/v1/sketches/{name}/pmf":              {"/v1/sketches/q/pmf?split=1,5", "/v1/sketches/nope/pmf?split=1"},
		"/v1/series/{name}/rank":               {"/v1/series/s/rank" + rng + "&value=1"},
		"/v1/series/{name}/cdf":                {"/v1/series/s/cdf" + rng + "&split=1"},
		"/v1/series/{name}/pmf":                {"/v1/series/s/pmf" + rng + "&split=1"},
		"/console/{file}":                      {"/console/app.js", "/console/icon.svg", "/console/nope.js"},
	}
	var routes []string
	chi.Walk(e.mux(), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method == http.MethodGet {
			routes = append(routes, route)
		}
		return nil
	})
	if len(routes) < 9 {
		t.Fatalf("chi.Walk found %d GET routes: %v", len(routes), routes)
	}
	for _, route := range routes {
		if !hasSeries && strings.HasPrefix(route, "/v1/series") {
			continue
		}
		ps, ok := paths[route]
		if !ok {
			if strings.Contains(route, "{") {
				t.Errorf("GET %s has no example path in this test", route)
				continue
			}
			ps = []string{route}
		}
		for _, p := range ps {
			// Both ask for the identity encoding (head sends no
			// Accept-Encoding; Go's client would ask for gzip, which the
			// console's files honour, and then drop Content-Length).
			get := e.get(t, p, "Accept-Encoding: identity")
			head := e.head(t, p)
			if head.Status != get.Status {
				t.Errorf("HEAD %s = %d, GET = %d", p, head.Status, get.Status)
			}
			if len(head.Body) != 0 {
				t.Errorf("HEAD %s sent a %d-byte body", p, len(head.Body))
			}
			for _, h := range []string{"Content-Type", "Content-Length", "Allow", "Retry-After"} {
				if route == "/metrics" && h == "Content-Length" {
					continue // the counters move between the two scrapes
				}
				if g, hd := get.Header.Get(h), head.Header.Get(h); g != hd {
					t.Errorf("HEAD %s: %s %q, GET's %q", p, h, hd, g)
				}
			}
		}
	}

	r := e.send(t, "DELETE", "/v1/sketches", "", "")
	if r.Status != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("DELETE /v1/sketches = %d Allow %q, want 405 Allow \"GET, HEAD\"", r.Status, r.Header.Get("Allow"))
	}
	if r := e.head(t, "/v1/union"); r.Status != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "POST" {
		t.Errorf("HEAD /v1/union = %d Allow %q, want 405 Allow POST", r.Status, r.Header.Get("Allow"))
	}
}

// head sends a HEAD request over a raw connection and returns everything
// the server wrote after the headers as the body (an HTTP client would
// not read a HEAD answer's body even if one were sent).
func (e *env) head(tb testing.TB, path string) response {
	tb.Helper()
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, "HEAD "+path+" HTTP/1.1\r\nHost: sketchd\r\nConnection: close\r\n\r\n"); err != nil {
		tb.Fatal(err)
	}
	raw, err := io.ReadAll(conn)
	if err != nil {
		tb.Fatal(err)
	}
	header, body, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !ok {
		tb.Fatalf("HEAD %s: no end of headers in %q", path, raw)
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(append(header, "\r\n\r\n"...))), nil)
	if err != nil {
		tb.Fatalf("HEAD %s: %v", path, err)
	}
	resp.Body.Close()
	return response{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// BenchmarkHeadVsGet measures a describe answered in process, GET against
// HEAD (which chi's GetHead routes with one extra tree lookup and whose
// body net/http drops): the cost of answering HEAD on every GET route.
//
//	go test -run '^$' -bench HeadVsGet -count 6 ./internal/server
func BenchmarkHeadVsGet(b *testing.B) {
	e := newEnv(b)
	e.validate = false
	e.send(b, "PUT", "/v1/sketches/h", "", "")
	e.send(b, "POST", "/v1/sketches/h/add", "application/json", `{"ids":[1,2,3]}`)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		b.Run("method="+method, func(b *testing.B) {
			req := httptest.NewRequest(method, "/v1/sketches/h", nil)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				e.s.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("%s = %d", method, w.Code)
				}
			}
		})
	}
}
