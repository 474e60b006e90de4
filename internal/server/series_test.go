package server

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/pgtest"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

// seriesBody is a series of log2m-12 HLLs in Berlin (DST), days kept 400
// days and months 5 years, taking adds up to 90 days late.
const seriesBody = `{"log2m":12,"tz":"Europe/Berlin","levels":{"day":"P400D","month":"P5Y"},"late_limit":"P90D"}`

func berlin(tb testing.TB) *time.Location {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		tb.Fatal(err)
	}
	return loc
}

// seriesEnv is newEnv for series tests: they skip on a backend that keeps
// no series yet.
func seriesEnv(tb testing.TB) *env {
	tb.Helper()
	e := newEnv(tb)
	if _, ok := e.db.Store.(SeriesStore); !ok {
		tb.Skipf("the %s backend keeps no series yet", testBackend(tb, nil).Name)
	}
	return e
}

func rfc(t time.Time) string { return url.QueryEscape(t.Format(time.RFC3339)) }

type countAnswer struct {
	From, To time.Time
	Plan     []struct {
		Level       string
		First, Last time.Time
		Count       int
	}
	Buckets *[]struct {
		Level string
		Start time.Time
	}
	Warnings    []string
	Cardinality float64
	StdError    float64 `json:"std_error"`
	Total       *int64
	Results     []struct{ Estimate int64 }
}

type timeseriesAnswer struct {
	Level  string
	Points []struct {
		Start, End  time.Time
		WindowFrom  time.Time `json:"window_from"`
		Cardinality float64
		StdError    float64 `json:"std_error"`
	}
	Warnings []string
}

// stampedIDs are ids with the times they were added at.
type stampedIDs struct {
	ids []int64
	ts  []time.Time
}

// seriesFixture adds n random ids stamped over the last days days (in
// batches, one request per distinct day) to the series s.
func seriesFixture(tb testing.TB, e *env, r *rand.Rand, n, days int) stampedIDs {
	tb.Helper()
	now := time.Now()
	var st stampedIDs
	byDay := map[int][]int64{}
	for range n {
		d := r.IntN(days)
		v := r.Int64N(1 << 40)
		byDay[d] = append(byDay[d], v)
	}
	for d, ids := range byDay {
		ts := now.Add(-time.Duration(d)*24*time.Hour - time.Duration(r.IntN(20))*time.Hour)
		if d == 0 {
			ts = now.Add(-time.Minute)
		}
		must(tb, e.postJSON(tb, "/v1/series/s/add?ts="+rfc(ts), idsJSON(ids...)), http.StatusOK, "series add")
		for _, v := range ids {
			st.ids = append(st.ids, v)
			st.ts = append(st.ts, ts)
		}
	}
	return st
}

// in returns the ids stamped in [from, to).
func (st stampedIDs) in(from, to time.Time) []int64 {
	var out []int64
	for i, t := range st.ts {
		if !t.Before(from) && t.Before(to) {
			out = append(out, st.ids[i])
		}
	}
	return out
}

// checkPlan checks that a count's plan tiles its range with runs of
// consecutive buckets, in the series' zone, and that the bucket list is
// there exactly when asked for and agrees with the runs. It returns the
// plan's number of buckets.
func checkPlan(tb testing.TB, c countAnswer, loc *time.Location, listed bool) int {
	tb.Helper()
	if listed != (c.Buckets != nil) {
		tb.Fatalf("buckets listed: %v, asked: %v", c.Buckets != nil, listed)
	}
	at, n := c.From, 0
	for _, r := range c.Plan {
		l, err := series.ParseLevel(r.Level)
		_, off := r.First.Zone()
		if _, want := r.First.In(loc).Zone(); err != nil || r.Count < 1 || !r.First.Equal(at) || off != want {
			tb.Fatalf("run %+v does not start where the plan stands (%v) in %v: %v", r, at, loc, err)
		}
		for k := range r.Count {
			if listed && ((*c.Buckets)[n+k].Level != r.Level || !(*c.Buckets)[n+k].Start.Equal(at)) {
				tb.Fatalf("bucket %d %+v, want %s %v", n+k, (*c.Buckets)[n+k], r.Level, at)
			}
			if k == r.Count-1 && !at.Equal(r.Last) {
				tb.Fatalf("run %+v: its last bucket starts %v", r, at)
			}
			at = l.Next(at, loc)
		}
		n += r.Count
	}
	if !at.Equal(c.To) || (listed && len(*c.Buckets) != n) {
		tb.Fatalf("the plan's %d buckets end at %v, the range at %v", n, at, c.To)
	}
	return n
}

