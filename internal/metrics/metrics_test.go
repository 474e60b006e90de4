package metrics_test

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/sketchd/sketchd/internal/metrics"
)

// fakeSketch is one sketch the fake store holds.
type fakeSketch struct {
	name, kind, representation string
	estimate                   float64
	metric                     bool // created with "metric": true
}

// fakeSource is a store stand-in: it answers from a fixed list of sketches
// and fixed sizes, filtering opted-in sketches as the real store must.
type fakeSource struct {
	sketches     []fakeSketch
	extraCounts  []fakeCount // pairs yielded in addition to those derived from sketches
	db, wal      int64
	cacheEntries int
	cacheBytes   int64
}

type fakeCount struct {
	kind, representation string
	n                    int
}

func (f *fakeSource) SketchCounts(yield func(kind, representation string, n int)) {
	type key struct{ kind, representation string }
	counts := map[key]int{}
	var order []key
	for _, s := range f.sketches {
		k := key{s.kind, s.representation}
		if _, ok := counts[k]; !ok {
			order = append(order, k)
		}
		counts[k]++
	}
	for _, k := range order {
		yield(k.kind, k.representation, counts[k])
	}
	for _, c := range f.extraCounts {
		yield(c.kind, c.representation, c.n)
	}
}

func (f *fakeSource) DiskBytes() (db, wal int64) { return f.db, f.wal }

func (f *fakeSource) CacheStats() (entries int, bytes int64) { return f.cacheEntries, f.cacheBytes }

func (f *fakeSource) PoolStats() (inUse, idle, max int) { return 3, 5, 16 }

func (f *fakeSource) IdempotencyKeys() (keys int, bytes int64, evicted int64) { return 42, 4242, 7 }

func (f *fakeSource) MetricEstimates(yield func(name string, estimate float64)) {
	for _, s := range f.sketches {
		if s.metric {
			yield(s.name, s.estimate)
		}
	}
}

// newFakeSource returns a store of n opted-in hll sketches, n/2 sketches
// that did not opt in and one opted-in cms sketch.
func newFakeSource(n int) *fakeSource {
	f := &fakeSource{db: 1 << 30, wal: 12345, cacheEntries: 321, cacheBytes: 9876543}
	reps := []string{"EMPTY", "EXPLICIT", "SPARSE", "FULL"}
	for i := range n {
		f.sketches = append(f.sketches, fakeSketch{
			name: fmt.Sprintf("signups.day:%04d", i), kind: "hll",
			representation: reps[i%len(reps)], estimate: float64(i) * 1.5, metric: true,
		})
	}
	for i := range n / 2 {
		f.sketches = append(f.sketches, fakeSketch{
			name: fmt.Sprintf("private-%d", i), kind: "hll",
			representation: "SPARSE", estimate: 7, metric: false,
		})
	}
	f.sketches = append(f.sketches, fakeSketch{
		name: "clicks", kind: "cms", estimate: 42, metric: true,
	})
	return f
}

// exerciseAll calls every recording method at least once, with fixed
// amounts that TestRecordedValues checks.
func exerciseAll(m *metrics.Metrics) {
	m.Replayed()
	m.ObserveHTTP("/v1/sketches/{name}/add", "POST", 200, 3*time.Millisecond, 100, 20)
	m.ObserveHTTP("/v1/sketches/{name}/add", "POST", 200, 3*time.Millisecond, 100, 20)
	m.ObserveHTTP("/v1/sketches/{name}", "GET", 404, 20*time.Second, 0, 300)
	m.ObserveHTTP(metrics.RouteUnmatched, "BREW", 418, time.Millisecond, -1, 5)
	m.ObserveHTTP("/v1/sketches/{name}/add", "POST", 503, time.Millisecond, 7, 9)
	m.Ingested("hll", 10000)
	m.Ingested("hll", 5)
	m.Ingested("cms", 7)
	m.Ingested("cms", 0)
	m.Ingested("cms", -3)
	m.BodyRefused("too_large")
	m.BodyRefused("too_large")
	m.BodyRefused("bad_input")
	m.ObserveCommit(8, 4096, 2*time.Millisecond)
	m.ObserveCommit(1, 100, time.Millisecond)
	m.ObserveCheckpoint(100, time.Second)
	m.ObserveDBCommit(8, 3, 2*time.Millisecond)
	m.ObserveDBCommit(1, 1, 4*time.Millisecond)
	m.Overloaded()
	m.Overloaded()
	m.Overloaded()
	m.SeriesExpired(3, 3000)
	m.SeriesExpired(2, 1000)
	m.PanicRecovered()
	m.AuthFailed("missing")
	m.AuthFailed("forbidden")
	m.AuthFailed("forbidden")
}

