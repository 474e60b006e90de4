package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Source is what every store backend offers at scrape time. It uses only
// builtin types so that a backend implements it without importing this
// package. Its methods are called from the scrape goroutine, concurrently
// with writes and possibly with another scrape, so they must be safe for
// concurrent use; a yield callback does not block and does not call back
// into the Source. A backend may also implement DiskSource,
// CacheSource and PoolSource; the families they feed are exported only when it does.
type Source interface {
	// SketchCounts calls yield for every (kind, representation) pair with its
	// number of sketches. kind is "hll" or "cms"; representation is EMPTY,
	// EXPLICIT, SPARSE, FULL (hll) or "" (cms). Repeated pairs are summed.
	SketchCounts(yield func(kind, representation string, n int))
	// MetricEstimates calls yield for every sketch created with
	// "metric": true, and only those, with its current estimate. Names are
	// unique; a repeated name is reported as a gather error.
	MetricEstimates(yield func(name string, estimate float64))
}

// QuantileSource is a backend whose opted-in sketches may answer
// quantiles (KLL sketches): at scrape time it yields, for each such
// sketch that holds values, its value at each fraction of qs. It follows
// Source's rules for concurrency and callbacks.
type QuantileSource interface {
	MetricQuantiles(qs []float64, yield func(name string, q, value float64))
}

// DiskSource is a backend with local files: the embedded one.
type DiskSource interface {
	// DiskBytes reports the bbolt file size and the write-ahead log size in
	// bytes.
	DiskBytes() (db, wal int64)
}

// CacheSource is a backend with a cache of decoded sketches.
type CacheSource interface {
	// CacheStats reports the decoded-sketch cache: entries and approximate
	// bytes.
	CacheStats() (entries int, bytes int64)
}

// PoolSource is a backend with a pool of database connections: the
// PostgreSQL one.
type PoolSource interface {
	// PoolStats reports the connections in use, idle, and the pool's
	// maximum.
	PoolStats() (inUse, idle, max int)
}

// KeySource is a backend that keeps idempotency keys.
type KeySource interface {
	// IdempotencyKeys reports the keys kept, the bytes they hold, and how
	// many were dropped before their window ran out because the keys
	// passed the backend's bound (a running total). On a shared database
	// the first two count the whole database.
	IdempotencyKeys() (keys int, bytes int64, evicted int64)
}

// sourceCollector turns a Source into gauges at scrape time, so that nothing
// is kept up to date between scrapes and per-sketch gauges exist exactly for
// the sketches opted in at that moment.
type sourceCollector struct {
	src          Source
	sketches     *prometheus.Desc
	dbSize       *prometheus.Desc
	walSize      *prometheus.Desc
	cacheEntries *prometheus.Desc
	cacheBytes   *prometheus.Desc
	poolConns    *prometheus.Desc
	poolMax      *prometheus.Desc
	estimate     *prometheus.Desc
	keys         *prometheus.Desc
	keyBytes     *prometheus.Desc
	keysEvicted  *prometheus.Desc
	quantile     *prometheus.Desc
	quantiles    []float64
}

