package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// overlapAnswer is the answer of POST /v1/overlap.
type overlapAnswer struct {
	Sets     int          `json:"sets"`
	Log2m    int          `json:"log2m"`
	Union    overlapFig   `json:"union"`
	Exactly  []overlapFig `json:"exactly"`
	AtLeast  []overlapFig `json:"at_least"`
	OnlyHere []overlapFig `json:"only_here"`
	Regions  []overlapFig `json:"regions"`
	Complete bool         `json:"complete"`
	Unions   int          `json:"unions"`
	Warnings []string     `json:"warnings"`
}

type overlapFig struct {
	K               int      `json:"k"`
	Operand         string   `json:"operand"`
	Operands        []string `json:"operands"`
	Estimate, Error float64
	Lower, Upper    float64
	Verdict         string `json:"verdict"`
}

// covers reports whether f's bounds hold want.
func (f overlapFig) covers(want float64) bool { return f.Lower <= want && want <= f.Upper }

// TestOverlapOverHTTP: three data centers whose users are known: 60,000
// only in eu, 40,000 only in us, 20,000 only in ap, 6,000 in eu and us,
// 3,000 in all three. Every count's bounds hold the truth, and the
// answer names the operands and the regions.
func TestOverlapOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	type span struct{ lo, hi int64 }
	members := map[string][]span{
		"dc:eu": {{0, 60_000}, {100_000, 106_000}, {200_000, 203_000}},
		"dc:us": {{300_000, 340_000}, {100_000, 106_000}, {200_000, 203_000}},
		"dc:ap": {{400_000, 420_000}, {200_000, 203_000}},
	}
	for name, spans := range members {
		e.create(t, name, `{"log2m":14}`)
		var ids []int64
		for _, s := range spans {
			ids = append(ids, idRange(s.lo, s.hi)...)
		}
		must(t, e.send(t, http.MethodPost, "/v1/sketches/"+name+"/add", "application/octet-stream", octetIDs(ids...)), http.StatusOK, "add to "+name)
	}
	var o overlapAnswer
	decode(t, must(t, e.postJSON(t, "/v1/overlap", `{"sketches":["dc:eu","dc:us","dc:ap"]}`), http.StatusOK, "overlap").Body, &o)
	if o.Sets != 3 || o.Log2m != 14 || !o.Complete || o.Unions != 7 || len(o.Exactly) != 3 || len(o.AtLeast) != 3 || len(o.OnlyHere) != 3 || len(o.Regions) != 7 {
		t.Fatalf("answer %+v, want 3 complete sets with 3 counts of each kind and 7 regions", o)
	}
	check := func(what string, f overlapFig, want float64) {
		t.Helper()
		if !f.covers(want) || f.Error <= 0 || f.Verdict == "" {
			t.Errorf("%s = %.0f ± %.0f [%.0f, %.0f] %s, want bounds around %.0f", what, f.Estimate, f.Error, f.Lower, f.Upper, f.Verdict, want)
		}
	}
	check("union", o.Union, 129_000)
	for k, want := range []float64{120_000, 6_000, 3_000} {
		check(fmt.Sprintf("exactly %d", k+1), o.Exactly[k], want)
		if o.Exactly[k].K != k+1 {
			t.Errorf("exactly[%d].k = %d", k, o.Exactly[k].K)
		}
	}
	for k, want := range []float64{129_000, 9_000, 3_000} {
		check(fmt.Sprintf("at least %d", k+1), o.AtLeast[k], want)
	}
	for i, want := range map[string]float64{"dc:eu": 60_000, "dc:us": 40_000, "dc:ap": 20_000} {
		j := slices.IndexFunc(o.OnlyHere, func(f overlapFig) bool { return f.Operand == i })
		if j < 0 {
			t.Fatalf("no only-here count for %s: %+v", i, o.OnlyHere)
		}
		check("only in "+i, o.OnlyHere[j], want)
	}
	if o.OnlyHere[0].Operand != "dc:eu" || !slices.Equal(o.Regions[3].Operands, []string{"dc:eu", "dc:us"}) {
		t.Errorf("operands out of request order: only_here %+v, fourth region %v", o.OnlyHere, o.Regions[3].Operands)
	}
	check("eu and us only", o.Regions[3], 6_000)
	check("all three", o.Regions[6], 3_000)
	// The large, well-measured counts are reliable.
	if o.Exactly[0].Verdict != "reliable" || o.OnlyHere[0].Verdict != "reliable" {
		t.Errorf("exactly 1 %s, only in eu %s; want reliable", o.Exactly[0].Verdict, o.OnlyHere[0].Verdict)
	}

	// Cheap theta and Count-Min sketches are refused with the kinds named.
	e.create(t, "t", `{"type":"theta"}`)
	p := checkProblem(t, e.postJSON(t, "/v1/overlap", `{"sketches":["t","t"]}`), http.StatusConflict)
	if !strings.Contains(p.Detail, "theta") {
		t.Errorf("detail %q does not name the kind", p.Detail)
	}
}

