package server

import (
	"bytes"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/freq"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/theta"
)

// The fuzz targets send fuzzed bodies through the real handlers and store:
// the answer is a 2xx or a well-formed problem, never a 5xx (do fails the
// test on one), and a refused request changes nothing.

var fuzzContentTypes = []string{
	"application/json",
	"application/x-ndjson",
	"text/plain",
	"application/octet-stream",
	"text/plain; charset=utf-8",
	"",
	"application/json; charset=latin1",
}

var fuzzAddQueries = []string{"", "?id_type=int", "?id_type=text", "?create=true"}

// newFuzzEnv serves the bad-input fixture with the table's limits.
func newFuzzEnv(f *testing.F) (*env, fixture) {
	e := newEnv(f, withConfig(func(c *Config) { c.MaxBody = tableMaxBody; c.MaxQueryBody = tableMaxQueryBody; c.MaxIDs = tableMaxIDs }))
	fx := makeFixture(f)
	fx.load(f, e)
	return e, fx
}

// seedsFor returns the table's bodies sent to routes matching path and
// method, with their content types.
func seedsFor(fx fixture, method string, match func(path string) bool) []badCase {
	var out []badCase
	for _, c := range badInputCases(fx) {
		if c.method == method && match(c.path) {
			out = append(out, c)
		}
	}
	return out
}

func ctypeIndex(ct string) uint8 {
	if i := slices.Index(fuzzContentTypes, ct); i >= 0 {
		return uint8(i)
	}
	return 0
}

// checkRefusal checks a non-2xx answer: a problem whose status is a 4xx.
func checkRefusal(t *testing.T, r response) {
	t.Helper()
	if r.Status < 400 || r.Status > 499 {
		t.Fatalf("answer %v, want a 2xx or a 4xx", r)
	}
	checkProblemBody(t, r)
}

func FuzzAdd(f *testing.F) {
	e, fx := newFuzzEnv(f)
	for _, c := range seedsFor(fx, "POST", func(p string) bool { return strings.HasSuffix(strings.SplitN(p, "?", 2)[0], "/add") }) {
		toCMS := strings.Contains(c.path, "/c/")
		q := uint8(0)
		for i, s := range fuzzAddQueries {
			if s != "" && strings.HasSuffix(c.path, s) {
				q = uint8(i)
			}
		}
		f.Add(toCMS, ctypeIndex(c.ctype), q, []byte(c.body))
	}
	f.Add(false, uint8(0), uint8(0), []byte(`{"ids":[1,2,"a",-9223372036854775808]}`))
	f.Add(false, uint8(0), uint8(0), []byte(`{"hashes":[1,-1]}`))
	f.Add(true, uint8(0), uint8(0), []byte(`{"items":[{"id":1,"count":3},{"count":1,"id":"x"}]}`))
	f.Add(false, uint8(1), uint8(0), []byte("1\n\"a\"\n"))
	f.Add(true, uint8(2), uint8(2), []byte("a\nb\n"))
	f.Add(false, uint8(3), uint8(0), []byte(octetIDs(1, 2, 3)))
	f.Fuzz(func(t *testing.T, toCMS bool, ct, q uint8, body []byte) {
		name := "h"
		if toCMS {
			name = "c"
		}
		ctype := fuzzContentTypes[int(ct)%len(fuzzContentTypes)]
		query := fuzzAddQueries[int(q)%len(fuzzAddQueries)]
		before := e.raw(t, name)
		var hdr []string
		if ctype != "" {
			hdr = append(hdr, "Content-Type: "+ctype)
		}
		r := e.do(t, request{Method: "POST", Path: "/v1/sketches/" + name + "/add" + query, Body: bytes.NewReader(body), Header: hdr})
		if r.Status == http.StatusOK {
			var a addResponse
			decode(t, r.Body, &a)
			if a.Accepted < 0 || a.Accepted > tableMaxIDs {
				t.Fatalf("accepted %d", a.Accepted)
			}
			return
		}
		checkRefusal(t, r)
		if after := e.raw(t, name); !bytes.Equal(before, after) {
			t.Fatalf("refused add (%v) changed %s", r, name)
		}
	})
}

