package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/pgtest"
)

type ratioAnswer struct {
	Estimate, Error, Lower, Upper float64
	Reliable                      bool
}

type retentionAnswer struct {
	Period  string
	Cohorts []struct {
		Label      string
		Start, End time.Time
		Size       struct{ Estimate, Error float64 }
		Cells      []struct {
			Offset                        int
			Start                         time.Time
			Estimate, Error, Lower, Upper float64
			Reliable, Spurious            bool
			Verdict                       string
			VerdictText                   string `json:"verdict_text"`
			Method                        string
			Warnings                      []string
			Share                         ratioAnswer
		}
	}
	Warnings []string
}

// TestRetention: a daily table over a series and over one sketch a day
// gives the exact cells of small sets, as a triangle (later periods have
// not begun), each with its share of the cohort; every refusal is a 4xx
// problem.
func TestRetention(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	js := "application/json"
	must(t, e.send(t, http.MethodPut, "/v1/series/s", js, `{"tz":"UTC","levels":{"hour":"P14D","day":"P400D","month":"P5Y"},"late_limit":"P30D"}`), http.StatusCreated, "create")
	// Today is the period the server sees in progress throughout.
	today := pgtest.AwayFromMidnight(t, time.Minute).Truncate(24 * time.Hour)
	first := today.AddDate(0, 0, -3)
	// Day d holds ids [100d, 100d+300): consecutive days share 200, two
	// apart 100, three apart none. Today too (in progress).
	for d := range 4 {
		ids := idsJSON(idRange(int64(100*d), int64(100*d+300))...)
		must(t, e.postJSON(t, "/v1/series/s/add?ts="+rfc(first.AddDate(0, 0, d).Add(time.Minute)), ids), http.StatusOK, "add")
		name := "dau:" + first.AddDate(0, 0, d).Format("2006-01-02")
		e.create(t, name, `{}`)
		e.addIDs(t, name, ids, 300)
	}
	want := [][]float64{{200, 100, 0}, {200, 100}, {200}, {}}
	check := func(what, body string) {
		t.Helper()
		var a retentionAnswer
		decode(t, must(t, e.postJSON(t, "/v1/retention", body), http.StatusOK, what).Body, &a)
		if a.Period != "P1D" || len(a.Cohorts) != 4 || len(a.Warnings) != 2 {
			t.Fatalf("%s: %d cohorts, warnings %q; want 4 cohorts, a warning that today is in progress and one that 4 of 5 began", what, len(a.Cohorts), a.Warnings)
		}
		for i, row := range a.Cohorts {
			if !row.Start.Equal(first.AddDate(0, 0, i)) || !row.End.Equal(first.AddDate(0, 0, i+1)) || row.Size.Estimate != 300 || row.Size.Error != 0 {
				t.Errorf("%s: cohort %d = %+v", what, i, row)
			}
			if len(row.Cells) != len(want[i]) {
				t.Fatalf("%s: cohort %d has %d cells, want %d", what, i, len(row.Cells), len(want[i]))
			}
			for k, c := range row.Cells {
				if c.Offset != k+1 || !c.Start.Equal(first.AddDate(0, 0, i+k+1)) || c.Estimate != want[i][k] || c.Share.Estimate != want[i][k]/300 ||
					!c.Reliable || !c.Share.Reliable || c.Method != "mle" || c.Warnings == nil {
					t.Errorf("%s: cell (%d, %d) = %+v, want %v", what, i, k+1, c, want[i][k])
				}
				// The cell's verdict is the intersection's, word for word.
				var x struct {
					Verdict     string
					VerdictText string `json:"verdict_text"`
				}
				pair := fmt.Sprintf(`{"sketches":[%q,%q]}`, "dau:"+first.AddDate(0, 0, i).Format("2006-01-02"), "dau:"+first.AddDate(0, 0, i+k+1).Format("2006-01-02"))
				decode(t, must(t, e.postJSON(t, "/v1/intersection", pair), http.StatusOK, "intersection").Body, &x)
				if x.Verdict == "" || c.Verdict != x.Verdict || c.VerdictText != x.VerdictText {
					t.Errorf("%s: cell (%d, %d) verdict %q %q, POST /v1/intersection %q %q", what, i, k+1, c.Verdict, c.VerdictText, x.Verdict, x.VerdictText)
				}
			}
		}
	}
	check("series", fmt.Sprintf(`{"series":"s","period":"P1D","start":%q,"cohorts":5,"periods":3}`, first.Format(time.RFC3339)))
	check("sketches", fmt.Sprintf(`{"sketches":"dau:{date}","period":"P1D","start":%q,"cohorts":5,"periods":3}`, first.Format(time.RFC3339)))

	// Weekly and monthly periods plan from coarser buckets.
	monday := today.AddDate(0, 0, -int(today.Weekday()+6)%7-7)
	var a retentionAnswer
	decode(t, must(t, e.postJSON(t, "/v1/retention", fmt.Sprintf(`{"series":"s","period":"P1W","start":%q,"cohorts":1,"periods":1}`, monday.Format(time.RFC3339))), http.StatusOK, "weekly").Body, &a)
	if len(a.Cohorts) != 1 || !a.Cohorts[0].End.Equal(monday.AddDate(0, 0, 7)) {
		t.Errorf("weekly = %+v", a)
	}

	e.create(t, "th", `{"type":"theta"}`)
	e.create(t, "th2", `{"type":"theta"}`)
	small := newEnv(t, withConfig(func(c *Config) { c.MaxSeriesBuckets = 50 }))
	must(t, small.send(t, http.MethodPut, "/v1/series/s", js, `{"tz":"UTC","levels":{"hour":"P14D","day":"P400D"}}`), http.StatusCreated, "create")
	ok := func(over string) string {
		fields := map[string]string{"series": `"s"`, "period": `"P1D"`, "start": fmt.Sprintf("%q", first.Format(time.RFC3339)), "cohorts": "2", "periods": "2"}
		for _, kv := range strings.Split(over, ";") {
			if k, v, found := strings.Cut(kv, "="); found {
				if v == "" {
					delete(fields, k)
				} else {
					fields[k] = v
				}
			}
		}
		var parts []string
		for k, v := range fields {
			parts = append(parts, fmt.Sprintf("%q:%s", k, v))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	for _, c := range []struct {
		name, body string
		want       int
	}{
		{"two days", ok("period=\"P2D\""), 400},
		{"no period", ok("period="), 400},
		{"both sources", ok(`sketches="dau:{date}"`), 400},
		{"no source", ok("series="), 400},
		{"bad start", ok(`start="yesterday"`), 400},
		{"start inside a day", ok(fmt.Sprintf("start=%q", first.Add(time.Hour).Format(time.RFC3339))), 400},
		{"no cohorts", ok("cohorts=0"), 400},
		{"61 cohorts", ok("cohorts=61"), 400},
		{"61 periods", ok("periods=61"), 400},
		{"unknown member", ok("x=1"), 400},
		{"unknown method", ok(`method="median"`), 400},
		{"pattern without a period", `{"sketches":"dau","period":"P1D","start":"` + first.Format(time.RFC3339) + `","cohorts":1,"periods":1}`, 400},
		{"missing sketch", `{"sketches":"nope:{date}","period":"P1D","start":"` + first.Format(time.RFC3339) + `","cohorts":1,"periods":1}`, 404},
		{"missing series", ok(`series="none"`), 404},
		{"future start", ok(fmt.Sprintf("start=%q", today.AddDate(0, 0, 3).Format(time.RFC3339))), 422},
		{"expired days", ok(fmt.Sprintf("start=%q", today.AddDate(-2, 0, 0).Format(time.RFC3339))), 422},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkProblem(t, e.postJSON(t, "/v1/retention", c.body), c.want)
		})
	}
	// The periods share one budget of planned buckets: 14 days of a
	// series keeping hours and days consider 14·25 buckets.
	checkProblem(t, small.postJSON(t, "/v1/retention", fmt.Sprintf(`{"series":"s","period":"P1D","start":%q,"cohorts":7,"periods":7}`, today.AddDate(0, 0, -13).Format(time.RFC3339))), http.StatusUnprocessableEntity)
	must(t, small.postJSON(t, "/v1/retention", fmt.Sprintf(`{"series":"s","period":"P1D","start":%q,"cohorts":1,"periods":1}`, today.AddDate(0, 0, -1).Format(time.RFC3339))), http.StatusOK, "within the budget")
	// Theta sketches have no verdict of the envelope's kind.
	for _, n := range []string{"th:" + first.Format("2006-01-02"), "th:" + first.AddDate(0, 0, 1).Format("2006-01-02")} {
		e.create(t, n, `{"type":"theta"}`)
	}
	checkProblem(t, e.postJSON(t, "/v1/retention", `{"sketches":"th:{date}","period":"P1D","start":"`+first.Format(time.RFC3339)+`","cohorts":1,"periods":1}`), http.StatusConflict)
}

