package client_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/sketchd/sketchd/api"
	"github.com/sketchd/sketchd/internal/metrics"
	"github.com/sketchd/sketchd/internal/server"
	"github.com/sketchd/sketchd/internal/store/bolt"
)

// openSketchd wires the real service over the real store in the bbolt
// file at path, as cmd/sketchd does, and returns its handler and a
// function that closes the store. It is the package's only place that
// knows how the store is opened.
func openSketchd(path string, cfg server.Config) (http.Handler, func() error, error) {
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		return nil, nil, err
	}
	reg := metrics.NewRegistry()
	m := metrics.New(reg, metrics.Options{Source: db})
	h := server.New(cfg, server.Deps{
		Store: db, Metrics: m, MetricsHandler: metrics.Handler(reg, nil), OpenAPI: api.Spec(),
	})
	return h, db.Close, nil
}

// sketchd is a running in-process server.
type sketchd struct {
	srv   *httptest.Server
	path  string
	close func() error
}

// startSketchd serves a fresh store in a temporary directory, wrapped by
// wrap if it is not nil. It stops on cleanup.
func startSketchd(tb testing.TB, wrap func(http.Handler) http.Handler) *sketchd {
	tb.Helper()
	return startSketchdAt(tb, filepath.Join(tb.TempDir(), "sketchd.db"), wrap)
}

// startSketchdAt is startSketchd over the store at path.
func startSketchdAt(tb testing.TB, path string, wrap func(http.Handler) http.Handler) *sketchd {
	tb.Helper()
	h, closeStore, err := openSketchd(path, server.DefaultConfig())
	if err != nil {
		tb.Fatalf("opening the store: %v", err)
	}
	if wrap != nil {
		h = wrap(h)
	}
	s := &sketchd{srv: httptest.NewServer(h), path: path, close: closeStore}
	tb.Cleanup(func() {
		if err := s.stop(); err != nil {
			tb.Errorf("stopping sketchd: %v", err)
		}
	})
	return s
}

// stop closes the server, then the store; later calls do nothing.
func (s *sketchd) stop() error {
	if s.close == nil {
		return nil
	}
	s.srv.CloseClientConnections()
	s.srv.Close()
	err := s.close()
	s.close = nil
	return err
}

// httptestServer serves h (a fake, for answers the real server does not
// give) until cleanup and returns its URL.
func httptestServer(tb testing.TB, h http.Handler) string {
	tb.Helper()
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv.URL
}
