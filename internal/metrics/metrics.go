package metrics

import (
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// RouteUnmatched is the route label for requests no route pattern matched
// (404s, 405s). Callers pass it instead of the raw path so that scanners
// probing random URLs cannot create new series.
const RouteUnmatched = "unmatched"

// MethodOther is the method label for any request method outside the
// standard set (GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, CONNECT, TRACE).
// A client chooses the method freely, so it is folded here to keep the
// number of series bounded.
const MethodOther = "other"

// Sketch kinds accepted by Ingested and reported by Source.SketchCounts.
const (
	KindHLL = "hll"
	KindCMS = "cms"
)

// Reasons accepted by BodyRefused.
const (
	RefusedTooLarge  = "too_large"  // body over -max-body or over the id-count cap (413)
	RefusedMediaType = "media_type" // unsupported Content-Type (415)
	RefusedBadInput  = "bad_input"  // malformed or invalid body (400)
)

// Reasons accepted by AuthFailed.
const (
	AuthMissing   = "missing"   // no bearer token (401)
	AuthUnknown   = "unknown"   // a token not in the tokens file (401)
	AuthForbidden = "forbidden" // a known token whose role does not allow the request (403)
)

// Options configure New.
type Options struct {
	// Version and Revision label sketchd_build_info; empty means "unknown".
	Version, Revision string
	// Source is read at scrape time for the store-derived families. When nil,
	// those families are not exported at all.
	Source Source
	// Quantiles are the fractions an opted-in KLL sketch exports as
	// sketchd_sketch_quantile (when Source is a QuantileSource); none
	// exports nothing.
	Quantiles []float64
}

// Metrics holds every sketchd metric that is updated as events happen. All
// methods are safe for concurrent use, and all are no-ops on a nil *Metrics,
// so a component built without metrics need not check.
type Metrics struct {
	httpRequests     *prometheus.CounterVec
	httpDuration     *prometheus.HistogramVec
	httpRequestSize  *prometheus.HistogramVec
	httpResponseSize *prometheus.HistogramVec

	ingested      *prometheus.CounterVec
	bodiesRefused *prometheus.CounterVec
	authFailures  *prometheus.CounterVec
	overloaded    prometheus.Counter
	panics        prometheus.Counter
	replays       prometheus.Counter

	commitRequests prometheus.Histogram
	commitBytes    prometheus.Histogram
	commitDuration prometheus.Histogram

	checkpointSketches prometheus.Histogram
	checkpointDuration prometheus.Histogram

	seriesExpiredBuckets prometheus.Counter
	seriesExpiredBytes   prometheus.Counter
	dbCommitRequests     prometheus.Histogram
	dbCommitRows         prometheus.Histogram
	dbCommitDuration     prometheus.Histogram
}

// New creates the sketchd metrics and registers them, the build-info gauge
// and, when opts.Source is set, the scrape-time collector with reg. It panics
// if a name is already registered with reg (a programming error, as with
// promauto). A nil reg creates working but unregistered metrics.
func New(reg prometheus.Registerer, opts Options) *Metrics {
	f := promauto.With(reg)
	m := &Metrics{
		httpRequests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "sketchd_http_requests_total",
			Help: "HTTP requests completed, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		httpDuration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sketchd_http_request_duration_seconds",
			Help:    "Time from reading the request to writing the last response byte, by route pattern and method.",
			Buckets: latencyBuckets(),
		}, []string{"route", "method"}),
		httpRequestSize: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sketchd_http_request_size_bytes",
			Help:    "Request body bytes read, by route pattern and method.",
			Buckets: sizeBuckets(),
		}, []string{"route", "method"}),
		httpResponseSize: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sketchd_http_response_size_bytes",
			Help:    "Response body bytes written, by route pattern and method.",
			Buckets: sizeBuckets(),
		}, []string{"route", "method"}),
		ingested: f.NewCounterVec(prometheus.CounterOpts{
			Name: "sketchd_ingested_total",
			Help: "Ids and counted items accepted into sketches and series, by sketch kind (hll, cms, theta, freq), counted once durable.",
		}, []string{"kind"}),
		bodiesRefused: f.NewCounterVec(prometheus.CounterOpts{
			Name: "sketchd_request_bodies_refused_total",
			Help: "Request bodies refused before touching any sketch, by reason (too_large, media_type, bad_input).",
		}, []string{"reason"}),
		authFailures: f.NewCounterVec(prometheus.CounterOpts{
			Name: "sketchd_auth_failures_total",
			Help: "Requests refused by bearer-token authentication, by reason (missing, unknown, forbidden).",
		}, []string{"reason"}),
		overloaded: f.NewCounter(prometheus.CounterOpts{
			Name: "sketchd_overload_rejections_total",
			Help: "Requests refused with 503 because the server was overloaded.",
		}),
		panics: f.NewCounter(prometheus.CounterOpts{
			Name: "sketchd_panics_recovered_total",
			Help: "Handler panics recovered and answered with a 500.",
		}),
		replays: f.NewCounter(prometheus.CounterOpts{
			Name: "sketchd_idempotency_replays_total",
			Help: "Write requests answered with the answer recorded for their Idempotency-Key, without applying them again.",
		}),
		commitRequests: f.NewHistogram(prometheus.HistogramOpts{
			Name: "sketchd_commit_batch_requests",
			Help: "Write requests sharing one write-ahead-log group commit.",
			// Every observation is a whole number: with an edge at each
			// small count, ceil(histogram_quantile(...)) is exact up to 6
			// and an upper bound above (histogram_quantile alone
			// interpolates inside a bucket: a commit of 1 reads 0.5).
			Buckets: batchBuckets(),
		}),
		commitBytes: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "sketchd_commit_bytes",
			Help:    "Bytes written to the write-ahead log by one group commit.",
			Buckets: sizeBuckets(),
		}),
		commitDuration: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "sketchd_commit_duration_seconds",
			Help:    "Time of one group commit: write plus fdatasync of the write-ahead log.",
			Buckets: commitBuckets(),
		}),
		checkpointSketches: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "sketchd_checkpoint_sketches",
			Help:    "Sketches written into bbolt by one checkpoint.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10), // 1 .. 262144
		}),
		checkpointDuration: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "sketchd_checkpoint_duration_seconds",
			Help:    "Time of one checkpoint of the write-ahead log into bbolt, including its commit.",
			Buckets: checkpointBuckets(),
		}),
		seriesExpiredBuckets: f.NewCounter(prometheus.CounterOpts{
			Name: "sketchd_series_buckets_expired_total",
			Help: "Series buckets removed because their level's retention ran out.",
		}),
		seriesExpiredBytes: f.NewCounter(prometheus.CounterOpts{
			Name: "sketchd_series_expired_bytes_total",
			Help: "Bytes of sketch encodings freed by removing expired series buckets.",
		}),
		dbCommitRequests: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "sketchd_db_commit_requests",
			Help:    "Write requests sharing one PostgreSQL transaction (PostgreSQL backend).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11), // 1 .. 1024
		}),
		dbCommitRows: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "sketchd_db_commit_rows",
			Help:    "Sketch rows written by one PostgreSQL transaction (PostgreSQL backend).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11), // 1 .. 1024
		}),
		dbCommitDuration: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "sketchd_db_commit_duration_seconds",
			Help:    "Time of one PostgreSQL write transaction, BEGIN to COMMIT (PostgreSQL backend).",
			Buckets: commitBuckets(),
		}),
	}

	// Start the bounded label sets at zero, so that rate() and dashboards
	// see the series before the first event rather than "no data".
	for _, k := range []string{KindHLL, KindCMS} {
		m.ingested.WithLabelValues(k)
	}
	for _, r := range []string{RefusedTooLarge, RefusedMediaType, RefusedBadInput} {
		m.bodiesRefused.WithLabelValues(r)
	}
	for _, r := range []string{AuthMissing, AuthUnknown, AuthForbidden} {
		m.authFailures.WithLabelValues(r)
	}

	f.NewGauge(prometheus.GaugeOpts{
		Name: "sketchd_build_info",
		Help: "Always 1; labels carry the version, VCS revision and Go version sketchd was built with.",
		ConstLabels: prometheus.Labels{
			"version":   orUnknown(opts.Version),
			"revision":  orUnknown(opts.Revision),
			"goversion": runtime.Version(),
		},
	}).Set(1)

	if opts.Source != nil && reg != nil {
		reg.MustRegister(newSourceCollector(opts.Source, opts.Quantiles))
	}
	return m
}

