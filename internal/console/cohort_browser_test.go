package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// addDay adds the integer ids [from, to) to series name at noon of day
// (UTC).
func (s *site) addDay(tb testing.TB, name string, day time.Time, from, to int) {
	tb.Helper()
	var b strings.Builder
	for i := from; i < to; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	ts := day.Add(time.Minute).Format(time.RFC3339)
	s.call(tb, http.MethodPost, "/v1/series/"+name+"/add?ts="+url.QueryEscape(ts), "text/plain", []byte(b.String()), nil)
}

// cohortSite is a daily series of three days: A = [0, 200000) two days
// ago, B = [100000, 300000) yesterday, C = [199500, 399500) today, so
// A∩B and B∩C are half of their sets (reliable) and A∩C 500 users of
// 200,000 (too small a share to be reliable), as is A∩B∩C.
func cohortSite(t *testing.T) (*site, []time.Time) {
	s := newSite(t, false)
	s.call(t, http.MethodPut, "/v1/series/big", "application/json", []byte(`{"type":"hll","tz":"UTC","levels":{"day":"P400D"}}`), nil)
	today := time.Now().UTC().Truncate(24 * time.Hour)
	days := []time.Time{today.AddDate(0, 0, -2), today.AddDate(0, 0, -1), today}
	s.addDay(t, "big", days[0], 0, 200000)
	s.addDay(t, "big", days[1], 100000, 300000)
	s.addDay(t, "big", days[2], 199500, 399500)
	return s, days
}

// TestBrowserRetention: the retention view draws the API's table as a
// heatmap at desktop and phone widths: one row per cohort, a triangle of
// cells, each cell's verdict the API's, reliable cells coloured by their
// share, the others hatched and showing their bounds (never a plain
// number); a cell reached with the keyboard shows its numbers.
func TestBrowserRetention(t *testing.T) {
	b := browser(t)
	s, days := cohortSite(t)
	start := days[0].Format(time.DateOnly)
	var api struct {
		Cohorts []struct {
			Cells []struct {
				Reliable    bool
				VerdictText string `json:"verdict_text"`
				Share       struct{ Estimate, Lower, Upper float64 }
			}
		}
	}
	s.call(t, http.MethodPost, "/v1/retention", "application/json",
		[]byte(fmt.Sprintf(`{"series":"big","period":"P1D","start":%q,"cohorts":3,"periods":2}`, days[0].Format(time.RFC3339))), &api)
	var want []bool
	var words []string
	for _, row := range api.Cohorts {
		for _, c := range row.Cells {
			want = append(want, c.Reliable)
			words = append(words, c.VerdictText)
		}
	}
	if len(want) != 3 || !want[0] || want[1] || !want[2] {
		t.Fatalf("the API's verdicts %v; the test wants reliable, not reliable, reliable", want)
	}
	for _, w := range widths {
		t.Run(w.name, func(t *testing.T) {
			tb := newTab(t, b)
			tb.viewport(t, w.width, w.height)
			tb.open(t, s.url, "/retention?series=big&period=P1D&start="+start+"&cohorts=3&periods=2")
			tb.wait(t, "#retention")
			type cell struct {
				Text, Label, Class, Background string
			}
			cells := eval[[]cell](t, tb, `[...document.querySelectorAll('#retention td.ret-cell')].map(c => ({Text: c.textContent, Label: c.getAttribute('aria-label'), Class: c.className, Background: c.style.backgroundColor}))`)
			if rows := eval[int](t, tb, `document.querySelectorAll('#retention tbody tr').length`); rows != 3 || len(cells) != 3 {
				t.Fatalf("%d rows and %d cells, want 3 rows and a triangle of 3 cells: %+v", rows, len(cells), cells)
			}
			for i, c := range cells {
				if strings.Contains(c.Class, "unreliable") == want[i] {
					t.Errorf("cell %d class %q; the API says reliable=%v", i, c.Class, want[i])
				}
				if !strings.Contains(c.Label, "bounds") || !strings.Contains(c.Label, "of the cohort") {
					t.Errorf("cell %d has no numbers for a screen reader: %q", i, c.Label)
				}
				// Cells 1 and 2 look at today, which is not over: their
				// shares are marked as counts so far, never coloured as
				// final; cell 0 looks at yesterday.
				open := i > 0
				if open != (strings.Contains(c.Class, "partial") && strings.HasSuffix(c.Text, " so far") && strings.Contains(c.Label, "not over yet")) {
					t.Errorf("cell %d = %+v; its period is today's (not over): %v", i, c, open)
				}
				share := strings.TrimSuffix(c.Text, " so far")
				if want[i] {
					if (c.Background == "") != open || !strings.HasSuffix(share, "%") || strings.Contains(share, "–") {
						t.Errorf("reliable cell %d = %+v, want a share, coloured unless its period is not over", i, c)
					}
				} else if !strings.Contains(share, "–") || c.Background != "" {
					t.Errorf("unreliable cell %d = %+v, want its bounds on a hatched cell, not a plain number", i, c)
				}
			}
			// The keyboard reaches the cells, and focus shows their numbers.
			reached := false
			for range 40 {
				tb.do(t, "tab", chromedp.KeyEvent(kb.Tab))
				if eval[bool](t, tb, `document.activeElement.classList.contains('unreliable')`) {
					reached = true
					break
				}
			}
			if !reached {
				t.Fatal("Tab never reached the unreliable cell")
			}
			// The unreliable cell's detail gives the API's own words.
			if d := tb.text(t, "#cell-detail"); words[1] == "" || !strings.Contains(d, words[1]) || !strings.Contains(d, "bounds") {
				t.Errorf("the focused cell's detail = %q, want the API's verdict %q", d, words[1])
			}
			tb.readable(t)
			tb.noErrors(t, nil)
			tb.screenshot(t, "retention-"+w.name)
		})
	}
}

