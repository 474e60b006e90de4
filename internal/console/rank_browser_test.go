package console_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// rankAnswer is POST /v1/rank's answer, the parts the console shows.
type rankAnswer struct {
	Target struct {
		Name                string
		Count, Lower, Upper float64
	} `json:"target"`
	By        string `json:"by"`
	Method    string `json:"method"`
	Scanned   int    `json:"scanned"`
	Skipped   int    `json:"skipped"`
	Complete  bool   `json:"complete"`
	ToldApart bool   `json:"told_apart"`
	Note      string `json:"note"`
	Results   []struct {
		Rank         int      `json:"rank"`
		Name         string   `json:"name"`
		Estimate     float64  `json:"estimate"`
		StdError     float64  `json:"std_error"`
		Lower        float64  `json:"lower"`
		Upper        float64  `json:"upper"`
		Verdict      string   `json:"verdict"`
		VerdictText  string   `json:"verdict_text"`
		Warnings     []string `json:"warnings"`
		TiedWithNext bool     `json:"tied_with_next"`
		Group        int      `json:"group"`
	} `json:"results"`
	Warnings []string `json:"warnings"`
}

// rank asks the API to rank, as the console's view of route will.
func (s *site) rank(tb testing.TB, body map[string]any) rankAnswer {
	tb.Helper()
	b, _ := json.Marshal(body)
	var r rankAnswer
	s.call(tb, http.MethodPost, "/v1/rank", "application/json", b, &r)
	return r
}