// TestOverlapOfSeriesRanges: series ranges are operands, as in unions.
func TestOverlapOfSeriesRanges(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", `{"log2m":14,"levels":{"day":"P400D"},"late_limit":"P30D"}`), http.StatusCreated, "create")
	day := time.Now().UTC().Truncate(24 * time.Hour)
	weeks := []time.Time{day.AddDate(0, 0, -20), day.AddDate(0, 0, -13), day.AddDate(0, 0, -6)}
	// Week w holds ids [10000w, 10000w + 20000): each id is in one or two weeks.
	for w, start := range weeks {
		lo := int64(10_000 * w)
		must(t, e.postJSON(t, "/v1/series/s/add?ts="+rfc(start.Add(time.Hour)), idsJSON(idRange(lo, lo+20_000)...)), http.StatusOK, "add")
	}
	var ops []string
	for _, start := range weeks {
		ops = append(ops, fmt.Sprintf(`{"series":"s","from":%q,"to":%q}`, start.Format(time.RFC3339), start.AddDate(0, 0, 7).Format(time.RFC3339)))
	}
	var o overlapAnswer
	decode(t, must(t, e.postJSON(t, "/v1/overlap", `{"sketches":[`+strings.Join(ops, ",")+`]}`), http.StatusOK, "overlap").Body, &o)
	// 40,000 ids: 20,000 in one week (0..10k, 30k..40k... and), 20,000 in two.
	if !o.Exactly[0].covers(20_000) || !o.Exactly[1].covers(20_000) || !o.Exactly[2].covers(0) || !strings.HasPrefix(o.OnlyHere[0].Operand, "s[") {
		t.Errorf("weeks: exactly %+v, only here %+v; want 20,000 in one week, 20,000 in two, none in three", o.Exactly, o.OnlyHere)
	}
}

// TestOverlapOfPrefixes: a prefix operand counts as the union of the
// sketches it names (a data center kept as one sketch per day, say), with
// the prefix as its label.
func TestOverlapOfPrefixes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// eu: ids 0..99 over two sketches; us: ids 50..149.
	for name, r := range map[string][2]int64{"eu:mon": {0, 60}, "eu:tue": {40, 100}, "us": {50, 150}} {
		must(t, e.send(t, http.MethodPost, "/v1/sketches/"+name+"/add?create=true", "application/octet-stream", octetIDs(idRange(r[0], r[1])...)), http.StatusOK, "add to "+name)
	}
	var o overlapAnswer
	decode(t, must(t, e.postJSON(t, "/v1/overlap", `{"sketches":[{"prefix":"eu:"},"us"]}`), http.StatusOK, "overlap").Body, &o)
	if len(o.Exactly) != 2 || o.Exactly[0].Estimate != 100 || o.Exactly[1].Estimate != 50 || o.Exactly[1].Verdict != "exact" ||
		len(o.OnlyHere) != 2 || o.OnlyHere[0].Operand != "eu:*" || o.OnlyHere[0].Estimate != 50 {
		t.Errorf("overlap of eu:* and us: exactly %+v, only here %+v; want 100 in one, 50 in both, 50 only in eu:*", o.Exactly, o.OnlyHere)
	}
}

