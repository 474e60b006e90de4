package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/sketch"
)

// keyed is a request header carrying key.
func keyed(key string) string { return headerKey + `: "` + key + `"` }

// cmsTotal returns a Count-Min sketch's total.
func (e *env) cmsTotal(tb testing.TB, name string) int64 {
	tb.Helper()
	var d struct {
		Total int64 `json:"total"`
	}
	decode(tb, must(tb, e.get(tb, "/v1/sketches/"+name), http.StatusOK, "describe "+name).Body, &d)
	return d.Total
}

// sameAnswer fails unless a replay repeats the first answer exactly
// (status, Content-Type, Location, body) and says it is a replay.
func sameAnswer(tb testing.TB, what string, first, again response) {
	tb.Helper()
	if again.Status != first.Status || !bytes.Equal(again.Body, first.Body) {
		tb.Fatalf("%s: replay = %v, first answer %v", what, again, first)
	}
	for _, h := range []string{"Content-Type", "Location"} {
		if again.Header.Get(h) != first.Header.Get(h) {
			tb.Errorf("%s: replay's %s = %q, first %q", what, h, again.Header.Get(h), first.Header.Get(h))
		}
	}
	if got := again.Header.Get(headerReplayed); got != "true" {
		tb.Errorf("%s: replay's %s = %q, want true", what, headerReplayed, got)
	}
	if first.Header.Get(headerReplayed) != "" {
		tb.Errorf("%s: the first answer says it is a replay", what)
	}
}

// TestKeyEveryWrite sends every write route twice with one key: the
// second answer repeats the first, marked as a replay, and changes
// nothing; without the key the same request applies again.
func TestKeyEveryWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "c", `{"type":"cms","width":64,"depth":2}`)
	e.create(t, "h", `{"log2m":11}`)
	e.addIDs(t, "h", idsJSON(idRange(0, 100)...), 100)
	e.create(t, "h2", `{"log2m":11}`)
	e.addIDs(t, "h2", idsJSON(idRange(50, 200)...), 150)
	upload := string(e.raw(t, "h2"))
	must(t, e.send(t, "PUT", "/v1/series/s", "application/json", `{"type":"cms","width":64,"depth":2,"levels":{"day":"P30D"}}`), http.StatusCreated, "create series s")
	must(t, e.send(t, "PUT", "/v1/series/gone", "application/json", `{"levels":{"day":"P30D"}}`), http.StatusCreated, "create series gone")
	items := `{"items":[{"id":1,"count":5},{"id":"x","count":2}]}`
	e.create(t, "c2", `{"type":"cms","width":64,"depth":2}`)
	must(t, e.postJSON(t, "/v1/sketches/c2/add", items), http.StatusOK, "add to c2")
	cmsUpload := e.raw(t, "c2")
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -3).Format(time.RFC3339)
	bulk := fmt.Sprintf(`{"level":"day","start":%q,"bytes":%q}`, day, base64.StdEncoding.EncodeToString(cmsUpload)) + "\n"
	type write struct {
		name, method, path, ctype, body string
		status                          int
	}
	writes := []write{
		{"create", "PUT", "/v1/sketches/new", "application/json", `{"log2m":12}`, 201},
		{"cms add", "POST", "/v1/sketches/c/add", "application/json", items, 200},
		{"hll add", "POST", "/v1/sketches/h/add", "text/plain", "1\n2\n500\n", 200},
		{"add with create", "POST", "/v1/sketches/made/add?create=true", "application/json", items, 200},
		{"events", "POST", "/v1/events", "application/json", `{"events":[{"id":9,"sketches":["c","h"]},{"id":10,"sketches":["c"],"series":["s"]}]}`, 200},
		{"series add", "POST", "/v1/series/s/add", "application/json", items, 200},
		{"series change", "PATCH", "/v1/series/s", "application/json", `{"late_limit":"P20D"}`, 200},
		{"bucket merge", "POST", "/v1/series/s/buckets/day/" + day, "application/octet-stream", string(cmsUpload), 200},
		{"bucket replace", "PUT", "/v1/series/s/buckets/day/" + day, "application/octet-stream", string(cmsUpload), 200},
		{"buckets merge", "POST", "/v1/series/s/buckets", "application/x-ndjson", bulk, 200},
		{"raw put", "PUT", "/v1/sketches/copy/raw", "application/octet-stream", upload, 201},
		{"raw post", "POST", "/v1/sketches/h/raw", "application/octet-stream", upload, 200},
		{"union into", "POST", "/v1/union", "application/json", `{"sketches":["h","h2"],"into":"u"}`, 200},
		{"fold into", "POST", "/v1/sketches/h/fold", "application/json", `{"log2m":10,"into":"small"}`, 200},
		{"delete", "DELETE", "/v1/sketches/copy", "", "", 204},
		{"series delete", "DELETE", "/v1/series/gone", "", "", 204},
		{"series create", "PUT", "/v1/series/fresh", "application/json", `{"levels":{"day":"P30D"}}`, 201},
	}
	for i, w := range writes {
		key := fmt.Sprintf("key-%d", i)
		first := e.send(t, w.method, w.path, w.ctype, w.body, keyed(key))
		if first.Status != w.status {
			t.Fatalf("%s: %v, want %d", w.name, first, w.status)
		}
		before := e.snapshot(t)
		total := e.cmsTotal(t, "c")
		again := e.send(t, w.method, w.path, w.ctype, w.body, keyed(key))
		sameAnswer(t, w.name, first, again)
		if d := before.diff(e.snapshot(t)); len(d) > 0 || e.cmsTotal(t, "c") != total {
			t.Fatalf("%s: the replay changed the store: %v", w.name, d)
		}
	}
	// Each counting write applied once: c got items (7) from the cms add
	// and 2 events, the series add went to s once.
	if got := e.cmsTotal(t, "c"); got != 9 {
		t.Fatalf("total of c = %d, want 9", got)
	}
	// Without a key the same add applies again.
	must(t, e.postJSON(t, "/v1/sketches/c/add", items), http.StatusOK, "unkeyed add")
	if got := e.cmsTotal(t, "c"); got != 16 {
		t.Fatalf("total of c = %d, want 16", got)
	}
}