func FuzzCreate(f *testing.F) {
	e, fx := newFuzzEnv(f)
	for _, c := range seedsFor(fx, "PUT", func(p string) bool { return strings.HasPrefix(p, "/v1/sketches/newsketch") }) {
		f.Add(ctypeIndex(c.ctype), []byte(c.body))
	}
	for _, b := range []string{``, `{}`, `{"log2m":4,"regwidth":1,"expthresh":0,"sparse":false}`, `{"type":"cms","epsilon":0.01,"delta":0.001,"topk":10,"conservative":true,"metric":true}`, `{"type":"cms","width":1,"depth":1}`, `{"expthresh":8192,"log2m":17,"regwidth":7}`} {
		f.Add(uint8(0), []byte(b))
	}
	f.Fuzz(func(t *testing.T, ct uint8, body []byte) {
		ctype := fuzzContentTypes[int(ct)%len(fuzzContentTypes)]
		var hdr []string
		if ctype != "" {
			hdr = append(hdr, "Content-Type: "+ctype)
		}
		put := func() response {
			return e.do(t, request{Method: "PUT", Path: "/v1/sketches/fc", Body: bytes.NewReader(body), Header: hdr})
		}
		r := put()
		if r.Status != http.StatusCreated {
			checkRefusal(t, r)
			checkProblem(t, e.get(t, "/v1/sketches/fc"), http.StatusNotFound)
			return
		}
		// The same parameters again are accepted as they are.
		r2 := must(t, put(), http.StatusOK, "the same create again")
		var a, b map[string]any
		decode(t, r.Body, &a)
		decode(t, r2.Body, &b)
		for _, k := range []string{"type", "log2m", "regwidth", "expthresh", "sparse", "width", "depth", "conservative", "topk", "metric"} {
			if a[k] != b[k] {
				t.Errorf("%s: %v then %v", k, a[k], b[k])
			}
		}
		must(t, e.send(t, "DELETE", "/v1/sketches/fc", "", ""), http.StatusNoContent, "delete")
	})
}

func FuzzEvents(f *testing.F) {
	e, fx := newFuzzEnv(f)
	for _, c := range seedsFor(fx, "POST", func(p string) bool { return p == "/v1/events" }) {
		f.Add([]byte(c.body))
	}
	f.Add([]byte(`{"events":[{"id":1,"sketches":["h","c"]},{"id":"x","sketches":["he","c","c2"]}]}`))
	f.Add([]byte(`{"events":[]}`))
	names := []string{"h", "he", "c", "c2"}
	f.Fuzz(func(t *testing.T, body []byte) {
		before := map[string][]byte{}
		for _, n := range names {
			before[n] = e.raw(t, n)
		}
		r := e.postJSON(t, "/v1/events", string(body))
		if r.Status == http.StatusOK {
			return
		}
		checkRefusal(t, r)
		for _, n := range names {
			if !bytes.Equal(before[n], e.raw(t, n)) {
				t.Fatalf("refused events (%v) changed %s", r, n)
			}
		}
	})
}

// uploadModes are the upload routes FuzzUpload drives.
var uploadModes = []struct{ method, name string }{
	{"PUT", "fu"}, {"PUT", "h"}, {"POST", "h"}, {"POST", "c"}, {"PUT", "c"},
}

func FuzzUpload(f *testing.F) {
	e, fx := newFuzzEnv(f)
	for _, body := range badUploads(fx) {
		f.Add(uint8(0), false, []byte(body))
		f.Add(uint8(2), false, []byte(body))
		f.Add(uint8(3), false, []byte(body))
	}
	for _, body := range badHexUploads {
		f.Add(uint8(1), true, []byte(body))
	}
	for _, b := range [][]byte{fx.hll, fx.hllExplicit, fx.cms, fx.cms2} {
		f.Add(uint8(0), false, b)
		f.Add(uint8(2), false, b)
		f.Add(uint8(3), false, b)
	}
	f.Add(uint8(0), true, []byte(`\x128b7f0000000000000001`))
	// Theta (plain, compressed) and freq (both layouts) uploads.
	th, _ := theta.New(theta.Params{LgK: 5})
	fr, _ := freq.New(freq.Params{LgK: 5})
	for v := range int64(100) {
		th.AddInt(v)
		fr.AddInt(v)
	}
	thPlain, _ := th.MarshalBinary()
	frPlain, _ := fr.MarshalBinary()
	for _, b := range [][]byte{thPlain, th.AppendCompressed(nil), frPlain, fr.AppendJava(nil)} {
		f.Add(uint8(0), false, b)
	}
	f.Fuzz(func(t *testing.T, mode uint8, text bool, body []byte) {
		m := uploadModes[int(mode)%len(uploadModes)]
		ctype := "application/octet-stream"
		if text {
			ctype = "text/plain"
		}
		var before []byte
		if m.name != "fu" {
			before = e.raw(t, m.name)
		}
		path := "/v1/sketches/" + m.name + "/raw"
		r := e.do(t, request{Method: m.method, Path: path, Body: bytes.NewReader(body), Header: []string{"Content-Type: " + ctype}})
		if r.Status < 200 || r.Status > 299 {
			checkRefusal(t, r)
			if m.name == "fu" {
				checkProblem(t, e.get(t, "/v1/sketches/fu"), http.StatusNotFound)
			} else if !bytes.Equal(before, e.raw(t, m.name)) {
				t.Fatalf("refused upload (%v) changed %s", r, m.name)
			}
			return
		}
		// What was stored downloads, decodes, and uploads back to itself.
		got := e.raw(t, m.name)
		if _, err := sketch.DetectUpload(got); err != nil {
			t.Fatalf("stored %s does not decode: %v", m.name, err)
		}
		must(t, e.send(t, "PUT", path, "application/octet-stream", string(got)), http.StatusOK, "upload the download again")
		if again := e.raw(t, m.name); !bytes.Equal(again, got) {
			t.Fatalf("round trip changed %s: %x -> %x", m.name, clipBytes(got), clipBytes(again))
		}
		if m.name == "fu" {
			must(t, e.send(t, "DELETE", "/v1/sketches/fu", "", ""), http.StatusNoContent, "delete fu")
		}
	})
}

