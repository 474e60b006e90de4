package server

import (
	"context"
	"errors"
	"fmt"
	"github.com/sketchd/sketchd/internal/sketch"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

func TestRequestID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		name, sent string
		kept       bool
	}{
		{"absent", "", false},
		{"sane", "abc-123_XYZ.9", true},
		{"128 bytes", strings.Repeat("r", 128), true},
		{"129 bytes", strings.Repeat("r", 129), false},
		{"space", "a b", false},
		{"non-ascii", "caf\u00e9", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var hdr []string
			if c.sent != "" {
				hdr = append(hdr, "X-Request-ID: "+c.sent)
			}
			r := e.get(t, "/v1/sketches/nope", hdr...)
			p := checkProblem(t, r, http.StatusNotFound)
			got := r.Header.Get("X-Request-ID")
			if c.kept && got != c.sent {
				t.Errorf("X-Request-ID = %q, want the client's %q", got, c.sent)
			}
			if !c.kept && (got == c.sent || len(got) < 16) {
				t.Errorf("X-Request-ID = %q for a sent %q, want a fresh id", got, c.sent)
			}
			if p.Instance != "/v1/sketches/nope" {
				t.Errorf("instance = %q", p.Instance)
			}
		})
	}
	a, b := e.get(t, "/healthz"), e.get(t, "/healthz")
	if a.Header.Get("X-Request-ID") == b.Header.Get("X-Request-ID") {
		t.Errorf("two requests share the id %q", a.Header.Get("X-Request-ID"))
	}
}

// TestListPaging pages through sketches some of which are only in the
// write-ahead log and cache, some only in bbolt, some deleted since the
// checkpoint.
func TestListPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var want []string
	for i := range 30 {
		name := fmt.Sprintf("a%02d", i)
		e.create(t, name, `{"log2m":4}`)
		want = append(want, name)
	}
	e.create(t, "b00", `{"log2m":4}`)
	e.db.Settle(t)
	for _, n := range []string{"a05", "a17", "a29"} {
		must(t, e.send(t, "DELETE", "/v1/sketches/"+n, "", ""), http.StatusNoContent, "delete "+n)
		want = slices.DeleteFunc(want, func(s string) bool { return s == n })
	}
	for _, n := range []string{"a055", "a30", "a31", "a", "a17x"} {
		e.create(t, n, `{"type":"cms","width":4,"depth":1}`)
		want = append(want, n)
	}
	e.addIDs(t, "a10", `{"ids":[1]}`, 1) // changed since the checkpoint
	slices.Sort(want)

	for _, limit := range []int{1, 4, 7, 33, 34, 1000} {
		var got []string
		after := ""
		for pages := 0; ; pages++ {
			if pages > 40 {
				t.Fatalf("limit %d: paging does not end", limit)
			}
			path := fmt.Sprintf("/v1/sketches?prefix=a&limit=%d", limit)
			if after != "" {
				path += "&after=" + after
			}
			var page struct {
				Sketches []struct {
					Name string `json:"name"`
				} `json:"sketches"`
				Next string `json:"next"`
			}
			decode(t, must(t, e.get(t, path), 200, "list").Body, &page)
			if len(page.Sketches) > limit {
				t.Fatalf("limit %d: page of %d", limit, len(page.Sketches))
			}
			for _, s := range page.Sketches {
				got = append(got, s.Name)
			}
			if page.Next == "" {
				break
			}
			if len(page.Sketches) == 0 || page.Next != page.Sketches[len(page.Sketches)-1].Name {
				t.Fatalf("limit %d: next %q after %v", limit, page.Next, page.Sketches)
			}
			after = page.Next
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: listed %v\nwant %v", limit, got, want)
		}
	}
}

// gatedStore blocks Add while its gate is shut, to hold a write slot
// inside the store.
type gatedStore struct {
	Store
	gate    atomic.Pointer[chan struct{}] // closed: open
	entered chan struct{}
}

