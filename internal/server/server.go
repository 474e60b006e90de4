// Package server is sketchd's HTTP API (api/openapi.yaml): chi routes,
// strict request decoding, problem+json errors, bearer-token roles,
// request logs and metrics. It depends on the store only through the Store
// interface below, which *store.DB satisfies.
package server

import (
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sketchd/sketchd/internal/console"
	"github.com/sketchd/sketchd/internal/series"
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
	// Replayed counts an answer replayed for an Idempotency-Key.
	Replayed()
}

// Config holds the server's limits and switches.
type Config struct {
	// MaxBody is the largest request body in bytes on the routes that take
	// ids, events or sketches (add, events, raw uploads).
	MaxBody int64
	// MaxQueryBody is the largest body of the routes that take a small
	// JSON document (create, union, intersection, frequency, fold).
	MaxQueryBody int64
	// MaxBodyMemory bounds the memory all request bodies being read or
	// handled hold at once; a body that would exceed it gets 503.
	MaxBodyMemory int64
	// BodyTimeout is how long a request body may take to arrive, from the
	// moment its handler starts reading it; a slower one gets 408. Zero
	// leaves only the http.Server's ReadTimeout.
	BodyTimeout time.Duration
	// ReadTimeout and WriteTimeout are each request's deadline on the
	// read and write routes, counted from its arrival (its headers): the
	// body's arrival, time queued and the store's work all count. Past it
	// the answer is 503 with Retry-After; a write may or may not have
	// been applied. A body still arriving at the deadline gets 408. Zero
	// leaves requests without a deadline.
	ReadTimeout, WriteTimeout time.Duration
	// MaxIDs is the most ids (or items, or events) one request may carry.
	MaxIDs int
	// MaxInflightWrites bounds concurrent write requests; beyond it
	// requests get 503 with Retry-After instead of queueing without bound.
	MaxInflightWrites int
	// AuthMetrics requires a read token for /metrics when auth is on.
	AuthMetrics bool
	// MaxSeriesBuckets bounds the series buckets one request may plan,
	// over all its ranges (series.Budget); past it the answer is 422.
	MaxSeriesBuckets int
	// MaxSeriesPoints bounds the points of a rolling line, and the
	// buckets a ?buckets=true answer lists; past it the answer is 422.
	MaxSeriesPoints int
	// MaxRankCandidates bounds the candidates one POST /v1/rank may
	// compare with its target; past it the answer is 413, before any is
	// read.
	MaxRankCandidates int
}

// DefaultConfig returns the limits used when flags do not say otherwise.
func DefaultConfig() Config {
	return Config{
		MaxBody: 32 << 20, MaxQueryBody: 1 << 20, MaxBodyMemory: 1 << 30, BodyTimeout: 30 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: 10 * time.Second,
		MaxIDs: 1_000_000, MaxInflightWrites: 64,
		MaxSeriesBuckets: series.DefaultMaxBuckets, MaxSeriesPoints: series.MaxPoints,
		MaxRankCandidates: 100_000,
	}
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
	// Console serves the page at / and its files; nil loads them
	// (console.New, which compresses every asset). A Handler is read-only
	// once made, so servers of one process (a test binary's hundreds) may
	// share one.
	Console *console.Handler
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
	console  *console.Handler
	// consoleErr is why the console could not be loaded (never, unless
	// the binary's embedded files are broken); / then answers 500.
	consoleErr error
	handler    http.Handler
	// patterns holds the route patterns chi serves; anything else a
	// request matched (a mount, a subrouter's root) is "unmatched" in
	// the metrics. Set once in New, read only after.
	patterns map[string]bool
	writes   chan struct{} // semaphore of in-flight writes
	draining atomic.Bool
	// bodyBytes is the body memory reserved by requests in progress.
	bodyBytes atomic.Int64
	// rankedOnDatabase counts the rank candidates compared by the joint
	// tables a JointRanker computed on the database.
	rankedOnDatabase atomic.Int64

	bufs     sync.Pool // *[]byte
	hashBufs sync.Pool
	// inflight holds the Idempotency-Keys of requests running here.
	inflight inflight
}

// New returns the API server.
func New(cfg Config, deps Deps) *Server {
	def := DefaultConfig()
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = def.MaxBody
	}
	if cfg.MaxQueryBody <= 0 {
		cfg.MaxQueryBody = min(def.MaxQueryBody, cfg.MaxBody)
	}
	if cfg.MaxBodyMemory <= 0 {
		cfg.MaxBodyMemory = max(def.MaxBodyMemory, cfg.MaxBody+1)
	}
	if cfg.MaxIDs <= 0 {
		cfg.MaxIDs = def.MaxIDs
	}
	if cfg.MaxInflightWrites <= 0 {
		cfg.MaxInflightWrites = def.MaxInflightWrites
	}
	if cfg.MaxSeriesBuckets <= 0 {
		cfg.MaxSeriesBuckets = def.MaxSeriesBuckets
	}
	if cfg.MaxSeriesPoints <= 0 {
		cfg.MaxSeriesPoints = def.MaxSeriesPoints
	}
	if cfg.MaxRankCandidates <= 0 {
		cfg.MaxRankCandidates = def.MaxRankCandidates
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
	if deps.Console != nil {
		s.console = deps.Console
	} else {
		s.console, s.consoleErr = console.New()
	}
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
func (noMetrics) Replayed()                                                    {}

// Reasons a body is refused, as the metrics name them.
const (
	refusedTooLarge  = "too_large"
	refusedMediaType = "media_type"
	refusedBadInput  = "bad_input"
	refusedTimeout   = "timeout"
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