// scrape encodes g in the text format and parses it back, as Prometheus
// would see it.
func scrape(tb testing.TB, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	tb.Helper()
	mfs, err := g.Gather()
	require.NoError(tb, err)
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		require.NoError(tb, enc.Encode(mf))
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	parsed, err := p.TextToMetricFamilies(&buf)
	require.NoError(tb, err)
	return parsed
}

// find returns the sample of mf whose labels are exactly want.
func find(tb testing.TB, mf *dto.MetricFamily, want map[string]string) *dto.Metric {
	tb.Helper()
	for _, m := range mf.GetMetric() {
		if sameLabels(m, want) {
			return m
		}
	}
	tb.Fatalf("%s: no sample with labels %v; have %v", mf.GetName(), want, labelSets(mf))
	return nil
}

func sameLabels(m *dto.Metric, want map[string]string) bool {
	if len(m.GetLabel()) != len(want) {
		return false
	}
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; !ok || v != lp.GetValue() {
			return false
		}
	}
	return true
}

func labelSets(mf *dto.MetricFamily) []map[string]string {
	var out []map[string]string
	for _, m := range mf.GetMetric() {
		ls := map[string]string{}
		for _, lp := range m.GetLabel() {
			ls[lp.GetName()] = lp.GetValue()
		}
		out = append(out, ls)
	}
	return out
}

// wantFamilies is every family New exports with a Source, and its type.
var wantFamilies = map[string]dto.MetricType{
	"sketchd_http_requests_total":            dto.MetricType_COUNTER,
	"sketchd_http_request_duration_seconds":  dto.MetricType_HISTOGRAM,
	"sketchd_http_request_size_bytes":        dto.MetricType_HISTOGRAM,
	"sketchd_http_response_size_bytes":       dto.MetricType_HISTOGRAM,
	"sketchd_ingested_total":                 dto.MetricType_COUNTER,
	"sketchd_request_bodies_refused_total":   dto.MetricType_COUNTER,
	"sketchd_auth_failures_total":            dto.MetricType_COUNTER,
	"sketchd_overload_rejections_total":      dto.MetricType_COUNTER,
	"sketchd_panics_recovered_total":         dto.MetricType_COUNTER,
	"sketchd_commit_batch_requests":          dto.MetricType_HISTOGRAM,
	"sketchd_commit_bytes":                   dto.MetricType_HISTOGRAM,
	"sketchd_commit_duration_seconds":        dto.MetricType_HISTOGRAM,
	"sketchd_checkpoint_sketches":            dto.MetricType_HISTOGRAM,
	"sketchd_checkpoint_duration_seconds":    dto.MetricType_HISTOGRAM,
	"sketchd_series_buckets_expired_total":   dto.MetricType_COUNTER,
	"sketchd_series_expired_bytes_total":     dto.MetricType_COUNTER,
	"sketchd_build_info":                     dto.MetricType_GAUGE,
	"sketchd_sketches":                       dto.MetricType_GAUGE,
	"sketchd_db_size_bytes":                  dto.MetricType_GAUGE,
	"sketchd_wal_size_bytes":                 dto.MetricType_GAUGE,
	"sketchd_cache_entries":                  dto.MetricType_GAUGE,
	"sketchd_cache_bytes":                    dto.MetricType_GAUGE,
	"sketchd_sketch_estimate":                dto.MetricType_GAUGE,
	"sketchd_db_commit_requests":             dto.MetricType_HISTOGRAM,
	"sketchd_db_commit_rows":                 dto.MetricType_HISTOGRAM,
	"sketchd_db_commit_duration_seconds":     dto.MetricType_HISTOGRAM,
	"sketchd_db_pool_connections":            dto.MetricType_GAUGE,
	"sketchd_db_pool_max_connections":        dto.MetricType_GAUGE,
	"sketchd_idempotency_replays_total":      dto.MetricType_COUNTER,
	"sketchd_idempotency_keys":               dto.MetricType_GAUGE,
	"sketchd_idempotency_key_bytes":          dto.MetricType_GAUGE,
	"sketchd_idempotency_keys_evicted_total": dto.MetricType_COUNTER,
}

