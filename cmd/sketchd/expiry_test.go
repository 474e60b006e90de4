package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestExpiryPass: the binary runs the expiry pass every
// -retention-interval; it removes a sketch whose expire_after passed
// (one removed, logged) and keeps one without expiry.
func TestExpiryPass(t *testing.T) {
	t.Parallel() // it asserts no timing
	if testing.Short() {
		t.Skip("builds the real binary")
	}
	data := filepath.Join(t.TempDir(), "sketchd.db")
	p := startProcess(t, data, "-log-level", "info", "-retention-interval", "1s")
	c := newClient(p.addr)
	c.must(t, http.StatusCreated, "PUT", "/v1/sketches/brief", "application/json", []byte(`{"expire_after":"PT1S"}`), nil)
	c.must(t, http.StatusCreated, "PUT", "/v1/sketches/kept", "application/json", []byte(`{}`), nil)
	p.waitLog(t, "removed expired sketches")
	if l := p.log(); !strings.Contains(l, `"msg":"removed expired sketches","sketches":1`) {
		t.Errorf("the pass's log line does not say it removed one sketch:\n%s", l)
	}
	c.must(t, http.StatusNotFound, "GET", "/v1/sketches/brief", "", nil, nil)
	c.must(t, http.StatusOK, "GET", "/v1/sketches/kept", "", nil, nil)
}
