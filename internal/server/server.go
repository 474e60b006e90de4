// Package server is sketchd's HTTP API (api/openapi.yaml): chi routes,
// strict request decoding, problem+json errors, bearer-token roles,
// request logs and metrics. It depends on the store only through the Store
// interface below, which *store.DB satisfies.
package server

import (
	"bytes"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics records what the handlers observe; *metrics.Metrics implements
// it. A nil Metrics in Deps records nothing.
type Metrics interface {
	ObserveHTTP(route, method string, status int, d time.Duration, bytesIn, bytesOut int64)
	Ingested(kind string, n int)
	BodyRefused(reason string)
	Overloaded()
	PanicRecovered()
	AuthFailed(reason string)
}

// Config holds the server's limits and switches.
type Config struct {
	// MaxBody is the largest request body in bytes.
	MaxBody int64
	// MaxIDs is the most ids (or items, or events) one request may carry.
	MaxIDs int
	// MaxInflightWrites bounds concurrent write requests; beyond it
	// requests get 503 with Retry-After instead of queueing without bound.
	MaxInflightWrites int
	// AuthMetrics requires a read token for /metrics when auth is on.
	AuthMetrics bool
}

// DefaultConfig returns the limits used when flags do not say otherwise.
func DefaultConfig() Config {
	return Config{MaxBody: 32 << 20, MaxIDs: 1_000_000, MaxInflightWrites: 64}
}

// Deps are the server's collaborators.
type Deps struct {
	Store   Store
	Metrics Metrics
	Logger  *slog.Logger
	// Auth checks bearer tokens; nil leaves the service open.
	Auth *Auth
	// MetricsHandler serves /metrics; nil answers 404.
	MetricsHandler http.Handler
	// OpenAPI is the spec served at /openapi.yaml.
	OpenAPI []byte
}

// Server is the HTTP API. Create it with New.
type Server struct {
	cfg      Config
	store    Store
	metrics  Metrics
	log      *slog.Logger
	auth     *Auth
	openapi  []byte
	promHTTP http.Handler
	handler  http.Handler
	// patterns holds the route patterns chi serves; anything else a
	// request matched (a mount, a subrouter's root) is "unmatched" in
	// the metrics. Set once in New, read only after.
	patterns map[string]bool
	writes   chan struct{} // semaphore of in-flight writes
	draining atomic.Bool
	bufs     sync.Pool
	hashBufs sync.Pool
}

// New returns the API server.
func New(cfg Config, deps Deps) *Server {
	def := DefaultConfig()
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = def.MaxBody
	}
	if cfg.MaxIDs <= 0 {
		cfg.MaxIDs = def.MaxIDs
	}
	if cfg.MaxInflightWrites <= 0 {
		cfg.MaxInflightWrites = def.MaxInflightWrites
	}
	s := &Server{
		cfg: cfg, store: deps.Store, metrics: deps.Metrics, log: deps.Logger, auth: deps.Auth,
		openapi: deps.OpenAPI, promHTTP: deps.MetricsHandler,
		writes: make(chan struct{}, cfg.MaxInflightWrites),
	}
	if s.metrics == nil {
		s.metrics = noMetrics{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.bufs.New = func() any { return new(bytes.Buffer) }
	s.hashBufs.New = func() any { return new([]uint64) }
	s.handler = s.routes()
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Drain makes /readyz answer 503 so load balancers stop sending traffic
// while the process shuts down.
func (s *Server) Drain() { s.draining.Store(true) }

type noMetrics struct{}

func (noMetrics) ObserveHTTP(string, string, int, time.Duration, int64, int64) {}
func (noMetrics) Ingested(string, int)                                         {}
func (noMetrics) BodyRefused(string)                                           {}
func (noMetrics) Overloaded()                                                  {}
func (noMetrics) PanicRecovered()                                              {}
func (noMetrics) AuthFailed(string)                                            {}

// Reasons a body is refused, as the metrics name them.
const (
	refusedTooLarge  = "too_large"
	refusedMediaType = "media_type"
	refusedBadInput  = "bad_input"
)

func (s *Server) refused(reason string) { s.metrics.BodyRefused(reason) }

// handlerFunc is a handler that returns its error for one place to render.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (s *Server) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeProblem(w, r, err)
		}
	}
}
