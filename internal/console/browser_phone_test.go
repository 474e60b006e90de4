package console_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// widths are the two screens the console is checked on: a laptop and a
// phone (390×844 CSS pixels, the size of a common one).
var widths = []struct {
	name          string
	width, height int64
}{
	{"desktop", 1280, 800},
	{"phone", 390, 844},
}

func (tb *tab) viewport(t *testing.T, w, h int64) {
	t.Helper()
	tb.do(t, "viewport", chromedp.EmulateViewport(w, h, chromedp.EmulateScale(2)))
}

// labelOverlapsJS lists the pairs of the drawing's text elements whose
// rendered boxes overlap, and the texts that reach outside the drawing.
const labelOverlapsJS = `(() => {
	const svg = document.getElementById('venn');
	const outer = svg.getBoundingClientRect();
	const texts = [...svg.querySelectorAll('text.label, #triple-label')];
	const boxes = texts.map(t => ({ t: t.textContent, r: t.getBoundingClientRect() }));
	const bad = [];
	for (let i = 0; i < boxes.length; i++) {
		const a = boxes[i].r;
		if (a.left < outer.left - 1 || a.right > outer.right + 1 || a.top < outer.top - 1 || a.bottom > outer.bottom + 1) bad.push('outside: ' + boxes[i].t);
		for (let j = 0; j < i; j++) {
			const b = boxes[j].r;
			if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) bad.push(boxes[i].t + ' overlaps ' + boxes[j].t);
		}
	}
	return bad; })()`

// TestBrowserThreeWays draws three overlapping sets at desktop and phone
// widths: every set's label and the number of the region common to all
// three are readable (not overlapping, inside the drawing, at least 10 px
// tall), that number is the API's, and the pairs table keeps each name on
// as few lines as it needs.
func TestBrowserThreeWays(t *testing.T) {
	b := browser(t)
	s := newSite(t, false)
	// Long names, as real ones are, and circles of similar size side by
	// side: the case where labels above the circles collided.
	s.hllOf(t, "newsletter:subscribers:2024", 1, 20001)
	s.hllOf(t, "checkout:completed:2024", 10001, 30001)
	s.hllOf(t, "support:tickets:2024", 15001, 34001)
	x := s.intersect(t, "newsletter:subscribers:2024", "checkout:completed:2024", "support:tickets:2024")
	for _, w := range widths {
		t.Run(w.name, func(t *testing.T) {
			tb := newTab(t, b)
			tb.viewport(t, w.width, w.height)
			tb.open(t, s.url, "/overlap?s=newsletter:subscribers:2024&s=checkout:completed:2024&s=support:tickets:2024")
			tb.wait(t, "#layout-error")
			if got := eval[string](t, tb, `document.getElementById('triple-label').textContent`); got != count(x.Estimate) {
				t.Errorf("the triple region says %q, the API %q", got, count(x.Estimate))
			}
			// The number sits inside all three circles.
			inside := eval[bool](t, tb, `(() => { const t = document.getElementById('triple-label');
				const x = +t.getAttribute('x'), y = +t.getAttribute('y');
				return [...document.querySelectorAll('#venn circle.set')].every(c => Math.hypot(x - c.cx.baseVal.value, y - c.cy.baseVal.value) < c.r.baseVal.value); })()`)
			if !inside {
				t.Error("the triple region's number is not inside all three circles")
			}
			for _, bad := range eval[[]string](t, tb, labelOverlapsJS) {
				t.Errorf("label: %s", bad)
			}
			if small := eval[float64](t, tb, `Math.min(...[...document.querySelectorAll('#venn text')].map(t => t.getBoundingClientRect().height))`); small < 10 {
				t.Errorf("the drawing's smallest text is %.1f px tall, want at least 10", small)
			}
			// A name in the pairs table wraps only where it must: no
			// line of a name cell holds fewer than 8 characters' worth.
			narrow := eval[[]string](t, tb, `[...document.querySelectorAll('table.pairs .pair-name')].filter(e => {
				const r = e.getBoundingClientRect(); const lh = parseFloat(getComputedStyle(e).lineHeight) || 20;
				const lines = Math.round(r.height / lh); return lines > 1 && e.textContent.length / lines < 8; }).map(e => e.textContent)`)
			if len(narrow) > 0 {
				t.Errorf("pair names wrap a few letters a line: %v", narrow)
			}
			if over := eval[int](t, tb, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
				t.Errorf("the page is %d px wider than the screen", over)
			}
			tb.readable(t)
			tb.screenshot(t, "console-three-"+w.name)
			tb.noErrors(t, nil)
		})
	}
}

