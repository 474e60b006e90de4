package console_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// clipWidths are the screens the chart labels are checked at: a phone
// and a wide laptop.
var clipWidths = []struct {
	name          string
	width, height int64
}{
	{"phone", 390, 844},
	{"wide", 1440, 900},
}

// chartLabelsJS reads every text of the page's charts (SVG) with its
// rendered box and the box of the drawing it belongs to: a text reaching
// past its drawing's edge is cut off on screen ("80,000" read as
// "0,000", "11-28" as "11-2").
const chartLabelsJS = `[...document.querySelectorAll('svg.chart, svg#funnel')].flatMap(svg => {
	const v = svg.getBoundingClientRect();
	return [...svg.querySelectorAll('text')].map(t => { const r = t.getBoundingClientRect();
		return { chart: svg.id, text: t.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom,
			vleft: v.left, vright: v.right, vtop: v.top, vbottom: v.bottom }; });
})`

type chartLabel struct {
	Chart, Text                  string
	Left, Right, Top, Bottom     float64
	VLeft, VRight, VTop, VBottom float64
}

// labels reads the charts' labels and fails the test for each one that
// does not lie wholly inside its drawing.
func (tb *tab) labels(t *testing.T) []chartLabel {
	t.Helper()
	ls := eval[[]chartLabel](t, tb, chartLabelsJS)
	for _, l := range ls {
		if l.Right-l.Left == 0 {
			continue
		}
		if l.Left < l.VLeft-0.5 || l.Right > l.VRight+0.5 || l.Top < l.VTop-0.5 || l.Bottom > l.VBottom+0.5 {
			t.Errorf("%s: the label %q spans x %.1f..%.1f, y %.1f..%.1f, past its drawing's x %.1f..%.1f, y %.1f..%.1f: it is cut off",
				l.Chart, l.Text, l.Left, l.Right, l.Top, l.Bottom, l.VLeft, l.VRight, l.VTop, l.VBottom)
		}
	}
	return ls
}

// TestBrowserChartLabelsNotClipped: at 390 and 1440 px every label of the
// series chart (numbers up to millions on the y axis, the last day on the
// x axis) and of a KLL sketch's CDF lies inside its drawing, and the
// labels read are the numbers the chart was drawn from.
func TestBrowserChartLabelsNotClipped(t *testing.T) {
	b := browser(t)
	s := newSite(t, false)
	// A Count-Min series of large daily totals: its trailing 30-day line
	// reaches millions, the widest numbers an axis shows.
	s.call(t, http.MethodPut, "/v1/series/views", "application/json",
		[]byte(`{"type":"cms","tz":"UTC","levels":{"day":"P400D"},"late_limit":"P60D"}`), nil)
	now := time.Now().UTC()
	for d := range 30 {
		body, _ := json.Marshal(map[string]any{"items": []map[string]any{{"id": "page", "count": 80_000 + 1_000*d}}})
		ts := now.Add(-time.Duration(d)*24*time.Hour - time.Minute).Format(time.RFC3339)
		s.call(t, http.MethodPost, "/v1/series/views/add?ts="+ts, "application/json", body, nil)
	}
	s.call(t, http.MethodPut, "/v1/sketches/sizes", "application/json", []byte(`{"type":"kll"}`), nil)
	var vals strings.Builder
	for i := range 2000 {
		if i > 0 {
			vals.WriteByte(',')
		}
		fmt.Fprintf(&vals, "%d", 100_000+i*450)
	}
	s.call(t, http.MethodPost, "/v1/sketches/sizes/add", "application/json", []byte(`{"values":[`+vals.String()+`]}`), nil)

	for _, w := range clipWidths {
		t.Run(w.name, func(t *testing.T) {
			tb := newTab(t, b)
			tb.viewport(t, w.width, w.height)
			tb.open(t, s.url, "/series/views")
			tb.wait(t, "#series-chart")
			ls := tb.labels(t)
			// The axis reaches the 30-day line's top, in millions, and
			// days are labelled.
			var texts []string
			for _, l := range ls {
				if l.Chart == "series-chart" {
					texts = append(texts, l.Text)
				}
			}
			if !strings.Contains(strings.Join(texts, " "), ",000,000") {
				t.Errorf("no label in millions on the series chart: %q", texts)
			}
			dates := 0
			for _, x := range texts {
				if len(x) == 5 && x[2] == '-' {
					dates++
				}
			}
			if dates < 3 {
				t.Errorf("the series chart labels %d days, want at least 3: %q", dates, texts)
			}
			tb.screenshot(t, "console-labels-series-"+w.name)

			tb.open(t, s.url, "/sketch/sizes")
			tb.wait(t, "#kll-cdf")
			tb.labels(t)
			tb.screenshot(t, "console-labels-kll-"+w.name)
			tb.noErrors(t, nil)
		})
	}
}