// TestSeriesOverHTTP: counts and raw unions over day-aligned ranges are
// exactly the sketches of the ids stamped inside them, rolling lines are
// the unions of their windows, and edges inside a bucket are widened with
// a warning.
func TestSeriesOverHTTP(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", seriesBody), http.StatusCreated, "create series")
	must(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", seriesBody), http.StatusOK, "create it again")
	checkProblem(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", strings.Replace(seriesBody, "Berlin", "Paris", 1)), http.StatusConflict)
	r := rand.New(rand.NewPCG(7, 8))
	st := seriesFixture(t, e, r, 6000, 60)
	loc := berlin(t)
	p := hll.DefaultParams()
	p.Log2m = 12
	today := time.Now().In(loc)
	day0 := time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, loc)
	for i := range 20 {
		a := day0.AddDate(0, 0, -r.IntN(65))
		b := a.AddDate(0, 0, 1+r.IntN(40))
		if i == 0 {
			a, b = day0.AddDate(0, 0, -70), day0.AddDate(0, 0, 1)
		}
		q := "?from=" + rfc(a) + "&to=" + rfc(b)
		want := hllOf(t, p, st.in(a, b)...)
		raw := must(t, e.get(t, "/v1/series/s/raw"+q), http.StatusOK, "raw").Body
		if !bytes.Equal(raw, encode(t, want)) {
			t.Fatalf("[%v, %v): raw union differs from the sketch of the %d ids stamped inside", a, b, len(st.in(a, b)))
		}
		var c countAnswer
		list := i%2 == 0
		decode(t, must(t, e.get(t, "/v1/series/s/count"+q+map[bool]string{true: "&buckets=true"}[list]), http.StatusOK, "count").Body, &c)
		if c.Cardinality != want.Estimate() || !c.From.Equal(a) || !c.To.Equal(b) || len(c.Warnings) != 0 {
			t.Fatalf("[%v, %v): count %+v, want %v over the same range and no warnings", a, b, c, want.Estimate())
		}
		n := checkPlan(t, c, loc, list)
		// A whole month inside the range is one bucket, not 28 to 31.
		m := time.Date(a.Year(), a.Month()+1, 1, 0, 0, 0, 0, loc)
		if days := int(b.Sub(a).Hours()/24 + 0.5); !m.AddDate(0, 1, 0).After(b) && n > days-27 {
			t.Errorf("[%v, %v): %d buckets for %d days holding the month from %v", a, b, n, days, m)
		}
	}

	// A 7-day rolling line by day over the last 30 days.
	from, to := day0.AddDate(0, 0, -30), day0.AddDate(0, 0, 1)
	var ts timeseriesAnswer
	decode(t, must(t, e.get(t, "/v1/series/s/timeseries?from="+rfc(from)+"&to="+rfc(to)+"&step=P1D&window=P7D"), http.StatusOK, "timeseries").Body, &ts)
	if ts.Level != "day" || len(ts.Points) != 31 {
		t.Fatalf("timeseries: level %s, %d points; want day and 31", ts.Level, len(ts.Points))
	}
	for _, pt := range ts.Points {
		want := hllOf(t, p, st.in(pt.WindowFrom, pt.End)...)
		if pt.Cardinality != want.Estimate() || !pt.WindowFrom.Equal(pt.End.In(loc).AddDate(0, 0, -7)) {
			t.Fatalf("point %v: %v over [%v, %v), want %v over the 7 days", pt.Start, pt.Cardinality, pt.WindowFrom, pt.End, want.Estimate())
		}
	}

	// An edge inside the finest bucket kept moves outward, with a warning.
	var c countAnswer
	decode(t, must(t, e.get(t, "/v1/series/s/count?from="+rfc(day0.Add(-30*time.Hour))+"&to="+rfc(day0)), http.StatusOK, "unaligned count").Body, &c)
	if !c.From.Equal(day0.AddDate(0, 0, -2)) || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "day bucket") {
		t.Errorf("unaligned from: covered from %v with warnings %q", c.From, c.Warnings)
	}

	var d seriesResponse
	decode(t, must(t, e.get(t, "/v1/series/s"), http.StatusOK, "describe").Body, &d)
	days, months := map[string]bool{}, map[string]bool{}
	for _, ts := range st.ts {
		days[ts.In(loc).Format("2006-01-02")] = true
		months[ts.In(loc).Format("2006-01")] = true
	}
	if d.Type != "hll" || d.TZ != "Europe/Berlin" || len(d.Levels) != 2 || d.Levels[0].Buckets != len(days) || d.Levels[1].Buckets != len(months) || d.SizeBytes <= 0 {
		t.Errorf("describe = %+v; want %d day and %d month buckets", d, len(days), len(months))
	}
	var list seriesListResponse
	decode(t, must(t, e.get(t, "/v1/series?prefix=s"), http.StatusOK, "list").Body, &list)
	if len(list.Series) != 1 || list.Series[0].Name != "s" {
		t.Errorf("list = %+v", list)
	}
	must(t, e.send(t, http.MethodDelete, "/v1/series/s", "", ""), http.StatusNoContent, "delete")
	checkProblem(t, e.get(t, "/v1/series/s/count?from="+rfc(from)+"&to="+rfc(to)), http.StatusNotFound)
}

