package server

import (
	"math"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/store/postgres"
)

// rollingSQL is postgresql-hll's rolling window query as docs/postgres.md
// gives it, run as is on the PostgreSQL backend's own bucket table.
const rollingSQL = `SELECT start, hll_cardinality(hll_union_agg(hll) OVER (ORDER BY start ROWS 6 PRECEDING))
FROM sketchd_series_buckets WHERE series = 's' AND level = 'day' ORDER BY start`

// TestSeriesRollingSQL: on the PostgreSQL backend, the rolling 7-day
// query over sketchd_series_buckets equals /timeseries point for point
// (byte-identical buckets and unions make it an equality), in a zone with
// DST, over days that all hold adds.
func TestSeriesRollingSQL(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	db, ok := e.db.Store.(*postgres.DB)
	if !ok {
		t.Skip("the query runs on the PostgreSQL backend's table (SKETCHD_TEST_BACKEND=postgres; CI runs it)")
	}
	must(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", seriesBody), http.StatusCreated, "create")
	// Every day of the last 45 holds 300 ids drawn from 6000, so windows
	// overlap.
	const days = 45
	loc := berlin(t)
	r := rand.New(rand.NewPCG(11, 12))
	now := time.Now().In(loc)
	day0 := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	for d := range days {
		ts := day0.AddDate(0, 0, -d).Add(time.Duration(r.IntN(23)) * time.Hour)
		if ts.After(now) {
			// The day's start: a minute ago is the day before in a
			// day's first minute.
			ts = day0
		}
		ids := make([]int64, 300)
		for i := range ids {
			ids[i] = r.Int64N(6000)
		}
		must(t, e.postJSON(t, "/v1/series/s/add?ts="+rfc(ts), idsJSON(ids...)), http.StatusOK, "series add")
	}

	rows, err := db.Pool().Query(t.Context(), rollingSQL)
	if err != nil {
		t.Fatal(err)
	}
	var starts []time.Time
	var pg []float64
	for rows.Next() {
		var s time.Time
		var v float64
		if err := rows.Scan(&s, &v); err != nil {
			t.Fatal(err)
		}
		starts, pg = append(starts, s), append(pg, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// ROWS 6 PRECEDING is 7 days only where every day has a bucket.
	if len(starts) != days {
		t.Fatalf("%d daily buckets for %d days of adds", len(starts), days)
	}
	from, to := starts[0].In(loc), starts[len(starts)-1].In(loc).AddDate(0, 0, 1)
	var ts timeseriesAnswer
	decode(t, must(t, e.get(t, "/v1/series/s/timeseries?step=P1D&window=P7D&from="+rfc(from)+"&to="+rfc(to)), http.StatusOK, "timeseries").Body, &ts)
	if len(ts.Points) != len(pg) {
		t.Fatalf("/timeseries has %d points, the query %d rows", len(ts.Points), len(pg))
	}
	// The first six rows have fewer than 7 days before them in the table;
	// the line's first points reach back before from, where there are no
	// adds either, so they agree too.
	for i, p := range ts.Points {
		if !p.Start.Equal(starts[i]) {
			t.Fatalf("point %d starts at %v, row %d at %v", i, p.Start, i, starts[i])
		}
		if math.Abs(p.Cardinality-pg[i]) > 1e-9*max(1, pg[i]) || pg[i] == 0 {
			t.Errorf("day %s: /timeseries %v, rolling SQL %v", starts[i].In(loc).Format(time.DateOnly), p.Cardinality, pg[i])
		}
	}
}