// TestBrowserPairsTableFits: at 390 and 1440 px the three-way overlap's
// Pairs table shows every column, the Verdict included, without scrolling
// sideways, however long the names.
func TestBrowserPairsTableFits(t *testing.T) {
	b := browser(t)
	s := newSite(t, false)
	s.hllOf(t, "newsletter:subscribers:2024", 1, 20001)
	s.hllOf(t, "checkout:completed:2024", 10001, 30001)
	s.hllOf(t, "support:tickets:2024", 15001, 34001)
	for _, w := range clipWidths {
		t.Run(w.name, func(t *testing.T) {
			tb := newTab(t, b)
			tb.viewport(t, w.width, w.height)
			tb.open(t, s.url, "/overlap?s=newsletter:subscribers:2024&s=checkout:completed:2024&s=support:tickets:2024")
			tb.wait(t, "table.pairs td.pair-verdict")
			type fit struct {
				Scroll, Client float64
				Hidden         []string
			}
			f := eval[fit](t, tb, `(() => { const wrap = document.querySelector('table.pairs').closest('.table-wrap');
				const v = wrap.getBoundingClientRect();
				const hidden = [...document.querySelectorAll('table.pairs td.pair-verdict')].filter(td => {
					const r = td.getBoundingClientRect(); return r.right > v.right + 0.5 || r.right > window.innerWidth + 0.5; }).map(td => td.textContent);
				return { scroll: wrap.scrollWidth, client: wrap.clientWidth, hidden }; })()`)
			if f.Scroll > f.Client+0.5 {
				t.Errorf("the Pairs table is %.0f px wide in a %.0f px box: it scrolls sideways", f.Scroll, f.Client)
			}
			if len(f.Hidden) > 0 {
				t.Errorf("verdicts out of sight: %q", f.Hidden)
			}
			tb.screenshot(t, "console-pairs-"+w.name)
			tb.noErrors(t, nil)
		})
	}
}

// TestBrowserPhoneHeaderAndRegions: on a 390 px phone the token form is
// one row on every view (it took some 170 px of each), so are the views'
// links, and the overlap's region labels break between names, never
// inside one ("camp aign:s pring").
func TestBrowserPhoneHeaderAndRegions(t *testing.T) {
	b := browser(t)
	s := newSite(t, false)
	s.hllOf(t, "campaign:spring:newsletter", 1, 20001)
	s.hllOf(t, "campaign:summer:newsletter", 10001, 30001)
	s.hllOf(t, "campaign:autumn:newsletter", 15001, 34001)
	tb := newTab(t, b)
	tb.viewport(t, 390, 844)
	for _, route := range []string{"/", "/retention", "/funnel", "/rank", "/overlap?s=campaign:spring:newsletter&s=campaign:summer:newsletter&s=campaign:autumn:newsletter"} {
		tb.open(t, s.url, route)
		tb.wait(t, "main section")
		if h := eval[float64](t, tb, `document.getElementById('token-form').getBoundingClientRect().height`); h > 48 {
			t.Errorf("%s: the token form is %.0f px tall on a phone, want one row (at most 48)", route, h)
		}
		// The views' links are one row too (the current one in bold).
		if rows := eval[int](t, tb, `new Set([...document.querySelectorAll('nav a')].map(a => Math.round(a.getBoundingClientRect().top))).size`); rows != 1 {
			t.Errorf("%s: the views' links take %d rows on a phone, want one", route, rows)
		}
		// Its label is still there for screen readers.
		if l := eval[string](t, tb, `document.querySelector('label[for=token]').textContent`); l != "Read token" {
			t.Errorf("%s: the token box's label reads %q", route, l)
		}
	}
	tb.wait(t, "table.regions tbody th")
	broken := eval[[]string](t, tb, `[...document.querySelectorAll('table.regions .region-name')].filter(n => n.getClientRects().length > 1).map(n => n.textContent)`)
	if n := eval[int](t, tb, `document.querySelectorAll('table.regions .region-name').length`); n < 6 {
		t.Fatalf("%d names in the regions table, want every region named", n)
	}
	if len(broken) > 0 {
		t.Errorf("region names broken inside: %q", broken)
	}
	if over := eval[int](t, tb, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
		t.Errorf("the page is %d px wider than the screen", over)
	}
	tb.readable(t)
	tb.screenshot(t, "console-phone-regions")
	tb.noErrors(t, nil)
}
