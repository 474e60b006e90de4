package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestConsoleRoutes: the console's page and files answer as the spec
// says (status and media type, checked by do), with the console's
// policy, and an unknown file is a 404 problem.
func TestConsoleRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for path, ctype := range map[string]string{
		"/":                  "text/html",
		"/console/app.js":    "text/javascript",
		"/console/layout.js": "text/javascript",
		"/console/app.css":   "text/css",
		"/console/icon.svg":  "image/svg+xml",
	} {
		r := e.do(t, request{Method: http.MethodGet, Path: path})
		if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), ctype) {
			t.Errorf("GET %s = %s, want 200 %s", path, r, ctype)
		}
		if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
	}
	checkProblem(t, e.do(t, request{Method: http.MethodGet, Path: "/console/none.js"}), http.StatusNotFound)
}

// TestConsoleLoadedByNew: a server given no console loads its own, and
// it serves every file as the console the tests share does (the same
// bytes, compressed or not, and ETag).
func TestConsoleLoadedByNew(t *testing.T) {
	t.Parallel()
	own := New(DefaultConfig(), Deps{})
	if own.consoleErr != nil {
		t.Fatalf("New loaded no console: %v", own.consoleErr)
	}
	shared := New(DefaultConfig(), Deps{Console: sharedConsole(t)})
	names := sharedConsole(t).Names()
	if len(names) < 2 {
		t.Fatalf("the console has %d files: %v", len(names), names)
	}
	for _, name := range names {
		path := "/console/" + name
		if name == "index.html" {
			path = "/"
		}
		for _, enc := range []string{"", "gzip"} {
			var got [2]*httptest.ResponseRecorder
			for i, s := range []*Server{own, shared} {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				if enc != "" {
					req.Header.Set("Accept-Encoding", enc)
				}
				got[i] = httptest.NewRecorder()
				s.ServeHTTP(got[i], req)
			}
			a, b := got[0], got[1]
			if a.Code != http.StatusOK || a.Code != b.Code || !bytes.Equal(a.Body.Bytes(), b.Body.Bytes()) ||
				a.Header().Get("ETag") != b.Header().Get("ETag") || a.Header().Get("Content-Encoding") != b.Header().Get("Content-Encoding") {
				t.Errorf("GET %s (Accept-Encoding %q): a server's own console answers %d %q %d bytes, the shared one %d %q %d bytes",
					path, enc, a.Code, a.Header().Get("ETag"), a.Body.Len(), b.Code, b.Header().Get("ETag"), b.Body.Len())
			}
		}
	}
}
