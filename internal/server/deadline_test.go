package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/sketch"
)

// stuckStore holds every describe and add until the request's context
// ends, as a database behind a cut link does until the query is
// cancelled.
type stuckStore struct{ Store }

func (s stuckStore) Describe(ctx context.Context, name string) (sketch.Info, error) {
	<-ctx.Done()
	return sketch.Info{}, ctx.Err()
}

func (s stuckStore) Add(ctx context.Context, name string, in sketch.Input, create bool) (sketch.Added, error) {
	<-ctx.Done()
	return sketch.Added{}, ctx.Err()
}

// TestRequestDeadlines: a read and a write whose store does not answer
// are answered 503 with Retry-After at their deadline (ReadTimeout,
// WriteTimeout from arrival), naming the flag, and the write says that
// it may or may not have been applied; a request without one would wait
// for ever.
func TestRequestDeadlines(t *testing.T) {
	t.Parallel()
	const read, write = 300 * time.Millisecond, 200 * time.Millisecond
	e := newEnv(t, withConfig(func(c *Config) { c.ReadTimeout, c.WriteTimeout = read, write }),
		withStore(func(s Store) Store { return stuckStore{s} }))
	e.allow503 = true
	e.srv.Client().Timeout = 20 * time.Second
	for _, c := range []struct {
		method, path, body string
		timeout            time.Duration
		flag, says         string
	}{
		{http.MethodGet, "/v1/sketches/a", "", read, "-read-timeout", "retry shortly"},
		{http.MethodPost, "/v1/sketches/a/add", `{"ids":[1]}`, write, "-write-timeout", "may or may not have been applied"},
	} {
		start := time.Now()
		res, err := e.try(t, request{Method: c.method, Path: c.path, Body: strings.NewReader(c.body), Header: []string{"Content-Type: application/json"}})
		took := time.Since(start)
		if err != nil {
			t.Fatalf("%s %s: %v after %v (its deadline is %v)", c.method, c.path, err, took, c.timeout)
		}
		var p problem
		json.Unmarshal(res.Body, &p)
		if res.Status != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" ||
			!strings.Contains(p.Detail, c.flag) || !strings.Contains(p.Detail, c.says) {
			t.Errorf("%s %s past its deadline: %v, want 503 with Retry-After naming %s and saying %q", c.method, c.path, res, c.flag, c.says)
		}
		// Answered at the deadline, not before it; the margin is for a
		// loaded machine, far below the 20 s the client waits.
		if took < c.timeout || took > c.timeout+5*time.Second {
			t.Errorf("%s %s answered after %v; its deadline was %v", c.method, c.path, took, c.timeout)
		}
	}
}

// unreadyStore is a store that cannot commit, and says why.
type unreadyStore struct{ Store }

func (unreadyStore) Ready() bool      { return false }
func (unreadyStore) NotReady() string { return "worker 10.0.0.2:5432 is unreachable: timeout" }

// TestReadyzNamesTheDependency: /readyz of a store that cannot commit is
// 503, and its detail names what failed.
func TestReadyzNamesTheDependency(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withStore(func(s Store) Store { return unreadyStore{s} }))
	e.allow503 = true
	res := e.get(t, "/readyz")
	var p problem
	json.Unmarshal(res.Body, &p)
	if res.Status != http.StatusServiceUnavailable || !strings.Contains(p.Detail, "worker 10.0.0.2:5432 is unreachable") {
		t.Errorf("/readyz = %v, want 503 naming the worker", res)
	}
}