// TestBrowserSeriesReadable: the series chart's axis text is readable on a
// phone, its error bands are tall enough to see at both widths, and
// today's bucket, still filling, is marked (and only while it is today's).
func TestBrowserSeriesReadable(t *testing.T) {
	b := browser(t)
	s := newSite(t, false)
	s.dailySeries(t, "signups", 30)
	for _, w := range widths {
		t.Run(w.name, func(t *testing.T) {
			tb := newTab(t, b)
			tb.viewport(t, w.width, w.height)
			tb.open(t, s.url, "/series/signups")
			tb.wait(t, "#series-chart")
			if small := eval[float64](t, tb, `Math.min(...[...document.querySelectorAll('#series-chart text.tick')].map(t => t.getBoundingClientRect().height))`); small < 10 {
				t.Errorf("the chart's axis text is %.1f px tall, want at least 10", small)
			}
			// Each band's tallest point, in screen pixels, with the axis
			// fitted to its line.
			banded := eval[[]string](t, tb, `[...document.querySelectorAll('#series-chart polygon.band')].map(p => p.dataset.window)`)
			if len(banded) < 2 {
				t.Fatalf("bands %v, want the 7- and 30-day lines'", banded)
			}
			for _, window := range banded {
				eval[bool](t, tb, `(() => { const f = document.getElementById('chart-fit'); f.value = '`+window+`'; return f.dispatchEvent(new Event('change')); })()`)
				h := eval[float64](t, tb, `(() => { const p = document.querySelector('#series-chart polygon.band[data-window="`+window+`"]');
					const pts = p.getAttribute('points').trim().split(' ').map(q => q.split(',').map(Number));
					const n = pts.length / 2, k = p.getScreenCTM().d; let h = 0;
					for (let i = 0; i < n; i++) h = Math.max(h, Math.abs(pts[2 * n - 1 - i][1] - pts[i][1]) * k);
					return h; })()`)
				if h < 4 {
					t.Errorf("with the axis fitted to it, the %s band is at most %.1f px tall: too thin to see", window, h)
				}
			}
			if note := tb.text(t, "#band-note"); !strings.Contains(note, "at most ± ") {
				t.Errorf("the legend does not say how wide the bands are: %q", note)
			}
			// The series was filled up to a minute ago: today is partial.
			if title := eval[string](t, tb, `document.querySelector('#partial-day title').textContent`); !strings.Contains(title, time.Now().UTC().Format("2006-01-02")) || !strings.Contains(title, "not over yet") {
				t.Errorf("today's bucket is marked %q", title)
			}
			if over := eval[int](t, tb, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
				t.Errorf("the page is %d px wider than the screen", over)
			}
			tb.readable(t)
			tb.screenshot(t, "console-series-"+w.name)

			// A range that ends yesterday has no partial day.
			yesterday := time.Now().UTC().AddDate(0, 0, -1).Format("2006-01-02")
			tb.open(t, s.url, "/series/signups?from="+time.Now().UTC().AddDate(0, 0, -10).Format("2006-01-02")+"&to="+yesterday)
			tb.wait(t, "#series-chart")
			if n := eval[int](t, tb, `document.querySelectorAll('#partial-day').length`); n != 0 {
				t.Errorf("a range ending %s marks a partial day", yesterday)
			}
			tb.noErrors(t, nil)
		})
	}
}

