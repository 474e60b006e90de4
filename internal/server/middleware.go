package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sketchd/sketchd/internal/sketch"
)

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyRole
	keyWriteSlot
	keyDeadline
	// keyTenant holds the *tenant of a token limited to prefixes.
	keyTenant
)

func requestIDOf(ctx context.Context) string {
	id, _ := ctx.Value(keyRequestID).(string)
	return id
}

// requestID honours a sane incoming X-Request-ID (printable ASCII, at
// most 128 bytes), else makes one, and returns it on the response.
func (s *Server) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-ID")
		if !validRequestID(id) {
			var b [12]byte
			rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-ID", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyRequestID, id)))
	})
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// recorder captures the status and size of a response.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// observe logs one line per request and records its metrics, labelled by
// route pattern, never by raw path.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		body := &countingBody{ReadCloser: r.Body}
		r.Body = body
		next.ServeHTTP(rec, r)
		d := time.Since(start)
		// The matched pattern, never the raw path. A pattern that is no
		// route (the /v1 mount "/v1/*", or "/v1" itself, which chi
		// matches to the mount for a 404) is labelled unmatched like "/"
		// or "/docs", so every path without a route counts alike.
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil {
			if p := rc.RoutePattern(); s.patterns[p] {
				route = p
			}
		}
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		in := body.n // what was read, not what Content-Length claimed
		s.metrics.ObserveHTTP(route, r.Method, rec.status, d, in, rec.bytes)
		level := slog.LevelInfo
		if rec.status >= 500 {
			level = slog.LevelWarn
		}
		s.log.LogAttrs(r.Context(), level, "request",
			slog.String("request_id", requestIDOf(r.Context())),
			slog.String("method", r.Method),
			slog.String("route", route),
			slog.Int("status", rec.status),
			slog.Int64("bytes_in", in),
			slog.Int64("bytes_out", rec.bytes),
			slog.Duration("duration", d))
	})
}

// recoverPanics turns a handler panic into a logged, counted 500.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.metrics.PanicRecovered()
				s.writeProblem(w, r, fmt.Errorf("panic: %v\n%s", v, debug.Stack()))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// limitWrites bounds write requests to MaxInflightWrites at a time: the
// handler takes its slot with takeWriteSlot, which readBody calls once the
// body is in, so a client trickling a body holds memory for what it sent
// but never a slot. When all are taken the request gets 503 with
// Retry-After, so overload costs a quick refusal rather than memory.
func (s *Server) limitWrites(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slot := &writeSlot{}
		defer slot.done()
		ctx := context.WithValue(r.Context(), keyWriteSlot, slot)
		if r.ContentLength == 0 && len(r.TransferEncoding) == 0 {
			// Nothing to wait for: take the slot now, so a handler
			// that reads no body cannot write without one.
			if err := s.takeWriteSlot(ctx); err != nil {
				s.writeProblem(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// deadlineError is the cause of a request context that reached its
// deadline (Config.ReadTimeout or WriteTimeout).
type deadlineError struct {
	timeout time.Duration
	flag    string
	write   bool
	at      time.Time
}

// due reports whether the deadline has come at now (within a
// millisecond: a connection's read deadline set to it may fire first).
func (e *deadlineError) due(now time.Time) bool {
	return !now.Before(e.at.Add(-time.Millisecond))
}

func (e *deadlineError) Error() string {
	return fmt.Sprintf("the request did not finish within its %v deadline (%s)", e.timeout, e.flag)
}

// detail is what the 503 says.
func (e *deadlineError) detail() string {
	if e.write {
		return e.Error() + ", counted from its arrival; the write may or may not have been applied: retry it with the same Idempotency-Key, which applies it once"
	}
	return e.Error() + ", counted from its arrival; retry shortly"
}

// deadline gives each request of a route group one deadline, timeout
// from its arrival: reading its body, waiting for a write slot or a
// commit, and the store's work all count, and the store passes it on to
// the database. writeProblem answers a request that missed it 503 with
// Retry-After.
func (s *Server) deadline(timeout time.Duration, flag string, write bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if timeout <= 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			de := &deadlineError{timeout: timeout, flag: flag, write: write, at: time.Now().Add(timeout)}
			ctx, cancel := context.WithDeadlineCause(context.WithValue(r.Context(), keyDeadline, de), de.at, de)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// missedDeadline returns the deadline ctx missed, or nil if it did not.
func missedDeadline(ctx context.Context) *deadlineError {
	var de *deadlineError
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &de) {
		return de
	}
	return nil
}

// writeSlot is a write route's claim on one of the MaxInflightWrites
// slots, taken at most once.
type writeSlot struct {
	release func()
}

// done gives the slot back if it was taken.
func (ws *writeSlot) done() {
	if ws.release != nil {
		ws.release()
	}
}

// takeWriteSlot takes the request's write slot if it is on a write route
// and has not taken it yet; it refuses with Unavailable when all are
// taken. Every write handler calls it (through readBody, or directly when
// it reads no body) before it writes to the store.
func (s *Server) takeWriteSlot(ctx context.Context) error {
	slot, ok := ctx.Value(keyWriteSlot).(*writeSlot)
	if !ok || slot.release != nil {
		return nil
	}
	release, err := s.acquireWrite()
	if err != nil {
		return err
	}
	slot.release = release
	return nil
}

// acquireWrite takes one of the MaxInflightWrites slots, or refuses with
// Unavailable when all are taken. The caller calls release when done.
func (s *Server) acquireWrite() (release func(), err error) {
	select {
	case s.writes <- struct{}{}:
		return func() { <-s.writes }, nil
	default:
		s.metrics.Overloaded()
		return nil, sketch.Errorf(sketch.Unavailable, "too many writes in progress; retry shortly")
	}
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	switch {
	case s.draining.Load():
		s.writeProblem(w, r, sketch.Errorf(sketch.Unavailable, "shutting down"))
	case !s.store.Ready():
		why := "the store does not accept writes"
		if nr, ok := s.store.(interface{ NotReady() string }); ok {
			if reason := nr.NotReady(); reason != "" {
				why += ": " + reason
			}
		}
		s.writeProblem(w, r, sketch.Errorf(sketch.Unavailable, "%s", why))
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}
}

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	w.Write(s.openapi)
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if s.promHTTP == nil {
		s.writeProblem(w, r, &httpError{http.StatusNotFound, "metrics are not enabled"})
		return
	}
	s.promHTTP.ServeHTTP(w, r)
}

// countingBody counts the request body bytes a handler reads.
type countingBody struct {
	io.ReadCloser
	n int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n += int64(n)
	return n, err
}