// TestOverlapOfFamilyKinds: ds_hll, zeta_hll and airlift_hll sketches
// overlap as hll ones do, every count's bounds holding the truth (the
// data centers of TestOverlapOverHTTP); mixed kinds and cpc are refused
// with a 409 that names them.
func TestOverlapOfFamilyKinds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	type span struct{ lo, hi int64 }
	members := [][]span{
		{{0, 60_000}, {100_000, 106_000}, {200_000, 203_000}},
		{{300_000, 340_000}, {100_000, 106_000}, {200_000, 203_000}},
		{{400_000, 420_000}, {200_000, 203_000}},
	}
	for _, kind := range []struct{ typ, params string }{
		{"ds_hll", `"lg_k":14`}, {"zeta_hll", `"precision":14`}, {"airlift_hll", `"index_bits":14`},
	} {
		names := make([]string, len(members))
		for i, spans := range members {
			names[i] = fmt.Sprintf("%s:%d", kind.typ, i)
			e.create(t, names[i], fmt.Sprintf(`{"type":%q,%s}`, kind.typ, kind.params))
			var ids []int64
			for _, s := range spans {
				ids = append(ids, idRange(s.lo, s.hi)...)
			}
			must(t, e.send(t, http.MethodPost, "/v1/sketches/"+names[i]+"/add", "application/octet-stream", octetIDs(ids...)), http.StatusOK, "add to "+names[i])
		}
		var o overlapAnswer
		decode(t, must(t, e.postJSON(t, "/v1/overlap", fmt.Sprintf(`{"sketches":["%s","%s","%s"]}`, names[0], names[1], names[2])), http.StatusOK, kind.typ+" overlap").Body, &o)
		if o.Sets != 3 || o.Log2m != 14 || !o.Complete || len(o.Exactly) != 3 || len(o.OnlyHere) != 3 || len(o.Regions) != 7 {
			t.Fatalf("%s: answer %+v, want 3 complete sets at log2m 14 with 7 regions", kind.typ, o)
		}
		check := func(what string, f overlapFig, want float64) {
			t.Helper()
			if !f.covers(want) || f.Error <= 0 || f.Verdict == "" {
				t.Errorf("%s %s = %.0f ± %.0f [%.0f, %.0f] %s, want bounds around %.0f", kind.typ, what, f.Estimate, f.Error, f.Lower, f.Upper, f.Verdict, want)
			}
		}
		check("union", o.Union, 129_000)
		for k, want := range []float64{120_000, 6_000, 3_000} {
			check(fmt.Sprintf("exactly %d", k+1), o.Exactly[k], want)
		}
		for i, want := range []float64{60_000, 40_000, 20_000} {
			check(fmt.Sprintf("only in %d", i), o.OnlyHere[i], want)
		}
		check("all three", o.Regions[6], 3_000)
	}
	e.create(t, "c", `{"type":"cpc"}`)
	for _, tt := range []struct {
		body string
		want []string
	}{
		{`{"sketches":["ds_hll:0","zeta_hll:1"]}`, []string{"ds_hll", "zeta_hll", `"ds_hll:0"`, `"zeta_hll:1"`}},
		{`{"sketches":["c","c"]}`, []string{"cpc", "registers"}},
	} {
		p := checkProblem(t, e.postJSON(t, "/v1/overlap", tt.body), http.StatusConflict)
		for _, w := range tt.want {
			if !strings.Contains(p.Detail, w) {
				t.Errorf("%s: detail %q does not say %q", tt.body, p.Detail, w)
			}
		}
	}
}