// problem sends an API request that must fail, without a token (as the
// console's tab has none until one is entered), and returns its status
// and problem detail.
func (s *site) problem(tb testing.TB, path string, body map[string]any) (int, string) {
	tb.Helper()
	b, _ := json.Marshal(body)
	resp, err := s.httpClient().Post(s.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var p struct {
		Detail string `json:"detail"`
	}
	if resp.StatusCode/100 == 2 || json.Unmarshal(data, &p) != nil || p.Detail == "" {
		tb.Fatalf("POST %s: %d %s, want a problem", path, resp.StatusCode, data)
	}
	return resp.StatusCode, p.Detail
}

// rankRow is one row of the console's ranked table: the numbers it was
// drawn from (data attributes, exact) and the texts shown.
type rankRow struct {
	Name, Rank, Group, Tied            string
	Estimate, StdError, Lower, Upper   float64
	EstText, ErrText, BoundsText       string
	Verdict, VerdictLabel, VerdictText string
	Warnings                           []string
	Mark, NextText                     string
	// BarLeft, BarRight, Tick: the bar's ends and the estimate's tick,
	// in pixels from the track's left edge; Track its width.
	BarLeft, BarRight, Tick, Track float64
}

const rankRowsJS = `[...document.querySelectorAll('#rank-table tbody tr')].map(tr => {
	// The track's inside, where the bars are placed (within its border).
	const ivl = tr.querySelector('.ivl');
	const track = { left: ivl.getBoundingClientRect().left + ivl.clientLeft, width: ivl.clientWidth };
	const bar = tr.querySelector('.ivl-range').getBoundingClientRect();
	const tick = tr.querySelector('.ivl-est').getBoundingClientRect();
	const mark = tr.querySelector('.tie-mark');
	return { name: tr.querySelector('th').textContent, rank: tr.querySelector('.rank-no').textContent,
		group: tr.querySelector('.rank-group').textContent, tied: tr.dataset.tied,
		estimate: +tr.dataset.estimate, stdError: +tr.dataset.stdError, lower: +tr.dataset.lower, upper: +tr.dataset.upper,
		estText: tr.querySelector('.rank-estimate .est').textContent, errText: tr.querySelector('.rank-estimate .err').textContent,
		boundsText: tr.querySelector('.ivl-text').textContent,
		verdict: tr.querySelector('.rank-verdict').dataset.verdict, verdictLabel: tr.querySelector('.rank-verdict summary').textContent,
		verdictText: tr.querySelector('.rank-verdict .verdict-text').textContent,
		warnings: [...tr.querySelectorAll('.rank-verdict .warnings li')].map(li => li.textContent),
		mark: mark ? mark.textContent : '', nextText: tr.querySelector('.rank-next').textContent,
		barLeft: bar.left - track.left, barRight: bar.right - track.left, tick: tick.left + tick.width / 2 - track.left, track: track.width };
})`

// clippedJS lists the page's visible texts (header and main) that are cut
// off: reaching past the window's sides, past a box that clips its
// overflow (a scrolling table's), or past the cell they are in; and the
// select boxes too narrow for the option they show.
const clippedJS = `(() => {
	const bad = [];
	const tiny = (e) => { for (let p = e; p; p = p.parentElement) { const r = p.getBoundingClientRect(); if (r.width <= 1 || r.height <= 1) return true; } return false; };
	for (const e of document.querySelectorAll('header *, main *')) {
		if (e.closest('svg') || !e.checkVisibility() || tiny(e)) continue;
		if (![...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
		const range = document.createRange(); range.selectNodeContents(e);
		const r = range.getBoundingClientRect();
		if (r.width === 0) continue;
		const what = e.tagName + ' "' + e.textContent.trim().slice(0, 50) + '"';
		if (r.left < -0.5 || r.right > window.innerWidth + 0.5) bad.push(what + ' spans ' + Math.round(r.left) + '..' + Math.round(r.right) + ' px in a ' + window.innerWidth + ' px window');
		for (let p = e.parentElement; p; p = p.parentElement) {
			const s = getComputedStyle(p);
			const cell = p.tagName === 'TD' || p.tagName === 'TH';
			if (!cell && s.overflowX === 'visible' && s.overflowY === 'visible') continue;
			const c = p.getBoundingClientRect();
			if (r.left < c.left - 0.5 || r.right > c.right + 0.5) bad.push(what + ' reaches past its ' + p.tagName + '.' + p.className);
			if (!cell && (p.scrollWidth > p.clientWidth + 0.5)) bad.push(p.tagName + '.' + p.className + ' scrolls sideways (' + p.scrollWidth + ' > ' + p.clientWidth + ')');
		}
	}
	const ctx = document.createElement('canvas').getContext('2d');
	for (const s of document.querySelectorAll('main select')) {
		if (!s.checkVisibility()) continue;
		const cs = getComputedStyle(s);
		ctx.font = cs.fontSize + ' ' + cs.fontFamily;
		const text = s.options[s.selectedIndex].text;
		// The arrow takes some 20 px beside the padding.
		const room = s.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 20;
		if (ctx.measureText(text).width > room) bad.push('select #' + s.id + ' shows "' + text + '" in ' + Math.round(room) + ' px');
	}
	return [...new Set(bad)]; })()`

// fixed formats x with d decimals, as JavaScript's toFixed does.
func fixed(x float64, d int) string { return strconv.FormatFloat(x, 'f', d, 64) }

// TestBrowserRank: the "Most overlapping" view shows POST /v1/rank's
// answer for a target and a candidate prefix at phone and desktop
// widths: the rows in its order with its numbers, each result's bounds
// as a bar on one scale, its verdict in its words, a ≈ mark exactly on
// the results the API marks tied_with_next and their groups, what was
// scanned and skipped; and no label is cut off.
func TestBrowserRank(t *testing.T) {
	b := browser(t)
	s := newSite(t, false)
	// A target of 30,000 ids and audiences sharing known parts of it:
	// a and b (20,000 and 19,700 shared) cannot be told apart, c
	// (12,000) can, d and e (6,000 and 5,900) cannot, g shares 1,000 of
	// its 31,000 and f none. Long names, as real ones are.
	s.hllOf(t, "followers:target", 0, 30_000)
	s.hllOf(t, "followers:audience-alpha-newsletter", 0, 20_000)
	s.hllOf(t, "followers:audience-bravo-newsletter", 300, 20_000)
	s.hllOf(t, "followers:audience-charlie", 18_000, 38_000)
	s.hllOf(t, "followers:audience-delta", 24_000, 30_000)
	s.hllOf(t, "followers:audience-echo", 24_100, 30_000)
	s.hllOf(t, "followers:audience-foxtrot", 100_000, 110_000)
	s.hllOf(t, "followers:audience-golf-very-long-name-of-a-campaign", 29_000, 60_000)
	// The fixture has what the test is about: ties inside the listed
	// results and between the last listed and the best left out, results
	// told apart, and more than one verdict.
	r := s.rank(t, map[string]any{"target": "followers:target", "candidates": map[string]any{"prefix": "followers:"}, "by": "intersection", "top": 6})
	var order []string
	var tied []bool
	verdicts := map[string]bool{}
	for _, x := range r.Results {
		order = append(order, strings.TrimPrefix(x.Name, "followers:audience-"))
		tied = append(tied, x.TiedWithNext)
		verdicts[x.Verdict] = true
	}
	if got := strings.Join(order, ","); got != "alpha-newsletter,bravo-newsletter,charlie,delta,echo,golf-very-long-name-of-a-campaign" {
		t.Fatalf("fixture: ranked %s", got)
	}
	if want := []bool{true, false, false, true, false, false}; !equalBools(tied, want) {
		t.Fatalf("fixture: tied_with_next %v, want %v", tied, want)
	}
	if len(verdicts) < 2 {
		t.Fatalf("fixture: verdicts %v, want more than one kind", verdicts)
	}
	r = s.rank(t, map[string]any{"target": "followers:target", "candidates": map[string]any{"prefix": "followers:"}, "by": "intersection", "top": 4})
	if last := r.Results[len(r.Results)-1]; !last.TiedWithNext {
		t.Fatalf("fixture: with top 4 the last listed (%s) is told apart from the best left out", last.Name)
	}

	// From a sketch's page to its ranking, by keyboard: the form starts
	// with the target's own prefix, and the route it builds is the one
	// the rest of the test opens.
	t.Run("from a sketch's page", func(t *testing.T) {
		tb := newTab(t, b)
		tb.open(t, s.url, "/sketch/followers:target")
		tb.wait(t, "#rank-link")
		tb.do(t, "follow the link", chromedp.SendKeys(chromedp.ID("rank-link"), kb.Enter))
		tb.wait(t, "#rank-form")
		if v := eval[string](t, tb, `['rank-target', 'rank-mode', 'rank-prefix', 'rank-by', 'rank-top'].map(id => document.getElementById(id).value).join('|')`); v != "followers:target|prefix|followers:|intersection|10" {
			t.Errorf("the form starts as %q", v)
		}
		tb.do(t, "rank", chromedp.SendKeys(chromedp.CSS("#rank-form button[type=submit]"), kb.Enter))
		tb.wait(t, "#rank-table tbody tr")
		if got := eval[string](t, tb, `location.hash`); got != "#/rank?target=followers%3Atarget&prefix=followers%3A&by=intersection&top=10" {
			t.Errorf("the form went to %q", got)
		}
		want := s.rank(t, map[string]any{"target": "followers:target", "candidates": map[string]any{"prefix": "followers:"}, "by": "intersection", "top": 10})
		var names, got []string
		for _, x := range want.Results {
			names = append(names, x.Name)
		}
		for _, r := range eval[[]rankRow](t, tb, rankRowsJS) {
			got = append(got, r.Name)
		}
		if strings.Join(got, ",") != strings.Join(names, ",") {
			t.Errorf("rows %v, the API ranks %v", got, names)
		}
		tb.noErrors(t, nil)
	})

	for _, c := range []struct {
		name  string
		route url.Values
		body  map[string]any
		fmt   func(float64) string
	}{
		{"intersection", url.Values{"target": {"followers:target"}, "prefix": {"followers:"}, "by": {"intersection"}, "top": {"6"}},
			map[string]any{"target": "followers:target", "candidates": map[string]any{"prefix": "followers:"}, "by": "intersection", "top": 6}, count},
		// The 4th (delta) cannot be told apart from the best left out
		// (echo): its mark says so.
		{"cut inside a tie", url.Values{"target": {"followers:target"}, "prefix": {"followers:"}, "by": {"intersection"}, "top": {"4"}},
			map[string]any{"target": "followers:target", "candidates": map[string]any{"prefix": "followers:"}, "by": "intersection", "top": 4}, count},
		{"jaccard", url.Values{"target": {"followers:target"}, "prefix": {"followers:audience-"}, "by": {"jaccard"}, "top": {"7"}},
			map[string]any{"target": "followers:target", "candidates": map[string]any{"prefix": "followers:audience-"}, "by": "jaccard", "top": 7},
			func(x float64) string { return fixed(x, 4) }},
		{"containment", url.Values{"target": {"followers:target"}, "prefix": {"followers:audience-"}, "by": {"containment"}, "direction": {"candidate_in_target"}, "top": {"5"}},
			map[string]any{"target": "followers:target", "candidates": map[string]any{"prefix": "followers:audience-"}, "by": "containment", "direction": "candidate_in_target", "top": 5},
			func(x float64) string { return fixed(x*100, 2) + "%" }},
	} {
		want := s.rank(t, c.body)
		for _, w := range clipWidths {
			t.Run(c.name+"/"+w.name, func(t *testing.T) {
				tb := newTab(t, b)
				tb.viewport(t, w.width, w.height)
				tb.open(t, s.url, "/rank?"+c.route.Encode())
				tb.wait(t, "#rank-table tbody tr")
				rows := eval[[]rankRow](t, tb, rankRowsJS)
				if len(rows) != len(want.Results) {
					t.Fatalf("%d rows, the API ranks %d", len(rows), len(want.Results))
				}
				// One scale for every bar: from 0, or a number below
				// every lower bound, to the largest upper bound.
				axis := eval[struct{ From, To float64 }](t, tb, `({from: +document.getElementById('rank-table').dataset.from, to: +document.getElementById('rank-table').dataset.to})`)
				top, bottom := 0.0, math.Inf(1)
				for _, x := range want.Results {
					top, bottom = max(top, x.Upper), min(bottom, x.Lower)
				}
				if axis.To != top || axis.From < 0 || axis.From > bottom {
					t.Errorf("the bars' scale is %v to %v, want from at most %v to %v", axis.From, axis.To, bottom, top)
				}
				for i, x := range want.Results {
					r := rows[i]
					if r.Name != x.Name || r.Rank != strconv.Itoa(x.Rank) || r.Group != strconv.Itoa(x.Group) {
						t.Errorf("row %d is %s (rank %s, group %s), the API's %s (rank %d, group %d)", i, r.Name, r.Rank, r.Group, x.Name, x.Rank, x.Group)
					}
					if r.Estimate != x.Estimate || r.StdError != x.StdError || r.Lower != x.Lower || r.Upper != x.Upper {
						t.Errorf("%s drawn from %v ± %v [%v, %v], the API's %v ± %v [%v, %v]", x.Name, r.Estimate, r.StdError, r.Lower, r.Upper, x.Estimate, x.StdError, x.Lower, x.Upper)
					}
					if r.EstText != c.fmt(x.Estimate) || r.ErrText != " ± "+c.fmt(x.StdError) || r.BoundsText != c.fmt(x.Lower)+" – "+c.fmt(x.Upper) {
						t.Errorf("%s reads %q %q %q, want %q, ± %q, %q – %q", x.Name, r.EstText, r.ErrText, r.BoundsText, c.fmt(x.Estimate), c.fmt(x.StdError), c.fmt(x.Lower), c.fmt(x.Upper))
					}
					if r.Verdict != x.Verdict || r.VerdictLabel != strings.ReplaceAll(x.Verdict, "_", " ") || r.VerdictText != x.VerdictText {
						t.Errorf("%s's verdict reads %q: %q (%s), the API's %q (%s)", x.Name, r.VerdictLabel, r.VerdictText, r.Verdict, x.VerdictText, x.Verdict)
					}
					if !slices.Equal(r.Warnings, x.Warnings) {
						t.Errorf("%s's warnings read %q, the API's %q", x.Name, r.Warnings, x.Warnings)
					}
					// The mark is where the API says, and names the next.
					next := "#" + strconv.Itoa(i+2)
					if i == len(want.Results)-1 {
						next = "the best not listed"
					}
					switch {
					case x.TiedWithNext && r.Mark != "≈ tied with "+next:
						t.Errorf("%s is tied with the next, the page marks %q (next column %q)", x.Name, r.Mark, r.NextText)
					case !x.TiedWithNext && r.Mark != "":
						t.Errorf("%s is told apart from the next, the page marks %q", x.Name, r.Mark)
					}
					// The bar spans the bounds on the common scale
					// (to a pixel), the tick at the estimate.
					px := func(v float64) float64 { return r.Track * (v - axis.From) / (axis.To - axis.From) }
					// (A bar is at least 2 px wide, to be seen.)
					right := max(px(x.Upper), px(x.Lower)+2)
					if math.Abs(r.BarLeft-px(x.Lower)) > 1.5 || math.Abs(r.BarRight-right) > 1.5 || math.Abs(r.Tick-px(x.Estimate)) > 1.5 {
						t.Errorf("%s's bar spans %.1f..%.1f px, tick %.1f, of %.1f; want %.1f..%.1f, tick %.1f",
							x.Name, r.BarLeft, r.BarRight, r.Tick, r.Track, px(x.Lower), right, px(x.Estimate))
					}
				}
				// Bars of neighbours the API ties overlap on screen; bars
				// it tells apart do not.
				for i := 0; i+1 < len(rows); i++ {
					overlap := rows[i].BarLeft <= rows[i+1].BarRight
					if overlap != want.Results[i].TiedWithNext && math.Abs(rows[i].BarLeft-rows[i+1].BarRight) > 1.5 {
						t.Errorf("bars of %s and %s overlap: %v, the API's tied_with_next %v", rows[i].Name, rows[i+1].Name, overlap, want.Results[i].TiedWithNext)
					}
				}
				if got := tb.text(t, "#rank-scanned"); got != strconv.Itoa(want.Scanned)+" candidates" {
					t.Errorf("scanned reads %q, the API scanned %d", got, want.Scanned)
				}
				if got := tb.text(t, "#rank-skipped"); got != "none" || want.Skipped != 0 {
					t.Errorf("skipped reads %q, the API skipped %d", got, want.Skipped)
				}
				if got := tb.text(t, "#rank-complete"); !strings.HasPrefix(got, "yes") || !want.Complete {
					t.Errorf("complete reads %q, the API's %v", got, want.Complete)
				}
				if want.Note != "" {
					if got := tb.text(t, "#rank-note"); got != want.Note {
						t.Errorf("the note reads %q, the API's %q", got, want.Note)
					}
				}
				for _, bad := range eval[[]string](t, tb, clippedJS) {
					t.Errorf("cut off: %s", bad)
				}
				tb.readable(t)
				eval[bool](t, tb, `(document.querySelector('.rank-results').scrollIntoView(), true)`)
				tb.screenshot(t, "console-rank-"+strings.ReplaceAll(c.name, " ", "-")+"-"+w.name)
				tb.noErrors(t, nil)
			})
		}
	}
}

func equalBools(a, b []bool) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// TestBrowserRankListAndRefusals: candidates named in a list (a series
// range among them, one name missing) are ranked with the skipped one
// counted and the answer marked incomplete, as the API says; theta
// sketches are ranked by their set intersection, as the page says; the
// API's refusals (a prefix with no candidate, a target of a kind without
// overlaps, a hand-written route it does not take) are shown as its
// problem detail, with the form kept as typed.
func TestBrowserRankListAndRefusals(t *testing.T) {
	b := browser(t)
	s := newSite(t, false)
	s.hllOf(t, "web:target", 0, 10_000)
	s.hllOf(t, "web:half", 5_000, 15_000)
	s.hllOf(t, "web:quarter", 7_500, 17_500)
	s.cmsOf(t, "web:counts", map[string]int{"a": 3})
	s.thetaOf(t, "th:target", 0, 8_000)
	s.thetaOf(t, "th:most", 2_000, 10_000)
	s.thetaOf(t, "th:some", 6_000, 14_000)
	// A series range as a candidate: the last three days of ids
	// [100·d, 100·d + 1000), as the console names it and as the API does.
	s.dailySeries(t, "visits", 3)
	today := time.Now().UTC()
	first, last := today.AddDate(0, 0, -2).Format(time.DateOnly), today.Format(time.DateOnly)
	rangeOp := map[string]any{"series": "visits", "from": first + "T00:00:00.000Z", "to": today.AddDate(0, 0, 1).Format(time.DateOnly) + "T00:00:00.000Z"}
	allow := func(m chromedp.ConsoleMessage) bool {
		return m.Source == "network" && (strings.Contains(m.Text, "400") || strings.Contains(m.Text, "404") || strings.Contains(m.Text, "409"))
	}
	for _, w := range clipWidths {
		t.Run(w.name, func(t *testing.T) {
			tb := newTab(t, b)
			tb.viewport(t, w.width, w.height)
			want := s.rank(t, map[string]any{"target": "web:target", "candidates": []any{"web:quarter", "web:gone", rangeOp, "web:half"}, "by": "intersection", "top": 5})
			if want.Skipped != 1 || want.Complete || len(want.Results) != 3 {
				t.Fatalf("fixture: skipped %d, complete %v, %d results", want.Skipped, want.Complete, len(want.Results))
			}
			route := url.Values{"target": {"web:target"}, "c": {"web:quarter", "web:gone", "~visits/" + first + "/" + last, "web:half"}, "by": {"intersection"}, "top": {"5"}}
			tb.open(t, s.url, "/rank?"+route.Encode())
			tb.wait(t, "#rank-table tbody tr")
			rows := eval[[]rankRow](t, tb, rankRowsJS)
			if len(rows) != len(want.Results) {
				t.Fatalf("%d rows, the API ranks %d", len(rows), len(want.Results))
			}
			for i, x := range want.Results {
				if r := rows[i]; r.Name != x.Name || r.Estimate != x.Estimate || r.Lower != x.Lower || r.Upper != x.Upper || r.Tied != strconv.FormatBool(x.TiedWithNext) {
					t.Errorf("row %d: %+v, the API's %+v", i, r, x)
				}
			}
			if got := tb.text(t, "#rank-skipped"); got != "1 named but missing" {
				t.Errorf("skipped reads %q", got)
			}
			if got := tb.text(t, "#rank-complete"); !strings.HasPrefix(got, "no") {
				t.Errorf("complete reads %q, the API's false", got)
			}
			warnings := eval[[]string](t, tb, `[...document.querySelectorAll('#rank-warnings li')].map(l => l.textContent)`)
			if strings.Join(warnings, "|") != strings.Join(want.Warnings, "|") {
				t.Errorf("warnings %q, the API's %q", warnings, want.Warnings)
			}
			// The list mode is shown as it was asked.
			if v := eval[string](t, tb, `document.getElementById('rank-mode').value + '|' + document.getElementById('rank-list').value`); v != "list|"+strings.Join(route["c"], "\n") {
				t.Errorf("the form after a list: %q", v)
			}
			for _, bad := range eval[[]string](t, tb, clippedJS) {
				t.Errorf("cut off: %s", bad)
			}
			tb.readable(t)
			tb.screenshot(t, "console-rank-list-"+w.name)

			// Theta sketches are ranked by their own set intersection,
			// and the page says so.
			want = s.rank(t, map[string]any{"target": "th:target", "candidates": map[string]any{"prefix": "th:"}, "by": "jaccard", "top": 5})
			tb.open(t, s.url, "/rank?"+url.Values{"target": {"th:target"}, "prefix": {"th:"}, "by": {"jaccard"}, "top": {"5"}}.Encode())
			tb.wait(t, "#rank-table tbody tr")
			rows = eval[[]rankRow](t, tb, rankRowsJS)
			if len(rows) != len(want.Results) || len(rows) != 2 {
				t.Fatalf("%d theta rows, the API ranks %d (want 2)", len(rows), len(want.Results))
			}
			for i, x := range want.Results {
				if r := rows[i]; r.Name != x.Name || r.Estimate != x.Estimate || r.Lower != x.Lower || r.Upper != x.Upper || r.EstText != fixed(x.Estimate, 4) || r.Verdict != x.Verdict || r.Tied != strconv.FormatBool(x.TiedWithNext) {
					t.Errorf("theta row %d: %+v, the API's %+v", i, r, x)
				}
			}
			if got := tb.text(t, "#rank-measure"); want.Method != "theta" || !strings.Contains(got, "theta set intersection") {
				t.Errorf("a theta rank (method %q) reads %q", want.Method, got)
			}
			for _, bad := range eval[[]string](t, tb, clippedJS) {
				t.Errorf("theta: cut off: %s", bad)
			}

			for _, c := range []struct {
				name   string
				route  url.Values
				body   map[string]any
				status int
			}{
				{"no candidate", url.Values{"target": {"web:target"}, "prefix": {"nobody:"}, "by": {"intersection"}, "top": {"10"}},
					map[string]any{"target": "web:target", "candidates": map[string]any{"prefix": "nobody:"}, "by": "intersection", "top": 10}, 404},
				{"a target without overlaps", url.Values{"target": {"web:counts"}, "prefix": {"web:"}, "by": {"jaccard"}, "top": {"10"}},
					map[string]any{"target": "web:counts", "candidates": map[string]any{"prefix": "web:"}, "by": "jaccard", "top": 10}, 409},
				// A route written by hand: what the API refuses, the
				// page does not mend.
				{"a containment without its direction", url.Values{"target": {"web:target"}, "prefix": {"web:"}, "by": {"containment"}, "top": {"10"}},
					map[string]any{"target": "web:target", "candidates": map[string]any{"prefix": "web:"}, "by": "containment", "top": 10}, 400},
				{"top past its limit", url.Values{"target": {"web:target"}, "prefix": {"web:"}, "by": {"intersection"}, "top": {"1001"}},
					map[string]any{"target": "web:target", "candidates": map[string]any{"prefix": "web:"}, "by": "intersection", "top": 1001}, 400},
			} {
				status, detail := s.problem(t, "/v1/rank", c.body)
				if status != c.status {
					t.Fatalf("%s: fixture answers %d, want %d", c.name, status, c.status)
				}
				tb.open(t, s.url, "/rank?"+c.route.Encode())
				tb.wait(t, "#rank-error")
				if got := tb.text(t, "#rank-error .problem-detail"); strings.TrimSuffix(got, ".") != strings.TrimSuffix(detail, ".") {
					t.Errorf("%s: the page says %q, the API %q", c.name, got, detail)
				}
				if got := tb.text(t, "#rank-error .status"); !strings.HasPrefix(got, strconv.Itoa(status)+" ") {
					t.Errorf("%s: the status reads %q, want %d", c.name, got, status)
				}
				if v := eval[string](t, tb, `document.getElementById('rank-target').value + '|' + document.getElementById('rank-prefix').value`); v != c.route.Get("target")+"|"+c.route.Get("prefix") {
					t.Errorf("%s: the form after the refusal: %q", c.name, v)
				}
				if n := eval[int](t, tb, `document.querySelectorAll('#rank-table').length`); n != 0 {
					t.Errorf("%s: a table is shown", c.name)
				}
				for _, bad := range eval[[]string](t, tb, clippedJS) {
					t.Errorf("%s: cut off: %s", c.name, bad)
				}
				tb.screenshot(t, "console-rank-refused-"+strings.ReplaceAll(c.name, " ", "-")+"-"+w.name)
			}
			tb.noErrors(t, allow)
		})
	}
}

// TestBrowserRankToken: on a server with tokens the view asks with the
// tab's read token; without one, the API's 401 is shown in its words and
// the page says to enter a token.
func TestBrowserRankToken(t *testing.T) {
	b := browser(t)
	s := newSite(t, true)
	s.hllOf(t, "team:target", 0, 4_000)
	s.hllOf(t, "team:half", 2_000, 6_000)
	route := "/rank?" + url.Values{"target": {"team:target"}, "prefix": {"team:"}, "by": {"intersection"}, "top": {"3"}}.Encode()
	tb := newTab(t, b)
	tb.open(t, s.url, route)
	tb.wait(t, "#rank-error")
	status, detail := s.problem(t, "/v1/rank", map[string]any{"target": "team:target", "candidates": map[string]any{"prefix": "team:"}, "by": "intersection", "top": 3})
	if status != http.StatusUnauthorized {
		t.Fatalf("without a token the API answers %d", status)
	}
	if got := tb.text(t, "#rank-error .problem-detail"); strings.TrimSuffix(got, ".") != strings.TrimSuffix(detail, ".") {
		t.Errorf("without a token the page says %q, the API %q", got, detail)
	}
	if got := tb.text(t, "#message"); !strings.Contains(got, "read token") {
		t.Errorf("the page's message reads %q, without asking for a token", got)
	}
	tb.do(t, "enter the token", chromedp.SendKeys(chromedp.ID("token"), readToken+kb.Enter))
	tb.wait(t, "#rank-table tbody tr")
	want := s.rank(t, map[string]any{"target": "team:target", "candidates": map[string]any{"prefix": "team:"}, "by": "intersection", "top": 3})
	rows := eval[[]rankRow](t, tb, rankRowsJS)
	if len(rows) != 1 || rows[0].Name != want.Results[0].Name || rows[0].Estimate != want.Results[0].Estimate {
		t.Errorf("with the read token: rows %+v, the API's %+v", rows, want.Results)
	}
	tb.noErrors(t, func(m chromedp.ConsoleMessage) bool { return m.Source == "network" && strings.Contains(m.Text, "401") })
}