func TestFamilies(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	exerciseAll(metrics.New(reg, metrics.Options{Version: "1.2.3", Revision: "abc", Source: newFakeSource(3)}))
	got := scrape(t, reg)
	for name, typ := range wantFamilies {
		mf, ok := got[name]
		if !ok {
			t.Errorf("family %s not exported", name)
			continue
		}
		if mf.GetType() != typ {
			t.Errorf("%s type = %v, want %v", name, mf.GetType(), typ)
		}
		if mf.GetHelp() == "" {
			t.Errorf("%s has no help text", name)
		}
	}
	for name := range got {
		if _, ok := wantFamilies[name]; !ok {
			t.Errorf("unexpected family %s (document it in doc.go and add it here)", name)
		}
	}
}

func TestRecordedValues(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	exerciseAll(metrics.New(reg, metrics.Options{Version: "1.2.3", Revision: "abc"}))
	got := scrape(t, reg)

	counter := func(name string, labels map[string]string) float64 {
		t.Helper()
		require.Contains(t, got, name)
		return find(t, got[name], labels).GetCounter().GetValue()
	}
	hist := func(name string, labels map[string]string) *dto.Histogram {
		t.Helper()
		require.Contains(t, got, name)
		return find(t, got[name], labels).GetHistogram()
	}
	add := map[string]string{"route": "/v1/sketches/{name}/add", "method": "POST"}
	get := map[string]string{"route": "/v1/sketches/{name}", "method": "GET"}
	odd := map[string]string{"route": "unmatched", "method": "other"}
	with := func(base map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for bk, bv := range base {
			out[bk] = bv
		}
		return out
	}

	counters := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"sketchd_http_requests_total", with(add, "code", "200"), 2},
		{"sketchd_http_requests_total", with(add, "code", "503"), 1},
		{"sketchd_http_requests_total", with(get, "code", "404"), 1},
		{"sketchd_http_requests_total", with(odd, "code", "418"), 1},
		{"sketchd_ingested_total", map[string]string{"kind": "hll"}, 10005},
		{"sketchd_ingested_total", map[string]string{"kind": "cms"}, 7},
		{"sketchd_request_bodies_refused_total", map[string]string{"reason": "too_large"}, 2},
		{"sketchd_request_bodies_refused_total", map[string]string{"reason": "bad_input"}, 1},
		{"sketchd_request_bodies_refused_total", map[string]string{"reason": "media_type"}, 0},
		{"sketchd_auth_failures_total", map[string]string{"reason": "missing"}, 1},
		{"sketchd_auth_failures_total", map[string]string{"reason": "unknown"}, 0},
		{"sketchd_auth_failures_total", map[string]string{"reason": "forbidden"}, 2},
		{"sketchd_overload_rejections_total", map[string]string{}, 3},
		{"sketchd_panics_recovered_total", map[string]string{}, 1},
		{"sketchd_series_buckets_expired_total", map[string]string{}, 5},
		{"sketchd_series_expired_bytes_total", map[string]string{}, 4000},
	}
	for _, c := range counters {
		t.Run(fmt.Sprintf("%s%v", c.name, c.labels), func(t *testing.T) {
			if v := counter(c.name, c.labels); v != c.want {
				t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
			}
		})
	}
	if n := len(got["sketchd_http_requests_total"].GetMetric()); n != 4 {
		t.Errorf("sketchd_http_requests_total has %d series, want 4: %v", n, labelSets(got["sketchd_http_requests_total"]))
	}

	hists := []struct {
		name       string
		labels     map[string]string
		wantCount  uint64
		wantSum    float64
		bucketLE   float64 // an upper bound to check the cumulative count of
		wantBucket uint64
	}{
		{"sketchd_http_request_duration_seconds", add, 3, 0.007, 0.0025, 1},
		{"sketchd_http_request_duration_seconds", add, 3, 0.007, 0.005, 3},
		{"sketchd_http_request_duration_seconds", get, 1, 20, 10, 0}, // over the top bucket
		{"sketchd_http_request_size_bytes", add, 3, 207, 64, 1},
		{"sketchd_http_request_size_bytes", odd, 1, 0, 64, 1}, // -1 counted as 0
		{"sketchd_http_response_size_bytes", add, 3, 49, 64, 3},
		{"sketchd_http_response_size_bytes", get, 1, 300, 256, 0},
		{"sketchd_commit_batch_requests", map[string]string{}, 2, 9, 1, 1},
		{"sketchd_commit_batch_requests", map[string]string{}, 2, 9, 8, 2},
		{"sketchd_commit_bytes", map[string]string{}, 2, 4196, 1024, 1},
		{"sketchd_commit_duration_seconds", map[string]string{}, 2, 0.003, 0.001, 1},
		{"sketchd_checkpoint_sketches", map[string]string{}, 1, 100, 64, 0},
		{"sketchd_checkpoint_duration_seconds", map[string]string{}, 1, 1, 1, 1},
		{"sketchd_db_commit_requests", map[string]string{}, 2, 9, 1, 1},
		{"sketchd_db_commit_rows", map[string]string{}, 2, 4, 2, 1},
		{"sketchd_db_commit_rows", map[string]string{}, 2, 4, 4, 2},
		{"sketchd_db_commit_duration_seconds", map[string]string{}, 2, 0.006, 0.0025, 1},
	}
	for _, h := range hists {
		t.Run(fmt.Sprintf("%s%v/le=%v", h.name, h.labels, h.bucketLE), func(t *testing.T) {
			got := hist(h.name, h.labels)
			if got.GetSampleCount() != h.wantCount {
				t.Errorf("count = %d, want %d", got.GetSampleCount(), h.wantCount)
			}
			if math.Abs(got.GetSampleSum()-h.wantSum) > 1e-9 {
				t.Errorf("sum = %v, want %v", got.GetSampleSum(), h.wantSum)
			}
			found := false
			for _, b := range got.GetBucket() {
				if b.GetUpperBound() == h.bucketLE {
					found = true
					if b.GetCumulativeCount() != h.wantBucket {
						t.Errorf("bucket le=%v = %d, want %d", h.bucketLE, b.GetCumulativeCount(), h.wantBucket)
					}
				}
			}
			if !found {
				t.Errorf("no bucket le=%v", h.bucketLE)
			}
		})
	}

	t.Run("build_info", func(t *testing.T) {
		require.Contains(t, got, "sketchd_build_info")
		want := map[string]string{"version": "1.2.3", "revision": "abc", "goversion": runtime.Version()}
		if v := find(t, got["sketchd_build_info"], want).GetGauge().GetValue(); v != 1 {
			t.Errorf("sketchd_build_info = %v, want 1", v)
		}
	})
	t.Run("no source families without a source", func(t *testing.T) {
		for _, name := range []string{"sketchd_sketches", "sketchd_db_size_bytes", "sketchd_sketch_estimate"} {
			if _, ok := got[name]; ok {
				t.Errorf("%s exported with a nil Source", name)
			}
		}
	})
}