// ObserveHTTP records one completed request. route must be the matched route
// pattern (chi's RoutePattern, e.g. "/v1/sketches/{name}/add") or
// RouteUnmatched, never a raw path: each distinct value is a new set of
// series. method is folded to MethodOther when non-standard; status is the
// code written; d runs from reading the request to the last byte written;
// bytesIn and bytesOut are body bytes actually read and written (negative
// values count as 0).
func (m *Metrics) ObserveHTTP(route, method string, status int, d time.Duration, bytesIn, bytesOut int64) {
	if m == nil {
		return
	}
	if route == "" {
		route = RouteUnmatched
	}
	method = methodLabel(method)
	m.httpRequests.WithLabelValues(route, method, codeLabel(status)).Inc()
	m.httpDuration.WithLabelValues(route, method).Observe(nonNegative(d.Seconds()))
	m.httpRequestSize.WithLabelValues(route, method).Observe(nonNegative(float64(bytesIn)))
	m.httpResponseSize.WithLabelValues(route, method).Observe(nonNegative(float64(bytesOut)))
}

// Ingested counts n ids or items accepted by a durable write into
// sketches of kind (KindHLL, KindCMS, "theta", "freq"). n <= 0 is ignored.
func (m *Metrics) Ingested(kind string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.ingested.WithLabelValues(kind).Add(float64(n))
}