// TestOverlapOfTwoIsTheIntersection: "how many users are in both" has one
// answer. An outside audit found POST /v1/intersection answering 40,533 ±
// 741 (the joint MLE) and POST /v1/overlap's at_least[2] 40,483 ± 1,015
// (inclusion–exclusion) for the same two sets, and the console showing
// both. Now an overlap of two sets is counted by the intersection's
// estimator, with either method and for other kinds too: the users in
// both, and only in each, are the intersection's numbers and bounds, and
// both answers name the method.
func TestOverlapOfTwoIsTheIntersection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// a: ids 0..60,000; b: 20,000..70,000, so 40,000 in both.
	for _, s := range []struct {
		name, params string
		lo, hi       int64
	}{
		{"a", `{"log2m":14}`, 0, 60_000}, {"b", `{"log2m":14}`, 20_000, 70_000},
		{"da", `{"type":"ds_hll","lg_k":14}`, 0, 60_000}, {"db", `{"type":"ds_hll","lg_k":14}`, 20_000, 70_000},
	} {
		e.create(t, s.name, s.params)
		must(t, e.send(t, http.MethodPost, "/v1/sketches/"+s.name+"/add", "application/octet-stream", octetIDs(idRange(s.lo, s.hi)...)), http.StatusOK, "add to "+s.name)
	}
	type side struct{ Estimate, Error, Lower, Upper float64 }
	var x struct {
		side
		RawEstimate  float64 `json:"raw_estimate"`
		Verdict      string  `json:"verdict"`
		Method       string  `json:"method"`
		ANotB, BNotA side
	}
	for _, c := range []struct{ a, b, method, want string }{
		{"a", "b", "", "mle"},
		{"a", "b", "mle", "mle"},
		{"a", "b", "inclusion_exclusion", "inclusion_exclusion"},
		{"da", "db", "", "inclusion_exclusion"},
	} {
		method := ""
		if c.method != "" {
			method = fmt.Sprintf(`,"method":%q`, c.method)
		}
		body := fmt.Sprintf(`{"sketches":[%q,%q]%s}`, c.a, c.b, method)
		var raw struct {
			ANotB side `json:"a_not_b"`
			BNotA side `json:"b_not_a"`
		}
		r := must(t, e.postJSON(t, "/v1/intersection", body), http.StatusOK, "intersection")
		decode(t, r.Body, &x)
		decode(t, r.Body, &raw)
		x.ANotB, x.BNotA = raw.ANotB, raw.BNotA
		var o struct {
			overlapAnswer
			Method string `json:"method"`
		}
		decode(t, must(t, e.postJSON(t, "/v1/overlap", body), http.StatusOK, "overlap").Body, &o)
		both := side{x.Estimate, x.Error, x.Lower, x.Upper}
		fig := func(f overlapFig) side { return side{f.Estimate, f.Error, f.Lower, f.Upper} }
		for what, f := range map[string]overlapFig{"at_least[2]": o.AtLeast[1], "exactly[2]": o.Exactly[1], "region of both": o.Regions[2]} {
			if fig(f) != both || f.Verdict != x.Verdict {
				t.Errorf("%s: overlap's %s = %+v %s, intersection's %+v %s; want the same", body, what, fig(f), f.Verdict, both, x.Verdict)
			}
		}
		if fig(o.OnlyHere[0]) != x.ANotB || fig(o.OnlyHere[1]) != x.BNotA || fig(o.Regions[0]) != x.ANotB || fig(o.Regions[1]) != x.BNotA {
			t.Errorf("%s: only here %+v and %+v, intersection's a_not_b %+v, b_not_a %+v; want the same", body, fig(o.OnlyHere[0]), fig(o.OnlyHere[1]), x.ANotB, x.BNotA)
		}
		if x.Method != c.want || o.Method != c.want {
			t.Errorf("%s: methods %q and %q, want %q", body, x.Method, o.Method, c.want)
		}
		if !o.AtLeast[1].covers(40_000) {
			t.Errorf("%s: both %+v misses 40,000", body, o.AtLeast[1])
		}
	}
	// Three sets are inclusion–exclusion's; the MLE takes two.
	e.create(t, "c", `{"log2m":14}`)
	must(t, e.send(t, http.MethodPost, "/v1/sketches/c/add", "application/octet-stream", octetIDs(idRange(0, 1000)...)), http.StatusOK, "add to c")
	var o struct {
		Method string `json:"method"`
	}
	decode(t, must(t, e.postJSON(t, "/v1/overlap", `{"sketches":["a","b","c"]}`), http.StatusOK, "overlap of three").Body, &o)
	if o.Method != "inclusion_exclusion" {
		t.Errorf("three sets: method %q, want inclusion_exclusion", o.Method)
	}
	for _, bad := range []string{`{"sketches":["a","b","c"],"method":"mle"}`, `{"sketches":["a","b"],"method":"jaccard"}`, `{"sketches":["da","db"],"method":"mle"}`} {
		if p := checkProblem(t, e.postJSON(t, "/v1/overlap", bad), http.StatusBadRequest); !strings.Contains(p.Detail, "method") && !strings.Contains(p.Detail, "mle") {
			t.Errorf("%s: detail %q does not name the method", bad, p.Detail)
		}
	}
}