func TestBuildInfoUnknown(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	metrics.New(reg, metrics.Options{})
	got := scrape(t, reg)
	require.Contains(t, got, "sketchd_build_info")
	find(t, got["sketchd_build_info"], map[string]string{
		"version": "unknown", "revision": "unknown", "goversion": runtime.Version(),
	})
}

func TestStatusAndMethodLabels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		method   string
		status   int
		wantMeth string
		wantCode string
	}{
		{"GET", 200, "GET", "200"},
		{"HEAD", 304, "HEAD", "304"},
		{"PUT", 201, "PUT", "201"},
		{"DELETE", 204, "DELETE", "204"},
		{"PATCH", 405, "PATCH", "405"},
		{"OPTIONS", 412, "OPTIONS", "412"},
		{"POST", 413, "POST", "413"},
		{"POST", 415, "POST", "415"},
		{"POST", 422, "POST", "422"},
		{"POST", 429, "POST", "429"},
		{"POST", 500, "POST", "500"},
		{"POST", 507, "POST", "507"},
		{"get", 200, "other", "200"},
		{"PROPFIND", 405, "other", "405"},
		{"", 400, "other", "400"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s_%d", tt.method, tt.status), func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewPedanticRegistry()
			metrics.New(reg, metrics.Options{}).ObserveHTTP("", tt.method, tt.status, 0, 0, 0)
			got := scrape(t, reg)
			require.Contains(t, got, "sketchd_http_requests_total")
			m := find(t, got["sketchd_http_requests_total"], map[string]string{
				"route": "unmatched", "method": tt.wantMeth, "code": tt.wantCode,
			})
			if v := m.GetCounter().GetValue(); v != 1 {
				t.Errorf("count = %v, want 1", v)
			}
		})
	}
}