// TestKeyReused: the same key with another request (body, query, method
// or media type) is a 422 and changes nothing; on another sketch it is
// another key.
func TestKeyReused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "c", `{"type":"cms","width":64,"depth":2}`)
	e.create(t, "d", `{"type":"cms","width":64,"depth":2}`)
	body := `{"items":[{"id":1,"count":5}]}`
	must(t, e.postJSON(t, "/v1/sketches/c/add", body, keyed("k")), http.StatusOK, "first")
	for what, r := range map[string]response{
		"another body":       e.postJSON(t, "/v1/sketches/c/add", `{"items":[{"id":1,"count":6}]}`, keyed("k")),
		"another query":      e.postJSON(t, "/v1/sketches/c/add?create=true", body, keyed("k")),
		"another media type": e.send(t, "POST", "/v1/sketches/c/add", "application/x-ndjson", body, keyed("k")),
		"another route":      e.send(t, "PUT", "/v1/sketches/c", "application/json", `{"type":"cms","width":64,"depth":2}`, keyed("k")),
	} {
		p := checkProblem(t, r, http.StatusUnprocessableEntity)
		if p.Type != problemTypePrefix+problemKeyReused || !strings.Contains(p.Detail, headerKey) {
			t.Errorf("%s: problem %+v, want type %s naming the header", what, p, problemKeyReused)
		}
	}
	if got := e.cmsTotal(t, "c"); got != 5 {
		t.Fatalf("total %d after refused reuses, want 5", got)
	}
	must(t, e.postJSON(t, "/v1/sketches/d/add", body, keyed("k")), http.StatusOK, "the same key on another sketch")
	if got := e.cmsTotal(t, "d"); got != 5 {
		t.Fatalf("total of d %d, want 5", got)
	}
}

