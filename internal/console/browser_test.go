package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The browser tests drive a real headless Chromium against the real
// server: Debian's chromium-headless-shell, or else its chromium package
// (SKETCHD_CHROMIUM names another binary). The headless shell is
// Chromium's own build for automation: the same Blink, layout, fonts
// and V8 as the browser, without the browser's interface around them;
// the package's tests take about a third of the CPU in it that they take
// in the full browser (docs/benchmarks.md). Without either they skip;
// SKETCHD_REQUIRE_BROWSER=1 (set by CI) makes that a failure.
// Screenshots go to SKETCHD_SCREENSHOT_DIR, or a temporary directory that
// the log names.

func chromium(t testing.TB) string {
	t.Helper()
	candidates := []string{os.Getenv("SKETCHD_CHROMIUM"), "/usr/bin/chromium-headless-shell", "chromium-headless-shell", "/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	if os.Getenv("SKETCHD_REQUIRE_BROWSER") == "1" {
		t.Fatal("SKETCHD_REQUIRE_BROWSER=1 but no Chromium was found (apt-get install chromium-headless-shell, or set SKETCHD_CHROMIUM)")
	}
	t.Skip("skipping the browser tests: no Chromium found (apt-get install chromium-headless-shell, or set SKETCHD_CHROMIUM)")
	return ""
}

// shared is the one headless Chromium the package's tests share: starting
// one takes about a second on a busy machine, and some twenty tests
// started their own. It starts when the first test asks for it and stops
// in TestMain once every test has run. Each test gets a browser context
// of its own in it (browser), as isolated as a fresh profile: its own
// storage, cookies, cache and download settings.
var shared struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	dir    string
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.cancel != nil {
		shared.cancel()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// browserOptions are the options of every Chromium the tests start, a
// profile in dir.
func browserOptions(path, dir string, extra ...chromedp.ExecAllocatorOption) []chromedp.ExecAllocatorOption {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.WindowSize(1280, 800),
		chromedp.UserDataDir(dir),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("lang", "en-US"),
	)
	opts = append(opts, extra...)
	if os.Geteuid() == 0 {
		// Chromium refuses to run as root with its sandbox.
		opts = append(opts, chromedp.NoSandbox)
	}
	return opts
}

// startBrowser starts a headless Chromium and opens its first tab,
// giving up after a minute.
func startBrowser(opts []chromedp.ExecAllocatorOption) (context.Context, context.CancelFunc, error) {
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	stop := func() { cancel(); cancelAlloc() }
	watchdog := time.AfterFunc(time.Minute, cancel)
	defer watchdog.Stop()
	if err := chromedp.Do(ctx); err != nil {
		stop()
		return nil, nil, err
	}
	return ctx, stop, nil
}

// sharedBrowser is the shared Chromium (the binary at path), started
// on first use.
func sharedBrowser(t testing.TB, path string) context.Context {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "sketchd-console-chromium-")
		if shared.err == nil {
			shared.ctx, shared.cancel, shared.err = startBrowser(browserOptions(path, shared.dir))
		}
	})
	if shared.err != nil {
		t.Fatalf("start Chromium: %v", shared.err)
	}
	return shared.ctx
}

// browser gives the test a browser of its own: a new browser context in
// the shared Chromium, disposed of with its tabs when the test ends. A
// test that needs command-line flags (extra) gets a Chromium of its own.
func browser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := chromium(t)
	if len(extra) > 0 {
		ctx, stop, err := startBrowser(browserOptions(path, t.TempDir(), extra...))
		if err != nil {
			t.Fatalf("start Chromium: %v", err)
		}
		t.Cleanup(stop)
		return ctx
	}
	ctx, cancel := chromedp.NewContext(sharedBrowser(t, path), chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a browser context: %v", err)
	}
	return ctx
}

// tab is one browser tab and everything its pages wrote to the console.
type tab struct {
	ctx  context.Context
	mu   sync.Mutex
	msgs []chromedp.ConsoleMessage
}

func newTab(t *testing.T, b context.Context) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	done := make(chan struct{})
	t.Cleanup(func() { cancelTimeout(); cancel(); <-done })
	if err := chromedp.Do(ctx); err != nil {
		close(done)
		t.Fatalf("open a tab: %v", err)
	}
	// The window's viewport: 1280×800, the laptop screen the page is
	// designed for (the phone test overrides it).
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		close(done)
		t.Fatalf("set the viewport: %v", err)
	}
	tb := &tab{ctx: ctx}
	messages := chromedp.Console(ctx)
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			tb.mu.Lock()
			tb.msgs = append(tb.msgs, m)
			tb.mu.Unlock()
		}
	}()
	return tb
}

func (tb *tab) do(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(tb.ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](t *testing.T, tb *tab, expr string) T {
	t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", clip(expr), err)
	}
	return v
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}

// open loads the console at the given hash route. A fresh query string
// each time makes it a real page load, not just a hash change.
func (tb *tab) open(t *testing.T, base, route string) {
	t.Helper()
	tb.do(t, "open "+route, chromedp.Navigate(fmt.Sprintf("%s/?load=%d#%s", base, time.Now().UnixNano(), route)))
}

