package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sketchd/sketchd/api"
	"github.com/sketchd/sketchd/internal/console"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/metrics"
	"github.com/sketchd/sketchd/internal/store/bolt"
	"github.com/sketchd/sketchd/internal/store/bolt/bolttest"
	"github.com/sketchd/sketchd/internal/store/postgres"
	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// env is a server over a real store in a temporary directory, served by
// httptest. Every JSON or problem answer that goes through do is checked
// against api/openapi.yaml, and on cleanup every (route, method, status)
// the server counted must be declared there.
type env struct {
	srv  *httptest.Server
	s    *Server
	db   *storetest.Instance
	reg  *prometheus.Registry
	cfg  Config
	spec *specIndex
	// validate checks answers against the spec in do (on by default).
	validate bool
	// allow503 lets do accept 503 answers (overload and drain tests).
	allow503 bool
}

// envSetup configures newEnv.
type envSetup struct {
	cfg  Config
	auth *Auth
	// now is the store's clock, for tests that write the past as the
	// present (nil: the real clock).
	now  func() time.Time
	wrap func(Store) Store
}

// newEnv starts a server over a fresh store. The store is closed and its
// bbolt file checked on cleanup.
func newEnv(tb testing.TB, opts ...func(*envSetup)) *env {
	tb.Helper()
	setup := envSetup{cfg: DefaultConfig()}
	for _, o := range opts {
		o(&setup)
	}
	db := storetest.Open(tb, testBackend(tb, setup.now))
	reg := metrics.NewRegistry()
	src, _ := db.Store.(metrics.Source)
	m := metrics.New(reg, metrics.Options{Source: src, Quantiles: []float64{0.5, 0.9, 0.99}})
	var st Store = db.Store
	if setup.wrap != nil {
		st = setup.wrap(db.Store)
	}
	s := New(setup.cfg, Deps{
		Store: st, Metrics: m, Auth: setup.auth,
		MetricsHandler: metrics.Handler(reg, nil), OpenAPI: api.Spec(),
		Console: sharedConsole(tb),
	})
	e := &env{srv: httptest.NewServer(s), s: s, db: db, reg: reg, cfg: s.cfg, spec: loadSpec(tb), validate: true}
	tb.Cleanup(func() {
		e.srv.Close()
		e.checkObservedCodes(tb)
	})
	return e
}

// loadedConsole is the console every test server shares: loading it
// compresses every asset, which hundreds of servers would repeat
// (TestConsoleLoadedByNew checks a server loading its own serves the
// same).
var loadedConsole = sync.OnceValues(console.New)

// sharedConsole returns loadedConsole's handler or fails the test.
func sharedConsole(tb testing.TB) *console.Handler {
	tb.Helper()
	h, err := loadedConsole()
	if err != nil {
		tb.Fatalf("console.New: %v", err)
	}
	return h
}

func withConfig(f func(*Config)) func(*envSetup) {
	return func(s *envSetup) { f(&s.cfg) }
}

// withClock gives the store a clock of the test's.
func withClock(now func() time.Time) func(*envSetup) {
	return func(s *envSetup) { s.now = now }
}

// withStore puts a fault-injecting wrapper around the real store.
func withStore(wrap func(Store) Store) func(*envSetup) {
	return func(s *envSetup) { s.wrap = wrap }
}

func withAuth(a *Auth) func(*envSetup) {
	return func(s *envSetup) { s.auth = a }
}

// testBackend is the store backend the server's tests run over: the one
// SKETCHD_TEST_BACKEND names (default bolt, the embedded one; postgres;
// citus, on the coordinator SKETCHD_CITUS_DSN names), through the
// factory the conformance suite uses, so every backend passes the same
// HTTP tests.
func testBackend(tb testing.TB, now func() time.Time) storetest.Backend {
	tb.Helper()
	switch name := os.Getenv("SKETCHD_TEST_BACKEND"); name {
	case "", "bolt":
		return bolttest.Backend(bolt.Options{Now: now})
	case "postgres":
		return pgstoretest.Backend(postgres.Options{Now: now})
	case "citus":
		return pgstoretest.Citus(postgres.Options{Now: now})
	default:
		tb.Fatalf("SKETCHD_TEST_BACKEND=%q names no backend", name)
		return storetest.Backend{}
	}
}

// mux returns the server's chi router.
func (e *env) mux() *chi.Mux { return e.s.handler.(*chi.Mux) }

// response is a buffered HTTP answer.
type response struct {
	Status int
	Header http.Header
	Body   []byte
	// Route is the chi pattern the request matched ("" if none).
	Route string
}

func (r response) String() string {
	return fmt.Sprintf("%d %s %s", r.Status, r.Header.Get("Content-Type"), clipBody(r.Body))
}

