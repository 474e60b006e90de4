package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// centuryBody is the series of the report that took a gigabyte: hours
// kept a century, adds taken a century late.
const centuryBody = `{"levels":{"hour":"P100Y"},"late_limit":"P100Y"}`

// TestSeriesReadsBounded: on a series keeping a century of hours and
// holding one bucket, a range or a line planning more buckets than
// -max-series-buckets, a line of more points than -max-series-points and
// a bucket list longer than that are 422s saying the limit and how to
// narrow; so is a union whose ranges together pass it, while each alone
// answers. Within the limits, answers are right and describe their plan
// as runs.
func TestSeriesReadsBounded(t *testing.T) {
	t.Parallel()
	// Small limits keep the answers within them quick; the defaults are
	// checked through the binary (cmd/sketchd).
	e := newEnv(t, withConfig(func(c *Config) { c.MaxSeriesBuckets = 20_000; c.MaxSeriesPoints = 50 }))
	if _, ok := e.db.Store.(SeriesStore); !ok {
		t.Skipf("the %s backend keeps no series yet", testBackend(t, nil).Name)
	}
	must(t, e.send(t, http.MethodPut, "/v1/series/century", "application/json", centuryBody), http.StatusCreated, "create")
	now := time.Now().UTC()
	at := now.Add(-30 * time.Hour).Truncate(time.Hour)
	must(t, e.send(t, http.MethodPost, "/v1/series/century/add?ts="+rfc(at.Add(10*time.Minute)), "application/json", `{"ids":[1,2,3]}`), http.StatusOK, "add")
	end := now.Truncate(time.Hour)
	q := func(from, to time.Time) string { return "?from=" + rfc(from) + "&to=" + rfc(to) }

	refused := func(what string, r response, want ...string) {
		t.Helper()
		p := checkProblem(t, r, http.StatusUnprocessableEntity)
		for _, w := range want {
			if !strings.Contains(p.Detail, w) {
				t.Errorf("%s: detail %q does not say %q", what, p.Detail, w)
			}
		}
	}
	century := q(time.Date(1930, 1, 1, 0, 0, 0, 0, time.UTC), end)
	for _, route := range []string{"count", "raw"} {
		refused(route+" over a century", e.get(t, "/v1/series/century/"+route+century), "more than 20000 buckets", "at most 20000 buckets", "-max-series-buckets", "shorter range")
	}
	refused("a line with century windows", e.get(t, "/v1/series/century/timeseries?from=1990-01-01T00:00:00Z&to=2026-01-01T00:00:00Z&step=P1Y&window=P100Y"),
		"more than 20000 hour buckets", "-max-series-buckets", "window")
	refused("a line of 60 points", e.get(t, "/v1/series/century/timeseries"+q(end.Add(-60*time.Hour), end)+"&step=PT1H&window=PT1H"),
		"more than 50 points", "at most 50", "-max-series-points", "larger step")

	// Within the limits: two years of hours are one run, read from the
	// one stored bucket.
	from := end.Add(-2 * 365 * 24 * time.Hour)
	var c countAnswer
	decode(t, must(t, e.get(t, "/v1/series/century/count"+q(from, end)), http.StatusOK, "count over two years").Body, &c)
	hours := int(end.Sub(from) / time.Hour)
	if c.Cardinality != 3 || len(c.Plan) != 1 || c.Plan[0].Level != "hour" || c.Plan[0].Count != hours || c.Buckets != nil {
		t.Fatalf("count over two years: %+v; want 3 from one run of %d hours, no list", c, hours)
	}
	checkPlan(t, c, time.UTC, false)
	refused("a list of two years of hours", e.get(t, "/v1/series/century/count"+q(from, end)+"&buckets=true"), "at most 50 buckets", "-max-series-points", "leave buckets out")
	decode(t, must(t, e.get(t, "/v1/series/century/count"+q(end.Add(-40*time.Hour), end)+"&buckets=true"), http.StatusOK, "a listed count").Body, &c)
	if c.Cardinality != 3 || len(c.Plan) != 1 || c.Buckets == nil || len(*c.Buckets) != 40 {
		t.Fatalf("40 hours listed: %+v", c)
	}
	checkPlan(t, c, time.UTC, true)
	raw := must(t, e.get(t, "/v1/series/century/raw"+q(from, end)), http.StatusOK, "raw over two years")
	if want := fmt.Sprintf("hour %s %s %d", from.Format(time.RFC3339), end.Add(-time.Hour).Format(time.RFC3339), hours); raw.Header.Get("Sketchd-Plan") != want || raw.Header.Get("Sketchd-Buckets") != fmt.Sprint(hours) {
		t.Errorf("raw: Sketchd-Plan %q, Sketchd-Buckets %q; want %q, %d", raw.Header.Get("Sketchd-Plan"), raw.Header.Get("Sketchd-Buckets"), want, hours)
	}
	// A line of daily points over week-long windows of hours.
	var ts timeseriesAnswer
	day := end.Truncate(24 * time.Hour)
	decode(t, must(t, e.get(t, "/v1/series/century/timeseries"+q(day.AddDate(0, 0, -10), day)+"&step=P1D&window=P7D"), http.StatusOK, "a line").Body, &ts)
	if ts.Level != "hour" || len(ts.Points) != 10 {
		t.Fatalf("line: level %s, %d points", ts.Level, len(ts.Points))
	}
	for _, p := range ts.Points {
		want := 0.0
		if !at.Before(p.WindowFrom) && at.Before(p.End) {
			want = 3
		}
		if p.Cardinality != want {
			t.Errorf("point over [%v, %v): %v, want %v", p.WindowFrom, p.End, p.Cardinality, want)
		}
	}

	// Ranges of one request share the budget: each of these alone is
	// within it, the two together are not.
	half := fmt.Sprintf(`{"series":"century","from":%q,"to":%q}`, end.Add(-12_000*time.Hour).Format(time.RFC3339), end.Format(time.RFC3339))
	must(t, e.postJSON(t, "/v1/union", `{"sketches":[`+half+`]}`), http.StatusOK, "a union of one range")
	refused("a union of two ranges", e.postJSON(t, "/v1/union", `{"sketches":[`+half+`,`+half+`]}`), "with the 12000 of this request's other series ranges", "-max-series-buckets")
	long := fmt.Sprintf(`{"series":"century","from":"1930-01-01T00:00:00Z","to":%q}`, end.Format(time.RFC3339))
	refused("an intersection of century ranges", e.postJSON(t, "/v1/intersection", `{"sketches":[`+strings.Repeat(long+",", 7)+long+`]}`), "-max-series-buckets")
	short := fmt.Sprintf(`{"series":"century","from":%q,"to":%q}`, end.Add(-48*time.Hour).Format(time.RFC3339), end.Format(time.RFC3339))
	var o overlapAnswer
	decode(t, must(t, e.postJSON(t, "/v1/overlap", `{"sketches":[`+half+`,`+short+`]}`), http.StatusOK, "an overlap within the budget").Body, &o)
	if !o.Exactly[1].covers(3) || o.Exactly[1].Verdict != "exact" {
		t.Errorf("overlap of two ranges holding ids 1..3: exactly 2 = %+v, want exactly 3", o.Exactly[1])
	}
	refused("an overlap of two ranges", e.postJSON(t, "/v1/overlap", `{"sketches":[`+half+`,`+half+`]}`), "with the 12000 of this request's other series ranges", "-max-series-buckets")
	refused("an overlap of 64 century ranges", e.postJSON(t, "/v1/overlap", `{"sketches":[`+strings.Repeat(long+",", 63)+long+`]}`), "-max-series-buckets")
}