func (g *gatedStore) Add(ctx context.Context, name string, in sketch.Input, create bool) (sketch.Added, error) {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-*g.gate.Load()
	return g.Store.Add(ctx, name, in, create)
}

// TestOverloadAndDrain: a body that does not end holds no write slot; a
// write held inside the store holds the only one, so the next write is
// refused with 503 and Retry-After while reads go on; Drain turns /readyz
// to 503.
func TestOverloadAndDrain(t *testing.T) {
	t.Parallel()
	g := &gatedStore{entered: make(chan struct{}, 1)}
	open := make(chan struct{})
	close(open)
	g.gate.Store(&open)
	e := newEnv(t, withConfig(func(c *Config) { c.MaxInflightWrites = 1 }), withStore(func(s Store) Store { g.Store = s; return g }))
	e.allow503 = true
	e.create(t, "h", `{}`)

	// A trickling body: the write slot is free for others meanwhile.
	pr, pw := io.Pipe()
	trickled := make(chan response, 1)
	go func() {
		r, err := e.try(t, request{Method: "POST", Path: "/v1/sketches/h/add", Body: pr, Header: []string{"Content-Type: application/json"}})
		if err != nil {
			t.Errorf("trickled write: %v", err)
		}
		trickled <- r
	}()
	if _, err := pw.Write([]byte(`{"ids":[1,`)); err != nil {
		t.Fatal(err)
	}
	must(t, e.postJSON(t, "/v1/sketches/h/add", `{"ids":[2]}`), 200, "a write while another body trickles in")
	must(t, e.send(t, "DELETE", "/v1/sketches/h", "", ""), 204, "a delete while another body trickles in")
	e.create(t, "h", `{}`)

	// A write stuck in the store holds the only slot.
	shut := make(chan struct{})
	g.gate.Store(&shut)
	select {
	case <-g.entered: // an earlier write's
	default:
	}
	held := make(chan response, 1)
	go func() { held <- e.postJSON(t, "/v1/sketches/h/add", `{"ids":[3]}`) }()
	<-g.entered
	r := e.postJSON(t, "/v1/sketches/h/add", `{"ids":[4]}`)
	checkProblem(t, r, http.StatusServiceUnavailable)
	if r.Header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After")
	}
	checkProblem(t, e.send(t, "DELETE", "/v1/sketches/h", "", ""), http.StatusServiceUnavailable)
	must(t, e.get(t, "/v1/sketches/h"), 200, "a read while writes are full")
	must(t, e.postJSON(t, "/v1/union", `{"sketches":["h"]}`), 200, "a union while writes are full")
	checkProblem(t, e.postJSON(t, "/v1/union", `{"sketches":["h"],"into":"u"}`), http.StatusServiceUnavailable)
	close(shut)
	must(t, <-held, 200, "the held write")
	pw.Write([]byte(`5]}`))
	pw.Close()
	must(t, <-trickled, 200, "the trickled write")
	must(t, e.postJSON(t, "/v1/sketches/h/add", `{"ids":[6]}`), 200, "a write once the slot is free")

	must(t, e.get(t, "/readyz"), 200, "readyz")
	e.s.Drain()
	checkProblem(t, e.get(t, "/readyz"), http.StatusServiceUnavailable)
	must(t, e.get(t, "/healthz"), 200, "healthz while draining")
}

// TestCreateDefaults: an empty body, with or without a JSON Content-Type,
// creates an HLL with the defaults (api/openapi.yaml, createSketch).
func TestCreateDefaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct{ name, ctype, body string }{
		{"d1", "", ""},
		{"d2", "application/json", ""},
		{"d3", "application/json", "{}"},
		{"d4", "application/json; charset=utf-8", " {} "},
	} {
		r := must(t, e.send(t, "PUT", "/v1/sketches/"+c.name, c.ctype, c.body), http.StatusCreated, "create "+c.name)
		if loc := r.Header.Get("Location"); loc != "/v1/sketches/"+c.name {
			t.Errorf("Location = %q", loc)
		}
		var d hllResponse
		decode(t, r.Body, &d)
		if d.Type != "hll" || d.Log2m != 14 || d.Regwidth != 5 || d.Expthresh != -1 || !d.Sparse || d.Metric || d.Representation != "EMPTY" {
			t.Errorf("%s = %+v, want the default hll", c.name, d)
		}
		must(t, e.send(t, "PUT", "/v1/sketches/"+c.name, c.ctype, c.body), http.StatusOK, "create "+c.name+" again")
	}
}

