package server

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// families is one scrape of /metrics, parsed.
type families map[string]*dto.MetricFamily

// scrape fetches /metrics and parses the text format.
func (e *env) scrape(tb testing.TB) families {
	tb.Helper()
	r := must(tb, e.get(tb, "/metrics"), http.StatusOK, "scrape")
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(r.Body))
	if err != nil {
		tb.Fatalf("parsing /metrics: %v", err)
	}
	return mfs
}

// value sums the samples of name whose labels include want.
func (f families) value(name string, want map[string]string) float64 {
	mf := f[name]
	if mf == nil {
		return 0
	}
	var sum float64
	for _, m := range mf.GetMetric() {
		l := labels(m)
		ok := true
		for k, v := range want {
			if l[k] != v {
				ok = false
			}
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum
}

// series returns the label sets of name.
func (f families) series(name string) []map[string]string {
	var out []map[string]string
	for _, m := range f[name].GetMetric() {
		out = append(out, labels(m))
	}
	return out
}

// eventually retries check until it returns nil: a request's metrics are
// recorded just after its answer is written, so a scrape that follows
// the answer at once may run before them.
func eventually(tb testing.TB, check func() error) {
	tb.Helper()
	var err error
	for range 200 {
		if err = check(); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Fatal(err)
}

// TestMetricsAfterTraffic sends a known mix of requests and checks that
// the counters moved by exactly that.
func TestMetricsAfterTraffic(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *Config) { c.MaxBody = 4096; c.MaxIDs = 300 }))
	e.create(t, "h", `{}`)
	e.create(t, "c", `{"type":"cms","width":64,"depth":3}`)
	before := e.scrape(t)

	type key struct{ route, method, code string }
	want := map[key]float64{}
	send := func(k key, n int, f func(i int) response) {
		for i := range n {
			r := f(i)
			if fmt.Sprint(r.Status) != k.code {
				t.Fatalf("%v: got %v", k, r)
			}
		}
		want[k] += float64(n)
	}
	const addRoute = "/v1/sketches/{name}/add"
	hllIDs, cmsItems := 0, 0
	send(key{addRoute, "POST", "200"}, 7, func(i int) response {
		hllIDs += 100
		return e.postJSON(t, "/v1/sketches/h/add", idsJSON(idRange(int64(i*100), int64(i*100+100))...))
	})
	send(key{addRoute, "POST", "200"}, 3, func(i int) response {
		hllIDs += 50
		return e.send(t, "POST", "/v1/sketches/h/add", "application/octet-stream", octetIDs(idRange(int64(i*50), int64(i*50+50))...))
	})
	send(key{addRoute, "POST", "200"}, 2, func(i int) response {
		hllIDs += 3
		return e.send(t, "POST", "/v1/sketches/h/add?id_type=text", "text/plain", "a\nb\nc\n")
	})
	send(key{addRoute, "POST", "200"}, 4, func(i int) response {
		cmsItems += 2
		return e.postJSON(t, "/v1/sketches/c/add", `{"items":[{"id":1,"count":5},{"id":"z","count":1}]}`)
	})
	send(key{addRoute, "POST", "400"}, 5, func(i int) response {
		return e.postJSON(t, "/v1/sketches/h/add", `{"ids":[1.5]}`)
	})
	send(key{addRoute, "POST", "415"}, 3, func(i int) response {
		return e.send(t, "POST", "/v1/sketches/c/add", "text/csv", "1,2")
	})
	send(key{addRoute, "POST", "413"}, 2, func(i int) response {
		return e.postJSON(t, "/v1/sketches/h/add", `{"ids":[`+strings.Repeat("1,", 3000)+`1]}`)
	})
	send(key{addRoute, "POST", "413"}, 1, func(i int) response {
		return e.postJSON(t, "/v1/sketches/h/add", idsJSON(idRange(0, 301)...))
	})
	send(key{addRoute, "POST", "404"}, 2, func(i int) response {
		return e.postJSON(t, "/v1/sketches/nope/add", `{"ids":[1]}`)
	})
	send(key{"/v1/sketches/{name}", "GET", "200"}, 4, func(i int) response { return e.get(t, "/v1/sketches/h") })
	send(key{"/v1/sketches/{name}", "GET", "404"}, 2, func(i int) response { return e.get(t, fmt.Sprintf("/v1/sketches/missing-%d", i)) })
	send(key{"/v1/sketches/{name}", "PUT", "400"}, 1, func(i int) response {
		return e.send(t, "PUT", "/v1/sketches/x", "application/json", `{"log2m":`)
	})
	send(key{"/v1/events", "POST", "200"}, 1, func(i int) response {
		return e.postJSON(t, "/v1/events", `{"events":[{"id":1,"sketches":["h","c"]},{"id":2,"sketches":["h","c"]},{"id":"q","sketches":["c"]}]}`)
	})
	send(key{"/v1/events", "POST", "400"}, 1, func(i int) response {
		return e.postJSON(t, "/v1/events", `{"events":[{"id":1.5,"sketches":["h"]}]}`)
	})
	send(key{"/v1/union", "POST", "200"}, 2, func(i int) response { return e.postJSON(t, "/v1/union", `{"sketches":["h"]}`) })
	send(key{"unmatched", "PATCH", "405"}, 1, func(i int) response { return e.send(t, "PATCH", "/v1/sketches/h/add", "", "") })
	send(key{"unmatched", "GET", "404"}, 2, func(i int) response { return e.get(t, fmt.Sprintf("/nothing-%d", i)) })
	send(key{"unmatched", "GET", "404"}, 1, func(i int) response { return e.get(t, "/v1/sketches/h/nothing") })
	// Every path without a route counts alike, whether chi matched a
	// mount on the way or nothing at all.
	for _, p := range []string{"/index.html", "/docs", "/v1", "/v1/", "/v1/nothing"} {
		send(key{"unmatched", "GET", "404"}, 1, func(i int) response { return e.get(t, p) })
	}
	scrapes := 1 // the scrape before the traffic is counted too
	hllIDs += 2  // events: ids 1 and 2 into h
	cmsItems += 3

	eventually(t, func() error {
		want[key{"/metrics", "GET", "200"}] = float64(scrapes)
		after := e.scrape(t)
		scrapes++
		var errs []string
		// Every series moved by exactly what was sent.
		seen := map[key]bool{}
		for _, l := range after.series("sketchd_http_requests_total") {
			k := key{l["route"], l["method"], l["code"]}
			seen[k] = true
			d := after.value("sketchd_http_requests_total", l) - before.value("sketchd_http_requests_total", l)
			if d != want[k] {
				errs = append(errs, fmt.Sprintf("requests %v moved by %v, want %v", k, d, want[k]))
			}
		}
		for k, n := range want {
			if !seen[k] {
				errs = append(errs, fmt.Sprintf("requests %v missing, want %v", k, n))
			}
		}
		for kind, n := range map[string]int{"hll": hllIDs, "cms": cmsItems} {
			l := map[string]string{"kind": kind}
			if d := after.value("sketchd_ingested_total", l) - before.value("sketchd_ingested_total", l); d != float64(n) {
				errs = append(errs, fmt.Sprintf("ingested{kind=%q} moved by %v, want %d", kind, d, n))
			}
		}
		for _, l := range after.series("sketchd_ingested_total") {
			if l["kind"] != "hll" && l["kind"] != "cms" {
				errs = append(errs, fmt.Sprintf("ingested has kind %q", l["kind"]))
			}
		}
		for reason, n := range map[string]int{"bad_input": 5 + 1 + 1, "media_type": 3, "too_large": 2 + 1} {
			l := map[string]string{"reason": reason}
			if d := after.value("sketchd_request_bodies_refused_total", l) - before.value("sketchd_request_bodies_refused_total", l); d != float64(n) {
				errs = append(errs, fmt.Sprintf("refused{reason=%q} moved by %v, want %d", reason, d, n))
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("after the traffic:\n%s", strings.Join(errs, "\n"))
		}
		return nil
	})

	// Route labels are the patterns chi serves, never a raw path.
	var patterns []string
	chi.Walk(e.mux(), func(_, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		patterns = append(patterns, route)
		return nil
	})
	after := e.scrape(t)
	for _, name := range []string{"sketchd_http_requests_total", "sketchd_http_request_duration_seconds", "sketchd_http_request_size_bytes", "sketchd_http_response_size_bytes"} {
		if len(after.series(name)) == 0 {
			t.Errorf("%s has no series", name)
		}
		for _, l := range after.series(name) {
			if r := l["route"]; r != "unmatched" && !slices.Contains(patterns, r) {
				t.Errorf("%s has route label %q, not a route pattern", name, r)
			}
		}
	}
}

// TestMetricQuantileGauge: an opted-in KLL sketch exports the values at
// the configured fractions, equal to its quantiles over the API; a sketch
// not opted in, or empty, exports none.
func TestMetricQuantileGauge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "lat", `{"type":"kll","metric":true}`)
	e.create(t, "empty", `{"type":"kll","metric":true}`)
	e.create(t, "quiet", `{"type":"kll"}`)
	var body strings.Builder
	body.WriteString(`{"values":[`)
	for i := range 5000 {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprint(&body, i%997)
	}
	body.WriteString("]}")
	must(t, e.postJSON(t, "/v1/sketches/lat/add", body.String()), 200, "add")
	must(t, e.postJSON(t, "/v1/sketches/quiet/add", body.String()), 200, "add quiet")
	var qa quantileAnswer
	decode(t, must(t, e.get(t, "/v1/sketches/lat/quantile?q=0.5,0.9,0.99"), 200, "quantile").Body, &qa)
	got := map[string]float64{}
	for _, m := range e.scrape(t)["sketchd_sketch_quantile"].GetMetric() {
		l := labels(m)
		got[l["name"]+"@"+l["quantile"]] = m.GetGauge().GetValue()
	}
	want := map[string]float64{}
	for _, q := range qa.Quantiles {
		want["lat@"+strconv.FormatFloat(q.Q, 'g', -1, 64)] = *q.Value
	}
	if !maps.Equal(got, want) {
		t.Errorf("sketchd_sketch_quantile = %v, want %v", got, want)
	}
	var est float64
	for _, m := range e.scrape(t)["sketchd_sketch_estimate"].GetMetric() {
		if labels(m)["name"] == "lat" {
			est = m.GetGauge().GetValue()
		}
	}
	if est != 5000 {
		t.Errorf("sketchd_sketch_estimate of a kll sketch = %v, want its 5000 values", est)
	}
}

