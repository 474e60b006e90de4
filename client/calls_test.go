package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/sketchd/sketchd/client"
)

func newClient(tb testing.TB, s *sketchd, opts ...client.Option) *client.Client {
	tb.Helper()
	c, err := client.New(s.srv.URL, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// TestEveryCall drives each method against the real server and checks
// what it returns against what the server then holds.
func TestEveryCall(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	ctx := t.Context()

	if err := c.Health(ctx); err != nil {
		t.Fatalf("Health: %v", err)
	}
	if err := c.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	spec, err := c.OpenAPI(ctx)
	if err != nil || !bytes.HasPrefix(spec, []byte("openapi: 3")) {
		t.Fatalf("OpenAPI = %.20q, %v", spec, err)
	}

	// Create: 201, then 200 for the same parameters, 409 for others.
	sk, created, err := c.Create(ctx, "a", client.CreateRequest{Log2m: 11, Metric: true})
	if err != nil || !created || sk.Type != client.TypeHLL || sk.Log2m != 11 || sk.Regwidth != 5 || sk.Expthresh != -1 || !sk.Sparse || sk.Representation != "EMPTY" {
		t.Fatalf("Create(a) = %+v, %v, %v", sk, created, err)
	}
	if _, created, err = c.Create(ctx, "a", client.CreateRequest{Log2m: 11, Metric: true}); err != nil || created {
		t.Fatalf("Create(a) again = %v, %v; want existing, nil", created, err)
	}
	if _, _, err = c.Create(ctx, "a", client.CreateRequest{Log2m: 12}); !client.IsConflict(err) {
		t.Fatalf("Create(a, log2m 12) = %v, want a conflict", err)
	}

	// The four HLL adds, each with ids the others do not have.
	add := func(what string, n int, err error, want int) {
		t.Helper()
		if err != nil || n != want {
			t.Fatalf("%s = %d, %v; want %d", what, n, err, want)
		}
	}
	n, err := c.AddInts(ctx, "a", []int64{1, 2, 3, -4})
	add("AddInts", n, err, 4)
	n, err = c.AddStrings(ctx, "a", []string{"alice", "bob", "quote\"d\n\x01é"})
	add("AddStrings", n, err, 3)
	n, err = c.AddIDs(ctx, "a", []client.ID{client.Int(5), client.Text("5")})
	add("AddIDs", n, err, 2)
	n, err = c.AddHashes(ctx, "a", []int64{0x1234567890, -77})
	add("AddHashes", n, err, 2)
	if _, err := c.AddStrings(ctx, "a", []string{"\xff"}); err == nil || client.StatusOf(err) != 0 {
		t.Fatalf("AddStrings(invalid UTF-8) = %v, want an error before sending", err)
	}
	sk, err = c.Describe(ctx, "a")
	if err != nil || sk.Cardinality != 11 || sk.Representation != "EXPLICIT" || sk.StdError != 0 || !sk.Metric {
		t.Fatalf("Describe(a) = %+v, %v; want 11 ids, exact", sk, err)
	}
	// The same ids again change nothing (what makes HLL adds retryable).
	if _, err := c.AddInts(ctx, "a", []int64{1, 2, 3, -4}); err != nil {
		t.Fatal(err)
	}
	if again, _ := c.Describe(ctx, "a"); again.Cardinality != 11 {
		t.Fatalf("cardinality after re-adding = %v, want 11", again.Cardinality)
	}

	// The hash of Text("quote\"d\n\x01é") matches the id sent alone as
	// JSON, which the server hashes from its UTF-8 bytes.
	if _, _, err := c.Create(ctx, "esc", client.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddIDs(ctx, "esc", []client.ID{client.Text("quote\"d\n\x01é")}); err != nil {
		t.Fatal(err)
	}
	if u, err := c.Union(ctx, client.UnionRequest{Sketches: client.Names("a", "esc")}); err != nil || u.Cardinality != 11 {
		t.Fatalf("Union(a, esc) = %+v, %v; want 11 (the escaped id is the same id)", u, err)
	}

	// create=true on add.
	if _, err := c.AddInts(ctx, "b", []int64{3, 4, 5, 6}); !client.IsNotFound(err) {
		t.Fatalf("AddInts(missing b) = %v, want not found", err)
	}
	n, err = c.AddInts(ctx, "b", []int64{3, 4, 5, 6}, client.WithCreate())
	add("AddInts(b, create)", n, err, 4)

	u, err := c.Union(ctx, client.UnionRequest{Sketches: client.Names("a", "b"), Into: "ab"})
	if err != nil || u.Type != client.TypeHLL || u.Cardinality != 13 || u.Into != "ab" || u.Log2m != 11 {
		t.Fatalf("Union(a, b into ab) = %+v, %v", u, err)
	}
	x, err := c.Intersection(ctx, client.IntersectionRequest{Sketches: client.Names("a", "b"), Method: client.MethodInclusionExclusion})
	if err != nil || x.Estimate != 2 || x.Method != client.MethodInclusionExclusion || len(x.Terms) != 3 || x.Jaccard == nil {
		t.Fatalf("Intersection(a, b) = %+v, %v; want 2", x, err)
	}

	// Fold into another sketch, then in place.
	sk, err = c.Fold(ctx, "ab", client.FoldRequest{Log2m: 8, Into: "ab8"})
	if err != nil || sk.Name != "ab8" || sk.Log2m != 8 {
		t.Fatalf("Fold(ab into ab8) = %+v, %v", sk, err)
	}
	if sk, err = c.Fold(ctx, "ab8", client.FoldRequest{Log2m: 8, Regwidth: 4}); err != nil || sk.Regwidth != 4 {
		t.Fatalf("Fold(ab8 in place) = %+v, %v", sk, err)
	}

	// Raw: download, conditional download, hex, upload, merge.
	raw, err := c.Raw(ctx, "ab", client.RawOptions{})
	if err != nil || len(raw.Data) == 0 || raw.ETag == "" || raw.NotModified {
		t.Fatalf("Raw(ab) = %+v, %v", raw, err)
	}
	same, err := c.Raw(ctx, "ab", client.RawOptions{IfNoneMatch: raw.ETag})
	if err != nil || !same.NotModified || len(same.Data) != 0 {
		t.Fatalf("Raw(ab, If-None-Match) = %+v, %v; want not modified", same, err)
	}
	hex, err := c.Raw(ctx, "ab", client.RawOptions{Hex: true})
	if err != nil || !bytes.HasPrefix(hex.Data, []byte(`\x`)) || len(hex.Data) != 2+2*len(raw.Data) {
		t.Fatalf("Raw(ab, hex) = %q, %v", hex.Data, err)
	}
	folded, err := c.Raw(ctx, "ab", client.RawOptions{Log2m: 9})
	if err != nil || bytes.Equal(folded.Data, raw.Data) {
		t.Fatalf("Raw(ab, log2m 9) = %x, %v; want other bytes than %x", folded.Data, err, raw.Data)
	}
	sk, created, err = c.PutRaw(ctx, "copy", raw.Data)
	if err != nil || !created || sk.Cardinality != 13 {
		t.Fatalf("PutRaw(copy) = %+v, %v, %v", sk, created, err)
	}
	if _, created, err = c.PutRaw(ctx, "copy", raw.Data); err != nil || created {
		t.Fatalf("PutRaw(copy) again = %v, %v; want replaced", created, err)
	}
	bRaw, err := c.Raw(ctx, "esc", client.RawOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sk, err = c.MergeRaw(ctx, "b", bRaw.Data); err != nil || sk.Cardinality != 5 {
		t.Fatalf("MergeRaw(b, esc) = %+v, %v; want 5", sk, err)
	}
	if _, _, err := c.PutRaw(ctx, "bad", []byte{0xff, 0x00}); !client.IsInvalid(err) {
		t.Fatalf("PutRaw(garbage) = %v, want invalid", err)
	}

	// Count-Min: create, items, events, frequency both ways, top.
	sk, _, err = c.Create(ctx, "cms", client.CreateRequest{Type: client.TypeCMS, Epsilon: 0.001, Delta: 0.01, TopK: 5})
	if err != nil || sk.Type != client.TypeCMS || sk.Width != 2719 || sk.Depth != 5 || sk.TopK != 5 {
		t.Fatalf("Create(cms) = %+v, %v", sk, err)
	}
	n, err = c.AddItems(ctx, "cms", []client.Item{{ID: client.Text("alice"), Count: 3}, {ID: client.Int(42), Count: 1}})
	add("AddItems", n, err, 2)
	n, err = c.AddEvents(ctx, []client.Event{
		{ID: client.Text("alice"), Sketches: []string{"cms", "a"}},
		{ID: client.Int(7), Sketches: []string{"cms", "ev"}},
	}, client.WithCreate())
	add("AddEvents", n, err, 2)
	f, err := c.Frequency(ctx, "cms", []client.ID{client.Text("alice"), client.Int(42), client.Int(1)})
	if err != nil || f.Total != 6 || len(f.Results) != 3 || f.Results[0].ID != client.Text("alice") || f.Results[0].Estimate != 4 ||
		f.Results[1].ID != client.Int(42) || f.Results[1].Estimate != 1 || f.Results[2].Estimate != 0 || f.Results[0].Confidence < 0.99 || f.Results[0].ErrorBound <= 0 {
		t.Fatalf("Frequency = %+v, %v", f, err)
	}
	fq, err := c.FrequencyQuery(ctx, "cms", []client.ID{client.Text("alice")})
	if err != nil || fq.Total != 6 || fq.Results[0].Estimate != 4 || !fq.Results[0].ID.IsText() {
		t.Fatalf("FrequencyQuery(alice) = %+v, %v", fq, err)
	}
	if fq, err = c.FrequencyQuery(ctx, "cms", []client.ID{client.Int(42), client.Int(7)}); err != nil || fq.Results[1].Estimate != 1 {
		t.Fatalf("FrequencyQuery(42, 7) = %+v, %v", fq, err)
	}
	if _, err = c.FrequencyQuery(ctx, "cms", []client.ID{client.Int(42), client.Text("x")}); err == nil {
		t.Fatal("FrequencyQuery of mixed ids succeeded")
	}
	top, err := c.Top(ctx, "cms", 2)
	if err != nil || len(top) != 2 || top[0].ID != client.Text("alice") || top[0].Estimate != 4 {
		t.Fatalf("Top(cms, 2) = %+v, %v", top, err)
	}
	if _, err := c.Top(ctx, "a", 0); !client.IsConflict(err) {
		t.Fatalf("Top(an hll) = %v, want a conflict", err)
	}
	if cu, err := c.Union(ctx, client.UnionRequest{Sketches: client.Names("cms")}); err != nil || cu.Type != client.TypeCMS || cu.Total != 6 {
		t.Fatalf("Union(cms) = %+v, %v", cu, err)
	}

	// List, a page at a time and all of it.
	page, err := c.List(ctx, client.ListOptions{Limit: 3})
	if err != nil || len(page.Sketches) != 3 || page.Next != "ab8" {
		t.Fatalf("List(limit 3) = %+v, %v", page, err)
	}
	var names []string
	for sk, err := range c.All(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, sk.Name)
	}
	want := []string{"a", "ab", "ab8", "b", "cms", "copy", "esc", "ev"}
	if !slices.Equal(names, want) {
		t.Fatalf("All = %v, want %v", names, want)
	}
	page, err = c.List(ctx, client.ListOptions{Prefix: "ab", After: "ab"})
	if err != nil || len(page.Sketches) != 1 || page.Sketches[0].Name != "ab8" || page.Next != "" {
		t.Fatalf("List(prefix ab, after ab) = %+v, %v", page, err)
	}
	// The same pages as Parquet files, read with parquet-go.
	pq, err := c.ListParquet(ctx, client.ListOptions{Limit: 3})
	if err != nil || pq.Next != "ab8" {
		t.Fatalf("ListParquet(limit 3) = %+v, %v", pq, err)
	}
	file, err := io.ReadAll(pq.Body)
	pq.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.Read[struct {
		Name  string `parquet:"name"`
		Bytes []byte `parquet:"bytes"`
	}](bytes.NewReader(file), int64(len(file)))
	if err != nil || len(rows) != 3 || rows[0].Name != "a" || rows[2].Name != "ab8" {
		t.Fatalf("ListParquet(limit 3)'s file holds %+v, %v; want a, ab, ab8", rows, err)
	}
	if raw, err := c.Raw(ctx, "ab", client.RawOptions{}); err != nil || !bytes.Equal(raw.Data, rows[1].Bytes) {
		t.Fatalf("ListParquet's bytes of ab %x, Raw %+v, %v", rows[1].Bytes, raw, err)
	}
	if _, err := c.ListParquet(ctx, client.ListOptions{Limit: 1001}); client.StatusOf(err) != http.StatusBadRequest {
		t.Fatalf("ListParquet(limit 1001) = %v, want a 400 problem", err)
	}

	m, err := c.Metrics(ctx)
	if err != nil || !strings.Contains(string(m), `sketchd_sketch_estimate{name="a"} 11`) {
		var lines []string
		for l := range strings.Lines(string(m)) {
			if strings.HasPrefix(l, "sketchd_sketch") {
				lines = append(lines, l)
			}
		}
		t.Fatalf("Metrics: %v; want a's estimate (11: the event's alice was there already) in\n%s", err, lines)
	}

	if err := c.Delete(ctx, "copy"); err != nil {
		t.Fatalf("Delete(copy) = %v", err)
	}
	if _, err := c.Describe(ctx, "copy"); !client.IsNotFound(err) {
		t.Fatalf("Describe(deleted) = %v, want not found", err)
	}
	if err := c.Delete(ctx, "copy"); !client.IsNotFound(err) {
		t.Fatalf("Delete(deleted) = %v, want not found", err)
	}
}

// TestProblems checks that error answers become *Problem with the
// server's fields, for each kind the client can provoke.
func TestProblems(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	ctx := t.Context()
	if _, _, err := c.Create(ctx, "h", client.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	big := make([]int64, 1_000_001)
	cases := []struct {
		name   string
		call   func() error
		status int
		kind   string
		is     func(error) bool
	}{
		{"not found", func() error { _, err := c.Describe(ctx, "nope"); return err }, 404, client.KindNotFound, client.IsNotFound},
		{"conflict", func() error {
			_, _, err := c.Create(ctx, "h", client.CreateRequest{Type: client.TypeCMS})
			return err
		}, 409, client.KindConflict, client.IsConflict},
		{"invalid name", func() error { _, err := c.Describe(ctx, "-bad"); return err }, 400, client.KindInvalid, client.IsInvalid},
		{"invalid parameter", func() error {
			_, _, err := c.Create(ctx, "p", client.CreateRequest{Log2m: 31})
			return err
		}, 400, client.KindInvalid, client.IsInvalid},
		{"too many ids", func() error { _, err := c.AddInts(ctx, "h", big); return err }, 413, client.KindTooLarge, client.IsTooLarge},
		{"cms call on an hll", func() error {
			_, err := c.Frequency(ctx, "h", []client.ID{client.Int(1)})
			return err
		}, 409, client.KindConflict, client.IsConflict},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var p *client.Problem
			if !errors.As(err, &p) {
				t.Fatalf("error %v (%T) is not a *Problem", err, err)
			}
			if p.Status != tc.status || p.Kind() != tc.kind || p.Type != client.ProblemTypePrefix+tc.kind || p.Title != http.StatusText(tc.status) ||
				p.Detail == "" || p.RequestID == "" || p.Instance == "" {
				t.Errorf("problem = %+v, want status %d kind %s with detail, request id and instance", p, tc.status, tc.kind)
			}
			if !tc.is(err) {
				t.Errorf("the Is helper for %s is false for %v", tc.kind, err)
			}
			if client.IsUnavailable(err) || (tc.status != 404 && client.IsNotFound(err)) {
				t.Errorf("other helpers claim %v", err)
			}
			if !strings.Contains(err.Error(), p.Detail) || !strings.Contains(err.Error(), p.RequestID) {
				t.Errorf("Error() = %q lacks the detail or the request id", err.Error())
			}
		})
	}

	t.Run("unauthorized and forbidden", func(t *testing.T) {
		// The token checks are the server's; this only needs answers
		// shaped by it, which a proxy in front can also give.
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer good" {
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(401)
				w.Write([]byte(`{"type":"urn:sketchd:problem:unauthorized","title":"Unauthorized","status":401,"detail":"no token"}`))
				return
			}
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(403)
			w.Write([]byte(`{"type":"urn:sketchd:problem:forbidden","title":"Forbidden","status":403,"detail":"read token"}`))
		})
		srv := httptestServer(t, h)
		anon, _ := client.New(srv)
		if err := anon.Delete(ctx, "x"); !client.IsUnauthorized(err) {
			t.Errorf("Delete without a token = %v, want unauthorized", err)
		}
		tok, _ := client.New(srv, client.WithToken("good"))
		if err := tok.Delete(ctx, "x"); !client.IsForbidden(err) {
			t.Errorf("Delete with a read token = %v, want forbidden", err)
		}
	})

	t.Run("not a problem body", func(t *testing.T) {
		srv := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("X-Request-ID", "proxy-1")
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("<html>bad gateway " + strings.Repeat("x", 500) + "</html>"))
		}))
		c, _ := client.New(srv)
		_, err := c.Describe(ctx, "a")
		var p *client.Problem
		if !errors.As(err, &p) || p.Status != 502 || p.Kind() != "" || p.Title != "Bad Gateway" || p.RequestID != "proxy-1" ||
			!strings.HasPrefix(p.Detail, "<html>bad gateway") || len(p.Detail) > 210 {
			t.Fatalf("502 from a proxy = %+v", p)
		}
	})
}

