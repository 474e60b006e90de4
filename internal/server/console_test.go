package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestConsoleRoutes: the console's page and files answer as the spec
// says (status and media type, checked by do), with the console's
// policy, and an unknown file is a 404 problem.
func TestConsoleRoutes(t *testing.T) {
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