// TestSeriesCMS: a Count-Min series answers totals, frequencies and heavy
// hitters over a range.
func TestSeriesCMS(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/c", "application/json", `{"type":"cms","width":512,"depth":4,"topk":5,"levels":{"hour":"P2D","day":"P30D"},"late_limit":"P1D"}`), http.StatusCreated, "create")
	now := time.Now()
	must(t, e.postJSON(t, "/v1/series/c/add?ts="+rfc(now.Add(-3*time.Hour)), `{"items":[{"id":"a","count":5},{"id":7,"count":2}]}`), http.StatusOK, "add items")
	must(t, e.postJSON(t, "/v1/series/c/add", `{"ids":["a","b"]}`), http.StatusOK, "add ids now")
	// The server stamped the ids before this clock reading: a range
	// ending after its hour holds them even if an hour began since now.
	from, to := now.Add(-5*time.Hour).Truncate(time.Hour), time.Now().Add(time.Hour).Truncate(time.Hour)
	var c countAnswer
	decode(t, must(t, e.get(t, "/v1/series/c/count?from="+rfc(from)+"&to="+rfc(to)+"&id=a&id_type=text"), http.StatusOK, "count").Body, &c)
	if c.Total == nil || *c.Total != 9 || len(c.Results) != 1 || c.Results[0].Estimate < 6 {
		t.Errorf("count = %+v, want total 9 and a at least 6", c)
	}
	var top struct {
		Items []struct {
			ID       any
			Estimate int64
		}
	}
	decode(t, must(t, e.get(t, "/v1/series/c/top?k=2&from="+rfc(from)+"&to="+rfc(to)), http.StatusOK, "top").Body, &top)
	if len(top.Items) != 2 || top.Items[0].ID != "a" {
		t.Errorf("top = %+v", top)
	}
	checkProblem(t, e.get(t, "/v1/series/c/count?from="+rfc(from)+"&to="+rfc(to)+"&id=x"), http.StatusBadRequest)
}

// TestSeriesBadInput: every refusal is a 4xx problem and changes nothing.
func TestSeriesBadInput(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", seriesBody), http.StatusCreated, "create")
	now := time.Now()
	must(t, e.postJSON(t, "/v1/series/s/add", `{"ids":[1,2,3]}`), http.StatusOK, "add")
	day := now.Truncate(24 * time.Hour)
	before := must(t, e.get(t, "/v1/series/s/raw?from="+rfc(day.AddDate(0, 0, -2))+"&to="+rfc(day.AddDate(0, 0, 2))), http.StatusOK, "raw").Body
	js := "application/json"
	for _, c := range []struct {
		name, method, path, ctype, body string
		want                            int
	}{
		{"bad tz", "PUT", "/v1/series/x", js, `{"tz":"Mars/Base","levels":{"day":"P1D"},"late_limit":"P1D"}`, 400},
		{"no levels", "PUT", "/v1/series/x", js, `{"tz":"UTC"}`, 400},
		{"unknown level", "PUT", "/v1/series/x", js, `{"levels":{"fortnight":"P30D"}}`, 400},
		{"bad retention", "PUT", "/v1/series/x", js, `{"levels":{"day":"30 days"}}`, 400},
		{"coarser keeps less", "PUT", "/v1/series/x", js, `{"levels":{"hour":"P30D","day":"P10D"}}`, 400},
		{"late limit past retention", "PUT", "/v1/series/x", js, `{"levels":{"hour":"P1D"},"late_limit":"P2D"}`, 400},
		{"metric flag", "PUT", "/v1/series/x", js, `{"levels":{"day":"P10D"},"metric":true}`, 400},
		{"repeated level", "PUT", "/v1/series/x", js, `{"levels":{"day":"P10D","day":"P20D"}}`, 400},
		{"bad name", "PUT", "/v1/series/no%20way", js, seriesBody, 400},
		{"future ts", "POST", "/v1/series/s/add?ts=" + rfc(now.Add(10*time.Minute)), js, `{"ids":[9]}`, 422},
		{"too late", "POST", "/v1/series/s/add?ts=" + rfc(now.AddDate(0, 0, -91)), js, `{"ids":[9]}`, 422},
		{"too far ahead", "POST", "/v1/series/s/add?ts=" + rfc(now.Add(time.Hour)), js, `{"ids":[9]}`, 422},
		{"bad ts", "POST", "/v1/series/s/add?ts=yesterday", js, `{"ids":[9]}`, 400},
		{"bad body", "POST", "/v1/series/s/add", js, `{"ids":[9.5]}`, 400},
		{"items into hll", "POST", "/v1/series/s/add", js, `{"items":[{"id":9,"count":2}]}`, 400},
		{"missing series", "POST", "/v1/series/none/add", js, `{"ids":[9]}`, 404},
		{"to before from", "GET", "/v1/series/s/count?from=" + rfc(now) + "&to=" + rfc(now.Add(-time.Hour)), "", "", 400},
		{"zero range", "GET", "/v1/series/s/count?from=" + rfc(now) + "&to=" + rfc(now), "", "", 400},
		{"no to", "GET", "/v1/series/s/count?from=" + rfc(now), "", "", 400},
		{"bad step", "GET", "/v1/series/s/timeseries?from=" + rfc(day) + "&to=" + rfc(day.AddDate(0, 0, 3)) + "&step=1d", "", "", 400},
		{"unaligned step", "GET", "/v1/series/s/timeseries?from=" + rfc(day) + "&to=" + rfc(day.AddDate(0, 0, 3)) + "&step=PT1H", "", "", 400},
		{"top of hll", "GET", "/v1/series/s/top?from=" + rfc(day) + "&to=" + rfc(day.AddDate(0, 0, 3)), "", "", 409},
		{"unknown query", "GET", "/v1/series/s/count?from=" + rfc(now) + "&to=" + rfc(now.Add(time.Hour)) + "&x=1", "", "", 400},
		{"delete missing", "DELETE", "/v1/series/none", "", "", 404},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkProblem(t, e.send(t, c.method, c.path, c.ctype, c.body), c.want)
		})
	}
	after := must(t, e.get(t, "/v1/series/s/raw?from="+rfc(day.AddDate(0, 0, -2))+"&to="+rfc(day.AddDate(0, 0, 2))), http.StatusOK, "raw").Body
	if !bytes.Equal(before, after) {
		t.Error("a refused request changed the series")
	}
	checkProblem(t, e.get(t, "/v1/series/x"), http.StatusNotFound)
}

