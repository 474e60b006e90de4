package console_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/series/zonetest"
)

// TestBrowserSeriesZones: the console reads a series' times in the
// series' zone with its offset, not as UTC, and gives the viewer's own
// time in the title; its day ranges start where the server's days do,
// also where midnight is skipped (Santiago's 2026-09-06 starts at 01:00),
// and where each local date begins in the zones of the fast sweep is
// where PostgreSQL's clock has it begin (zonetest).
func TestBrowserSeriesZones(t *testing.T) {
	b := browser(t)
	s := newSite(t, false)
	add := func(name, ts string, ids ...int) {
		var body strings.Builder
		for _, id := range ids {
			fmt.Fprintf(&body, "%d\n", id)
		}
		s.call(t, http.MethodPost, "/v1/series/"+name+"/add?ts="+ts, "text/plain", []byte(body.String()), nil)
	}
	s.call(t, http.MethodPut, "/v1/series/berlin", "application/json", []byte(`{"tz":"Europe/Berlin","levels":{"day":"P400D"},"late_limit":"P100D"}`), nil)
	add("berlin", time.Now().Add(-24*time.Hour).Format(time.RFC3339), 1, 2, 3)
	s.call(t, http.MethodPut, "/v1/series/santiago", "application/json", []byte(`{"tz":"America/Santiago","levels":{"day":"P100Y"},"late_limit":"P100Y"}`), nil)
	add("santiago", "2026-09-05T23:30:00-04:00", 1)
	add("santiago", "2026-09-06T23:30:00-03:00", 2)

	tb := newTab(t, b)
	tb.open(t, s.url, "/")
	tb.wait(t, "table.series tbody tr")
	for _, name := range []string{"berlin", "santiago"} {
		var desc struct {
			Levels []struct {
				Newest string `json:"newest"`
			} `json:"levels"`
		}
		s.call(t, http.MethodGet, "/v1/series/"+name, "", nil, &desc)
		// The API writes the newest bucket's start in the series' zone
		// (2026-11-25T00:00:00+01:00): the page shows that wall clock and
		// that offset.
		iso := desc.Levels[0].Newest
		want := strings.Replace(iso[:16], "T", " ", 1) + " " + iso[19:]
		type cell struct{ Text, Title string }
		got := eval[cell](t, tb, `(() => { const c = document.querySelector('table.series tr[data-name="`+name+`"] td[data-label="Newest bucket"] time');
			return c ? {Text: c.textContent, Title: c.title} : {}; })()`)
		if got.Text != want || strings.Contains(got.Text, "UTC") || !strings.Contains(got.Title, "your time") {
			t.Errorf("%s's newest bucket %s shows %q (title %q), want %q and the viewer's time in the title", name, iso, got.Text, got.Title, want)
		}
	}

	// From Santiago's day without a midnight: 09-06 (from 01:00) holds
	// id 2, 09-07 none, and the 7 days to 09-07 both ids.
	tb.open(t, s.url, "/series/santiago?from=2026-09-06&to=2026-09-07")
	tb.wait(t, "#series-chart")
	points := eval[int](t, tb, `document.querySelector('#series-chart polyline.line').getAttribute('points').trim().split(' ').length`)
	if last1, last7 := tb.text(t, "#last-P1D"), tb.text(t, "#last-P7D"); points != 2 || last1 != "0" || last7 != "2" {
		t.Errorf("Santiago 09-06 to 09-07: %d points, last day %q, last 7 days %q; want 2, 0, 2", points, last1, last7)
	}
	tb.noErrors(t, nil)

	// Where each date begins, against PostgreSQL, in the years where the
	// browser's tz data has PostgreSQL's offsets at every change and
	// day start.
	o := zonetest.Connect(t)
	// The fast subset only: the browser computes each day's start with
	// dozens of Intl calls near a change, too slow for the whole sweep.
	for _, c := range zonetest.Fast() {
		from := time.Date(c.From, 1, 1, 0, 0, 0, 0, time.UTC)
		to := time.Date(c.To+1, 1, 1, 0, 0, 0, 0, time.UTC)
		changes := o.Changes(t, c.Zone, from.AddDate(0, 0, -3), to.AddDate(0, 0, 3))
		cal := zonetest.NewCalendar(o.Days(t, c.Zone, changes, from, to.AddDate(0, 0, -1)))
		var dates []string
		var probes []int64
		for _, d := range cal.Days {
			dates = append(dates, d.Date.Format(time.DateOnly))
			probes = append(probes, d.Start.UnixMilli())
		}
		var want []int64
		for _, ch := range changes {
			probes = append(probes, ch.At.UnixMilli()-1000, ch.At.UnixMilli())
			want = append(want, int64(ch.Before)*1000, int64(ch.After)*1000)
		}
		in, _ := json.Marshal(map[string]any{"tz": c.Zone, "dates": dates, "probes": probes})
		type answer struct {
			Starts  []int64
			Offsets []int64
		}
		got := eval[answer](t, tb, `import('/console/zone.js').then(Z => { const q = `+string(in)+`;
			return {Starts: q.dates.map(d => Z.midnight(d, q.tz).getTime()), Offsets: q.probes.map(p => Z.tzOffset(q.tz, p))}; })`)
		// The offset at each day start, then before and after each change.
		agree := true
		for i, d := range cal.Days {
			if int64(offsetAt(changes, d.Start))*1000 != got.Offsets[i] {
				agree = false
			}
		}
		for i, w := range want {
			if got.Offsets[len(cal.Days)+i] != w {
				agree = false
			}
		}
		if !agree {
			t.Logf("%s %d-%d: the browser's tz data has other offsets than PostgreSQL's: not compared", c.Zone, c.From, c.To)
			continue
		}
		for i, d := range cal.Days {
			if got.Starts[i] != d.Start.UnixMilli() {
				t.Errorf("%s %s: the console starts it at %v, PostgreSQL at %v", c.Zone, dates[i], time.UnixMilli(got.Starts[i]).UTC(), d.Start)
			}
		}
	}
}

// offsetAt is the offset PostgreSQL's changes give at t, in seconds.
func offsetAt(changes []zonetest.Change, t time.Time) int {
	off := changes[0].Before
	for _, ch := range changes {
		if ch.At.After(t) {
			break
		}
		off = ch.After
	}
	return off
}
