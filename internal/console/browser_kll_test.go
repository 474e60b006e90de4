package console_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestBrowserKLL: a KLL sketch's page shows its quantiles with the values
// at the ranks a rank error away, and draws its CDF with the error band,
// every point the API's, readable at desktop and phone widths.
func TestBrowserKLL(t *testing.T) {
	b := browser(t)
	s := newSite(t, false)
	s.call(t, http.MethodPut, "/v1/sketches/checkout:latency", "application/json", []byte(`{"type":"kll","k":200}`), nil)
	r := rand.New(rand.NewPCG(9, 9))
	var body strings.Builder
	body.WriteString(`{"values":[`)
	for i := range 20_000 {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, "%.3f", math.Exp(4+0.6*r.NormFloat64()))
	}
	body.WriteString("]}")
	s.call(t, http.MethodPost, "/v1/sketches/checkout:latency/add", "application/json", []byte(body.String()), nil)

	// What the page must show, from the API.
	type quantile struct{ Q, Value, Lower, Upper float64 }
	var qs struct {
		RankError float64 `json:"rank_error"`
		Quantiles []quantile
	}
	ranks := make([]string, 101)
	for i := range ranks {
		ranks[i] = strconv.FormatFloat(float64(i)/100, 'g', -1, 64)
	}
	s.call(t, http.MethodGet, "/v1/sketches/checkout:latency/quantile?q="+strings.Join(ranks, ","), "", nil, &qs)
	var splits []float64
	for _, q := range qs.Quantiles {
		if !slices.Contains(splits, q.Value) {
			splits = append(splits, q.Value)
		}
	}
	slices.Sort(splits)
	parts := make([]string, len(splits))
	for i, v := range splits {
		parts[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	var cdf struct {
		RankError            float64 `json:"rank_error"`
		Values, Lower, Upper []float64
	}
	s.call(t, http.MethodGet, "/v1/sketches/checkout:latency/cdf?split="+strings.Join(parts, ","), "", nil, &cdf)

	for _, w := range widths {
		t.Run(w.name, func(t *testing.T) {
			tb := newTab(t, b)
			tb.viewport(t, w.width, w.height)
			tb.open(t, s.url, "/sketch/checkout:latency")
			tb.wait(t, "#kll-cdf")
			type row struct{ Q, Value, Lower, Upper float64 }
			rows := eval[[]row](t, tb, `[...document.querySelectorAll('#kll-quantiles tbody tr')].map(tr => ({
				Q: +tr.dataset.q, Value: +tr.dataset.value, Lower: +tr.dataset.lower, Upper: +tr.dataset.upper}))`)
			if len(rows) != 3 {
				t.Fatalf("quantile rows %v", rows)
			}
			// The third column holds values (those at the ranks a rank
			// error away), and its heading says so.
			if h := eval[string](t, tb, `document.querySelector('#kll-quantiles thead th:nth-child(3)').textContent`); !strings.HasPrefix(h, "Values at rank ± ") {
				t.Errorf("the column of values at the rank error is headed %q", h)
			}
			for _, rw := range rows {
				want := qs.Quantiles[int(math.Round(rw.Q*100))]
				if rw.Value != want.Value || rw.Lower != want.Lower || rw.Upper != want.Upper || rw.Lower > rw.Value || rw.Upper < rw.Value {
					t.Errorf("p%v shown %+v, API %+v", rw.Q*100, rw, want)
				}
			}
			type dot struct{ Value, CDF, Lower, Upper float64 }
			dots := eval[[]dot](t, tb, `[...document.querySelectorAll('#kll-cdf circle.dot')].map(c => ({
				Value: +c.dataset.value, CDF: +c.dataset.cdf, Lower: +c.dataset.lower, Upper: +c.dataset.upper}))`)
			if len(dots) != len(splits) {
				t.Fatalf("%d points drawn, want %d", len(dots), len(splits))
			}
			for i, d := range dots {
				if d.Value != splits[i] || d.CDF != cdf.Values[i] || d.Lower != cdf.Lower[i] || d.Upper != cdf.Upper[i] {
					t.Errorf("point %d drawn %+v, API cdf at %v is %v [%v, %v]", i, d, splits[i], cdf.Values[i], cdf.Lower[i], cdf.Upper[i])
					break
				}
				if i > 0 && d.CDF < dots[i-1].CDF {
					t.Errorf("the drawn CDF falls at %v", d.Value)
				}
			}
			// The band's points go out along the upper edge and back along
			// the lower one, around the line, and it is visibly wide.
			band := eval[float64](t, tb, `(() => { const p = document.getElementById('cdf-band');
				const pts = p.getAttribute('points').trim().split(' ').map(q => q.split(',').map(Number));
				const n = pts.length / 2, k = p.getScreenCTM().d; let h = Infinity;
				for (let i = 1; i < n - 1; i++) h = Math.min(h, Math.abs(pts[2 * n - 1 - i][1] - pts[i][1]) * k);
				return h; })()`)
			if band < 3 {
				t.Errorf("the error band is %.1f px tall at its thinnest: too thin to see", band)
			}
			if scale := eval[string](t, tb, `document.getElementById('kll-cdf').dataset.scale`); scale != "log" {
				t.Errorf("latencies over two decades drawn on a %s axis", scale)
			}
			if note := tb.text(t, "#cdf-note"); !strings.Contains(note, "rank error") || !strings.Contains(note, "20,000 values") {
				t.Errorf("the chart's note: %q", note)
			}
			if small := eval[float64](t, tb, `Math.min(...[...document.querySelectorAll('#kll-cdf text.tick')].map(t => t.getBoundingClientRect().height))`); small < 10 {
				t.Errorf("the chart's axis text is %.1f px tall, want at least 10", small)
			}
			if over := eval[int](t, tb, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
				t.Errorf("the page is %d px wider than the screen", over)
			}
			tb.readable(t)
			eval[bool](t, tb, `(document.getElementById('kll-quantiles').scrollIntoView(), true)`)
			tb.screenshot(t, "console-kll-"+w.name)
			tb.noErrors(t, nil)
		})
	}
}
