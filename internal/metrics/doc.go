// Package metrics defines sketchd's Prometheus metrics: the counters and
// histograms that the server and store update as events happen, a collector
// that reads the store at scrape time, and helpers to build a registry and
// serve it.
//
// Nothing here is global. New registers everything with the
// prometheus.Registerer it is given (cmd/sketchd passes a fresh registry,
// see NewRegistry, never the default one) and returns a *Metrics whose
// methods the server and store call. The package imports only the Prometheus
// client and the standard library; the store feeds it through the Source
// interface, declared here and written with builtin types only.
//
// # Metric families
//
// All names carry the sketchd_ prefix and base units (seconds, bytes).
// Histograms expose the usual _bucket, _sum and _count series.
//
//	sketchd_http_requests_total{route,method,code}         counter    requests completed
//	sketchd_http_request_duration_seconds{route,method}    histogram  100 µs .. 10 s
//	sketchd_http_request_size_bytes{route,method}          histogram  body bytes read, 64 B .. 16 MiB
//	sketchd_http_response_size_bytes{route,method}         histogram  body bytes written
//	sketchd_ingested_total{kind}                           counter    ids or items accepted, by kind (hll, cms, theta, freq)
//	sketchd_request_bodies_refused_total{reason}           counter    too_large, media_type, bad_input
//	sketchd_auth_failures_total{reason}                    counter    missing, unknown, forbidden
//	sketchd_overload_rejections_total                      counter    503s under overload
//	sketchd_panics_recovered_total                         counter    handler panics answered with 500
//	sketchd_idempotency_replays_total                      counter    writes answered from their
//	                                                                  Idempotency-Key's record
//	sketchd_commit_batch_requests                          histogram  requests per WAL group commit, 1 .. 1024
//	sketchd_commit_bytes                                   histogram  bytes per WAL group commit
//	sketchd_commit_duration_seconds                        histogram  write + fdatasync, 50 µs .. 1 s;
//	                                                                  its _count rate is the fsync rate
//	sketchd_checkpoint_sketches                            histogram  sketches per checkpoint into bbolt
//	sketchd_checkpoint_duration_seconds                    histogram  1 ms .. 60 s
//	sketchd_series_buckets_expired_total                   counter    series buckets past retention
//	sketchd_series_expired_bytes_total                     counter    bytes those buckets held
//	sketchd_build_info{version,revision,goversion}         gauge      always 1
//
// Read from the Source at each scrape (only when Options.Source is set):
//
//	sketchd_sketches{kind,representation}                  gauge      representation EMPTY, EXPLICIT,
//	                                                                  SPARSE, FULL for hll, "" for cms,
//	                                                                  the mode (LIST, SET, HLL) for ds_hll,
//	                                                                  the flavor (EMPTY .. SLIDING) for cpc,
//	                                                                  SPARSE or NORMAL for zeta_hll,
//	                                                                  SPARSE or DENSE for airlift_hll
//	sketchd_db_size_bytes                                  gauge      bbolt file size
//	sketchd_wal_size_bytes                                 gauge      write-ahead log size
//	sketchd_cache_entries                                  gauge      decoded sketches cached
//	sketchd_cache_bytes                                    gauge      approximate cache memory
//	sketchd_sketch_estimate{name}                          gauge      estimate of each sketch created
//	                                                                  with "metric": true, and only those
//	sketchd_sketch_quantile{name,quantile}                 gauge      each such KLL sketch's value at each
//	                                                                  of Options.Quantiles (-metric-quantiles)
//	sketchd_idempotency_keys                               gauge      idempotency keys kept
//	sketchd_idempotency_key_bytes                          gauge      approximate bytes they hold
//	sketchd_idempotency_keys_evicted_total                 counter    keys dropped early by the bound
//
// # Label cardinality
//
// Every label value multiplies the series Prometheus stores, so each label
// comes from a small set chosen by code, never from a request:
//
//   - route is the chi route pattern (chi.RouteContext(r.Context()).RoutePattern(),
//     read after the handler ran), e.g. "/v1/sketches/{name}/add". Callers must
//     never pass a raw path (a sketch name in the path would create a series
//     per sketch); a request no route matched is passed as RouteUnmatched.
//   - method outside the standard set is folded to MethodOther.
//   - kind and reason take the constants declared here; the known values are
//     created at zero by New, so rates exist before the first event.
//   - name on sketchd_sketch_estimate and sketchd_sketch_quantile exists only
//     for opted-in sketches: the operator controls that set, and the
//     quantile label's few values (-metric-quantiles, at most 10).
//
// The dashboard in deploy/grafana/sketchd.json uses these families; a test
// fails if it queries a name this package does not export.
package metrics