func TestSourceFamilies(t *testing.T) {
	t.Parallel()
	src := newFakeSource(10)
	src.extraCounts = []fakeCount{
		{"hll", "FULL", 5},    // summed with the FULL sketches in the list
		{"hll", "UNKNOWN", 2}, // passed through
		{"cms", "", 1},        // summed with the cms sketch
	}
	reg := prometheus.NewPedanticRegistry()
	metrics.New(reg, metrics.Options{Source: src})
	got := scrape(t, reg)

	gauge := func(name string, labels map[string]string) float64 {
		t.Helper()
		require.Contains(t, got, name)
		return find(t, got[name], labels).GetGauge().GetValue()
	}
	// 10 opted-in hll cycle EMPTY, EXPLICIT, SPARSE, FULL (3, 3, 2, 2), plus
	// 5 private SPARSE.
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"sketchd_sketches", map[string]string{"kind": "hll", "representation": "EMPTY"}, 3},
		{"sketchd_sketches", map[string]string{"kind": "hll", "representation": "EXPLICIT"}, 3},
		{"sketchd_sketches", map[string]string{"kind": "hll", "representation": "SPARSE"}, 2 + 5},
		{"sketchd_sketches", map[string]string{"kind": "hll", "representation": "FULL"}, 2 + 5},
		{"sketchd_sketches", map[string]string{"kind": "hll", "representation": "UNKNOWN"}, 2},
		{"sketchd_sketches", map[string]string{"kind": "cms", "representation": ""}, 2},
		{"sketchd_db_size_bytes", map[string]string{}, 1 << 30},
		{"sketchd_wal_size_bytes", map[string]string{}, 12345},
		{"sketchd_cache_entries", map[string]string{}, 321},
		{"sketchd_cache_bytes", map[string]string{}, 9876543},
		{"sketchd_db_pool_connections", map[string]string{"state": "in_use"}, 3},
		{"sketchd_db_pool_connections", map[string]string{"state": "idle"}, 5},
		{"sketchd_db_pool_max_connections", map[string]string{}, 16},
		{"sketchd_idempotency_keys", map[string]string{}, 42},
		{"sketchd_idempotency_key_bytes", map[string]string{}, 4242},
	}
	if v := find(t, got["sketchd_idempotency_keys_evicted_total"], map[string]string{}).GetCounter().GetValue(); v != 7 {
		t.Errorf("sketchd_idempotency_keys_evicted_total = %v, want 7", v)
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s%v", tt.name, tt.labels), func(t *testing.T) {
			if v := gauge(tt.name, tt.labels); v != tt.want {
				t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, v, tt.want)
			}
		})
	}
	if n := len(got["sketchd_sketches"].GetMetric()); n != 6 {
		t.Errorf("sketchd_sketches has %d series, want 6: %v", n, labelSets(got["sketchd_sketches"]))
	}

	t.Run("estimates are exactly the opted-in sketches", func(t *testing.T) {
		want := map[string]float64{}
		for _, s := range src.sketches {
			if s.metric {
				want[s.name] = s.estimate
			}
		}
		require.Contains(t, got, "sketchd_sketch_estimate")
		have := map[string]float64{}
		for _, m := range got["sketchd_sketch_estimate"].GetMetric() {
			require.Len(t, m.GetLabel(), 1)
			require.Equal(t, "name", m.GetLabel()[0].GetName())
			have[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
		require.Equal(t, want, have)
		require.Len(t, have, 11)
		require.NotContains(t, have, "private-0")
	})
}

func TestSourceEmptyStore(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	metrics.New(reg, metrics.Options{Source: &fakeSource{}})
	got := scrape(t, reg)
	require.Contains(t, got, "sketchd_sketches")
	// The known pairs are reported at zero, so dashboards show 0 rather
	// than no data.
	for _, ls := range []map[string]string{
		{"kind": "hll", "representation": "EMPTY"},
		{"kind": "hll", "representation": "EXPLICIT"},
		{"kind": "hll", "representation": "SPARSE"},
		{"kind": "hll", "representation": "FULL"},
		{"kind": "cms", "representation": ""},
	} {
		if v := find(t, got["sketchd_sketches"], ls).GetGauge().GetValue(); v != 0 {
			t.Errorf("sketchd_sketches%v = %v, want 0", ls, v)
		}
	}
	if _, ok := got["sketchd_sketch_estimate"]; ok {
		t.Errorf("sketchd_sketch_estimate exported with no opted-in sketch")
	}
}

// TestSourceReadEachScrape checks that the gauges follow the store between
// scrapes: a sketch that opts out disappears, a new one appears.
func TestSourceReadEachScrape(t *testing.T) {
	t.Parallel()
	src := &fakeSource{sketches: []fakeSketch{
		{name: "a", kind: "hll", representation: "EMPTY", estimate: 1, metric: true},
	}}
	reg := prometheus.NewPedanticRegistry()
	metrics.New(reg, metrics.Options{Source: src})
	require.Len(t, scrape(t, reg)["sketchd_sketch_estimate"].GetMetric(), 1)

	src.sketches[0].metric = false
	src.sketches = append(src.sketches, fakeSketch{name: "b", kind: "cms", estimate: 2, metric: true})
	got := scrape(t, reg)
	require.Contains(t, got, "sketchd_sketch_estimate")
	require.Len(t, got["sketchd_sketch_estimate"].GetMetric(), 1)
	find(t, got["sketchd_sketch_estimate"], map[string]string{"name": "b"})
}

// TestBadNameDoesNotBlindScrape checks that a name that is no valid label
// value fails only its own sample: Gather reports it, and Handler still
// serves everything else.
func TestBadNameDoesNotBlindScrape(t *testing.T) {
	t.Parallel()
	src := &fakeSource{sketches: []fakeSketch{
		{name: "good", kind: "hll", representation: "SPARSE", estimate: 3, metric: true},
		{name: "bad\xff", kind: "hll", representation: "SPARSE", estimate: 4, metric: true},
	}}
	reg := prometheus.NewPedanticRegistry()
	metrics.New(reg, metrics.Options{Source: src})

	_, err := reg.Gather()
	require.Error(t, err)

	srv := httptest.NewServer(metrics.Handler(reg, nil))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, string(body), `sketchd_sketch_estimate{name="good"} 3`)
	require.NotContains(t, string(body), `name="bad`)
	require.Contains(t, string(body), "sketchd_db_size_bytes 0")
}