// BodyRefused counts a request body refused for reason, one of
// RefusedTooLarge, RefusedMediaType, RefusedBadInput.
func (m *Metrics) BodyRefused(reason string) {
	if m == nil {
		return
	}
	m.bodiesRefused.WithLabelValues(reason).Inc()
}

// ObserveCommit records one write-ahead-log group commit: the number of
// write requests that shared it, the bytes written and the time taken by
// the write plus fdatasync. Each call is one fsync, so the rate of
// sketchd_commit_duration_seconds_count is the fsync rate.
func (m *Metrics) ObserveCommit(requests, bytes int, d time.Duration) {
	if m == nil {
		return
	}
	m.commitRequests.Observe(nonNegative(float64(requests)))
	m.commitBytes.Observe(nonNegative(float64(bytes)))
	m.commitDuration.Observe(nonNegative(d.Seconds()))
}

// ObserveCheckpoint records one checkpoint of the write-ahead log into
// bbolt: the number of sketches written and the time taken.
func (m *Metrics) ObserveCheckpoint(sketches int, d time.Duration) {
	if m == nil {
		return
	}
	m.checkpointSketches.Observe(nonNegative(float64(sketches)))
	m.checkpointDuration.Observe(nonNegative(d.Seconds()))
}

// SeriesExpired counts one retention pass: buckets removed and the bytes
// of their encodings.
func (m *Metrics) SeriesExpired(buckets int, bytes int64) {
	if m == nil {
		return
	}
	m.seriesExpiredBuckets.Add(nonNegative(float64(buckets)))
	m.seriesExpiredBytes.Add(nonNegative(float64(bytes)))
}

