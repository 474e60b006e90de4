package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// authDo sends a request with a bearer token.
func authDo(t *testing.T, c *client, token, method, path, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestTokenFile runs the binary with -auth-tokens: a malformed file stops
// it at startup with a message naming the line and not the token; a good
// one enforces roles; SIGHUP reloads it, and a broken file then refuses
// every token.
func TestTokenFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the real binary")
	}
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	secret := "s3cret-token-that-must-not-leak"
	os.WriteFile(tokens, []byte("# comment\n"+secret+" owner\n"), 0o600)
	out, err := execOutput(sketchdBinary(t), "-addr", freeAddr(t), "-data", filepath.Join(dir, "a.db"), "-auth-tokens", tokens)
	if err == nil {
		t.Fatal("sketchd started with a malformed token file")
	}
	if !strings.Contains(out, "line 2") || strings.Contains(out, secret) {
		t.Errorf("startup error %q: want it to name line 2 and not show the token", out)
	}

	reader, writer, next := "reader-token-0123456789", "writer-token-0123456789", "writer-token-after-reload"
	os.WriteFile(tokens, []byte(reader+" read\n"+writer+" write\n"), 0o600)
	p := startProcess(t, filepath.Join(dir, "b.db"), "-auth-tokens", tokens)
	c := newClient(p.addr)
	if got := authDo(t, c, "nope-nope-nope-nope", "GET", "/v1/sketches", ""); got != http.StatusUnauthorized {
		t.Errorf("unknown token: %d, want 401", got)
	}
	if got := authDo(t, c, reader, "PUT", "/v1/sketches/x", "{}"); got != http.StatusForbidden {
		t.Errorf("read token on a write: %d, want 403", got)
	}
	if got := authDo(t, c, writer, "PUT", "/v1/sketches/x", "{}"); got != http.StatusCreated {
		t.Errorf("write token: %d, want 201", got)
	}
	if got := authDo(t, c, reader, "GET", "/v1/sketches/x", ""); got != http.StatusOK {
		t.Errorf("read token on a read: %d, want 200", got)
	}

	os.WriteFile(tokens, []byte(reader+" read\n"+next+" write\n"), 0o600)
	p.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for authDo(t, c, next, "GET", "/v1/sketches", "") != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the new token still fails 10s after SIGHUP")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := authDo(t, c, writer, "GET", "/v1/sketches", ""); got != http.StatusUnauthorized {
		t.Errorf("removed token after reload: %d, want 401", got)
	}
	// A broken file on reload refuses every token (it fails closed).
	os.WriteFile(tokens, []byte("broken\n"), 0o600)
	p.cmd.Process.Signal(syscall.SIGHUP)
	deadline = time.Now().Add(10 * time.Second)
	for authDo(t, c, next, "GET", "/v1/sketches", "") != http.StatusUnauthorized {
		if time.Now().After(deadline) {
			t.Fatal("the token still works 10s after a SIGHUP with a broken file")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.terminate(t); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if !bytes.Contains([]byte(p.log()), []byte("reloading tokens failed")) {
		t.Errorf("no log of the failed reload:\n%s", p.log())
	}
}

// TestTokenPrefixes runs the binary with a token limited to a prefix: an
// empty prefix= stops it at startup naming the line; the limited token
// reaches only its names, and SIGHUP moves it to others.
func TestTokenPrefixes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the real binary")
	}
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	admin, team := "admin-token-0123456789", "team-token-0123456789ab"
	os.WriteFile(tokens, []byte(admin+" admin\n# team a\n"+team+" write prefix=team-a: prefix=\n"), 0o600)
	out, err := execOutput(sketchdBinary(t), "-addr", freeAddr(t), "-data", filepath.Join(dir, "a.db"), "-auth-tokens", tokens)
	if err == nil {
		t.Fatal("sketchd started with an empty prefix=")
	}
	if !strings.Contains(out, "line 3") || !strings.Contains(out, "prefix= is empty") || strings.Contains(out, team) {
		t.Errorf("startup error %q: want it to name line 3 and the empty prefix, and not show the token", out)
	}

	os.WriteFile(tokens, []byte(admin+" admin\n"+team+" write prefix=team-a:\n"), 0o600)
	p := startProcess(t, filepath.Join(dir, "b.db"), "-auth-tokens", tokens)
	c := newClient(p.addr)
	for _, n := range []string{"team-a:x", "team-b:x"} {
		if got := authDo(t, c, admin, "PUT", "/v1/sketches/"+n, "{}"); got != http.StatusCreated {
			t.Fatalf("create %s: %d", n, got)
		}
	}
	check := func(name string, want int) {
		t.Helper()
		if got := authDo(t, c, team, "GET", "/v1/sketches/"+name, ""); got != want {
			t.Errorf("GET %s with the team token: %d, want %d", name, got, want)
		}
	}
	check("team-a:x", http.StatusOK)
	check("team-b:x", http.StatusForbidden)
	check("team-b:none", http.StatusForbidden)
	if got := authDo(t, c, team, "POST", "/v1/events", `{"events":[{"id":1,"sketches":["team-a:x","team-b:x"]}]}`); got != http.StatusForbidden {
		t.Errorf("events naming team-b:x: %d, want 403", got)
	}

	os.WriteFile(tokens, []byte(admin+" admin\n"+team+" write prefix=team-b:\n"), 0o600)
	p.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for authDo(t, c, team, "GET", "/v1/sketches/team-b:x", "") != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the token's new prefix still fails 10s after SIGHUP")
		}
		time.Sleep(20 * time.Millisecond)
	}
	check("team-a:x", http.StatusForbidden)
}