type funnelAnswer struct {
	Steps []struct {
		Label                         string
		Estimate, Error, Lower, Upper float64
		Reliable                      bool
		Method                        string
		Warnings                      []string
		Conversion, Overall           *ratioAnswer
	}
	Warnings []string
}

// TestFunnel: steps of sketches and series ranges give each step's reach
// and conversions, exact on small sets; refusals are 4xx problems.
func TestFunnel(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", `{"tz":"UTC","levels":{"day":"P400D"}}`), http.StatusCreated, "create")
	day := time.Now().UTC().Truncate(24 * time.Hour)
	e.create(t, "visit", `{}`)
	e.addIDs(t, "visit", idsJSON(idRange(0, 1000)...), 1000)
	must(t, e.postJSON(t, "/v1/series/s/add?ts="+rfc(day.Add(time.Minute)), idsJSON(idRange(0, 400)...)), http.StatusOK, "add")
	e.create(t, "buy", `{}`)
	e.addIDs(t, "buy", idsJSON(idRange(300, 500)...), 200)
	rng := fmt.Sprintf(`{"series":"s","from":%q,"to":%q}`, day.Format(time.RFC3339), day.AddDate(0, 0, 1).Format(time.RFC3339))
	var a funnelAnswer
	decode(t, must(t, e.postJSON(t, "/v1/funnel", `{"steps":["visit",`+rng+`,"buy"]}`), http.StatusOK, "funnel").Body, &a)
	reach := []float64{1000, 400, 100}
	if len(a.Steps) != 3 || a.Steps[0].Label != "visit" || !strings.HasPrefix(a.Steps[1].Label, "s[") || a.Warnings == nil {
		t.Fatalf("funnel = %+v", a)
	}
	for k, st := range a.Steps {
		if st.Estimate != reach[k] || !st.Reliable || st.Warnings == nil {
			t.Errorf("step %d = %+v, want reach %v", k, st, reach[k])
		}
		if k == 0 {
			if st.Conversion != nil || st.Overall != nil || st.Method != "" {
				t.Errorf("the first step has conversions or a method: %+v", st)
			}
			continue
		}
		if st.Conversion == nil || st.Conversion.Estimate != reach[k]/reach[k-1] || st.Overall.Estimate != reach[k]/1000 {
			t.Errorf("step %d conversions %+v, %+v", k, st.Conversion, st.Overall)
		}
	}
	if a.Steps[1].Method != "mle" || a.Steps[2].Method != "inclusion_exclusion" {
		t.Errorf("methods %q, %q", a.Steps[1].Method, a.Steps[2].Method)
	}
	e.create(t, "th", `{"type":"theta"}`)
	e.create(t, "c", `{"type":"cms"}`)
	for _, c := range []struct {
		name, body string
		want       int
	}{
		{"one step", `{"steps":["visit"]}`, 400},
		{"nine steps", `{"steps":["visit","visit","visit","visit","visit","visit","visit","visit","visit"]}`, 400},
		{"bad name", `{"steps":["visit","no way"]}`, 400},
		{"bad range", `{"steps":["visit",{"series":"s","from":"x","to":"y"}]}`, 400},
		{"missing sketch", `{"steps":["visit","none"]}`, 404},
		{"theta", `{"steps":["th","th"]}`, 409},
		{"mixed kinds", `{"steps":["visit","c"]}`, 409},
		{"unknown method", `{"steps":["visit","buy"],"method":"median"}`, 400},
		{"unknown member", `{"steps":["visit","buy"],"x":1}`, 400},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkProblem(t, e.postJSON(t, "/v1/funnel", c.body), c.want)
		})
	}
}