// ObserveDBCommit records one write transaction of the PostgreSQL
// backend: the write requests it carried, the sketch rows it wrote and
// its time from BEGIN to COMMIT.
func (m *Metrics) ObserveDBCommit(requests, rows int, d time.Duration) {
	if m == nil {
		return
	}
	m.dbCommitRequests.Observe(nonNegative(float64(requests)))
	m.dbCommitRows.Observe(nonNegative(float64(rows)))
	m.dbCommitDuration.Observe(nonNegative(d.Seconds()))
}

// Overloaded counts a request refused with 503 under overload.
func (m *Metrics) Overloaded() {
	if m == nil {
		return
	}
	m.overloaded.Inc()
}

// PanicRecovered counts a handler panic turned into a 500.
func (m *Metrics) PanicRecovered() {
	if m == nil {
		return
	}
	m.panics.Inc()
}

// Replayed counts a write answered from its Idempotency-Key's record.
func (m *Metrics) Replayed() {
	if m == nil {
		return
	}
	m.replays.Inc()
}

// AuthFailed counts a request refused by authentication for reason, one of
// AuthMissing, AuthUnknown, AuthForbidden.
func (m *Metrics) AuthFailed(reason string) {
	if m == nil {
		return
	}
	m.authFailures.WithLabelValues(reason).Inc()
}

// batchBuckets are the edges of requests per group commit: each count to
// 6, then about 1.5x apart to 1024.
func batchBuckets() []float64 {
	return []float64{1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64, 128, 256, 512, 1024}
}

// latencyBuckets spans 100 µs to 10 s, about 2.5x apart, with edges at 5 ms
// and 10 ms where DESIGN.md's p99 bar lies.
func latencyBuckets() []float64 {
	return []float64{
		0.0001, 0.00025, 0.0005,
		0.001, 0.0025, 0.005,
		0.01, 0.025, 0.05,
		0.1, 0.25, 0.5,
		1, 2.5, 5, 10,
	}
}

// commitBuckets spans 50 µs to 1 s: an fdatasync takes tens of µs on NVMe,
// milliseconds on network disks.
func commitBuckets() []float64 {
	return []float64{
		0.00005, 0.0001, 0.00025, 0.0005,
		0.001, 0.0025, 0.005,
		0.01, 0.025, 0.05,
		0.1, 0.25, 0.5, 1,
	}
}

// checkpointBuckets spans 1 ms to 60 s.
func checkpointBuckets() []float64 {
	return []float64{
		0.001, 0.0025, 0.005,
		0.01, 0.025, 0.05,
		0.1, 0.25, 0.5,
		1, 2.5, 5, 10, 30, 60,
	}
}

// sizeBuckets spans 64 B to 16 MiB, 4x apart.
func sizeBuckets() []float64 {
	return prometheus.ExponentialBuckets(64, 4, 10)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func nonNegative(v float64) float64 {
	if v < 0 {
		return 0
	}
	return v
}

// methodLabel returns the standard method names as they are and MethodOther
// for anything else.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions,
		http.MethodConnect, http.MethodTrace:
		return method
	}
	return MethodOther
}

// codeLabel formats a status code, without allocating for the codes sketchd
// writes.
func codeLabel(status int) string {
	switch status {
	case http.StatusOK:
		return "200"
	case http.StatusCreated:
		return "201"
	case http.StatusNoContent:
		return "204"
	case http.StatusNotModified:
		return "304"
	case http.StatusBadRequest:
		return "400"
	case http.StatusUnauthorized:
		return "401"
	case http.StatusForbidden:
		return "403"
	case http.StatusNotFound:
		return "404"
	case http.StatusMethodNotAllowed:
		return "405"
	case http.StatusConflict:
		return "409"
	case http.StatusPreconditionFailed:
		return "412"
	case http.StatusRequestEntityTooLarge:
		return "413"
	case http.StatusUnsupportedMediaType:
		return "415"
	case http.StatusUnprocessableEntity:
		return "422"
	case http.StatusTooManyRequests:
		return "429"
	case http.StatusInternalServerError:
		return "500"
	case http.StatusServiceUnavailable:
		return "503"
	}
	return strconv.Itoa(status)
}