func TestNilSafe(t *testing.T) {
	t.Parallel()
	var m *metrics.Metrics
	exerciseAll(m) // must not panic

	exerciseAll(metrics.New(nil, metrics.Options{Source: newFakeSource(1)})) // unregistered, must not panic
}

func TestNewRegistry(t *testing.T) {
	t.Parallel()
	reg := metrics.NewRegistry()
	metrics.New(reg, metrics.Options{})
	got := scrape(t, reg)
	for _, name := range []string{"go_goroutines", "process_start_time_seconds", "sketchd_build_info"} {
		if _, ok := got[name]; !ok {
			t.Errorf("NewRegistry + New: %s missing", name)
		}
	}
	// A second New on the same registry is a wiring bug and must be loud.
	require.Panics(t, func() { metrics.New(reg, metrics.Options{}) })
}

// TestConcurrentUse records and scrapes at once; run with -race.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	m := metrics.New(reg, metrics.Options{Source: newFakeSource(20)})
	const workers, rounds = 4, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				m.ObserveHTTP("/v1/events", "POST", 200, time.Duration(i)*time.Microsecond, 10, 10)
				m.Ingested("hll", w+1)
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			if _, err := reg.Gather(); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	got := scrape(t, reg)
	v := find(t, got["sketchd_http_requests_total"], map[string]string{
		"route": "/v1/events", "method": "POST", "code": "200",
	}).GetCounter().GetValue()
	if v != workers*rounds {
		t.Errorf("requests = %v, want %v", v, workers*rounds)
	}
	v = find(t, got["sketchd_ingested_total"], map[string]string{"kind": "hll"}).GetCounter().GetValue()
	if want := float64(rounds * (1 + 2 + 3 + 4)); v != want {
		t.Errorf("ingested = %v, want %v", v, want)
	}
}

