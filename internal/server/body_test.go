package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// trickle starts a request whose body sends prefix and then waits until
// the returned finish is called with the rest; the answer arrives on the
// channel.
func trickle(t *testing.T, e *env, method, path, prefix string) (finish func(rest string), answer <-chan response) {
	t.Helper()
	pr, pw := io.Pipe()
	ch := make(chan response, 1)
	go func() {
		r, err := e.try(t, request{Method: method, Path: path, Body: pr, Header: []string{"Content-Type: application/json"}})
		if err != nil {
			t.Errorf("%s %s: %v", method, path, err)
		}
		ch <- r
	}()
	if _, err := pw.Write([]byte(prefix)); err != nil {
		t.Fatal(err)
	}
	return func(rest string) {
		pw.Write([]byte(rest))
		pw.Close()
	}, ch
}

// TestBodyTimeout: a body that stops arriving is cut off with a 408
// problem once BodyTimeout has passed, and the store is unchanged.
func TestBodyTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *Config) { c.BodyTimeout = 200 * time.Millisecond }))
	e.create(t, "h", `{}`)
	before := e.snapshot(t)
	for _, p := range []struct{ method, path string }{{"POST", "/v1/sketches/h/add"}, {"POST", "/v1/union"}, {"PUT", "/v1/sketches/new"}} {
		finish, answer := trickle(t, e, p.method, p.path, `{"ids":[1,`)
		select {
		case r := <-answer:
			checkProblem(t, r, http.StatusRequestTimeout)
			if !strings.Contains(string(r.Body), "-body-timeout") {
				t.Errorf("%s %s: 408 detail %s does not name -body-timeout", p.method, p.path, r.Body)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s %s: no answer 10s into a stalled body (body timeout 200ms)", p.method, p.path)
		}
		finish("2]}")
	}
	if d := before.diff(e.snapshot(t)); len(d) > 0 {
		t.Errorf("the store changed: %s", strings.Join(d, "; "))
	}
	// A body that arrives in time is fine.
	e.addIDs(t, "h", `{"ids":[1,2]}`, 2)
}

// TestBodyMemoryBudget: bodies in progress hold memory for what has
// arrived, within MaxBodyMemory; a body that would pass it gets 503 and
// goes through once the others are done. A request that only claims a
// large Content-Length reserves nothing for it.
func TestBodyMemoryBudget(t *testing.T) {
	t.Parallel()
	const budget = 80 << 10
	e := newEnv(t, withConfig(func(c *Config) { c.MaxBodyMemory = budget; c.MaxBody = 64 << 10 }))
	e.allow503 = true
	e.create(t, "h", `{}`)

	// 40 KiB arrived: its buffer doubled from 32 to 64 KiB.
	finish, answer := trickle(t, e, "POST", "/v1/sketches/h/add", `{"ids":[1`+strings.Repeat(" ", 40<<10))
	waitFor(t, "the trickled body to reserve its buffer", func() bool { return e.s.bodyBytes.Load() >= 64<<10 })
	if got := e.s.bodyBytes.Load(); got > 64<<10 {
		t.Errorf("a 40 KiB body in progress reserves %d bytes, want at most 64 KiB", got)
	}
	// A 20 KiB body reserves its declared length: 84 KiB in all.
	r := e.postJSON(t, "/v1/sketches/h/add", `{"ids":[2]}`+strings.Repeat(" ", 20<<10))
	checkProblem(t, r, http.StatusServiceUnavailable)
	if r.Header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After")
	}
	finish("]}")
	must(t, <-answer, 200, "the trickled body")
	if got := e.s.bodyBytes.Load(); got != 0 {
		t.Errorf("%d bytes of body memory still reserved after every request ended", got)
	}
	e.addIDs(t, "h", `{"ids":[2]}`, 1)
}

// TestBodyNotSizedFromContentLength: a request claiming a body of
// MaxBody bytes that sends ten reserves one small chunk, not MaxBody.
func TestBodyNotSizedFromContentLength(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *Config) { c.MaxBody = 8 << 20 }))
	e.create(t, "h", `{}`)
	pr, pw := io.Pipe()
	req, err := http.NewRequest("POST", e.srv.URL+"/v1/sketches/h/add", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 8 << 20
	req.Header.Set("Content-Type", "application/json")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := e.srv.Client().Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	pw.Write([]byte(`{"ids":[1,`))
	waitFor(t, "the body to start arriving", func() bool { return e.s.bodyBytes.Load() > 0 })
	if got := e.s.bodyBytes.Load(); got > bodyChunk {
		t.Errorf("10 bytes of a body claiming 8 MiB reserve %d bytes, want at most %d", got, bodyChunk)
	}
	pw.CloseWithError(io.ErrUnexpectedEOF)
	<-done
}

// TestBodyGrowsToDeclaredLength: once more than a chunk of a body has
// arrived, its buffer grows to the length Content-Length declares (and
// one byte, to see the end) when that is less than a doubling: a 40 KiB
// body holds 40 KiB, not 64.
func TestBodyGrowsToDeclaredLength(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "h", `{}`)
	body := `{"ids":[1,2]}` + strings.Repeat(" ", 40<<10)
	pr, pw := io.Pipe()
	req, err := http.NewRequest("POST", e.srv.URL+"/v1/sketches/h/add", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/json")
	answer := make(chan int, 1)
	go func() {
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			answer <- 0
			return
		}
		resp.Body.Close()
		answer <- resp.StatusCode
	}()
	pw.Write([]byte(body[:bodyChunk+1]))
	waitFor(t, "the body to pass its first chunk", func() bool { return e.s.bodyBytes.Load() > bodyChunk })
	if got, want := e.s.bodyBytes.Load(), int64(len(body)+1); got > want {
		t.Errorf("a body declaring %d bytes reserves %d once past its first chunk, want at most %d", len(body), got, want)
	}
	pw.Write([]byte(body[bodyChunk+1:]))
	pw.Close()
	if code := <-answer; code != http.StatusOK {
		t.Fatalf("status %d, want 200", code)
	}
	e.addIDs(t, "h", `{"ids":[3]}`, 1)
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
