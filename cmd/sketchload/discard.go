package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// serveDiscard serves HTTP on ln until ctx ends: every request's body is
// read to the end into a reused buffer and dropped, and the answer is 200
// with {"accepted":0} (a PUT that creates a sketch gets the same). It is
// the read ceiling of the ingest figures: the CPU a Go HTTP server spends
// per id just receiving the bodies, to set beside sketchd's for the same
// load in the same run (scripts/bench-ingest-cpu.sh).
func serveDiscard(ctx context.Context, ln net.Listener, stderr io.Writer) error {
	bufs := sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}
	answer := []byte(`{"accepted":0}`)
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			bp := bufs.Get().(*[]byte)
			for {
				if _, err := r.Body.Read(*bp); err != nil {
					break
				}
			}
			bufs.Put(bp)
			w.Header().Set("Content-Type", "application/json")
			w.Write(answer)
		}),
	}
	fmt.Fprintf(stderr, "sketchload: discarding request bodies on %s\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