func clipBody(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// request describes one request for do.
type request struct {
	Method string
	Path   string // raw: escapes are sent as written
	Body   io.Reader
	// Header lines "Name: value".
	Header []string
}

// do sends the request and reads the whole answer. It fails the test on
// a transport error, on any 5xx, and on an answer the spec does not
// allow.
func (e *env) do(tb testing.TB, rq request) response {
	tb.Helper()
	r, err := e.try(tb, rq)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// try is do for goroutines other than the test's: a transport error is
// returned rather than fatal (5xx and spec violations are still
// reported with Errorf, which any goroutine may call).
func (e *env) try(tb testing.TB, rq request) (response, error) {
	tb.Helper()
	req, err := http.NewRequest(rq.Method, e.srv.URL+rq.Path, rq.Body)
	if err != nil {
		return response{}, fmt.Errorf("NewRequest(%s %s): %w", rq.Method, rq.Path, err)
	}
	for _, h := range rq.Header {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			return response{}, fmt.Errorf("header %q has no colon", h)
		}
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: %w", rq.Method, rq.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: reading the answer: %w", rq.Method, rq.Path, err)
	}
	r := response{Status: resp.StatusCode, Header: resp.Header, Body: body, Route: e.route(req)}
	if r.Status >= 500 && !(e.allow503 && r.Status == http.StatusServiceUnavailable) {
		tb.Errorf("%s %s = %v, want no 5xx", rq.Method, rq.Path, r)
	}
	if e.validate {
		e.spec.checkResponse(tb, rq.Method, r)
	}
	return r, nil
}

// route returns the chi pattern req matches, "" if none.
func (e *env) route(req *http.Request) string {
	path := req.URL.RawPath
	if path == "" {
		path = req.URL.Path
	}
	p := e.mux().Find(chi.NewRouteContext(), req.Method, path)
	if !e.s.patterns[p] {
		return "" // a mount such as "/v1", not a route
	}
	return p
}

// send is do with a body given as a string and an optional Content-Type.
func (e *env) send(tb testing.TB, method, path, ctype, body string, header ...string) response {
	tb.Helper()
	if ctype != "" {
		header = append(header, "Content-Type: "+ctype)
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	return e.do(tb, request{Method: method, Path: path, Body: rd, Header: header})
}

// get is a GET without a body.
func (e *env) get(tb testing.TB, path string, header ...string) response {
	tb.Helper()
	return e.do(tb, request{Method: http.MethodGet, Path: path, Header: header})
}

// postJSON posts a JSON body.
func (e *env) postJSON(tb testing.TB, path, body string, header ...string) response {
	tb.Helper()
	return e.send(tb, http.MethodPost, path, "application/json", body, header...)
}

// must fails the test unless r has status want.
func must(tb testing.TB, r response, want int, what string) response {
	tb.Helper()
	if r.Status != want {
		tb.Fatalf("%s = %v, want %d", what, r, want)
	}
	return r
}

// create makes a sketch with the JSON parameters body (201).
func (e *env) create(tb testing.TB, name, body string) {
	tb.Helper()
	must(tb, e.send(tb, http.MethodPut, "/v1/sketches/"+name, "application/json", body), http.StatusCreated, "create "+name)
}

// addIDs adds a JSON body to name (200) and checks the accepted count.
func (e *env) addIDs(tb testing.TB, name, body string, want int) {
	tb.Helper()
	r := must(tb, e.postJSON(tb, "/v1/sketches/"+name+"/add", body), http.StatusOK, "add to "+name)
	var got addResponse
	decode(tb, r.Body, &got)
	if got.Accepted != want {
		tb.Fatalf("add to %s accepted %d, want %d", name, got.Accepted, want)
	}
}

// raw downloads name's bytes (200).
func (e *env) raw(tb testing.TB, name string) []byte {
	tb.Helper()
	return must(tb, e.get(tb, "/v1/sketches/"+name+"/raw"), http.StatusOK, "download "+name).Body
}

// snapshot is every stored sketch's bytes, by name.
type snapshot map[string][]byte

// snapshot lists every sketch and downloads it.
func (e *env) snapshot(tb testing.TB) snapshot {
	tb.Helper()
	out := snapshot{}
	after := ""
	for {
		path := "/v1/sketches?limit=1000"
		if after != "" {
			path += "&after=" + after
		}
		r := must(tb, e.get(tb, path), http.StatusOK, "list")
		var page struct {
			Sketches []struct {
				Name string `json:"name"`
			} `json:"sketches"`
			Next string `json:"next"`
		}
		decode(tb, r.Body, &page)
		for _, s := range page.Sketches {
			out[s.Name] = e.raw(tb, s.Name)
		}
		if page.Next == "" {
			return out
		}
		after = page.Next
	}
}

// sameAs reports the differences between two snapshots.
func (a snapshot) diff(b snapshot) []string {
	var d []string
	for n, x := range a {
		y, ok := b[n]
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("%s disappeared", n))
		case !bytes.Equal(x, y):
			d = append(d, fmt.Sprintf("%s changed: %x -> %x", n, clipBytes(x), clipBytes(y)))
		}
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			d = append(d, fmt.Sprintf("%s appeared", n))
		}
	}
	return d
}

