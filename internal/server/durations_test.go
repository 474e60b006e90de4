package server

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestDurationCap: every duration a request gives, in a JSON field or a
// query parameter, is refused past the one cap (P36500D, a year counting
// 365 days and a month 30) with a 400 naming the field and the cap, and
// the refusal changes nothing; at the cap it is taken.
func TestDurationCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create(t, "x", `{"log2m":11}`)
	must(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", `{"levels":{"hour":"P14D","month":"P5Y"}}`), http.StatusCreated, "create series")
	ts := func(q string) string {
		return "/v1/series/s/timeseries?from=2026-11-01T00:00:00Z&to=2026-11-03T00:00:00Z&" + q
	}
	type req struct{ method, path, body string }
	// at builds the request with the duration v in the field.
	for _, f := range []struct {
		field string // as the refusal names it
		at    func(v string) req
		// within is a duration at the cap the field takes (the cap
		// itself, or the longest of its units under it), and ok the
		// status the request answers with it.
		within string
		ok     int
	}{
		{"levels.hour", func(v string) req {
			return req{http.MethodPut, "/v1/series/new", `{"levels":{"hour":"` + v + `"}}`}
		}, "P36500D", http.StatusCreated},
		{"levels.month", func(v string) req {
			return req{http.MethodPut, "/v1/series/new2", `{"levels":{"hour":"P1D","month":"` + v + `"}}`}
		}, "P100Y", http.StatusCreated},
		{"late_limit", func(v string) req {
			return req{http.MethodPut, "/v1/series/new3", `{"levels":{"day":"P100Y"},"late_limit":"` + v + `"}`}
		}, "P1200M", http.StatusCreated},
		{"levels.month", func(v string) req {
			return req{http.MethodPatch, "/v1/series/s", `{"levels":{"month":"` + v + `"}}`}
		}, "P99Y12M", http.StatusOK},
		{"late_limit", func(v string) req {
			return req{http.MethodPatch, "/v1/series/s", `{"late_limit":"` + v + `"}`}
		}, "P14D", http.StatusOK},
		{"query parameter step", func(v string) req {
			return req{http.MethodGet, ts("window=P1D&step=" + url.QueryEscape(v)), ""}
		}, "PT876000H", http.StatusOK},
		// A century's window is taken, then planned: past the planning
		// limit, a 422 that says so.
		{"query parameter window", func(v string) req {
			return req{http.MethodGet, ts("step=P1D&window=" + url.QueryEscape(v)), ""}
		}, "P36500D", http.StatusUnprocessableEntity},
		{"expire_after", func(v string) req {
			return req{http.MethodPut, "/v1/sketches/new", `{"log2m":11,"expire_after":"` + v + `"}`}
		}, "P36500D", http.StatusCreated},
		{"expire_after", func(v string) req {
			return req{http.MethodPatch, "/v1/sketches/x", `{"expire_after":"` + v + `"}`}
		}, "P5214W2D", http.StatusOK},
	} {
		for _, over := range []string{"P36501D", "P99999999D", "P100Y1D", "P1217M", "P5214W3D", "PT876000H1S", "P36500DT1S", "P99999999999999999999D", "P1000000Y"} {
			r := f.at(over)
			before := e.snapshot(t)
			seriesBefore := must(t, e.get(t, "/v1/series/s"), http.StatusOK, "describe series").Body
			resp := e.send(t, r.method, r.path, "application/json", r.body)
			p := checkProblem(t, resp, http.StatusBadRequest)
			if !strings.Contains(p.Detail, f.field) {
				t.Errorf("%s %s with %s: detail %q does not name %s", r.method, r.path, over, p.Detail, f.field)
			}
			if !strings.Contains(p.Detail, "over the limit of P36500D") {
				t.Errorf("%s %s with %s: detail %q does not say the limit P36500D", r.method, r.path, over, p.Detail)
			}
			if d := before.diff(e.snapshot(t)); len(d) > 0 {
				t.Errorf("%s %s with %s changed sketches: %v", r.method, r.path, over, d)
			}
			if got := must(t, e.get(t, "/v1/series/s"), http.StatusOK, "describe series").Body; string(got) != string(seriesBefore) {
				t.Errorf("%s %s with %s changed the series:\n%s\nwas\n%s", r.method, r.path, over, got, seriesBefore)
			}
		}
		r := f.at(f.within)
		must(t, e.send(t, r.method, r.path, "application/json", r.body), f.ok, r.method+" "+r.path+" at the cap")
	}
}

// TestSeriesCreateRefusesExpiry: expire_after and expire_at, which a
// series create body used to parse and then ignore, are a 400 naming
// them, and no series is made.
func TestSeriesCreateRefusesExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, body := range []string{
		`{"levels":{"hour":"P14D"},"expire_after":"P7D"}`,
		`{"levels":{"hour":"P14D"},"expire_at":"2100-01-01T00:00:00Z"}`,
	} {
		p := checkProblem(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", body), http.StatusBadRequest)
		if !strings.Contains(p.Detail, "expire_after and expire_at apply to sketches") {
			t.Errorf("PUT %s: detail %q", body, p.Detail)
		}
		checkProblem(t, e.get(t, "/v1/series/s"), http.StatusNotFound)
	}
}