// TestLabelsAreBounded checks that the recorded label sets stay fixed
// whatever a client sends: an arbitrary method and raw paths must not add
// series beyond those the caller chose.
func TestLabelsAreBounded(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	m := metrics.New(reg, metrics.Options{})
	for i := range 100 {
		m.ObserveHTTP(metrics.RouteUnmatched, fmt.Sprintf("X%d", i), 404, 0, 0, 0)
	}
	got := scrape(t, reg)
	sets := labelSets(got["sketchd_http_requests_total"])
	require.Len(t, sets, 1, "series: %v", sets)
	require.Equal(t, map[string]string{"route": "unmatched", "method": "other", "code": "404"}, sets[0])
}

func TestDependencies(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := goList(t)
	require.NoError(t, err)
	var bad []string
	for _, dep := range strings.Fields(out) {
		switch {
		case dep == "github.com/sketchd/sketchd/internal/metrics":
		case strings.HasPrefix(dep, "github.com/sketchd/sketchd/"),
			strings.HasPrefix(dep, "github.com/go-chi/"),
			strings.HasPrefix(dep, "go.etcd.io/bbolt"):
			bad = append(bad, dep)
		}
	}
	sort.Strings(bad)
	require.Empty(t, bad, "internal/metrics must depend on the Prometheus client only")
}