// TestSeriesPostgreSQL: counts over day-aligned ranges equal PostgreSQL's
// hll_cardinality(hll_add_agg(hll_hash_bigint(x))) over the ids stamped
// in them, and a 7-day rolling line equals PostgreSQL's window query
// (hll_union_agg … OVER (ORDER BY day ROWS 6 PRECEDING)) over the series'
// own daily buckets, downloaded and loaded as hll values.
func TestSeriesPostgreSQL(t *testing.T) {
	t.Parallel()
	conn := pgtest.Connect(t)
	ctx := t.Context()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", seriesBody), http.StatusCreated, "create")
	r := rand.New(rand.NewPCG(9, 10))
	st := seriesFixture(t, e, r, 4000, 60)
	loc := berlin(t)
	today := time.Now().In(loc)
	day0 := time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, loc)
	for range 10 {
		a := day0.AddDate(0, 0, -r.IntN(62))
		b := a.AddDate(0, 0, 1+r.IntN(30))
		var c countAnswer
		decode(t, must(t, e.get(t, "/v1/series/s/count?from="+rfc(a)+"&to="+rfc(b)), http.StatusOK, "count").Body, &c)
		var pg float64
		if err := conn.QueryRow(ctx, "SELECT coalesce(hll_cardinality(hll_add_agg(hll_hash_bigint(x), 12, 5, -1, 1)), 0) FROM unnest($1::bigint[]) x", st.in(a, b)).Scan(&pg); err != nil {
			t.Fatal(err)
		}
		if math.Abs(c.Cardinality-pg) > 1e-9*max(1, pg) {
			t.Fatalf("[%v, %v): sketchd %v, PostgreSQL %v", a, b, c.Cardinality, pg)
		}
	}
	// The daily buckets, as PostgreSQL would keep them in a table.
	table := fmt.Sprintf("series_days_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE TEMP TABLE "+table+" (day date, h hll)"); err != nil {
		t.Fatal(err)
	}
	from := day0.AddDate(0, 0, -40)
	for d := from; d.Before(day0.AddDate(0, 0, 1)); d = d.AddDate(0, 0, 1) {
		raw := must(t, e.get(t, "/v1/series/s/raw?format=hex&from="+rfc(d)+"&to="+rfc(d.AddDate(0, 0, 1))), http.StatusOK, "day raw").Body
		if _, err := conn.Exec(ctx, "INSERT INTO "+table+" VALUES ($1, $2::hll)", d.Format("2006-01-02"), string(raw)); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := conn.Query(ctx, "SELECT coalesce(hll_cardinality(hll_union_agg(h) OVER (ORDER BY day ROWS 6 PRECEDING)), 0) FROM "+table+" ORDER BY day")
	if err != nil {
		t.Fatal(err)
	}
	var pg []float64
	for rows.Next() {
		var v float64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		pg = append(pg, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var ts timeseriesAnswer
	decode(t, must(t, e.get(t, "/v1/series/s/timeseries?step=P1D&window=P7D&from="+rfc(from)+"&to="+rfc(day0.AddDate(0, 0, 1))), http.StatusOK, "timeseries").Body, &ts)
	got := make([]float64, len(ts.Points))
	for i, p := range ts.Points {
		got[i] = p.Cardinality
	}
	// PostgreSQL's first six rows have fewer than 7 days before them; the
	// line's first points reach back before from, where there are no adds.
	same := len(got) == len(pg)
	for i := 6; same && i < len(got); i++ {
		same = math.Abs(got[i]-pg[i]) <= 1e-9*max(1, pg[i])
	}
	if !same {
		t.Fatalf("rolling 7-day line\nsketchd    %v\nPostgreSQL %v", got, pg)
	}
}

// TestSeriesOperands: series ranges are operands of unions and
// intersections. "Active last week and this week" overlaps by the ids
// stamped in both weeks; the union stored into a sketch equals the
// sketch of the ids of both ranges.
func TestSeriesOperands(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", `{"log2m":14,"levels":{"day":"P400D"},"late_limit":"P30D"}`), http.StatusCreated, "create")
	day := time.Now().UTC().Truncate(24 * time.Hour)
	lastWeek, thisWeek := day.AddDate(0, 0, -13), day.AddDate(0, 0, -6)
	// 0..20000 last week, 10000..30000 this week: 10000 in both.
	must(t, e.postJSON(t, "/v1/series/s/add?ts="+rfc(lastWeek.Add(time.Hour)), idsJSON(idRange(0, 20000)...)), http.StatusOK, "add last week")
	must(t, e.postJSON(t, "/v1/series/s/add?ts="+rfc(thisWeek.Add(time.Hour)), idsJSON(idRange(10000, 30000)...)), http.StatusOK, "add this week")
	op := func(from, to time.Time) string {
		return fmt.Sprintf(`{"series":"s","from":%q,"to":%q}`, from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	a, b := op(lastWeek, lastWeek.AddDate(0, 0, 7)), op(thisWeek, thisWeek.AddDate(0, 0, 7))
	var x struct {
		Estimate, Lower, Upper float64
		Spurious, Reliable     bool
		Terms                  []struct{ Sketches []string }
	}
	decode(t, must(t, e.postJSON(t, "/v1/intersection", `{"sketches":[`+a+`,`+b+`]}`), http.StatusOK, "intersection").Body, &x)
	if x.Lower > 10000 || x.Upper < 10000 || x.Spurious || !strings.HasPrefix(x.Terms[0].Sketches[0], "s[") {
		t.Errorf("intersection of the two weeks = %+v, want bounds around 10000", x)
	}
	// A sketch and a range together, and the union stored.
	e.create(t, "h", `{}`)
	e.addIDs(t, "h", idsJSON(idRange(25000, 40000)...), 15000)
	must(t, e.postJSON(t, "/v1/union", `{"sketches":[`+a+`,"h"],"into":"u"}`), http.StatusOK, "union into")
	p := hll.DefaultParams()
	want := hllOf(t, p, slices.Concat(idRange(0, 20000), idRange(25000, 40000))...)
	if got := e.raw(t, "u"); !bytes.Equal(got, encode(t, want)) {
		t.Error("the stored union of a range and a sketch differs from the sketch of their ids")
	}
	checkProblem(t, e.postJSON(t, "/v1/union", `{"sketches":[{"series":"s","from":"yesterday","to":"today"}]}`), http.StatusBadRequest)
	checkProblem(t, e.postJSON(t, "/v1/union", `{"sketches":[{"series":"s","from":"2026-01-01T00:00:00Z","to":"2026-01-02T00:00:00Z","x":1}]}`), http.StatusBadRequest)
	checkProblem(t, e.postJSON(t, "/v1/union", `{"sketches":[{}]}`), http.StatusBadRequest)
	checkProblem(t, e.postJSON(t, "/v1/intersection", `{"sketches":[`+a+`,{"series":"none","from":"2026-01-01T00:00:00Z","to":"2026-01-02T00:00:00Z"}]}`), http.StatusNotFound)
	e.create(t, "c", `{"type":"cms"}`)
	checkProblem(t, e.postJSON(t, "/v1/intersection", `{"sketches":[`+a+`,"c"]}`), http.StatusConflict)
	checkProblem(t, e.postJSON(t, "/v1/union", `{"sketches":[`+a+`,"c"]}`), http.StatusConflict)
}

// TestSeriesEventRefusedByABucket: an id a series' bucket refuses (a
// text over a Count-Min's limit) is named by its event, among events
// whose buckets are the same, and nothing changes.
func TestSeriesEventRefusedByABucket(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/cs", "application/json", `{"type":"cms","width":64,"depth":3,"tz":"UTC","levels":{"hour":"P2D","day":"P30D"}}`), http.StatusCreated, "create")
	e.create(t, "h", `{}`)
	ts := pgtest.AwayFromMidnight(t, time.Minute).Add(-30 * time.Minute).Truncate(time.Minute).Format(time.RFC3339)
	long := strings.Repeat("y", 1025)
	body := fmt.Sprintf(`{"events":[{"id":1,"sketches":["h"],"series":["cs"],"ts":%[1]q},{"id":2,"series":["cs"],"ts":%[1]q},{"id":3,"sketches":["h"]},`+
		`{"id":4,"series":["cs"],"ts":%[1]q},{"id":%[2]q,"series":["cs"],"ts":%[1]q}]}`, ts, long)
	before := e.raw(t, "h")
	p := checkProblem(t, e.postJSON(t, "/v1/events", body), http.StatusBadRequest)
	if !strings.HasPrefix(p.Detail, "events[4]") {
		t.Errorf("detail %q, want it to name events[4]", p.Detail)
	}
	if !bytes.Equal(e.raw(t, "h"), before) {
		t.Error("a refused events body changed a sketch")
	}
	var c struct{ Total *uint64 }
	decode(t, must(t, e.get(t, "/v1/series/cs/count?from="+url.QueryEscape(ts)+"&to="+rfc(time.Now().Add(time.Hour))+"&id=1"), http.StatusOK, "count").Body, &c)
	if c.Total == nil || *c.Total != 0 {
		t.Errorf("series total %v after a refused body, want 0", c.Total)
	}
}

// TestSeriesEvents: an event may name series, with its own stamp; all or
// nothing across sketches and series.
func TestSeriesEvents(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", `{"levels":{"hour":"P2D","day":"P30D"}}`), http.StatusCreated, "create")
	e.create(t, "h", `{}`)
	day := time.Now().UTC().Truncate(24 * time.Hour)
	yesterday := day.Add(-12 * time.Hour)
	body := fmt.Sprintf(`{"events":[{"id":1,"sketches":["h"],"series":["s"]},{"id":2,"series":["s"],"ts":%q},{"id":3,"sketches":["h"]}]}`, yesterday.Format(time.RFC3339))
	must(t, e.postJSON(t, "/v1/events", body), http.StatusOK, "events")
	// The server stamped event 1 before this clock reading, on its day.
	end := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	var c countAnswer
	decode(t, must(t, e.get(t, "/v1/series/s/count?from="+rfc(day.AddDate(0, 0, -1))+"&to="+rfc(end)), http.StatusOK, "count").Body, &c)
	if c.Cardinality != 2 {
		t.Errorf("series count = %v, want 2", c.Cardinality)
	}
	decode(t, must(t, e.get(t, "/v1/series/s/count?from="+rfc(day.AddDate(0, 0, -1))+"&to="+rfc(day)), http.StatusOK, "count yesterday").Body, &c)
	if c.Cardinality != 1 {
		t.Errorf("yesterday's count = %v, want 1 (the event stamped then)", c.Cardinality)
	}
	before := e.raw(t, "h")
	for name, bad := range map[string]string{
		"missing series":    `{"events":[{"id":9,"sketches":["h"],"series":["none"]}]}`,
		"too late":          fmt.Sprintf(`{"events":[{"id":9,"sketches":["h"]},{"id":10,"series":["s"],"ts":%q}]}`, day.AddDate(0, 0, -9).Format(time.RFC3339)),
		"bad ts":            `{"events":[{"id":9,"series":["s"],"ts":"noon"}]}`,
		"ts without series": `{"events":[{"id":9,"sketches":["h"],"ts":"2026-01-01T00:00:00Z"}]}`,
		"series twice":      `{"events":[{"id":9,"series":["s","s"]}]}`,
		"nothing named":     `{"events":[{"id":9}]}`,
	} {
		r := e.postJSON(t, "/v1/events", bad)
		if r.Status < 400 || r.Status >= 500 {
			t.Errorf("%s: %d, want a 4xx", name, r.Status)
		}
		if name == "too late" && r.Status != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d, want 422", name, r.Status)
		}
		if !bytes.Equal(e.raw(t, "h"), before) {
			t.Errorf("%s: a refused events body changed a sketch", name)
		}
	}
}

// TestSeriesThetaAndFreq: theta and freq series count with bounds, and a
// freq series answers the frequency report over a range, its buckets'
// counts summed per user.
func TestSeriesThetaAndFreq(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/f", "application/json", `{"type":"freq","levels":{"hour":"P2D","day":"P30D"}}`), http.StatusCreated, "create freq")
	must(t, e.send(t, http.MethodPut, "/v1/series/t", "application/json", `{"type":"theta","lg_k":10,"levels":{"day":"P30D"}}`), http.StatusCreated, "create theta")
	now := time.Now()
	// alice twice in two adds an hour apart, bob once: 2 users, 3 impressions.
	must(t, e.postJSON(t, "/v1/series/f/add?ts="+rfc(now.Add(-time.Hour)), `{"ids":["alice","bob"]}`), http.StatusOK, "add")
	must(t, e.postJSON(t, "/v1/series/f/add", `{"ids":["alice"]}`), http.StatusOK, "add")
	must(t, e.postJSON(t, "/v1/series/t/add", idsJSON(idRange(0, 5000)...)), http.StatusOK, "add theta")
	// The adds without ts were stamped before this clock reading.
	day := now.UTC().Truncate(24 * time.Hour)
	rng := "?from=" + rfc(day.AddDate(0, 0, -1)) + "&to=" + rfc(time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1))
	var rep struct {
		Reach, Impressions struct{ Estimate float64 }
		Classes            []struct {
			K     int
			Users struct{ Estimate float64 }
		}
	}
	decode(t, must(t, e.get(t, "/v1/series/f/frequency_report"+rng+"&max=3"), http.StatusOK, "report").Body, &rep)
	if rep.Reach.Estimate != 2 || rep.Impressions.Estimate != 3 || len(rep.Classes) != 3 || rep.Classes[0].Users.Estimate != 1 || rep.Classes[1].Users.Estimate != 1 {
		t.Errorf("report over the range = %+v, want bob once and alice twice", rep)
	}
	var c struct {
		Cardinality  float64
		Lower, Upper float64 `json:"-"`
		LowerB       float64 `json:"lower_bound"`
		UpperB       float64 `json:"upper_bound"`
	}
	decode(t, must(t, e.get(t, "/v1/series/t/count"+rng), http.StatusOK, "theta count").Body, &c)
	if c.LowerB > 5000 || c.UpperB < 5000 || c.Cardinality == 0 {
		t.Errorf("theta series count = %+v, want bounds around 5000", c)
	}
	checkProblem(t, e.get(t, "/v1/series/t/frequency_report"+rng), http.StatusConflict)
}

// TestRegisterLine: the line slid over bare registers gives, point by
// point, exactly the number and error of the union of the point's
// buckets, over SPARSE, FULL and empty buckets alike, and declines
// buckets among which one is EXPLICIT.
func TestRegisterLine(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(21, 22))
	p := hll.DefaultParams()
	p.Log2m = 11
	spec := &series.Spec{Params: sketch.HLLParams{Params: p}, TZ: "UTC", Levels: []series.LevelSpec{{Level: series.Day, Retention: series.Duration{Days: 400}}}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	for trial := range 20 {
		sks := make([]sketch.Sketch, 60)
		for i := range sks {
			var n int
			switch r.IntN(4) {
			case 0:
				continue // an empty bucket
			case 1:
				n = 400 + r.IntN(300) // SPARSE
			default:
				n = 2000 + r.IntN(20000) // FULL
			}
			h, _ := hll.New(p)
			for range n {
				h.AddHash(r.Uint64())
			}
			sks[i] = sketch.NewHLL(h)
		}
		window := 1 + r.IntN(20)
		var points []series.Point
		day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for last := 1; last <= len(sks); last++ {
			points = append(points, series.Point{Start: day0.AddDate(0, 0, last-1), End: day0.AddDate(0, 0, last),
				WindowFrom: day0.AddDate(0, 0, max(0, last-window)), First: max(0, last-window), Last: last})
		}
		est := hll.Estimator(trial % 2)
		got := make([]timeseriesPoint, len(points))
		if !registerLine(points, sks, spec, got, est) {
			t.Fatalf("trial %d: declined SPARSE, FULL and empty buckets", trial)
		}
		for i, pt := range points {
			var in []*hll.Sketch
			for _, sk := range sks[pt.First:pt.Last] {
				if h, ok := sketch.HLLOf(sk); ok {
					in = append(in, h)
				}
			}
			want, _ := hll.New(p)
			if len(in) > 0 {
				want, _ = hll.Union(in...)
			}
			a := want.Answer(est)
			if *got[i].Cardinality != a.Estimate || *got[i].StdError != a.StdError || *got[i].Lower != a.LowerBound || *got[i].Upper != a.UpperBound ||
				*got[i].Estimator != est.String() || !got[i].WindowFrom.Equal(pt.WindowFrom) {
				t.Fatalf("trial %d, point %d (window %d, %s): %v ± %v [%v, %v], want %+v",
					trial, i, window, est, *got[i].Cardinality, *got[i].StdError, *got[i].Lower, *got[i].Upper, a)
			}
		}
		h, _ := hll.New(p)
		h.AddHash(r.Uint64())
		sks[r.IntN(len(sks))] = sketch.NewHLL(h) // EXPLICIT
		if registerLine(points, sks, spec, got, est) {
			t.Fatalf("trial %d: took an EXPLICIT bucket", trial)
		}
	}
}

// TestSeriesBackfillAndChange: the README's levels take adds up to a late
// limit past the hour level's retention, each answer naming the levels
// that took it; PATCH changes the late limit and retentions, refusing a
// change the spec refuses and changing nothing then.
func TestSeriesBackfillAndChange(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	js := "application/json"
	must(t, e.send(t, http.MethodPut, "/v1/series/a", js, `{"tz":"UTC","levels":{"hour":"P14D","day":"P400D","month":"P5Y"},"late_limit":"P90D"}`), http.StatusCreated, "create with late_limit past the hour level")
	type added struct {
		Accepted int
		Levels   []string
		Warnings []string
	}
	add := func(ts time.Time, want int) added {
		t.Helper()
		r := must(t, e.postJSON(t, "/v1/series/a/add?ts="+rfc(ts), `{"ids":[1,2,3]}`), want, "add at "+ts.String())
		var a added
		if want == http.StatusOK {
			decode(t, r.Body, &a)
		}
		return a
	}
	now := time.Now()
	if a := add(now.AddDate(0, 0, -30), http.StatusOK); a.Accepted != 3 || !slices.Equal(a.Levels, []string{"day", "month"}) || len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], "hour level keeps (P14D)") {
		t.Errorf("an add 30 days late = %+v, want day and month, with a warning about hours", a)
	}
	if a := add(now.Add(-time.Minute), http.StatusOK); !slices.Equal(a.Levels, []string{"hour", "day", "month"}) || a.Warnings == nil || len(a.Warnings) != 0 {
		t.Errorf("an add of now = %+v, want all three levels and no warnings", a)
	}
	r := must(t, e.send(t, http.MethodPatch, "/v1/series/a", js, `{"late_limit":"P7D","levels":{"hour":"P2D"}}`), http.StatusOK, "patch")
	var d seriesResponse
	decode(t, r.Body, &d)
	if d.LateLimit != "P7D" || d.Levels[0].Retention != "P2D" || d.Levels[1].Retention != "P400D" {
		t.Errorf("PATCH answered %+v", d)
	}
	checkProblem(t, e.postJSON(t, "/v1/series/a/add?ts="+rfc(now.AddDate(0, 0, -30)), `{"ids":[4]}`), http.StatusUnprocessableEntity)
	if a := add(now.AddDate(0, 0, -3), http.StatusOK); !slices.Equal(a.Levels, []string{"day", "month"}) {
		t.Errorf("3 days late with hours kept P2D = %+v, want day and month", a)
	}
	for _, c := range []struct {
		name, path, ctype, body string
		want                    int
	}{
		{"nothing to change", "/v1/series/a", js, `{}`, 400},
		{"a level not kept", "/v1/series/a", js, `{"levels":{"week":"P30D"}}`, 400},
		{"unknown level", "/v1/series/a", js, `{"levels":{"fortnight":"P30D"}}`, 400},
		{"bad duration", "/v1/series/a", js, `{"late_limit":"7 days"}`, 400},
		{"coarser keeps less", "/v1/series/a", js, `{"levels":{"day":"P1D"}}`, 400},
		{"late past the coarsest", "/v1/series/a", js, `{"late_limit":"P6Y"}`, 400},
		{"tz is not changed", "/v1/series/a", js, `{"tz":"Europe/Berlin"}`, 400},
		{"not json", "/v1/series/a", "text/plain", `late_limit=P1D`, 415},
		{"missing series", "/v1/series/none", js, `{"late_limit":"P1D"}`, 404},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkProblem(t, e.send(t, http.MethodPatch, c.path, c.ctype, c.body), c.want)
		})
	}
	r = must(t, e.get(t, "/v1/series/a"), http.StatusOK, "describe")
	decode(t, r.Body, &d)
	if d.LateLimit != "P7D" || d.Levels[0].Retention != "P2D" || d.Levels[2].Retention != "P5Y" {
		t.Errorf("refused changes changed the series: %+v", d)
	}
}