func TestNewRefusesBadBaseURLs(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "localhost:8080", "ftp://h", "http://", "http://h/?q=1", "http://h/#f", "http://h\x7f"} {
		if _, err := client.New(u); err == nil {
			t.Errorf("New(%q) succeeded", u)
		}
	}
	if _, err := client.New("http://h", client.WithRetry(client.RetryPolicy{})); err == nil {
		t.Error("New with MaxAttempts 0 succeeded")
	}
}

// TestBasePathAndHeaders: a base URL with a path prefix (a server behind
// a proxy), the token, the user agent, the request id.
func TestBasePathAndHeaders(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	var seen http.Header
	var path string
	prefix := http.StripPrefix("/sketchd", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, path = r.Header.Clone(), r.URL.EscapedPath()
		s.srv.Config.Handler.ServeHTTP(w, r)
	}))
	srv := httptestServer(t, prefix)
	c, err := client.New(srv+"/sketchd/", client.WithToken("t0k"), client.WithUserAgent("backend/2"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, _, err := c.Create(ctx, "a:b/c", client.CreateRequest{}); !client.IsInvalid(err) && !client.IsNotFound(err) {
		t.Fatalf("Create(a:b/c) = %v; want a refusal of the name (the slash is escaped, not a path)", err)
	}
	if path != "/v1/sketches/a:b%2Fc" {
		t.Errorf("escaped path = %q, want /v1/sketches/a:b%%2Fc", path)
	}
	if _, _, err := c.Create(ctx, "a:b", client.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	if seen.Get("Authorization") != "Bearer t0k" || seen.Get("User-Agent") != "backend/2" || len(seen.Get("X-Request-ID")) != 24 {
		t.Errorf("headers = %v", seen)
	}
}