// TestKeyFailedRequest: a request that failed is not remembered: the
// retry runs, and applies once it can.
func TestKeyFailedRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := `{"items":[{"id":1,"count":5}]}`
	checkProblem(t, e.postJSON(t, "/v1/sketches/c/add", body, keyed("k")), http.StatusNotFound)
	e.create(t, "c", `{"type":"cms","width":64,"depth":2}`)
	r := must(t, e.postJSON(t, "/v1/sketches/c/add", body, keyed("k")), http.StatusOK, "retry once the sketch exists")
	if r.Header.Get(headerReplayed) != "" {
		t.Fatal("the retry of a failed request was answered as a replay")
	}
	if got := e.cmsTotal(t, "c"); got != 5 {
		t.Fatalf("total %d, want 5", got)
	}
}

// TestKeySyntax: a malformed key is a 400 naming the header and changes
// nothing; the quoted and bare forms spell the same key.
func TestKeySyntax(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "c", `{"type":"cms","width":64,"depth":2}`)
	body := `{"items":[{"id":1,"count":1}]}`
	for _, v := range []string{`""`, `"unterminated`, `"a\qb"`, `"a" extra`, "a b", `a"b`, "a,b", `"` + strings.Repeat("k", idem.MaxKeyLen+1) + `"`, strings.Repeat("k", idem.MaxKeyLen+1), "\"caf\u00e9\""} {
		req, _ := http.NewRequest("POST", e.srv.URL+"/v1/sketches/c/add", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(headerKey, v)
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		resp.Body.Close()
		p := checkProblem(t, response{Status: resp.StatusCode, Header: resp.Header, Body: b.Bytes()}, http.StatusBadRequest)
		if !strings.Contains(p.Detail, headerKey) {
			t.Errorf("key %q: detail %q does not name %s", v, p.Detail, headerKey)
		}
	}
	// Two fields.
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/sketches/c/add", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Add(headerKey, `"a"`)
	req.Header.Add(headerKey, `"b"`)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("two %s fields: %d, want 400", headerKey, resp.StatusCode)
	}
	if got := e.cmsTotal(t, "c"); got != 0 {
		t.Fatalf("refused keys changed the total to %d", got)
	}
	long := strings.Repeat("k", idem.MaxKeyLen)
	first := must(t, e.postJSON(t, "/v1/sketches/c/add", body, headerKey+`: "`+long+`"`), http.StatusOK, "the longest key, quoted")
	sameAnswer(t, "the same key, bare", first, e.postJSON(t, "/v1/sketches/c/add", body, headerKey+": "+long))
	escaped := must(t, e.postJSON(t, "/v1/sketches/c/add", body, headerKey+`: "a\"b\\c"`), http.StatusOK, "an escaped key")
	sameAnswer(t, "the escaped key again", escaped, e.postJSON(t, "/v1/sketches/c/add", body, headerKey+`: "a\"b\\c"`))
	if got := e.cmsTotal(t, "c"); got != 2 {
		t.Fatalf("total %d, want 2", got)
	}
}