// TestBrowserFunnel: the funnel view draws one bar a step with a whisker
// over its bounds, fades the steps the API calls not reliable, and lists
// each step's reach and conversions with their errors, at desktop and
// phone widths.
func TestBrowserFunnel(t *testing.T) {
	b := browser(t)
	s, days := cohortSite(t)
	var ops []string
	var q []string
	for _, d := range days {
		day := d.Format(time.DateOnly)
		ops = append(ops, fmt.Sprintf(`{"series":"big","from":%q,"to":%q}`, d.Format(time.RFC3339), d.AddDate(0, 0, 1).Format(time.RFC3339)))
		q = append(q, "s="+url.QueryEscape("~big/"+day+"/"+day))
	}
	var api struct {
		Steps []struct {
			Estimate    float64
			Reliable    bool
			VerdictText string `json:"verdict_text"`
		}
	}
	s.call(t, http.MethodPost, "/v1/funnel", "application/json", []byte(`{"steps":[`+strings.Join(ops, ",")+`]}`), &api)
	if len(api.Steps) != 3 || !api.Steps[1].Reliable || api.Steps[2].Reliable {
		t.Fatalf("the API's funnel %+v; the test wants step 2 reliable and step 3 not", api.Steps)
	}
	for _, w := range widths {
		t.Run(w.name, func(t *testing.T) {
			tb := newTab(t, b)
			tb.viewport(t, w.width, w.height)
			tb.open(t, s.url, "/funnel?"+strings.Join(q, "&"))
			tb.wait(t, "#funnel")
			if n := eval[int](t, tb, `document.querySelectorAll('#funnel .fbar').length`); n != 3 {
				t.Fatalf("%d bars, want 3", n)
			}
			if n := eval[int](t, tb, `document.querySelectorAll('#funnel .fwhisker').length`); n != 9 {
				t.Errorf("%d whisker lines, want 3 a step", n)
			}
			classes := eval[[]string](t, tb, `[...document.querySelectorAll('#funnel g.step')].map(g => g.getAttribute('class'))`)
			for i, c := range classes {
				if strings.Contains(c, "unreliable") == api.Steps[i].Reliable {
					t.Errorf("step %d class %q; the API says reliable=%v", i, c, api.Steps[i].Reliable)
				}
			}
			// Each bar carries its count, readable however thin the bar
			// (the last step is some 500 users of 200,000), and inside
			// the drawing.
			type value struct {
				Text   string
				Height float64
			}
			values := eval[[]value](t, tb, `[...document.querySelectorAll('#funnel g.step')].map(g => { const v = g.querySelector('text.fvalue');
				return v ? { text: v.textContent, height: v.getBoundingClientRect().height } : { text: '', height: 0 }; })`)
			for i, v := range values {
				if v.Text != count(api.Steps[i].Estimate) || v.Height < 10 {
					t.Errorf("step %d's bar is labelled %q (%.1f px tall), want the API's %s, at least 10 px tall", i+1, v.Text, v.Height, count(api.Steps[i].Estimate))
				}
			}
			tb.labels(t)
			items := eval[[]string](t, tb, `[...document.querySelectorAll('#funnel-steps-list > li')].map(li => li.textContent)`)
			if len(items) != 3 || !strings.Contains(items[1], "of the step before") || !strings.Contains(items[1], "±") || api.Steps[2].VerdictText == "" || !strings.Contains(items[2], api.Steps[2].VerdictText) {
				t.Errorf("step list %q", items)
			}
			tb.readable(t)
			tb.noErrors(t, nil)
			tb.screenshot(t, "funnel-"+w.name)
		})
	}
}