// TestMetricEstimateGauge checks the opt-in per-sketch gauge.
func TestMetricEstimateGauge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "m", `{"log2m":14,"metric":true}`)
	e.create(t, "quiet", `{"log2m":14}`)
	e.create(t, "cm", `{"type":"cms","width":64,"depth":2,"metric":true}`)
	const n = 50_000
	for lo := int64(0); lo < n; lo += 10_000 {
		e.addIDs(t, "m", idsJSON(idRange(lo, lo+10_000)...), 10_000)
		e.addIDs(t, "quiet", idsJSON(idRange(lo, lo+10_000)...), 10_000)
	}
	e.addIDs(t, "cm", `{"items":[{"id":1,"count":40},{"id":2,"count":2}]}`, 2)

	gauge := func(f families) map[string]float64 {
		out := map[string]float64{}
		for _, m := range f["sketchd_sketch_estimate"].GetMetric() {
			out[labels(m)["name"]] = m.GetGauge().GetValue()
		}
		return out
	}
	describe := func(name string) hllResponse {
		var d hllResponse
		decode(t, must(t, e.get(t, "/v1/sketches/"+name), 200, "describe").Body, &d)
		return d
	}
	checkGauge := func(truth float64, names ...string) {
		t.Helper()
		g := gauge(e.scrape(t))
		var got []string
		for k := range g {
			got = append(got, k)
		}
		slices.Sort(got)
		if !slices.Equal(got, names) {
			t.Fatalf("sketchd_sketch_estimate names %v, want %v", got, names)
		}
		if !slices.Contains(names, "m") {
			return
		}
		d := describe("m")
		if math.Abs(g["m"]-d.Cardinality) > 1e-9*d.Cardinality {
			t.Errorf("gauge m = %v, describe says %v", g["m"], d.Cardinality)
		}
		sigma := 1.04 / math.Sqrt(1<<14) * truth
		if math.Abs(g["m"]-truth) > 3*sigma {
			t.Errorf("gauge m = %v, want %v within 3σ = %.0f", g["m"], truth, 3*sigma)
		}
		if g["m"] == truth {
			t.Logf("gauge m is exactly %v", truth)
		}
	}
	checkGauge(n, "cm", "m")
	if g := gauge(e.scrape(t)); g["cm"] != 42 {
		t.Errorf("gauge cm = %v, want the total 42", g["cm"])
	}

	// Off: the same parameters with metric false answer 200 and drop it.
	r := must(t, e.send(t, "PUT", "/v1/sketches/m", "application/json", `{"log2m":14,"metric":false}`), 200, "metric off")
	var d hllResponse
	decode(t, r.Body, &d)
	if d.Metric {
		t.Errorf("after metric off, describe says metric true")
	}
	checkGauge(n, "cm")
	e.addIDs(t, "m", idsJSON(idRange(n, n+100)...), 100)
	checkGauge(n, "cm")

	// On again, then more ids: the gauge follows.
	must(t, e.send(t, "PUT", "/v1/sketches/m", "application/json", `{"log2m":14,"metric":true}`), 200, "metric on")
	before := gauge(e.scrape(t))["m"]
	e.addIDs(t, "m", idsJSON(idRange(n+100, n+20_000)...), 19_900)
	checkGauge(n+20_000, "cm", "m")
	if after := gauge(e.scrape(t))["m"]; after <= before+15_000 {
		t.Errorf("gauge m went from %v to %v after 19,900 new ids", before, after)
	}
	// Deleting an opted-in sketch removes its gauge.
	must(t, e.send(t, "DELETE", "/v1/sketches/cm", "", ""), 204, "delete cm")
	checkGauge(n+20_000, "m")
}