// TestKeyScopedByToken: two tokens' identical keys are different keys;
// one token's retry is a replay.
func TestKeyScopedByToken(t *testing.T) {
	t.Parallel()
	auth, err := LoadAuth(writeTokens(t, t.TempDir(), writeToken+" write\n"+otherToken+" write\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withAuth(auth))
	must(t, e.send(t, "PUT", "/v1/sketches/c", "application/json", `{"type":"cms","width":64,"depth":2}`, "Authorization: Bearer "+writeToken), http.StatusCreated, "create")
	body := `{"items":[{"id":1,"count":5}]}`
	a := must(t, e.postJSON(t, "/v1/sketches/c/add", body, keyed("k"), "Authorization: Bearer "+writeToken), http.StatusOK, "tenant 1")
	b := must(t, e.postJSON(t, "/v1/sketches/c/add", body, keyed("k"), "Authorization: Bearer "+otherToken), http.StatusOK, "tenant 2, same key")
	if b.Header.Get(headerReplayed) != "" {
		t.Fatal("another token's key was replayed")
	}
	sameAnswer(t, "tenant 1 again", a, e.postJSON(t, "/v1/sketches/c/add", body, keyed("k"), "Authorization: Bearer "+writeToken))
	var d struct {
		Total int64 `json:"total"`
	}
	decode(t, must(t, e.get(t, "/v1/sketches/c", "Authorization: Bearer "+writeToken), 200, "describe").Body, &d)
	if d.Total != 10 {
		t.Fatalf("total %d, want 10", d.Total)
	}
}

// keyedGate holds Add while its gate is shut, keeping the store's other
// parts (keys, series) visible.
type keyedGate struct {
	Store
	keys    KeyStore
	gate    chan struct{}
	entered chan struct{}
	adds    atomic.Int32
}

func (g *keyedGate) Add(ctx context.Context, name string, in sketch.Input, create bool) (sketch.Added, error) {
	g.adds.Add(1)
	g.entered <- struct{}{}
	<-g.gate
	return g.Store.Add(ctx, name, in, create)
}

func (g *keyedGate) Remembered(ctx context.Context, id idem.ID) (idem.Record, bool, error) {
	return g.keys.Remembered(ctx, id)
}

// TestKeyInFlight: a retry while the first request runs is a 409 with
// Retry-After (and its own problem type); once the first is answered
// the retry replays it.
func TestKeyInFlight(t *testing.T) {
	t.Parallel()
	g := &keyedGate{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	e := newEnv(t, withStore(func(s Store) Store { g.Store, g.keys = s, s.(KeyStore); return g }))
	e.create(t, "c", `{"type":"cms","width":64,"depth":2}`)
	body := `{"items":[{"id":1,"count":5}]}`
	first := make(chan response, 1)
	go func() {
		r, err := e.try(t, request{Method: "POST", Path: "/v1/sketches/c/add", Body: strings.NewReader(body), Header: []string{"Content-Type: application/json", keyed("k")}})
		if err != nil {
			t.Error(err)
		}
		first <- r
	}()
	<-g.entered
	r := e.postJSON(t, "/v1/sketches/c/add", body, keyed("k"))
	p := checkProblem(t, r, http.StatusConflict)
	if p.Type != problemTypePrefix+problemKeyInFlight || r.Header.Get("Retry-After") == "" {
		t.Errorf("in flight: problem type %q, Retry-After %q", p.Type, r.Header.Get("Retry-After"))
	}
	close(g.gate)
	f := <-first
	must(t, f, http.StatusOK, "the first request")
	sameAnswer(t, "after the first", f, e.postJSON(t, "/v1/sketches/c/add", body, keyed("k")))
	if n := g.adds.Load(); n != 1 {
		t.Fatalf("the store saw %d adds, want 1", n)
	}
}

// takenStore answers a guarded Add as a store does when another node
// recorded the key meanwhile: it records the key with the answer of the
// write it stands for, and returns idem.ErrTaken.
type takenStore struct {
	Store
	keys KeyStore
	rec  idem.Record
	once atomic.Bool
}

func (s *takenStore) Remembered(ctx context.Context, id idem.ID) (idem.Record, bool, error) {
	if s.once.Load() {
		return s.rec, true, nil
	}
	return idem.Record{}, false, nil
}

func (s *takenStore) Add(ctx context.Context, name string, in sketch.Input, create bool) (sketch.Added, error) {
	if g := idem.From(ctx); g != nil {
		s.once.Store(true)
		return sketch.Added{}, idem.ErrTaken
	}
	return s.Store.Add(ctx, name, in, create)
}

// TestKeyTakenMeanwhile: a write that finds its key recorded by another
// node between the look-up and the write is answered from that record:
// a replay when the request is the same, a 422 when not.
func TestKeyTakenMeanwhile(t *testing.T) {
	t.Parallel()
	ts := &takenStore{}
	e := newEnv(t, withStore(func(s Store) Store { ts.Store, ts.keys = s, s.(KeyStore); return ts }))
	e.create(t, "c", `{"type":"cms","width":64,"depth":2}`)
	a, err := jsonAnswer(http.StatusOK, addResponse{Accepted: 1})
	if err != nil {
		t.Fatal(err)
	}
	ans, _ := a.encode()
	body := `{"items":[{"id":1,"count":5}]}`
	req, _ := http.NewRequest("POST", "/v1/sketches/c/add", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	ts.rec = idem.Record{Fingerprint: fingerprint(req, []byte(body)), Answer: ans, Created: time.Now()}
	r := must(t, e.postJSON(t, "/v1/sketches/c/add", body, keyed("k")), http.StatusOK, "a key taken meanwhile")
	if r.Header.Get(headerReplayed) != "true" || string(r.Body) != string(a.body) {
		t.Fatalf("answer %v, want the recorded one as a replay", r)
	}
	ts.once.Store(false)
	checkProblem(t, e.postJSON(t, "/v1/sketches/c/add", `{"items":[{"id":2,"count":5}]}`, keyed("k2")), http.StatusUnprocessableEntity)
	if got := e.cmsTotal(t, "c"); got != 0 {
		t.Fatalf("total %d, want 0", got)
	}
}

// TestKeyUnionWithoutInto: a union that stores nothing ignores its key.
func TestKeyUnionWithoutInto(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "h", `{"log2m":11}`)
	e.addIDs(t, "h", idsJSON(1, 2, 3), 3)
	a := must(t, e.postJSON(t, "/v1/union", `{"sketches":["h"]}`, keyed("k")), http.StatusOK, "union")
	e.addIDs(t, "h", idsJSON(4, 5), 2)
	b := must(t, e.postJSON(t, "/v1/union", `{"sketches":["h"]}`, keyed("k")), http.StatusOK, "union again")
	if b.Header.Get(headerReplayed) != "" || bytes.Equal(a.Body, b.Body) {
		t.Fatalf("a union without into was replayed: %v then %v", a, b)
	}
}

// TestKeyMetrics: replays are counted and the keys kept are reported.
func TestKeyMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "c", `{"type":"cms","width":64,"depth":2}`)
	for i := range 3 {
		for range 2 {
			must(t, e.postJSON(t, "/v1/sketches/c/add", `{"items":[{"id":1,"count":1}]}`, keyed(fmt.Sprint(i))), http.StatusOK, "add")
		}
	}
	// A shared database's count is taken when the node sweeps its keys.
	if sw, ok := e.db.Store.(interface {
		SweepKeys(context.Context, time.Time) (int64, error)
	}); ok {
		if _, err := sw.SweepKeys(context.Background(), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	text := string(must(t, e.get(t, "/metrics"), http.StatusOK, "metrics").Body)
	for _, want := range []string{"sketchd_idempotency_replays_total 3", "sketchd_idempotency_keys 3", "sketchd_idempotency_keys_evicted_total 0"} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`"abc"`:                   "abc",
		`abc`:                     "abc",
		`  "a b"  `:               "a b",
		`"8e03978e-40d5-43e8"`:    "8e03978e-40d5-43e8",
		`"a\"b\\c"`:               `a"b\c`,
		`clkyoesmbgybucifusbbtds`: "clkyoesmbgybucifusbbtds",
	} {
		got, err := parseKey([]string{in})
		if err != nil || got != want {
			t.Errorf("parseKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{`"abc"`, "abc", `"a\"b"`, `""`, `"x`, "a b", `"` + strings.Repeat("k", 300) + `"`, "\"\x7f\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		key, err := parseKey([]string{in})
		if err != nil {
			if sketch.KindOf(err) != sketch.Invalid {
				t.Fatalf("parseKey(%q) error %v is not Invalid", in, err)
			}
			return
		}
		if key == "" || len(key) > idem.MaxKeyLen {
			t.Fatalf("parseKey(%q) = %q", in, key)
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] > 0x7e {
				t.Fatalf("parseKey(%q) = %q holds byte %#x", in, key, key[i])
			}
		}
		// The quoted form of what was parsed parses to the same key.
		q := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
		if again, err := parseKey([]string{q}); err != nil || again != key {
			t.Fatalf("parseKey(%q) = %q, %v; want %q", q, again, err, key)
		}
	})
}

func FuzzDecodeAnswer(f *testing.F) {
	for _, a := range []*answer{
		{status: 200, contentType: "application/json", body: []byte(`{"accepted":3}` + "\n")},
		{status: 201, contentType: "application/json", location: "/v1/sketches/x", body: []byte("{}\n")},
		{status: 204},
	} {
		b, err := a.encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{1, 0, 200, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		a, err := decodeAnswer(in)
		if err != nil {
			if !errors.Is(err, errAnswer) {
				t.Fatalf("decodeAnswer error %v does not wrap errAnswer", err)
			}
			return
		}
		again, err := a.encode()
		if err != nil {
			t.Fatalf("a decoded answer does not encode: %v", err)
		}
		b, err := decodeAnswer(again)
		if err != nil || b.status != a.status || b.contentType != a.contentType || b.location != a.location || !bytes.Equal(b.body, a.body) {
			t.Fatalf("answer %+v re-decodes as %+v, %v", a, b, err)
		}
	})
}

// readPosts are the POST routes that write nothing.
var readPosts = []string{"/v1/intersection", "/v1/overlap", "/v1/rank", "/v1/retention", "/v1/funnel", "/v1/sketches/{name}/frequency", "/v1/sketches/{name}/check", "/v1/series/{name}/check"}

// TestKeyOnEveryWriteRoute: every route that can write checks
// Idempotency-Key (a malformed one is a 400 naming it), and the spec
// declares the header, the 409 and the 422 on each, and the replay header
// on its 2xx answers.
func TestKeyOnEveryWriteRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.validate = false
	var writes []string
	chi.Walk(e.mux(), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method != "GET" && !slices.Contains(readPosts, route) {
			writes = append(writes, method+" "+route)
		}
		return nil
	})
	if len(writes) < 11 {
		t.Fatalf("only %d write routes: %v", len(writes), writes)
	}
	for _, w := range writes {
		method, route, _ := strings.Cut(w, " ")
		path := strings.ReplaceAll(route, "{name}", "x")
		r := e.send(t, method, path, "application/json", "{}", headerKey+": \"\"")
		if p := checkProblem(t, r, http.StatusBadRequest); !strings.Contains(p.Detail, headerKey) {
			t.Errorf("%s: a malformed key got %q", w, p.Detail)
		}
		op := e.spec.operation(route, method)
		if op == nil {
			t.Fatalf("%s is not in the spec", w)
		}
		declared := false
		for _, p := range op.Parameters {
			if p.Value != nil && p.Value.Name == headerKey && p.Value.In == "header" {
				declared = true
			}
		}
		if !declared {
			t.Errorf("the spec's %s does not declare %s", w, headerKey)
		}
		for _, code := range []int{http.StatusConflict, http.StatusUnprocessableEntity} {
			if op.Responses.Status(code) == nil {
				t.Errorf("the spec's %s does not declare %d", w, code)
			}
		}
		for code, resp := range op.Responses.Map() {
			if strings.HasPrefix(code, "2") && resp.Value.Headers[headerReplayed] == nil {
				t.Errorf("the spec's %s %s answer does not declare %s", w, code, headerReplayed)
			}
		}
	}
}