// TestFunnelStepWithinOverHTTP: a step every user of which reached the
// steps before (100,000 visits, 50,000 carts among them, 399 purchases
// among those, the last held exactly) was answered "399 ± 2,354 …
// Spurious … the sets may not overlap at all" beside the step sketch's
// "399 exact", in every run of an outside audit. The step is now not
// spurious, its bounds hold 399, and the answer names it as within the
// others, in words and in the within field.
func TestFunnelStepWithinOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, s := range []struct {
		name   string
		lo, hi int64
	}{{"visit", 0, 100_000}, {"cart", 0, 50_000}, {"buy", 10_000, 10_399}} {
		e.create(t, s.name, `{"log2m":14}`)
		must(t, e.send(t, http.MethodPost, "/v1/sketches/"+s.name+"/add", "application/octet-stream", octetIDs(idRange(s.lo, s.hi)...)), http.StatusOK, "add to "+s.name)
	}
	var a struct {
		Steps []struct {
			Label                         string
			Estimate, Error, Lower, Upper float64
			Spurious                      bool
			Verdict                       string `json:"verdict"`
			VerdictText                   string `json:"verdict_text"`
			Within                        string `json:"within"`
		}
	}
	decode(t, must(t, e.postJSON(t, "/v1/funnel", `{"steps":["visit","cart","buy"]}`), http.StatusOK, "funnel").Body, &a)
	st := a.Steps[2]
	if st.Spurious || st.Verdict == "spurious" || st.Lower > 399 || st.Upper < 399 || st.Within != "buy" ||
		!strings.Contains(st.VerdictText, "All of buy is within") || strings.Contains(st.VerdictText, "may not overlap") {
		t.Errorf("step 3 = %+v; want 399 within its bounds, not spurious, within the earlier steps in words", st)
	}
	var x struct {
		Within string `json:"within"`
	}
	decode(t, must(t, e.postJSON(t, "/v1/intersection", `{"sketches":["visit","buy"]}`), http.StatusOK, "intersection").Body, &x)
	if x.Within != "buy" {
		t.Errorf("intersection of visit and buy: within %q, want buy", x.Within)
	}
	decode(t, must(t, e.postJSON(t, "/v1/intersection", `{"sketches":["visit","cart"]}`), http.StatusOK, "intersection").Body, &x)
	if x.Within != "cart" {
		t.Errorf("intersection of visit and cart: within %q, want cart", x.Within)
	}
}