// TestBrowserMistakes: a mistake in the overlap form is shown beside the
// set that has it, with the form kept as typed so that set can be fixed in
// place; a missing sketch's page leads back; name boxes suggest names; the
// list says which error each estimate carries.
func TestBrowserMistakes(t *testing.T) {
	b := browser(t)
	s := newSite(t, false)
	s.hllOf(t, "web:visitors", 1, 5001)
	s.hllOf(t, "app:visitors", 2001, 8001)
	s.thetaOf(t, "web:theta", 1, 5001)
	allow404 := func(m chromedp.ConsoleMessage) bool {
		return m.Source == "network" && (strings.Contains(m.Text, "404") || strings.Contains(m.Text, "409"))
	}
	for _, w := range widths {
		t.Run(w.name, func(t *testing.T) {
			tb := newTab(t, b)
			tb.viewport(t, w.width, w.height)

			// An HLL against a theta sketch: set B is marked, the form stays.
			tb.open(t, s.url, "/overlap?s=web:visitors&s=web:theta")
			tb.wait(t, "#err-b")
			if got := tb.text(t, "#err-b"); !strings.Contains(got, "Theta") || !strings.Contains(got, "one kind") {
				t.Errorf("set B's mistake reads %q", got)
			}
			if v := eval[string](t, tb, `document.getElementById('set-a').value + '|' + document.getElementById('set-b').value + '|' + document.getElementById('set-b').getAttribute('aria-invalid')`); v != "web:visitors|web:theta|true" {
				t.Errorf("the form after the mistake: %q", v)
			}
			if eval[bool](t, tb, `!document.getElementById('err-a').hidden`) {
				t.Error("set A is marked too")
			}
			// Suggestions for the name boxes come from the list.
			if opts := eval[string](t, tb, `[...document.getElementById(document.getElementById('set-b').getAttribute('list')).options].map(o => o.value).join(',')`); !strings.Contains(opts, "app:visitors") {
				t.Errorf("set B suggests %q", opts)
			}
			tb.readable(t)
			tb.screenshot(t, "console-mistake-"+w.name)

			// Fixed in place: set B retyped, compared again.
			tb.do(t, "fix set B",
				chromedp.SetValue(chromedp.ID("set-b"), "app:visitors"),
				chromedp.Click(chromedp.CSS("form.pick button[type=submit]")))
			tb.wait(t, "#ov-estimate")
			if n := eval[int](t, tb, `document.querySelectorAll('#venn circle.set').length`); n != 2 {
				t.Errorf("after the fix %d circles, want 2", n)
			}

			// A name that does not exist is marked the same way.
			tb.open(t, s.url, "/overlap?s=web:visitors&s=nope")
			tb.wait(t, "#err-b")
			if got := tb.text(t, "#err-b"); !strings.Contains(got, "nope") {
				t.Errorf("a missing set B reads %q", got)
			}
			if n := eval[int](t, tb, `document.querySelectorAll('form.pick').length`); n != 1 {
				t.Errorf("%d overlap forms after a missing name, want 1", n)
			}

			// A missing sketch's page says so and leads back.
			tb.open(t, s.url, "/sketch/nope")
			tb.wait(t, "#back")
			tb.do(t, "go back", chromedp.Click(chromedp.ID("back")))
			tb.wait(t, "table.sketches tbody tr")

			// The list says which error each estimate is, and suggests
			// names and their prefixes.
			row := func(name string) string {
				return eval[string](t, tb, `document.querySelector('tr[data-name="`+name+`"] .estimate').textContent`)
			}
			if got := row("web:visitors"); !strings.HasSuffix(got, "(1σ)") && !strings.HasSuffix(got, "exact") {
				t.Errorf("an HLL row's estimate reads %q, without saying it is ± 1σ", got)
			}
			// A theta row gives the same measure, not a 95% range in
			// the same column: rows compare.
			if got := row("web:theta"); !strings.HasSuffix(got, "(1σ)") && !strings.HasSuffix(got, "exact") || strings.Contains(got, "95%") {
				t.Errorf("a theta row's estimate reads %q, want ± 1σ as the other rows", got)
			}
			if head := eval[string](t, tb, `document.querySelector('table.sketches thead th.num').textContent`); head != "Estimate (± 1σ)" {
				t.Errorf("the estimate column is headed %q", head)
			}
			if note := tb.text(t, "#estimate-note"); !strings.Contains(note, "one standard error, for every kind") {
				t.Errorf("the list's note reads %q", note)
			}
			opts := eval[[]string](t, tb, `[...document.querySelectorAll('#prefix-names option')].map(o => o.value)`)
			for _, want := range []string{"web:", "app:", "web:visitors"} {
				found := false
				for _, o := range opts {
					found = found || o == want
				}
				if !found {
					t.Errorf("the search box does not suggest %q: %v", want, opts)
				}
			}
			tb.noErrors(t, allow404)
		})
	}
}