func TestRawETag(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "h", `{}`)
	e.addIDs(t, "h", `{"ids":[1,2,3]}`, 3)
	r := must(t, e.get(t, "/v1/sketches/h/raw"), 200, "raw")
	etag := r.Header.Get("ETag")
	if !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) {
		t.Fatalf("ETag = %q, want a quoted entity tag", etag)
	}
	for _, c := range []struct {
		match string
		want  int
	}{
		{etag, 304},
		{"W/" + etag, 304},
		{`"nope", ` + etag, 304},
		{"*", 304},
		{`"nope"`, 200},
		{`W/"nope"`, 200},
	} {
		if got := e.get(t, "/v1/sketches/h/raw", "If-None-Match: "+c.match); got.Status != c.want {
			t.Errorf("If-None-Match %s: %v, want %d", c.match, got, c.want)
		}
	}
	hexTag := must(t, e.get(t, "/v1/sketches/h/raw?format=hex"), 200, "hex").Header.Get("ETag")
	if hexTag == etag {
		t.Errorf("binary and hex downloads share the ETag %s", etag)
	}
	e.addIDs(t, "h", `{"ids":[4]}`, 1)
	if got := e.get(t, "/v1/sketches/h/raw", "If-None-Match: "+etag); got.Status != 200 || got.Header.Get("ETag") == etag {
		t.Errorf("after a change: %v with ETag %s, want 200 and a new ETag", got, got.Header.Get("ETag"))
	}
}

// TestClientGoneIsNotAServerError: a request whose client has gone away
// is answered 499 (which nobody reads) rather than counted and logged as
// a 500.
func TestClientGoneIsNotAServerError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, "POST", "/v1/sketches/x/add?create=true", strings.NewReader(`{"ids":[1]}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	e.s.ServeHTTP(rec, req)
	if rec.Code != 499 {
		t.Fatalf("status %d, want 499", rec.Code)
	}
}

// damagedStore answers reads of one sketch as a store whose stored value
// failed its checksum does.
type damagedStore struct {
	Store
	name string
}

func (d damagedStore) Describe(ctx context.Context, name string) (sketch.Info, error) {
	if name == d.name {
		cause := errors.New("checksum mismatch: stored 1a2b3c4d, computed 5e6f7a8b over 1234 bytes")
		return sketch.Info{}, sketch.Wrap(sketch.Damaged, cause, `stored sketch "d" is damaged: its record failed its checksum; DELETE the sketch to remove it, or restore the data file from a backup`)
	}
	return d.Store.Describe(ctx, name)
}

// TestDamagedIsA500NamingTheSketch: a stored value that fails its check
// is a 500 of type damaged whose detail names the sketch and what to do,
// never the cause's bytes or checksums, which go to the log.
func TestDamagedIsA500NamingTheSketch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withStore(func(s Store) Store { return damagedStore{s, "d"} }))
	// Not through e.do, which fails any 5xx.
	resp, err := http.Get(e.srv.URL + "/v1/sketches/d")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("GET a damaged sketch = %d %s, want 500", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q, want application/problem+json", ct)
	}
	var p problem
	decode(t, body, &p)
	if p.Type != problemTypePrefix+"damaged" || !strings.Contains(p.Detail, `sketch "d" is damaged`) || strings.Contains(p.Detail, "1a2b3c4d") {
		t.Errorf("problem = %+v, want type damaged, a detail naming the sketch and not the cause", p)
	}
}