// wait waits up to 30s for an element to be visible; on failure it says
// what the page shows instead and what it wrote to the console.
func (tb *tab) wait(t *testing.T, css string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(css))); err != nil {
		page, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.body.innerText`))
		tb.mu.Lock()
		defer tb.mu.Unlock()
		t.Fatalf("wait for %s: %v\npage text:\n%s\nconsole: %v", css, err, clip(page), tb.msgs)
	}
}

func (tb *tab) text(t *testing.T, css string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css)))
	if err != nil {
		t.Fatalf("text of %s: %v", css, err)
	}
	return strings.TrimSpace(s)
}

// noErrors fails the test for every console error, exception or failed
// load, except those allow accepts.
func (tb *tab) noErrors(t *testing.T, allow func(chromedp.ConsoleMessage) bool) {
	t.Helper()
	// A round trip to the page lets messages already sent arrive.
	eval[int](t, tb, "1")
	time.Sleep(100 * time.Millisecond)
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, m := range tb.msgs {
		switch {
		case m.Type != chromedp.ConsoleError && m.Type != chromedp.ConsoleException && m.Type != chromedp.ConsoleWarning:
		case allow != nil && allow(m):
		default:
			t.Errorf("console %s (%s) at %s: %s", m.Type, m.Source, m.URL, m.Text)
		}
	}
}

// contrastJS lists visible HTML text whose colour has a contrast ratio
// under 4.5:1 (WCAG AA) against the nearest opaque background behind it,
// or that reaches past the window's right edge (outside a scrolling
// table or code block).
const contrastJS = `(() => {
	const lum = (c) => { const m = c.match(/[\d.]+/g).map(Number);
		const [r, g, b] = m.slice(0, 3).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
		return { l: 0.2126 * r + 0.7152 * g + 0.0722 * b, a: m.length > 3 ? m[3] : 1 }; };
	const bg = (e) => { for (; e; e = e.parentElement) { const c = getComputedStyle(e).backgroundColor; if (lum(c).a >= 0.99) return c; } return 'rgb(255, 255, 255)'; };
	const bad = [];
	for (const e of document.querySelectorAll('body *')) {
		if (e.closest('svg') || !e.checkVisibility()) continue;
		if (![...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
		const fg = lum(getComputedStyle(e).color).l, b = lum(bg(e)).l;
		const ratio = (Math.max(fg, b) + 0.05) / (Math.min(fg, b) + 0.05);
		if (ratio < 4.5) bad.push(e.tagName + ' "' + e.textContent.trim().slice(0, 40) + '" ' + ratio.toFixed(2));
		const r = e.getBoundingClientRect();
		if (r.right > document.documentElement.clientWidth + 1 && !e.closest('.table-wrap, pre')) {
			bad.push(e.tagName + ' "' + e.textContent.trim().slice(0, 40) + '" reaches ' + Math.round(r.right) + ' px, past the window');
		}
	}
	return bad; })()`

// readable fails the test for text with too little contrast or out of
// the window.
func (tb *tab) readable(t *testing.T) {
	t.Helper()
	for _, b := range eval[[]string](t, tb, contrastJS) {
		t.Errorf("low contrast: %s", b)
	}
}

// screenshot saves the viewport as name.png.
func (tb *tab) screenshot(t *testing.T, name string) {
	t.Helper()
	png, err := chromedp.Run(tb.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv("SKETCHD_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", path)
}

// seed fills a site with the sketches the browser tests look at: two
// audiences with a known overlap of 10,000, one disjoint from both, a
// third overlapping both, and a Count-Min sketch.
func seed(t *testing.T, s *site) {
	t.Helper()
	s.hllOf(t, "newsletter:oct", 1, 20001)
	s.hllOf(t, "checkout:oct", 10001, 40001)
	s.hllOf(t, "churned:sep", 500001, 520001)
	s.hllOf(t, "support:oct", 15001, 27001)
	s.cmsOf(t, "pageviews", map[string]int{"alice": 120, "bob": 75, "carol": 40, "dave": 12, "erin": 3})
	s.dailySeries(t, "signups", 30)
}

func TestBrowser(t *testing.T) {
	b := browser(t)
	s := newSite(t, false)
	seed(t, s)

	t.Run("list shows the API's names and estimates", func(t *testing.T) {
		tb := newTab(t, b)
		tb.open(t, s.url, "/")
		tb.wait(t, "table.sketches tbody tr")
		type row struct{ Name, Kind, Estimate, Representation string }
		rows := eval[[]row](t, tb, `[...document.querySelectorAll('table.sketches tbody tr')].map(tr => ({
			Name: tr.dataset.name, Kind: tr.children[2].textContent, Estimate: tr.querySelector('.estimate').textContent,
			Representation: tr.children[4].textContent}))`)
		want := s.list(t, "")
		if len(rows) != len(want) || len(want) != 5 {
			t.Fatalf("the list shows %d rows, the API lists %d (want 5): %+v", len(rows), len(want), rows)
		}
		for i, w := range want {
			r := rows[i]
			est := count(float64(w.Total)) + " total"
			rep := "—"
			if w.Type == "hll" {
				est = count(w.Cardinality) + " ± " + count(w.Cardinality*w.StdError) + " (1σ)"
				rep = w.Representation
			}
			if r.Name != w.Name || r.Estimate != est || r.Representation != rep {
				t.Errorf("row %d = %+v, want name %q, estimate %q, representation %q", i, r, w.Name, est, rep)
			}
		}
		tb.readable(t)
		tb.screenshot(t, "console-list")

		// Pick two sketches and compare them, by keyboard only.
		tb.do(t, "select by keyboard",
			chromedp.SendKeys(chromedp.CSS(`tr[data-name="newsletter:oct"] input[type=checkbox]`), " "),
			chromedp.SendKeys(chromedp.CSS(`tr[data-name="checkout:oct"] input[type=checkbox]`), " "),
			chromedp.SendKeys(chromedp.ID("compare"), kb.Enter))
		tb.wait(t, "#ov-estimate")
		if got := eval[string](t, tb, `location.hash`); got != "#/overlap?s=checkout%3Aoct&s=newsletter%3Aoct" {
			t.Errorf("compare went to %q", got)
		}
		tb.open(t, s.url, "/")
		tb.wait(t, "table.sketches tbody tr")

		// Prefix search, by keyboard only.
		tb.do(t, "search", chromedp.SendKeys(chromedp.ID("prefix"), "news"+kb.Enter))
		tb.do(t, "search result", chromedp.Poll[chromedp.Void](`document.querySelectorAll('table.sketches tbody tr').length === 1 && document.querySelector('table.sketches tbody tr').dataset.name === 'newsletter:oct'`, chromedp.WithPollingTimeout(20*time.Second)))
		if got := eval[string](t, tb, `location.hash`); got != "#/?prefix=news" {
			t.Errorf("after the search the route is %q", got)
		}
		tb.noErrors(t, nil)
	})

	t.Run("overlap of two shows the API's estimate and bounds", func(t *testing.T) {
		tb := newTab(t, b)
		x := s.intersect(t, "newsletter:oct", "checkout:oct")
		if x.Spurious || math.Abs(x.Estimate-10000) > 1000 {
			t.Fatalf("fixture: intersection %+v, want about 10,000 and not spurious", x)
		}
		tb.open(t, s.url, "/overlap?s=newsletter:oct&s=checkout:oct")
		tb.wait(t, "#ov-estimate")
		for id, v := range map[string]float64{"#ov-estimate": x.Estimate, "#ov-lower": x.Lower, "#ov-upper": x.Upper} {
			if got := tb.text(t, id); got != count(v) {
				t.Errorf("%s shows %q, want %q (API %v)", id, got, count(v), v)
			}
		}
		if got := tb.text(t, "#ov-error"); got != "± "+count(x.Error) {
			t.Errorf("#ov-error shows %q, want ± %s", got, count(x.Error))
		}
		tb.sameVerdict(t, x)
		tb.sameRegions(t, s, "newsletter:oct", "checkout:oct")
		tb.samePanels(t)
		type shape struct {
			Circles int
			Lenses  int
			LensD   string
			R       []float64
		}
		got := eval[shape](t, tb, `({Circles: document.querySelectorAll('#venn circle.set').length,
			Lenses: document.querySelectorAll('#venn path.lens-estimate').length,
			LensD: (document.querySelector('#venn path.lens-estimate') || {getAttribute: () => ''}).getAttribute('d'),
			R: [...document.querySelectorAll('#venn circle.set')].map(c => +c.getAttribute('r'))})`)
		if got.Circles != 2 || got.Lenses != 1 || !strings.Contains(got.LensD, " A ") {
			t.Fatalf("the Venn has %d circles and %d lenses (d=%q), want 2 and 1", got.Circles, got.Lenses, got.LensD)
		}
		// Areas are proportional to the estimates.
		a, bb := describe(t, s, "newsletter:oct"), describe(t, s, "checkout:oct")
		if ratio, want := got.R[0]*got.R[0]/(got.R[1]*got.R[1]), a.Cardinality/bb.Cardinality; math.Abs(ratio/want-1) > 1e-6 {
			t.Errorf("circle area ratio %v, estimate ratio %v", ratio, want)
		}
		tb.readable(t)
		tb.screenshot(t, "console-overlap")
		tb.noErrors(t, nil)
	})

	t.Run("a disjoint pair is spurious", func(t *testing.T) {
		tb := newTab(t, b)
		x := s.intersect(t, "newsletter:oct", "churned:sep")
		if !x.Spurious {
			t.Fatalf("fixture: %+v, want spurious", x)
		}
		tb.open(t, s.url, "/overlap?s=newsletter:oct&s=churned:sep")
		tb.wait(t, "#verdict")
		tb.sameVerdict(t, x)
		if v := tb.text(t, "#verdict p"); !strings.HasPrefix(v, "Spurious.") {
			t.Errorf("verdict %q, want it to say spurious", v)
		}
		n := eval[int](t, tb, `document.querySelectorAll('#venn .lens-estimate, #venn .lens-upper').length`)
		if n != 0 {
			t.Errorf("a spurious overlap is drawn as a confident lens (%d shapes)", n)
		}
		if note := eval[string](t, tb, `[...document.querySelectorAll('#venn text')].map(t => t.textContent).join('|')`); !strings.Contains(note, "spurious") {
			t.Errorf("the drawing does not say spurious: %q", note)
		}
		tb.readable(t)
		tb.screenshot(t, "console-spurious")
		tb.noErrors(t, nil)
	})

	t.Run("three sets report their layout error", func(t *testing.T) {
		tb := newTab(t, b)
		x := s.intersect(t, "newsletter:oct", "checkout:oct", "support:oct")
		tb.open(t, s.url, "/overlap?s=newsletter:oct&s=checkout:oct&s=support:oct")
		tb.wait(t, "#layout-error")
		if got := tb.text(t, "#ov-estimate"); got != count(x.Estimate) {
			t.Errorf("#ov-estimate %q, want %q", got, count(x.Estimate))
		}
		tb.sameVerdict(t, x)
		// Each pair's verdict is the API's for that pair.
		pairs := eval[[]string](t, tb, `[...document.querySelectorAll('table.pairs td[data-verdict]')].map(td => td.dataset.verdict)`)
		names := []string{"newsletter:oct", "checkout:oct", "support:oct"}
		for k, ij := range [][2]int{{0, 1}, {0, 2}, {1, 2}} {
			want := s.intersect(t, names[ij[0]], names[ij[1]]).Verdict
			if k >= len(pairs) || pairs[k] != want {
				t.Errorf("pair %s ∩ %s: the table shows verdicts %v, the API says %q", names[ij[0]], names[ij[1]], pairs, want)
			}
		}
		tb.sameRegions(t, s, names...)
		circles := eval[int](t, tb, `document.querySelectorAll('#venn circle.set').length`)
		if circles != 3 {
			t.Errorf("%d circles, want 3", circles)
		}
		var e float64
		if _, err := fmt.Sscan(eval[string](t, tb, `document.getElementById('layout-error').dataset.error`), &e); err != nil || e < 0 || e > 0.05 {
			t.Errorf("layout error %v (%v): these three sets can be drawn within 5%%", e, err)
		}
		if txt := tb.text(t, "#layout-error"); !strings.Contains(txt, "%") {
			t.Errorf("layout error text %q", txt)
		}
		tb.readable(t)
		tb.screenshot(t, "console-three")
		tb.noErrors(t, nil)
	})

	t.Run("hll detail", func(t *testing.T) {
		tb := newTab(t, b)
		d := describe(t, s, "newsletter:oct")
		tb.open(t, s.url, "/sketch/newsletter:oct")
		tb.wait(t, "#psql")
		if got := tb.text(t, "#estimate"); got != count(d.Cardinality)+" distinct ids" {
			t.Errorf("#estimate %q, want %s distinct ids", got, count(d.Cardinality))
		}
		line := tb.text(t, "#psql")
		if !strings.Contains(line, s.url+"/v1/sketches/newsletter:oct/raw?format=hex") || !strings.Contains(line, "::hll") {
			t.Errorf("psql line %q", line)
		}
		// The download button saves the stored bytes.
		dir := t.TempDir()
		// In the test's own browser context: the shared browser's
		// default context is no test's.
		if _, err := chromedp.CallBrowser(tb.ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
			Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir,
			BrowserContextID: chromedp.FromContext(tb.ctx).BrowserContextID,
		}); err != nil {
			t.Fatalf("allow downloads: %v", err)
		}
		tb.do(t, "download", chromedp.SendKeys(chromedp.ID("download"), kb.Enter))
		want := s.raw(t, "newsletter:oct")
		var got []byte
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if got, _ = os.ReadFile(filepath.Join(dir, "newsletter_oct.hll")); len(got) == len(want) {
				break
			}
		}
		if !bytes.Equal(got, want) {
			t.Errorf("the download has %d bytes, the API's raw sketch %d (or they differ)", len(got), len(want))
		}
		tb.readable(t)
		tb.noErrors(t, nil)
		t.Run("the psql line loads it", func(t *testing.T) { runPsqlLine(t, line, d.Cardinality) })
	})

	t.Run("cms detail and frequency", func(t *testing.T) {
		tb := newTab(t, b)
		tb.open(t, s.url, "/sketch/pageviews")
		tb.wait(t, "#top li")
		ids := eval[[]string](t, tb, `[...document.querySelectorAll('#top .bar-id')].map(e => e.textContent)`)
		if strings.Join(ids, ",") != "alice,bob,carol,dave,erin" {
			t.Errorf("top-k bars %v, want alice..erin heaviest first", ids)
		}
		tb.do(t, "look up", chromedp.SendKeys(chromedp.ID("freq-id"), "bob"+kb.Enter))
		tb.wait(t, "#freq-estimate")
		if got := tb.text(t, "#freq-estimate"); got != "75" {
			t.Errorf("frequency of bob shows %q, want 75", got)
		}
		if got := tb.text(t, "#freq-bound"); !strings.Contains(got, "ε·N = 0.25") {
			t.Errorf("frequency bound %q, want ε·N = 0.25 (ε 0.001 × N 250, rounded to width)", got)
		}
		tb.noErrors(t, nil)
	})

	t.Run("series chart shows the API's daily and rolling counts", func(t *testing.T) {
		tb := newTab(t, b)
		tb.open(t, s.url, "/")
		tb.wait(t, "table.series tbody tr")
		if n := eval[int](t, tb, `document.querySelectorAll('table.sketches tbody tr').length`); n != 5 {
			t.Errorf("%d sketch rows beside the series, want 5", n)
		}
		if got := tb.text(t, "table.series tbody tr th"); got != "signups" {
			t.Errorf("series list shows %q, want signups", got)
		}
		tb.open(t, s.url, "/series/signups")
		tb.wait(t, "#series-chart")
		// The page ends the range at the newest bucket's day.
		var desc struct {
			Levels []struct {
				Newest time.Time `json:"newest"`
			} `json:"levels"`
		}
		s.call(t, "GET", "/v1/series/signups", "", nil, &desc)
		today := desc.Levels[0].Newest.UTC().Truncate(24 * time.Hour)
		from, to := today.AddDate(0, 0, -29), today.AddDate(0, 0, 1)
		type line struct {
			Window string
			Points int
		}
		lines := eval[[]line](t, tb, `[...document.querySelectorAll('#series-chart polyline.line')].map(l => ({Window: l.dataset.window, Points: l.getAttribute('points').trim().split(' ').length}))`)
		if len(lines) != 3 {
			t.Fatalf("the chart has %d lines, want 3: %+v", len(lines), lines)
		}
		banded := 0
		for _, l := range lines {
			if l.Points != 30 {
				t.Errorf("line %s has %d points, want 30 (the last 30 days)", l.Window, l.Points)
			}
			api := s.timeseries(t, "signups", from, to, l.Window)
			if len(api) != 30 {
				t.Fatalf("the API gives %d points for %s, want 30", len(api), l.Window)
			}
			last := api[len(api)-1]
			// A day's 1,000 ids stay an exact (EXPLICIT) sketch: no error.
			want := count(last.Cardinality)
			if e := last.Cardinality * last.StdError; e > 0 {
				want += " ± " + count(e)
			}
			if got := tb.text(t, "#last-"+l.Window); got != want {
				t.Errorf("last point of %s shows %q, the API says %q", l.Window, got, want)
			}
			for _, p := range api {
				if p.StdError > 0 {
					banded++
					break
				}
			}
		}
		if banded < 2 {
			t.Errorf("only %d lines carry an error; the 7- and 30-day unions should", banded)
		}
		if n := eval[int](t, tb, `document.querySelectorAll('#series-chart polygon.band').length`); n != banded {
			t.Errorf("%d error bands, want %d (one per line with an error)", n, banded)
		}
		tb.readable(t)
		tb.screenshot(t, "console-series")

		// The range picker: the last seven days.
		tb.do(t, "pick a range",
			chromedp.SetValue(chromedp.ID("range-from"), today.AddDate(0, 0, -6).Format("2006-01-02")),
			chromedp.Click(chromedp.CSS("#range button")))
		tb.do(t, "narrower chart", chromedp.Poll[chromedp.Void](`(() => { const l = document.querySelector('#series-chart polyline.line'); return l && l.getAttribute('points').trim().split(' ').length === 7; })()`, chromedp.WithPollingTimeout(20*time.Second)))
		tb.noErrors(t, nil)
	})

	t.Run("overlap of two series ranges", func(t *testing.T) {
		var desc struct {
			Levels []struct {
				Newest time.Time `json:"newest"`
			} `json:"levels"`
		}
		s.call(t, "GET", "/v1/series/signups", "", nil, &desc)
		last := desc.Levels[0].Newest.UTC().Truncate(24 * time.Hour)
		day := func(d int) string { return last.AddDate(0, 0, d).Format("2006-01-02") }
		// This week's ids are [0, 1600), last week's [700, 2300): 900 in both.
		ops := []map[string]string{
			{"series": "signups", "from": last.AddDate(0, 0, -6).Format(time.RFC3339), "to": last.AddDate(0, 0, 1).Format(time.RFC3339)},
			{"series": "signups", "from": last.AddDate(0, 0, -13).Format(time.RFC3339), "to": last.AddDate(0, 0, -6).Format(time.RFC3339)},
		}
		body, _ := json.Marshal(map[string]any{"sketches": ops})
		var x intersection
		s.call(t, "POST", "/v1/intersection", "application/json", body, &x)
		if x.Spurious || math.Abs(x.Estimate-900) > 150 {
			t.Fatalf("fixture: intersection of the two weeks %+v, want about 900", x)
		}
		tb := newTab(t, b)
		tb.open(t, s.url, "/overlap?s=~signups/"+day(-6)+"/"+day(0)+"&s=~signups/"+day(-13)+"/"+day(-7))
		tb.wait(t, "#ov-estimate")
		for id, v := range map[string]float64{"#ov-estimate": x.Estimate, "#ov-lower": x.Lower, "#ov-upper": x.Upper} {
			if got := tb.text(t, id); got != count(v) {
				t.Errorf("%s shows %q, want %q (API %v)", id, got, count(v), v)
			}
		}
		labels := eval[string](t, tb, `[...document.querySelectorAll('#venn text.label')].map(t => t.textContent).join('|')`)
		if !strings.Contains(labels, "signups "+day(-6)+"–"+day(0)) || !strings.Contains(labels, "signups "+day(-13)+"–"+day(-7)) {
			t.Errorf("labels %q do not name the two ranges", labels)
		}
		if n := eval[int](t, tb, `document.querySelectorAll('#venn circle.set').length`); n != 2 {
			t.Errorf("%d circles, want 2", n)
		}
		if kind := eval[string](t, tb, `document.getElementById('kind-a').value + ' ' + document.getElementById('from-a').value`); kind != "series "+day(-6) {
			t.Errorf("the form shows set A as %q", kind)
		}
		tb.samePanels(t)
		tb.readable(t)
		tb.screenshot(t, "console-series-overlap")
		tb.noErrors(t, nil)
	})

	t.Run("count-min series: totals and heaviest ids", func(t *testing.T) {
		s.cmsSeries(t, "clicks", map[string]int{"home": 50, "pricing": 20, "docs": 7})
		tb := newTab(t, b)
		tb.open(t, s.url, "/series/clicks")
		tb.wait(t, "#top li")
		ids := eval[[]string](t, tb, `[...document.querySelectorAll('#top .bar-id')].map(e => e.textContent)`)
		if strings.Join(ids, ",") != "home,pricing,docs" {
			t.Errorf("series top-k bars %v, want home, pricing, docs", ids)
		}
		if got := tb.text(t, "#last-P1D"); got != "77" {
			t.Errorf("last day's total shows %q, want 77", got)
		}
		if n := eval[int](t, tb, `document.querySelectorAll('#series-chart polygon.band').length`); n != 0 {
			t.Errorf("%d error bands on exact totals", n)
		}
		tb.readable(t)
		tb.noErrors(t, nil)
	})

	t.Run("a problem is shown as a message", func(t *testing.T) {
		tb := newTab(t, b)
		tb.open(t, s.url, "/sketch/nope")
		tb.wait(t, "#message")
		if msg := tb.text(t, "#message"); !strings.HasPrefix(msg, "404 Not Found") || !strings.Contains(msg, "nope") {
			t.Errorf("message %q, want the 404 problem naming the sketch", msg)
		}
		tb.noErrors(t, func(m chromedp.ConsoleMessage) bool {
			return m.Source == "network" && strings.Contains(m.Text, "404")
		})
	})

	t.Run("phone width", func(t *testing.T) {
		tb := newTab(t, b)
		tb.do(t, "phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
		for _, r := range []struct{ route, wait, shot string }{
			{"/", "table.sketches tbody tr", "console-phone-list"},
			{"/overlap?s=newsletter:oct&s=checkout:oct", "#ov-estimate", "console-phone-overlap"},
		} {
			tb.open(t, s.url, r.route)
			tb.wait(t, r.wait)
			if over := eval[int](t, tb, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
				t.Errorf("%s is %d px wider than a phone screen", r.route, over)
			}
			tb.screenshot(t, r.shot)
		}
		tb.noErrors(t, nil)
	})
}

// sameVerdict fails the test unless the overlap page shows the API's
// verdict x as the API words it, and the API's warnings.
func (tb *tab) sameVerdict(t *testing.T, x intersection) {
	t.Helper()
	if x.Verdict == "" || x.VerdictText == "" {
		t.Fatalf("the API gives no verdict: %+v", x)
	}
	type shown struct {
		Verdict, Text string
		Warnings      []string
	}
	got := eval[shown](t, tb, `(() => { const v = document.getElementById('verdict'); return {
		Verdict: v.dataset.verdict, Text: v.querySelector('p').textContent,
		Warnings: [...v.querySelectorAll('.warnings li')].map(li => li.textContent)}; })()`)
	if got.Verdict != x.Verdict || got.Text != x.VerdictText || strings.Join(got.Warnings, "\n") != strings.Join(x.Warnings, "\n") {
		t.Errorf("the page shows verdict %q %q with warnings %q; the API says %q %q with %q", got.Verdict, got.Text, got.Warnings, x.Verdict, x.VerdictText, x.Warnings)
	}
}

// sameRegions fails the test unless the overlap page's regions table
// shows, row for row, the API's regions of the overlap of names: the
// count with its error, the bounds and the verdict.
func (tb *tab) sameRegions(t *testing.T, s *site, names ...string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"sketches": names})
	var o struct {
		Regions []struct {
			Operands                      []string
			Estimate, Error, Lower, Upper float64
			Verdict                       string
		}
	}
	s.call(t, "POST", "/v1/overlap", "application/json", body, &o)
	if want := 1<<len(names) - 1; len(o.Regions) != want {
		t.Fatalf("the API gives %d regions for %d sets, want %d", len(o.Regions), len(names), want)
	}
	type row struct{ Operands, Label, Estimate, Bounds, Verdict string }
	got := eval[[]row](t, tb, `[...document.querySelectorAll('#regions tbody tr')].map(tr => ({Operands: tr.dataset.operands,
		Label: tr.querySelector('th').textContent, Estimate: tr.querySelector('.region-estimate').textContent,
		Bounds: tr.querySelector('.region-bounds').textContent, Verdict: tr.querySelector('.region-verdict').dataset.verdict}))`)
	if len(got) != len(o.Regions) {
		t.Fatalf("the page shows %d regions, the API %d", len(got), len(o.Regions))
	}
	for i, r := range o.Regions {
		want := row{Operands: strings.Join(r.Operands, "|"), Estimate: count(r.Estimate) + " ± " + count(r.Error),
			Bounds: count(r.Lower) + " – " + count(r.Upper), Verdict: r.Verdict}
		g := got[i]
		g.Label = ""
		if g != want {
			t.Errorf("region %d shows %+v, the API says %+v", i, got[i], want)
		}
	}
	if got[0].Label != "only "+names[0] {
		t.Errorf("the first region is labelled %q, want %q", got[0].Label, "only "+names[0])
	}
}

// samePanels fails the test unless an overlap page of two sets gives one
// answer in both its panels: the users in both, with their error and
// bounds, beside the drawing and in the regions table, and likewise the
// users only in each, and the regions table names the estimator of the
// numbers beside the drawing. (An outside audit found 11,637 ± 185 by
// maximum likelihood beside the drawing and 11,197 ± 400 by
// inclusion–exclusion in the table.)
func (tb *tab) samePanels(t *testing.T) {
	t.Helper()
	tb.wait(t, "#regions tbody tr")
	type row struct{ Estimate, Bounds string }
	type panels struct {
		Both, Error, Lower, Upper, ANotB, BNotA, Method, RegionsMethod string
		Rows                                                           []row
	}
	got := eval[panels](t, tb, `({Both: document.getElementById('ov-estimate').textContent, Error: document.getElementById('ov-error').textContent,
		Lower: document.getElementById('ov-lower').textContent, Upper: document.getElementById('ov-upper').textContent,
		ANotB: document.getElementById('ov-a-not-b').textContent, BNotA: document.getElementById('ov-b-not-a').textContent,
		Method: [...document.querySelectorAll('.numbers dt')].find(dt => dt.textContent === 'Method').nextElementSibling.textContent,
		RegionsMethod: document.getElementById('regions-method').textContent,
		Rows: [...document.querySelectorAll('#regions tbody tr')].map(tr => ({Estimate: tr.querySelector('.region-estimate').textContent,
			Bounds: tr.querySelector('.region-bounds').textContent}))})`)
	if len(got.Rows) != 3 {
		t.Fatalf("the regions table has %d rows, want 3", len(got.Rows))
	}
	// Regions: only A, only B, both.
	if both := got.Both + " " + got.Error; got.Rows[2].Estimate != both || got.Rows[2].Bounds != got.Lower+" – "+got.Upper {
		t.Errorf("in both: %q with bounds %q in the table, %q with bounds %s to %s beside the drawing", got.Rows[2].Estimate, got.Rows[2].Bounds, both, got.Lower, got.Upper)
	}
	for i, side := range []string{got.ANotB, got.BNotA} {
		r := got.Rows[i]
		if want := r.Estimate + " (" + strings.ReplaceAll(r.Bounds, " – ", "–") + ")"; side != want {
			t.Errorf("only in set %d: %q beside the drawing, %q in the table", i+1, side, want)
		}
	}
	method, _, _ := strings.Cut(got.Method, ",")
	if !strings.Contains(got.RegionsMethod, "("+method+")") {
		t.Errorf("the regions table says %q; the numbers beside the drawing are by %q", got.RegionsMethod, method)
	}
}

// TestBrowserWideThreeWay reproduces a reported page: a 3-way overlap of
// about 31,000 ± 4,900 (bounds about 2.8× apart) was shown as "Reliable.
// The overlap is large enough…". The page must show the API's verdict,
// which the width of the bounds decides. Measured on replicates, sets
// sharing 31,000 are now known well enough to be reliable; sharing 8,000
// of 137,000 their bounds are about as wide as the estimate.
func TestBrowserWideThreeWay(t *testing.T) {
	b := browser(t)
	s := newSite(t, false)
	for i, name := range []string{"web", "ios", "android"} {
		s.hllOf(t, name, 0, 8_000)
		lo := (i + 1) * 1_000_000
		s.addRange(t, name, lo, lo+129_000)
	}
	x := s.intersect(t, "web", "ios", "android")
	if x.Spurious || x.Lower > 8_000 || x.Upper < 8_000 || (x.Upper-x.Lower)/x.Estimate < 0.8 {
		t.Fatalf("fixture: %+v, want bounds about as wide as the estimate around 8,000", x)
	}
	if x.Verdict != "not_reliable" {
		t.Fatalf("the API's verdict is %q, want not_reliable", x.Verdict)
	}
	tb := newTab(t, b)
	tb.open(t, s.url, "/overlap?s=web&s=ios&s=android")
	tb.wait(t, "#verdict")
	tb.sameVerdict(t, x)
	if v := tb.text(t, "#verdict p"); !strings.HasPrefix(v, "Not reliable.") {
		t.Errorf("verdict %q, want it to start with Not reliable.", v)
	}
	tb.readable(t)
	tb.screenshot(t, "console-three-wide")
	tb.noErrors(t, nil)
}

// TestBrowserTheta: theta sketches are listed with their bounds, shown,
// and drawn in the overlap view with the API's numbers.
func TestBrowserTheta(t *testing.T) {
	b := browser(t)
	s := newSite(t, false)
	s.thetaOf(t, "reach:a", 1, 20001)
	s.thetaOf(t, "reach:b", 10001, 40001)
	tb := newTab(t, b)
	tb.open(t, s.url, "/")
	tb.wait(t, "table.sketches tbody tr")
	type row struct{ Name, Kind, Estimate string }
	rows := eval[[]row](t, tb, `[...document.querySelectorAll('table.sketches tbody tr')].map(tr => ({
		Name: tr.dataset.name, Kind: tr.children[2].textContent, Estimate: tr.querySelector('.estimate').textContent}))`)
	want := s.list(t, "")
	if len(rows) != 2 || len(want) != 2 {
		t.Fatalf("rows %+v, API %+v", rows, want)
	}
	for i, w := range want {
		// The bounds are two standard deviations each side.
		est := count(w.Cardinality) + " ± " + count((w.Upper-w.Lower)/4) + " (1σ)"
		if rows[i].Name != w.Name || rows[i].Kind != "Theta" || rows[i].Estimate != est {
			t.Errorf("row %+v, want %s Theta %q", rows[i], w.Name, est)
		}
	}

	x := s.intersect(t, "reach:a", "reach:b")
	if x.Spurious || math.Abs(x.Estimate-10000) > 1000 {
		t.Fatalf("fixture: theta intersection %+v, want about 10,000", x)
	}
	tb.open(t, s.url, "/overlap?s=reach:a&s=reach:b")
	tb.wait(t, "#ov-estimate")
	for id, v := range map[string]float64{"#ov-estimate": x.Estimate, "#ov-lower": x.Lower, "#ov-upper": x.Upper} {
		if got := tb.text(t, id); got != count(v) {
			t.Errorf("%s shows %q, want %q (API %v)", id, got, count(v), v)
		}
	}
	tb.sameVerdict(t, x)
	if n := eval[int](t, tb, `document.querySelectorAll('#venn circle.set').length + 10 * document.querySelectorAll('#venn path.lens-estimate').length`); n != 12 {
		t.Errorf("the Venn has %d circles + 10×lenses, want 2 circles and 1 lens", n)
	}
	if j := x.Jaccard; j == nil {
		t.Errorf("the API gives no Jaccard for two theta sketches: %+v", x)
	} else {
		want := fmt.Sprintf("%.3f", j.Estimate)
		if j.Error != nil {
			want += fmt.Sprintf(" ± %.3f", *j.Error)
		}
		if j.Lower != nil && j.Upper != nil {
			want += fmt.Sprintf(" (%.3f–%.3f)", *j.Lower, *j.Upper)
		}
		if got := tb.text(t, "#ov-jaccard"); got != want {
			t.Errorf("Jaccard shows %q, the API says %q", got, want)
		}
	}
	tb.readable(t)
	tb.screenshot(t, "console-theta-overlap")

	d := describe(t, s, "reach:a")
	tb.open(t, s.url, "/sketch/reach:a")
	tb.wait(t, "#bounds")
	if got := tb.text(t, "#bounds"); got != count(d.Lower)+" – "+count(d.Upper) {
		t.Errorf("#bounds %q, want %s – %s", got, count(d.Lower), count(d.Upper))
	}
	tb.readable(t)
	tb.noErrors(t, nil)
}

// TestBrowserToken: with read tokens on, the console shows the 401 and
// then the data once a read token is entered; the token lives in
// sessionStorage only.
func TestBrowserToken(t *testing.T) {
	b := browser(t)
	s := newSite(t, true)
	seed(t, s)
	tb := newTab(t, b)
	tb.open(t, s.url, "/")
	tb.wait(t, "#message")
	msg := tb.text(t, "#message")
	if !strings.HasPrefix(msg, "401 Unauthorized") || !strings.Contains(msg, "read token") {
		t.Errorf("message %q, want the 401 and a hint to enter a read token", msg)
	}
	if n := eval[int](t, tb, `document.querySelectorAll('table.sketches tbody tr').length`); n != 0 {
		t.Errorf("%d rows shown without a token", n)
	}
	tb.readable(t)
	tb.screenshot(t, "console-401")
	tb.do(t, "enter the token", chromedp.SendKeys(chromedp.ID("token"), readToken+kb.Enter))
	tb.wait(t, "table.sketches tbody tr")
	if n := eval[int](t, tb, `document.querySelectorAll('table.sketches tbody tr').length`); n != 5 {
		t.Errorf("%d rows with the token, want 5", n)
	}
	if hidden := eval[bool](t, tb, `document.getElementById('message').hidden`); !hidden {
		t.Errorf("the 401 message stays after the token worked: %q", tb.text(t, "#message"))
	}
	type storage struct {
		Session, Local, Cookie, Field string
	}
	st := eval[storage](t, tb, `({Session: sessionStorage.getItem('sketchd.read-token') || '', Local: JSON.stringify(localStorage), Cookie: document.cookie, Field: document.getElementById('token').value})`)
	if st.Session != readToken || st.Local != "{}" || st.Cookie != "" || st.Field != "" {
		t.Errorf("token storage %+v, want it in sessionStorage only", st)
	}
	// The overlap view works with the token too.
	tb.open(t, s.url, "/overlap?s=newsletter:oct&s=checkout:oct")
	tb.wait(t, "#ov-estimate")
	// A wrong token is a 401 with a different hint.
	tb.do(t, "forget", chromedp.Click(chromedp.ID("token-forget")))
	tb.do(t, "wrong token", chromedp.SendKeys(chromedp.ID("token"), "not-a-token"+kb.Enter))
	tb.wait(t, "#message")
	if msg := tb.text(t, "#message"); !strings.Contains(msg, "the bearer token is not known") || !strings.Contains(msg, "refused") {
		t.Errorf("message for a wrong token %q", msg)
	}
	// The browser logs each refused request; nothing else may appear.
	tb.noErrors(t, func(m chromedp.ConsoleMessage) bool {
		return m.Source == "network" && strings.Contains(m.Text, "401")
	})
}

func describe(t *testing.T, s *site, name string) sketchInfo {
	t.Helper()
	var d sketchInfo
	s.call(t, "GET", "/v1/sketches/"+url.PathEscape(name), "", nil, &d)
	return d
}

// TestLayoutMath checks the page's layout module in the browser against an
// independent Go computation of the lens area.
func TestLayoutMath(t *testing.T) {
	b := browser(t)
	s := newSite(t, false)
	tb := newTab(t, b)
	tb.open(t, s.url, "/")
	tb.wait(t, "main h1")

	t.Run("lens distance inverts the lens area within 0.1%", func(t *testing.T) {
		type lensCase struct {
			R1, R2, Target float64
			D              float64 `json:"d"`
		}
		var cases []lensCase
		for _, radii := range [][2]float64{{1, 1}, {1, 0.5}, {0.2, 3}, {10, 0.01}, {100, 99}, {1e-3, 2e-3}} {
			small := math.Min(radii[0], radii[1])
			for _, f := range []float64{1e-4, 0.001, 0.05, 0.3, 0.5, 0.77, 0.99, 0.9999} {
				cases = append(cases, lensCase{R1: radii[0], R2: radii[1], Target: f * math.Pi * small * small})
			}
		}
		in, _ := json.Marshal(cases)
		got := eval[[]lensCase](t, tb, `import('/console/layout.js').then(L => `+string(in)+`.map(c => ({...c, d: L.lensDistance(c.R1, c.R2, c.Target)})))`)
		if len(got) != len(cases) {
			t.Fatalf("%d answers for %d cases", len(got), len(cases))
		}
		worst := 0.0
		for _, c := range got {
			area := lensArea(c.R1, c.R2, c.D)
			rel := math.Abs(area-c.Target) / c.Target
			worst = math.Max(worst, rel)
			if rel > 0.001 {
				t.Errorf("lensDistance(%v, %v, %v) = %v, whose lens area is %v (%.4f%% off)", c.R1, c.R2, c.Target, c.D, area, 100*rel)
			}
		}
		t.Logf("%d cases, worst relative area error %.2g", len(got), worst)
	})

	type pair struct {
		Target, Drawn, Error float64
	}
	type circle struct{ X, Y, R float64 }
	type three struct {
		Circles []circle `json:"circles"`
		Pairs   []pair   `json:"pairs"`
		Triple  pair     `json:"triple"`
		Pair    float64  `json:"pairError"`
		Error   float64  `json:"error"`
	}
	layout := func(t *testing.T, areas, pairs []float64, triple float64) three {
		in, _ := json.Marshal([]any{areas, pairs, triple})
		out := eval[three](t, tb, `import('/console/layout.js').then(L => { const [a, p, x] = `+string(in)+`;
			const r = L.layoutThree(a, p, x); return {...r, circles: r.circles.map(c => ({X: c.x, Y: c.y, R: c.r})),
			pairs: r.pairs.map(p => ({Target: p.target, Drawn: p.drawn, Error: p.error})),
			triple: {Target: r.triple.target, Drawn: r.triple.drawn, Error: r.triple.error}}; })`)
		if len(out.Circles) != 3 || len(out.Pairs) != 3 {
			t.Fatalf("layoutThree answered %+v", out)
		}
		// The reported pair errors are the drawing's: recompute them.
		smallest := math.Min(areas[0], math.Min(areas[1], areas[2]))
		worst := 0.0
		for k, ij := range [][2]int{{0, 1}, {0, 2}, {1, 2}} {
			a, b := out.Circles[ij[0]], out.Circles[ij[1]]
			drawn := lensArea(a.R, b.R, math.Hypot(a.X-b.X, a.Y-b.Y))
			e := math.Abs(drawn-pairs[k]) / smallest
			worst = math.Max(worst, e)
			if math.Abs(drawn-out.Pairs[k].Drawn) > 1e-9*smallest || math.Abs(e-out.Pairs[k].Error) > 1e-9 {
				t.Errorf("pair %v: reported drawn %v error %v, recomputed %v and %v", ij, out.Pairs[k].Drawn, out.Pairs[k].Error, drawn, e)
			}
		}
		if math.Abs(worst-out.Pair) > 1e-9 || out.Error < out.Pair || out.Error < out.Triple.Error {
			t.Errorf("reported pair error %v (overall %v, triple %v), recomputed %v", out.Pair, out.Error, out.Triple.Error, worst)
		}
		if g := tripleArea(out.Circles[0], out.Circles[1], out.Circles[2]); math.Abs(g-out.Triple.Drawn) > 0.01*smallest {
			t.Errorf("reported triple region %v, measured %v", out.Triple.Drawn, g)
		}
		return out
	}

	t.Run("three drawable sets are drawn with a small reported error", func(t *testing.T) {
		c := []circle{{0, 0, 1}, {1.2, 0, 0.9}, {0.5, 1.0, 0.8}}
		areas := []float64{math.Pi, math.Pi * 0.81, math.Pi * 0.64}
		pairs := []float64{lensArea(1, 0.9, 1.2), lensArea(1, 0.8, math.Hypot(0.5, 1)), lensArea(0.9, 0.8, math.Hypot(0.7, 1))}
		triple := tripleArea(c[0], c[1], c[2])
		out := layout(t, areas, pairs, triple)
		if out.Pair > 0.001 || out.Triple.Error > 0.01 {
			t.Errorf("a drawable configuration was drawn with pair error %v, triple error %v", out.Pair, out.Triple.Error)
		}
		t.Logf("pair error %.2g, triple error %.2g", out.Pair, out.Triple.Error)
	})

	t.Run("three undrawable sets report their error", func(t *testing.T) {
		// A lies inside B and inside C, yet B and C do not meet: no three
		// circles can show that.
		areas := []float64{1, 4, 4}
		out := layout(t, areas, []float64{1, 1, 0}, 0)
		if out.Pair < 0.05 {
			t.Errorf("an impossible configuration reports pair error %v", out.Pair)
		}
		// A compromise (B and C pulled apart around A) beats leaving one
		// pair entirely wrong.
		if out.Pair > 0.75 {
			t.Errorf("pair error %v: the layout did not look for a compromise", out.Pair)
		}
		if out.Error < out.Pair {
			t.Errorf("overall error %v below the pair error %v", out.Error, out.Pair)
		}
		t.Logf("pair error %.3f, triple error %.3f", out.Pair, out.Triple.Error)
	})
	tb.noErrors(t, nil)
}

// lensArea is the area common to circles of radii r1, r2 at distance d,
// as the sum of two circular segments r²(φ − sin φ)/2, written
// independently of the page's code: φ from the chord's half-length by
// asin, and φ − sin φ by its series where it would cancel.
func lensArea(r1, r2, d float64) float64 {
	if d >= r1+r2 {
		return 0
	}
	if d <= math.Abs(r1-r2) {
		m := math.Min(r1, r2)
		return math.Pi * m * m
	}
	// Half chord from Heron's formula on the triangle (r1, r2, d).
	h := math.Sqrt(math.Max(0, (-d+r1+r2)*(d+r1-r2)*(d-r1+r2)*(d+r1+r2))) / (2 * d)
	x1 := (d*d + r1*r1 - r2*r2) / (2 * d) // centre 1 to the chord, signed
	seg := func(r, x float64) float64 {
		phi := 2 * math.Asin(math.Min(1, h/r)) // the chord's angle
		if x < 0 {
			phi = 2*math.Pi - phi
		}
		var f float64
		if phi < 0.3 {
			// φ − sin φ = φ³/3! − φ⁵/5! + φ⁷/7! − φ⁹/9!
			p2 := phi * phi
			f = phi * p2 / 6 * (1 - p2/20*(1-p2/42*(1-p2/72)))
		} else {
			f = phi - math.Sin(phi)
		}
		return r * r * f / 2
	}
	return seg(r1, x1) + seg(r2, d-x1)
}

// tripleArea measures the region common to three circles on a fine grid.
func tripleArea(cs ...struct{ X, Y, R float64 }) float64 {
	s := cs[0]
	for _, c := range cs {
		if c.R < s.R {
			s = c
		}
	}
	const n = 1500
	step := 2 * s.R / n
	hits := 0
	for i := range n {
		x := s.X - s.R + (float64(i)+0.5)*step
		for j := range n {
			y := s.Y - s.R + (float64(j)+0.5)*step
			in := true
			for _, c := range cs {
				if (x-c.X)*(x-c.X)+(y-c.Y)*(y-c.Y) > c.R*c.R {
					in = false
					break
				}
			}
			if in {
				hits++
			}
		}
	}
	return float64(hits) * step * step
}

// TestBrowserFrequencyReport: a frequency sketch's page shows its report,
// reach, impressions and users per frequency class with their bounds, as
// the API gives them.
func TestBrowserFrequencyReport(t *testing.T) {
	b := browser(t)
	s := newSite(t, false)
	s.call(t, "PUT", "/v1/sketches/impressions", "application/json", []byte(`{"type":"freq"}`), nil)
	// 100 users seen once, 50 twice, 20 twelve times.
	var items []string
	for u := range 170 {
		n := 1
		switch {
		case u >= 150:
			n = 12
		case u >= 100:
			n = 2
		}
		items = append(items, fmt.Sprintf(`{"id":"user%d","count":%d}`, u, n))
	}
	s.call(t, "POST", "/v1/sketches/impressions/add", "application/json", []byte(`{"items":[`+strings.Join(items, ",")+`]}`), nil)
	type interval struct{ Estimate, Lower, Upper float64 }
	var report struct {
		Reach, Impressions interval
		Classes            []struct {
			K                  int
			OrMore             bool `json:"or_more"`
			Users, Impressions interval
		}
	}
	s.call(t, "GET", "/v1/sketches/impressions/frequency_report?max=10", "", nil, &report)
	if report.Reach.Estimate != 170 || report.Impressions.Estimate != 100+100+240 {
		t.Fatalf("fixture: report %+v, want reach 170 and 440 impressions", report)
	}

	tb := newTab(t, b)
	tb.open(t, s.url, "/sketch/impressions")
	tb.wait(t, "#freq-classes li")
	span := func(iv interval) string { return count(iv.Lower) + "–" + count(iv.Upper) }
	if got, want := tb.text(t, "#freq-reach"), count(report.Reach.Estimate)+" users ("+span(report.Reach)+")"; got != want {
		t.Errorf("reach shows %q, want %q", got, want)
	}
	if got, want := tb.text(t, "#freq-impressions"), count(report.Impressions.Estimate)+" ("+span(report.Impressions)+")"; got != want {
		t.Errorf("impressions show %q, want %q", got, want)
	}
	type row struct{ Label, Value string }
	rows := eval[[]row](t, tb, `[...document.querySelectorAll('#freq-classes li')].map(li => ({
		Label: li.querySelector('.bar-id').textContent, Value: li.querySelector('.bar-val').textContent}))`)
	var want []row
	for _, c := range report.Classes {
		if c.OrMore && c.Users.Estimate == 0 {
			continue
		}
		label := fmt.Sprintf("%d times", c.K)
		switch {
		case c.OrMore:
			label = fmt.Sprintf("%d+ times", c.K)
		case c.K == 1:
			label = "1 time"
		}
		want = append(want, row{label, count(c.Users.Estimate) + " users (" + span(c.Users) + "), " + count(c.Impressions.Estimate) + " impressions"})
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("classes shown\n%v\nwant\n%v", rows, want)
	}
	if len(rows) != 10 || rows[0].Value[:9] != "100 users" || rows[1].Value[:8] != "50 users" || rows[9].Label != "10+ times" || rows[9].Value[:8] != "20 users" {
		t.Errorf("classes %v: want 100 seen once, 50 twice and 20 ten or more times", rows)
	}
	tb.readable(t)
	tb.screenshot(t, "console-frequency-report")
	tb.noErrors(t, nil)
}

// TestBrowserRegisters: a DataSketches HLL is listed with its estimate
// and error, and shown with its bounds, mode and parameters.
func TestBrowserRegisters(t *testing.T) {
	b := browser(t)
	s := newSite(t, false)
	s.call(t, "PUT", "/v1/sketches/spark:users", "application/json", []byte(`{"type":"ds_hll","lg_k":12,"tgt_type":"HLL_8"}`), nil)
	s.addRange(t, "spark:users", 1, 30001)
	tb := newTab(t, b)
	tb.open(t, s.url, "/")
	tb.wait(t, "table.sketches tbody tr")
	want := s.list(t, "")
	if len(want) != 1 {
		t.Fatalf("API lists %+v", want)
	}
	w := want[0]
	type row struct{ Kind, Estimate, Rep string }
	rows := eval[[]row](t, tb, `[...document.querySelectorAll('table.sketches tbody tr')].map(tr => ({
		Kind: tr.children[2].textContent, Estimate: tr.querySelector('.estimate').textContent, Rep: tr.children[4].textContent}))`)
	if est := count(w.Cardinality) + " ± " + count(w.Cardinality*w.StdError) + " (1σ)"; len(rows) != 1 || rows[0].Kind != "DataSketches HLL" || rows[0].Estimate != est || rows[0].Rep != "HLL" {
		t.Errorf("rows %+v, want DataSketches HLL %q HLL", rows, est)
	}
	tb.open(t, s.url, "/sketch/spark:users")
	tb.wait(t, "#bounds")
	if got := tb.text(t, "#bounds"); got != count(w.Lower)+" – "+count(w.Upper) {
		t.Errorf("#bounds %q, want %s – %s", got, count(w.Lower), count(w.Upper))
	}
	if got := tb.text(t, "#estimate"); !strings.HasPrefix(got, count(w.Cardinality)) {
		t.Errorf("#estimate %q, want %s", got, count(w.Cardinality))
	}
	tb.readable(t)
	tb.screenshot(t, "console-ds-hll")
	tb.noErrors(t, nil)
}

// TestBrowserZetaHLL: a ZetaSketch HLL++ sketch is listed with its
// estimate and error, and shown with its precisions, value type and
// where its bytes go.
func TestBrowserZetaHLL(t *testing.T) {
	b := browser(t)
	s := newSite(t, false)
	s.call(t, "PUT", "/v1/sketches/bq:users", "application/json", []byte(`{"type":"zeta_hll","precision":12}`), nil)
	s.addRange(t, "bq:users", 1, 30001)
	tb := newTab(t, b)
	tb.open(t, s.url, "/")
	tb.wait(t, "table.sketches tbody tr")
	want := s.list(t, "")
	if len(want) != 1 {
		t.Fatalf("API lists %+v", want)
	}
	w := want[0]
	type row struct{ Kind, Estimate, Rep string }
	rows := eval[[]row](t, tb, `[...document.querySelectorAll('table.sketches tbody tr')].map(tr => ({
		Kind: tr.children[2].textContent, Estimate: tr.querySelector('.estimate').textContent, Rep: tr.children[4].textContent}))`)
	if est := count(w.Cardinality) + " ± " + count(w.Cardinality*w.StdError) + " (1σ)"; len(rows) != 1 || rows[0].Kind != "ZetaSketch HLL++" || rows[0].Estimate != est || rows[0].Rep != "NORMAL" {
		t.Errorf("rows %+v, want ZetaSketch HLL++ %q NORMAL", rows, est)
	}
	tb.open(t, s.url, "/sketch/bq:users")
	tb.wait(t, "#bounds")
	if got := tb.text(t, "#bounds"); got != count(w.Lower)+" – "+count(w.Upper) {
		t.Errorf("#bounds %q, want %s – %s", got, count(w.Lower), count(w.Upper))
	}
	if got := tb.text(t, "section.detail"); !strings.Contains(got, "precision 12 (4,096 registers), sparse precision 17; 30,000 values added") ||
		!strings.Contains(got, "distinct INT64 ids") || !strings.Contains(got, "HLL_COUNT.MERGE") {
		t.Errorf("detail %q lacks the parameters, value type or readers", got)
	}
	tb.readable(t)
	tb.screenshot(t, "console-zeta-hll")
	tb.noErrors(t, nil)
}

// TestBrowserRegistersOverlap: two DataSketches HLL sketches can be
// selected and are drawn in the overlap view with the API's numbers,
// and their regions listed as POST /v1/overlap counts them.
func TestBrowserRegistersOverlap(t *testing.T) {
	b := browser(t)
	s := newSite(t, false)
	for _, n := range []string{"spark:a", "spark:b"} {
		s.call(t, "PUT", "/v1/sketches/"+n, "application/json", []byte(`{"type":"ds_hll","lg_k":12}`), nil)
	}
	s.addRange(t, "spark:a", 1, 20001)
	s.addRange(t, "spark:b", 10001, 40001)
	tb := newTab(t, b)
	tb.open(t, s.url, "/")
	tb.wait(t, "table.sketches tbody tr")
	if n := eval[int](t, tb, `document.querySelectorAll('table.sketches tbody input[type=checkbox]').length`); n != 2 {
		t.Errorf("%d compare boxes, want 2", n)
	}
	x := s.intersect(t, "spark:a", "spark:b")
	if x.Spurious || math.Abs(x.Estimate-10000) > 1500 {
		t.Fatalf("fixture: ds_hll intersection %+v, want about 10,000", x)
	}
	tb.open(t, s.url, "/overlap?s=spark:a&s=spark:b")
	tb.wait(t, "#ov-estimate")
	for id, v := range map[string]float64{"#ov-estimate": x.Estimate, "#ov-lower": x.Lower, "#ov-upper": x.Upper} {
		if got := tb.text(t, id); got != count(v) {
			t.Errorf("%s shows %q, want %q (API %v)", id, got, count(v), v)
		}
	}
	tb.wait(t, "#regions tbody tr")
	tb.sameRegions(t, s, "spark:a", "spark:b")
	tb.readable(t)
	tb.screenshot(t, "console-ds-hll-overlap")
	tb.noErrors(t, nil)
}

// TestBrowserAirliftHLL: a Trino HyperLogLog is listed with its estimate
// and error, and shown with its index bits and where its bytes go.
func TestBrowserAirliftHLL(t *testing.T) {
	b := browser(t)
	s := newSite(t, false)
	s.call(t, "PUT", "/v1/sketches/trino:users", "application/json", []byte(`{"type":"airlift_hll"}`), nil)
	s.addRange(t, "trino:users", 1, 30001)
	tb := newTab(t, b)
	tb.open(t, s.url, "/")
	tb.wait(t, "table.sketches tbody tr")
	want := s.list(t, "")
	if len(want) != 1 {
		t.Fatalf("API lists %+v", want)
	}
	w := want[0]
	type row struct{ Kind, Estimate, Rep string }
	rows := eval[[]row](t, tb, `[...document.querySelectorAll('table.sketches tbody tr')].map(tr => ({
		Kind: tr.children[2].textContent, Estimate: tr.querySelector('.estimate').textContent, Rep: tr.children[4].textContent}))`)
	if est := count(w.Cardinality) + " ± " + count(w.Cardinality*w.StdError) + " (1σ)"; len(rows) != 1 || rows[0].Kind != "Trino HyperLogLog" || rows[0].Estimate != est || rows[0].Rep != "DENSE" {
		t.Errorf("rows %+v, want Trino HyperLogLog %q DENSE", rows, est)
	}
	tb.open(t, s.url, "/sketch/trino:users")
	tb.wait(t, "#bounds")
	if got := tb.text(t, "section.detail"); !strings.Contains(got, "12 index bits (4,096 buckets)") || !strings.Contains(got, "approx_set") {
		t.Errorf("detail %q lacks the parameters or readers", got)
	}
	tb.readable(t)
	tb.screenshot(t, "console-airlift-hll")
	tb.noErrors(t, nil)
}