func FuzzUnion(f *testing.F) {
	e, fx := newFuzzEnv(f)
	for _, c := range seedsFor(fx, "POST", func(p string) bool { return p == "/v1/union" }) {
		f.Add([]byte(c.body))
	}
	f.Add([]byte(`{"sketches":["h","he"]}`))
	f.Add([]byte(`{"sketches":["c","c"],"into":"fuzz-u"}`))
	f.Add([]byte(`{"sketches":["he"],"into":"h"}`))
	fixed := []string{"h", "he", "c", "c2"}
	f.Fuzz(func(t *testing.T, body []byte) {
		before := e.snapshot(t)
		r := e.postJSON(t, "/v1/union", string(body))
		if r.Status == http.StatusOK {
			var u struct {
				Into string `json:"into"`
			}
			decode(t, r.Body, &u)
			if u.Into != "" && !slices.Contains(fixed, u.Into) {
				must(t, e.send(t, "DELETE", "/v1/sketches/"+u.Into, "", ""), http.StatusNoContent, "delete the union")
			}
			if u.Into == "" {
				if d := before.diff(e.snapshot(t)); len(d) > 0 {
					t.Fatalf("a union without into changed the store: %v", d)
				}
			}
			return
		}
		checkRefusal(t, r)
		if d := before.diff(e.snapshot(t)); len(d) > 0 {
			t.Fatalf("refused union (%v) changed the store: %v", r, d)
		}
	})
}

// FuzzName sends fuzzed path segments as sketch names: the answer is a
// problem (400 or 404) or the sketch, never a 5xx, and a name that is
// served or not found is, unescaped, a valid name.
func FuzzName(f *testing.F) {
	e, _ := newFuzzEnv(f)
	for _, s := range []string{"h", "dau:2026-11-17", "dau%3A2026-11-17", "%41bc", "a%2Fb", "%2E%2E", "a%25", "a%zz", "caf%C3%A9", "..", "%00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seg string) {
		u, err := url.Parse("/v1/sketches/" + seg)
		if seg == "" || strings.ContainsAny(seg, "#?") || err != nil || u.RawQuery != "" || u.Fragment != "" || strings.Count(u.EscapedPath(), "/") != 3 {
			t.Skip("not one path segment")
		}
		r, err := e.try(t, request{Method: http.MethodGet, Path: "/v1/sketches/" + seg})
		if err != nil {
			t.Skip(err)
		}
		switch r.Status {
		case http.StatusBadRequest:
			checkProblemBody(t, r)
		case http.StatusOK, http.StatusNotFound:
			name, err := url.PathUnescape(seg)
			if err != nil || sketch.ValidateName(name) != nil {
				t.Fatalf("%q (%q) answered %d", seg, name, r.Status)
			}
		default:
			t.Fatalf("%q: %v", seg, r)
		}
	})
}

// FuzzOverlapAndIntersection sends fuzzed bodies to POST /v1/overlap and
// POST /v1/intersection, whose method member picks the estimator: the
// answer is a 2xx or a 4xx problem, never a 5xx, and neither changes the
// store.
func FuzzOverlapAndIntersection(f *testing.F) {
	e, fx := newFuzzEnv(f)
	for _, c := range seedsFor(fx, "POST", func(p string) bool { return p == "/v1/overlap" || p == "/v1/intersection" }) {
		f.Add(c.path == "/v1/overlap", []byte(c.body))
	}
	for _, b := range []string{`{"sketches":["h","he"]}`, `{"sketches":["h","he"],"method":"mle"}`, `{"sketches":["h","he"],"method":"inclusion_exclusion"}`,
		`{"sketches":["h","he","h"],"method":"mle"}`, `{"sketches":["h","he"],"method":""}`, `{"sketches":["h","he"],"method":7}`} {
		f.Add(true, []byte(b))
		f.Add(false, []byte(b))
	}
	f.Fuzz(func(t *testing.T, overlap bool, body []byte) {
		path := "/v1/intersection"
		if overlap {
			path = "/v1/overlap"
		}
		before := e.snapshot(t)
		r := e.postJSON(t, path, string(body))
		if r.Status != http.StatusOK {
			checkRefusal(t, r)
		}
		if d := before.diff(e.snapshot(t)); len(d) > 0 {
			t.Fatalf("%s (%v) changed the store: %v", path, r, d)
		}
	})
}