func newSourceCollector(src Source, quantiles []float64) *sourceCollector {
	return &sourceCollector{
		src: src, quantiles: quantiles,
		quantile: prometheus.NewDesc("sketchd_sketch_quantile",
			`The value at each fraction of -metric-quantiles of each KLL sketch created with "metric": true, while it holds values (with its normalized rank error, as its describe says).`,
			[]string{"name", "quantile"}, nil),
		sketches: prometheus.NewDesc("sketchd_sketches",
			"Sketches stored, by kind and representation (representation is empty for cms).",
			[]string{"kind", "representation"}, nil),
		dbSize: prometheus.NewDesc("sketchd_db_size_bytes",
			"Size of the bbolt file.", nil, nil),
		walSize: prometheus.NewDesc("sketchd_wal_size_bytes",
			"Size of the write-ahead log not yet checkpointed away.", nil, nil),
		cacheEntries: prometheus.NewDesc("sketchd_cache_entries",
			"Decoded sketches held in the cache.", nil, nil),
		cacheBytes: prometheus.NewDesc("sketchd_cache_bytes",
			"Approximate memory held by the decoded-sketch cache.", nil, nil),
		poolConns: prometheus.NewDesc("sketchd_db_pool_connections",
			"PostgreSQL connections of this node's pool, by state (in_use, idle).",
			[]string{"state"}, nil),
		poolMax: prometheus.NewDesc("sketchd_db_pool_max_connections",
			"Most PostgreSQL connections this node's pool opens.", nil, nil),
		estimate: prometheus.NewDesc("sketchd_sketch_estimate",
			`Current estimate of each sketch created with "metric": true (cardinality for hll, total count for cms, values added for kll, distinct ids for bloom).`,
			[]string{"name"}, nil),
		keys: prometheus.NewDesc("sketchd_idempotency_keys",
			"Idempotency keys kept (with the answer each replays).", nil, nil),
		keyBytes: prometheus.NewDesc("sketchd_idempotency_key_bytes",
			"Approximate bytes the idempotency keys kept hold (bounded by -idempotency-max-bytes).", nil, nil),
		keysEvicted: prometheus.NewDesc("sketchd_idempotency_keys_evicted_total",
			"Idempotency keys dropped before -idempotency-window ran out because the keys passed -idempotency-max-bytes.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *sourceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.sketches
	ch <- c.dbSize
	ch <- c.walSize
	ch <- c.cacheEntries
	ch <- c.cacheBytes
	ch <- c.poolConns
	ch <- c.poolMax
	ch <- c.estimate
	ch <- c.keys
	ch <- c.keyBytes
	ch <- c.keysEvicted
}

// sketchCount is one sketchd_sketches series.
type sketchCount struct {
	kind, representation string
	n                    float64
}

// Collect implements prometheus.Collector. The Source's callbacks only copy
// values out; metrics are built and sent after each Source call returns, so
// the store's locks are never held while the registry drains the channel.
func (c *sourceCollector) Collect(ch chan<- prometheus.Metric) {
	// The known pairs start at zero so that a dashboard sums to 0, not
	// "no data", for a kind or representation no sketch has yet.
	counts := []sketchCount{
		{KindHLL, "EMPTY", 0}, {KindHLL, "EXPLICIT", 0},
		{KindHLL, "SPARSE", 0}, {KindHLL, "FULL", 0},
		{KindCMS, "", 0},
	}
	c.src.SketchCounts(func(kind, representation string, n int) {
		for i := range counts {
			if counts[i].kind == kind && counts[i].representation == representation {
				counts[i].n += float64(n)
				return
			}
		}
		counts = append(counts, sketchCount{kind, representation, float64(n)})
	})
	for _, sc := range counts {
		ch <- constGauge(c.sketches, sc.n, sc.kind, sc.representation)
	}

	if d, ok := c.src.(DiskSource); ok {
		db, wal := d.DiskBytes()
		ch <- constGauge(c.dbSize, float64(db))
		ch <- constGauge(c.walSize, float64(wal))
	}
	if cs, ok := c.src.(CacheSource); ok {
		entries, bytes := cs.CacheStats()
		ch <- constGauge(c.cacheEntries, float64(entries))
		ch <- constGauge(c.cacheBytes, float64(bytes))
	}
	if ps, ok := c.src.(PoolSource); ok {
		inUse, idle, max := ps.PoolStats()
		ch <- constGauge(c.poolConns, float64(inUse), "in_use")
		ch <- constGauge(c.poolConns, float64(idle), "idle")
		ch <- constGauge(c.poolMax, float64(max))
	}

	if ks, ok := c.src.(KeySource); ok {
		n, bytes, evicted := ks.IdempotencyKeys()
		ch <- constGauge(c.keys, float64(n))
		ch <- constGauge(c.keyBytes, float64(bytes))
		if m, err := prometheus.NewConstMetric(c.keysEvicted, prometheus.CounterValue, float64(evicted)); err == nil {
			ch <- m
		}
	}

	var estimates []prometheus.Metric
	c.src.MetricEstimates(func(name string, estimate float64) {
		estimates = append(estimates, constGauge(c.estimate, estimate, name))
	})
	for _, m := range estimates {
		ch <- m
	}
	if qs, ok := c.src.(QuantileSource); ok && len(c.quantiles) > 0 {
		var values []prometheus.Metric
		qs.MetricQuantiles(c.quantiles, func(name string, q, v float64) {
			values = append(values, constGauge(c.quantile, v, name, strconv.FormatFloat(q, 'g', -1, 64)))
		})
		for _, m := range values {
			ch <- m
		}
	}
}

// constGauge builds a gauge sample, or an invalid metric carrying the error
// (a label value that is not UTF-8): the registry then reports that one
// sample as a gather error instead of the process panicking.
func constGauge(d *prometheus.Desc, v float64, labelValues ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, v, labelValues...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}