func clipBytes(b []byte) []byte {
	if len(b) > 48 {
		return b[:48]
	}
	return b
}

// decode unmarshals JSON or fails the test.
func decode(tb testing.TB, b []byte, v any) {
	tb.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		tb.Fatalf("decoding %s: %v", clipBody(b), err)
	}
}

// problemKinds maps a status to the problem type the server must give it.
var problemKinds = map[int]string{
	http.StatusBadRequest:            "invalid",
	http.StatusUnauthorized:          "unauthorized",
	http.StatusForbidden:             "forbidden",
	http.StatusNotFound:              "not-found",
	http.StatusMethodNotAllowed:      "method-not-allowed",
	http.StatusConflict:              "conflict",
	http.StatusRequestEntityTooLarge: "too-large",
	http.StatusUnsupportedMediaType:  "unsupported-media-type",
	http.StatusServiceUnavailable:    "unavailable",
	http.StatusRequestTimeout:        "request-timeout",
	http.StatusUnprocessableEntity:   "unprocessable",
}

// keyProblemKinds are the Idempotency-Key problems' own types.
var keyProblemKinds = map[int]string{
	http.StatusConflict:            problemKeyInFlight,
	http.StatusUnprocessableEntity: problemKeyReused,
}

// checkProblem checks that r is a well-formed problem+json answer with
// status want, and returns it.
func checkProblem(tb testing.TB, r response, want int) problem {
	tb.Helper()
	if r.Status != want {
		tb.Errorf("status = %v, want %d", r, want)
	}
	return checkProblemBody(tb, r)
}

// checkProblemBody checks a problem answer whatever its status.
func checkProblemBody(tb testing.TB, r response) problem {
	tb.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		tb.Errorf("Content-Type = %q, want application/problem+json (body %s)", ct, clipBody(r.Body))
	}
	var p problem
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		tb.Errorf("problem body %s: %v", clipBody(r.Body), err)
		return p
	}
	if kind, ok := problemKinds[r.Status]; !ok || p.Type != problemTypePrefix+kind && p.Type != problemTypePrefix+keyProblemKinds[r.Status] {
		tb.Errorf("type = %q for status %d, want %s%s", p.Type, r.Status, problemTypePrefix, kind)
	}
	if !strings.HasPrefix(p.Type, "urn:sketchd:problem:") {
		tb.Errorf("type = %q, want a urn:sketchd:problem: URN", p.Type)
	}
	if p.Title == "" || p.Title != http.StatusText(r.Status) {
		tb.Errorf("title = %q, want %q", p.Title, http.StatusText(r.Status))
	}
	if p.Status != r.Status {
		tb.Errorf("status field = %d, HTTP status %d", p.Status, r.Status)
	}
	if strings.TrimSpace(p.Detail) == "" {
		tb.Errorf("detail is empty in %s", clipBody(r.Body))
	}
	if id := r.Header.Get("X-Request-ID"); p.RequestID == "" || p.RequestID != id {
		tb.Errorf("request_id = %q, X-Request-ID header %q", p.RequestID, id)
	}
	return p
}

// octetIDs encodes ids as an application/octet-stream add body.
func octetIDs(ids ...int64) string {
	b := make([]byte, 0, 8*len(ids))
	for _, v := range ids {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return string(b)
}

// idsJSON encodes ids as {"ids":[...]}.
func idsJSON(ids ...int64) string {
	var b strings.Builder
	b.WriteString(`{"ids":[`)
	for i, v := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, v)
	}
	b.WriteString("]}")
	return b.String()
}

// idRange returns the ints lo..hi-1.
func idRange(lo, hi int64) []int64 {
	out := make([]int64, 0, hi-lo)
	for v := lo; v < hi; v++ {
		out = append(out, v)
	}
	return out
}

// hllOf builds in process the sketch the server must hold for ids.
func hllOf(tb testing.TB, p hll.Params, ids ...int64) *hll.Sketch {
	tb.Helper()
	h, err := hll.New(p)
	if err != nil {
		tb.Fatal(err)
	}
	for _, v := range ids {
		h.AddInt64(v)
	}
	return h
}

// encode returns h's storage-format bytes.
func encode(tb testing.TB, h *hll.Sketch) []byte {
	tb.Helper()
	b, err := h.AppendBinary(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
