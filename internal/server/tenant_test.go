package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

const (
	// limitedToken may use names starting with "team-a:" or "shared:".
	limitedToken = "limited-token-0123456789abcdef"
	// teamBToken may use names starting with "team-b:".
	teamBToken = "team-b-token-0123456789abcdef"
	// walkAdmin is an admin token, for routes that answer for the whole
	// server.
	walkAdmin = "walk-admin-token-0123456789abcdef"
	inside    = "team-a:"
	outside   = "team-b:"
)

// walkSeed is a sketch or series every tenant walk starts with, once
// under each of inside and outside.
type walkSeed struct {
	series bool
	create string // the create body
	adds   []string
}

// walkSeeds are the seeds the walk's requests name, by the name after
// the prefix.
func walkSeeds() map[string]walkSeed {
	ids := `{"ids":[1,2,3,4,5,6,7,8,9,10]}`
	return map[string]walkSeed{
		"hll":   {create: `{"log2m":11}`, adds: []string{ids}},
		"hll2":  {create: `{"log2m":11}`, adds: []string{`{"ids":[5,6,7,8,9,10,11,12]}`}},
		"del":   {create: `{"log2m":11}`},
		"into":  {create: `{"log2m":11}`},
		"fold":  {create: `{"log2m":10}`},
		"cms":   {create: `{"type":"cms","width":64,"depth":3,"topk":3}`, adds: []string{`{"items":[{"id":1,"count":5},{"id":"x","count":2}]}`}},
		"cmsd":  {create: `{"type":"cms","domain_bits":10}`, adds: []string{`{"ids":[1,5,900]}`}},
		"freq":  {create: `{"type":"freq"}`, adds: []string{`{"ids":[1,1,2,3]}`}},
		"bloom": {create: `{"type":"bloom","expected_items":1000,"fpp":0.01}`, adds: []string{ids}},
		"kll":   {create: `{"type":"kll"}`, adds: []string{`{"values":[1.5,2,7,9,11]}`}},
		// The periods of a retention table by sketch pattern.
		"days:2026-01-01": {create: `{"log2m":11}`, adds: []string{ids}},
		"days:2026-01-02": {create: `{"log2m":11}`, adds: []string{`{"ids":[2,4,6,8,10,12]}`}},

		"s":      {series: true, create: `{"log2m":11,"levels":{"hour":"P2D","day":"P30D"}}`, adds: []string{ids}},
		"spatch": {series: true, create: `{"levels":{"day":"P30D"}}`},
		"sdel":   {series: true, create: `{"levels":{"day":"P30D"}}`},
		"scms":   {series: true, create: `{"type":"cms","width":64,"depth":3,"topk":3,"levels":{"day":"P30D"}}`, adds: []string{`{"items":[{"id":1,"count":5}]}`}},
		"scmsd":  {series: true, create: `{"type":"cms","domain_bits":10,"levels":{"day":"P30D"}}`, adds: []string{`{"ids":[1,5,900]}`}},
		"sfreq":  {series: true, create: `{"type":"freq","levels":{"day":"P30D"}}`, adds: []string{`{"ids":[1,1,2]}`}},
		"sbloom": {series: true, create: `{"type":"bloom","expected_items":1000,"fpp":0.01,"levels":{"day":"P30D"}}`, adds: []string{ids}},
		"skll":   {series: true, create: `{"type":"kll","levels":{"day":"P30D"}}`, adds: []string{`{"values":[1.5,2,7]}`}},
	}
}

// walkVariant is one request of a route with one name in the slot under
// test: n, the seed named (kind), inside or outside the limited token's
// prefixes; p is the prefix of the request's other names.
type walkVariant struct {
	slot  string
	kind  string
	want  int // the status inside, for the limited token as for an unlimited one
	build func(n, p string) (method, path, ctype, body string)
}

// walkRoute is what the walk does with one route of the spec.
type walkRoute struct {
	variants []walkVariant
	// list: a list route, checked for leaks (checkListLeaks).
	list bool
	// open: a route that names nothing and needs no token; the limited
	// token gets what no token gets.
	open string
	// whole: a route that answers for the whole server (or needs an
	// admin token): 403 for the limited token, 200 for an admin one.
	whole string
}

// tenantWalk has a case for every route of the spec. A route added to
// the spec without one fails TestTenantWalk, and so does one whose
// handler lets the limited token name a sketch or series outside its
// prefixes in any slot a variant fills.
func tenantWalk(day time.Time) map[string]walkRoute {
	const js = "application/json"
	rng := "from=" + day.Format(time.RFC3339) + "&to=" + day.AddDate(0, 0, 1).Format(time.RFC3339)
	rangeOp := func(n string) string {
		return fmt.Sprintf(`{"series":%q,"from":%q,"to":%q}`, n, day.Format(time.RFC3339), day.AddDate(0, 0, 1).Format(time.RFC3339))
	}
	path := func(method, suffix, ctype, body string) func(n, p string) (string, string, string, string) {
		return func(n, _ string) (string, string, string, string) {
			return method, "/v1/sketches/" + n + suffix, ctype, body
		}
	}
	spath := func(method, suffix, ctype, body string) func(n, p string) (string, string, string, string) {
		return func(n, _ string) (string, string, string, string) {
			return method, "/v1/series/" + n + suffix, ctype, body
		}
	}
	post := func(route, body string) func(n, p string) (string, string, string, string) {
		return func(n, p string) (string, string, string, string) {
			return "POST", route, js, strings.NewReplacer("{n}", n, "{p}", p).Replace(body)
		}
	}
	one := func(kind string, want int, b func(n, p string) (string, string, string, string)) walkRoute {
		return walkRoute{variants: []walkVariant{{slot: "path", kind: kind, want: want, build: b}}}
	}
	return map[string]walkRoute{
		"GET /v1/sketches":                         {list: true},
		"GET /v1/series":                           {list: true},
		"PUT /v1/sketches/{name}":                  one("hll", 200, path("PUT", "", js, `{"log2m":11}`)),
		"GET /v1/sketches/{name}":                  one("hll", 200, path("GET", "", "", "")),
		"DELETE /v1/sketches/{name}":               one("del", 204, path("DELETE", "", "", "")),
		"PATCH /v1/sketches/{name}":                one("hll", 200, path("PATCH", "", js, `{"expire_after":"P3000D"}`)),
		"POST /v1/sketches/{name}/add":             one("hll", 200, path("POST", "/add", js, `{"ids":[20,21]}`)),
		"POST /v1/sketches/{name}/frequency":       one("cms", 200, path("POST", "/frequency", js, `{"ids":[1,"x"]}`)),
		"GET /v1/sketches/{name}/frequency":        one("cms", 200, path("GET", "/frequency?id=1", "", "")),
		"GET /v1/sketches/{name}/top":              one("cms", 200, path("GET", "/top?k=2", "", "")),
		"GET /v1/sketches/{name}/frequency_report": one("freq", 200, path("GET", "/frequency_report", "", "")),
		"POST /v1/sketches/{name}/check":           one("bloom", 200, path("POST", "/check", js, `{"ids":[1,99]}`)),
		"GET /v1/sketches/{name}/range":            one("cmsd", 200, path("GET", "/range?lo=0&hi=10", "", "")),
		"GET /v1/sketches/{name}/quantile":         one("kll", 200, path("GET", "/quantile?q=0.5", "", "")),
		"GET /v1/sketches/{name}/rank":             one("kll", 200, path("GET", "/rank?value=2", "", "")),
		"GET /v1/sketches/{name}/cdf":              one("kll", 200, path("GET", "/cdf?split=1,5", "", "")),
		"GET /v1/sketches/{name}/pmf":              one("kll", 200, path("GET", "/pmf?split=1,5", "", "")),
		"GET /v1/sketches/{name}/raw":              one("hll", 200, path("GET", "/raw", "", "")),
		"PUT /v1/sketches/{name}/raw":              one("hll", 200, path("PUT", "/raw", "text/plain", `\x118b7f`)),
		"POST /v1/sketches/{name}/raw":             one("hll", 200, path("POST", "/raw", "text/plain", `\x118b7f`)),
		"POST /v1/sketches/{name}/fold": {variants: []walkVariant{
			{slot: "path", kind: "hll", want: 200, build: func(n, p string) (string, string, string, string) {
				return "POST", "/v1/sketches/" + n + "/fold", js, `{"log2m":10,"into":"` + p + `fold"}`
			}},
			{slot: "into", kind: "fold", want: 200, build: func(n, p string) (string, string, string, string) {
				return "POST", "/v1/sketches/" + p + "hll/fold", js, `{"log2m":10,"into":"` + n + `"}`
			}},
		}},
		"POST /v1/events": {variants: []walkVariant{
			{slot: "sketches", kind: "hll", want: 200, build: post("/v1/events", `{"events":[{"id":1,"sketches":["{p}hll2"]},{"id":2,"sketches":["{p}hll2","{n}"]}]}`)},
			{slot: "series", kind: "s", want: 200, build: post("/v1/events", `{"events":[{"id":1,"sketches":["{p}hll2"]},{"id":2,"series":["{n}"]}]}`)},
		}},
		"POST /v1/union": {variants: []walkVariant{
			{slot: "sketches", kind: "hll", want: 200, build: post("/v1/union", `{"sketches":["{p}hll2","{n}"]}`)},
			{slot: "series range", kind: "s", want: 200, build: func(n, p string) (string, string, string, string) {
				return "POST", "/v1/union", js, `{"sketches":["` + p + `hll2",` + rangeOp(n) + `]}`
			}},
			{slot: "prefix operand", kind: "hll", want: 200, build: post("/v1/union", `{"sketches":[{"prefix":"{n}"},"{p}hll2"]}`)},
			{slot: "prefix", kind: "hll", want: 200, build: post("/v1/union", `{"prefix":"{n}"}`)},
			{slot: "into", kind: "into", want: 200, build: post("/v1/union", `{"sketches":["{p}hll2"],"into":"{n}"}`)},
		}},
		"POST /v1/intersection": {variants: []walkVariant{
			{slot: "sketches", kind: "hll", want: 200, build: post("/v1/intersection", `{"sketches":["{p}hll2","{n}"]}`)},
			{slot: "series range", kind: "s", want: 200, build: func(n, p string) (string, string, string, string) {
				return "POST", "/v1/intersection", js, `{"sketches":["` + p + `hll2",` + rangeOp(n) + `]}`
			}},
			{slot: "prefix operand", kind: "hll", want: 200, build: post("/v1/intersection", `{"sketches":[{"prefix":"{n}"},"{p}hll2"]}`)},
		}},
		"POST /v1/overlap": {variants: []walkVariant{
			{slot: "sketches", kind: "hll", want: 200, build: post("/v1/overlap", `{"sketches":["{p}hll2","{n}"]}`)},
			{slot: "series range", kind: "s", want: 200, build: func(n, p string) (string, string, string, string) {
				return "POST", "/v1/overlap", js, `{"sketches":["` + p + `hll2",` + rangeOp(n) + `]}`
			}},
		}},
		"GET /v1/backup": {whole: "/v1/backup"},
		"POST /v1/rank": {variants: []walkVariant{
			{slot: "target", kind: "hll", want: 200, build: post("/v1/rank", `{"target":"{n}","candidates":["{p}hll2"],"by":"intersection","top":1}`)},
			{slot: "target series range", kind: "s", want: 200, build: func(n, p string) (string, string, string, string) {
				return "POST", "/v1/rank", js, `{"target":` + rangeOp(n) + `,"candidates":["` + p + `hll2"],"by":"intersection","top":1}`
			}},
			{slot: "candidates", kind: "hll", want: 200, build: post("/v1/rank", `{"target":"{p}hll2","candidates":["{n}"],"by":"jaccard","top":1}`)},
			{slot: "candidate series range", kind: "s", want: 200, build: func(n, p string) (string, string, string, string) {
				return "POST", "/v1/rank", js, `{"target":"` + p + `hll2","candidates":[` + rangeOp(n) + `],"by":"intersection","top":1}`
			}},
			{slot: "candidates prefix", kind: "hll", want: 200, build: post("/v1/rank", `{"target":"{p}hll2","candidates":{"prefix":"{n}"},"by":"intersection","top":1}`)},
		}},
		"POST /v1/funnel": {variants: []walkVariant{
			{slot: "steps", kind: "hll", want: 200, build: post("/v1/funnel", `{"steps":["{p}hll2","{n}"]}`)},
			{slot: "series range", kind: "s", want: 200, build: func(n, p string) (string, string, string, string) {
				return "POST", "/v1/funnel", js, `{"steps":["` + p + `hll2",` + rangeOp(n) + `]}`
			}},
		}},
		"POST /v1/retention": {variants: []walkVariant{
			{slot: "series", kind: "s", want: 200, build: func(n, _ string) (string, string, string, string) {
				return "POST", "/v1/retention", js, fmt.Sprintf(`{"series":%q,"period":"P1D","start":%q,"cohorts":1,"periods":1}`, n, day.AddDate(0, 0, -1).Format(time.RFC3339))
			}},
			{slot: "sketches", kind: "days", want: 200, build: post("/v1/retention", `{"sketches":"{n}:{date}","period":"P1D","start":"2026-01-01T00:00:00Z","cohorts":1,"periods":1}`)},
		}},

		"PUT /v1/series/{name}":                  one("s", 200, spath("PUT", "", js, `{"log2m":11,"levels":{"hour":"P2D","day":"P30D"}}`)),
		"GET /v1/series/{name}":                  one("s", 200, spath("GET", "", "", "")),
		"PATCH /v1/series/{name}":                one("spatch", 200, spath("PATCH", "", js, `{"late_limit":"P1D"}`)),
		"DELETE /v1/series/{name}":               one("sdel", 204, spath("DELETE", "", "", "")),
		"POST /v1/series/{name}/add":             one("s", 200, spath("POST", "/add", js, `{"ids":[30,31]}`)),
		"GET /v1/series/{name}/count":            one("s", 200, spath("GET", "/count?"+rng, "", "")),
		"GET /v1/series/{name}/timeseries":       one("s", 200, spath("GET", "/timeseries?"+rng+"&step=PT1H&window=PT1H", "", "")),
		"GET /v1/series/{name}/top":              one("scms", 200, spath("GET", "/top?k=2&"+rng, "", "")),
		"GET /v1/series/{name}/frequency_report": one("sfreq", 200, spath("GET", "/frequency_report?"+rng, "", "")),
		"POST /v1/series/{name}/check":           one("sbloom", 200, spath("POST", "/check?"+rng, js, `{"ids":[1,99]}`)),
		"GET /v1/series/{name}/range":            one("scmsd", 200, spath("GET", "/range?"+rng+"&lo=0&hi=10", "", "")),
		"GET /v1/series/{name}/quantile":         one("skll", 200, spath("GET", "/quantile?"+rng+"&q=0.5", "", "")),
		"GET /v1/series/{name}/rank":             one("skll", 200, spath("GET", "/rank?"+rng+"&value=2", "", "")),
		"GET /v1/series/{name}/cdf":              one("skll", 200, spath("GET", "/cdf?"+rng+"&split=1,5", "", "")),
		"GET /v1/series/{name}/pmf":              one("skll", 200, spath("GET", "/pmf?"+rng+"&split=1,5", "", "")),
		"GET /v1/series/{name}/raw":              one("s", 200, spath("GET", "/raw?"+rng, "", "")),
		"PUT /v1/series/{name}/buckets": one("s", 200, spath("PUT", "/buckets", "application/x-ndjson",
			`{"level":"day","start":"`+day.AddDate(0, 0, -2).Format(time.RFC3339)+`","bytes":"\\x118b7f"}`+"\n")),
		"POST /v1/series/{name}/buckets": one("s", 200, spath("POST", "/buckets", "application/x-ndjson",
			`{"level":"day","start":"`+day.AddDate(0, 0, -2).Format(time.RFC3339)+`","bytes":"\\x118b7f"}`+"\n")),
		"PUT /v1/series/{name}/buckets/{level}/{start}":  one("s", 200, spath("PUT", "/buckets/day/"+day.AddDate(0, 0, -3).Format(time.RFC3339), "text/plain", `\x118b7f`)),
		"POST /v1/series/{name}/buckets/{level}/{start}": one("s", 200, spath("POST", "/buckets/day/"+day.AddDate(0, 0, -3).Format(time.RFC3339), "text/plain", `\x118b7f`)),

		"GET /":               {open: "/"},
		"GET /console/{file}": {open: "/console/app.js"},
		"GET /healthz":        {open: "/healthz"},
		"GET /readyz":         {open: "/readyz"},
		"GET /openapi.yaml":   {open: "/openapi.yaml"},
		"GET /metrics":        {whole: "/metrics"},
	}
}

// newTenantEnv serves a store behind an unlimited write token, an admin
// token, the limited token and teamBToken, with -auth-metrics.
func newTenantEnv(tb testing.TB) (*env, *Auth, string) {
	tb.Helper()
	path := writeTokens(tb, tb.TempDir(), writeToken+" write\n"+walkAdmin+" admin\n"+
		limitedToken+" write prefix=team-a: prefix=shared:\n"+
		teamBToken+" write prefix=team-b:\n")
	a, err := LoadAuth(path)
	if err != nil {
		tb.Fatal(err)
	}
	return newEnv(tb, withAuth(a), withConfig(func(c *Config) { c.AuthMetrics = true })), a, path
}

func bearer(token string) string { return "Authorization: Bearer " + token }

// seedTenants creates every walk seed under inside and outside, with the
// unlimited token.
func (e *env) seedTenants(tb testing.TB) {
	tb.Helper()
	w := bearer(writeToken)
	for _, prefix := range []string{inside, outside} {
		for name, sd := range walkSeeds() {
			coll := "/v1/sketches/"
			if sd.series {
				coll = "/v1/series/"
			}
			must(tb, e.send(tb, "PUT", coll+prefix+name, "application/json", sd.create, w), http.StatusCreated, "create "+prefix+name)
			for _, add := range sd.adds {
				must(tb, e.send(tb, "POST", coll+prefix+name+"/add", "application/json", add, w), http.StatusOK, "add to "+prefix+name)
			}
		}
	}
}

// listAll lists every name of a list route ("/v1/sketches" or
// "/v1/series") under query as token sees them, a page of limit at a
// time, with each listed object as JSON.
func (e *env) listAll(tb testing.TB, route, query string, limit int, token string) ([]string, []json.RawMessage) {
	tb.Helper()
	key := strings.TrimPrefix(route, "/v1/")
	var names []string
	var objs []json.RawMessage
	after := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			tb.Fatalf("%s%s: no last page", route, query)
		}
		path := fmt.Sprintf("%s?limit=%d%s", route, limit, query)
		if after != "" {
			path += "&after=" + after
		}
		r := must(tb, e.get(tb, path, bearer(token)), http.StatusOK, "list "+path)
		var page map[string]json.RawMessage
		decode(tb, r.Body, &page)
		var items []json.RawMessage
		decode(tb, page[key], &items)
		if len(items) > limit {
			tb.Fatalf("%s listed %d, more than its limit", path, len(items))
		}
		for _, it := range items {
			var n struct{ Name string }
			decode(tb, it, &n)
			names, objs = append(names, n.Name), append(objs, it)
		}
		var next string
		if raw, ok := page["next"]; ok {
			decode(tb, raw, &next)
		}
		if next == "" {
			return names, objs
		}
		if len(items) == 0 {
			tb.Fatalf("%s: an empty page with next %q", path, next)
		}
		after = next
	}
}

// tenantSnapshot is everything the store holds, as the unlimited token
// reads it: each sketch's description and bytes, each series'
// description and the bytes of its last days.
func (e *env) tenantSnapshot(tb testing.TB, day time.Time) map[string]string {
	tb.Helper()
	out := map[string]string{}
	names, objs := e.listAll(tb, "/v1/sketches", "", 1000, writeToken)
	for i, n := range names {
		r := e.get(tb, "/v1/sketches/"+n+"/raw", bearer(writeToken))
		out["sketch "+n] = fmt.Sprintf("%s\n%d %x", objs[i], r.Status, r.Body)
	}
	rng := "?from=" + day.AddDate(0, 0, -40).Format(time.RFC3339) + "&to=" + day.AddDate(0, 0, 1).Format(time.RFC3339)
	names, objs = e.listAll(tb, "/v1/series", "", 1000, writeToken)
	for i, n := range names {
		r := e.get(tb, "/v1/series/"+n+"/raw"+rng, bearer(writeToken))
		out["series "+n] = fmt.Sprintf("%s\n%d %x", objs[i], r.Status, r.Body)
	}
	return out
}

func snapshotDiff(a, b map[string]string) []string {
	var d []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			d = append(d, k+" disappeared")
		} else if v != w {
			d = append(d, k+" changed:\n"+clipBody([]byte(v))+"\n->\n"+clipBody([]byte(w)))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, k+" appeared")
		}
	}
	sort.Strings(d)
	return d
}

// comparable is an answer with what differs between two equal requests
// taken out: request ids, and the timestamps of the moment each ran.
func comparable(tb testing.TB, r response) string {
	tb.Helper()
	ct := r.Header.Get("Content-Type")
	if !strings.Contains(ct, "json") {
		return fmt.Sprintf("%d %s %x", r.Status, ct, r.Body)
	}
	var v any
	decode(tb, r.Body, &v)
	var strip func(v any) any
	strip = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, f := range x {
				if k == "request_id" || strings.HasSuffix(k, "_at") {
					delete(x, k)
					continue
				}
				x[k] = strip(f)
			}
		case []any:
			for i, f := range x {
				x[i] = strip(f)
			}
		}
		return v
	}
	b, err := json.Marshal(strip(v))
	if err != nil {
		tb.Fatal(err)
	}
	return fmt.Sprintf("%d %s %s", r.Status, ct, b)
}

// TestTenantWalk walks every route of api/openapi.yaml with the limited
// token (names starting with team-a: or shared:): a name outside in any
// slot a route takes is a 403 problem, the same for a sketch or series
// that exists and one that does not, and changes nothing; a name inside
// answers as the same request does for an unlimited token on a twin
// store; lists leak nothing (checkListLeaks); routes that name nothing
// answer as without a token, and /metrics (-auth-metrics) refuses the
// limited token.
func TestTenantWalk(t *testing.T) {
	t.Parallel()
	e, _, _ := newTenantEnv(t)
	if _, ok := e.db.Store.(SeriesStore); !ok {
		t.Skip("the backend keeps no series")
	}
	e.seedTenants(t)
	day := time.Now().UTC().Truncate(24 * time.Hour)
	walk := tenantWalk(day)

	var routes []string
	for path, item := range e.spec.doc.Paths.Map() {
		for method := range item.Operations() {
			routes = append(routes, method+" "+path)
		}
	}
	sort.Strings(routes)
	for _, rt := range routes {
		if _, ok := walk[rt]; !ok {
			t.Errorf("%s is in the spec but not in tenantWalk: add a case naming a sketch or series in each place the route takes one", rt)
		}
	}
	for rt := range walk {
		if !slices.Contains(routes, rt) {
			t.Errorf("tenantWalk has %s, which the spec does not", rt)
		}
	}
	if len(routes) < 40 {
		t.Fatalf("the spec has %d routes: %v", len(routes), routes)
	}

	send := func(t *testing.T, token string, b func(n, p string) (string, string, string, string), n, p string) response {
		t.Helper()
		method, path, ctype, body := b(n, p)
		return e.send(t, method, path, ctype, body, bearer(token))
	}
	for _, rt := range routes {
		c, ok := walk[rt]
		if !ok {
			continue
		}
		switch {
		case c.list:
			t.Run(rt, func(t *testing.T) { e.checkListLeaks(t, strings.TrimPrefix(rt, "GET ")) })
		case c.open != "":
			t.Run(rt, func(t *testing.T) {
				none := e.get(t, c.open, "Accept-Encoding: identity")
				lim := e.get(t, c.open, "Accept-Encoding: identity", bearer(limitedToken))
				if lim.Status != none.Status || lim.Status != http.StatusOK {
					t.Errorf("GET %s with the limited token = %v, without a token %v; want both 200", c.open, lim, none)
				}
			})
		case c.whole != "":
			t.Run(rt, func(t *testing.T) {
				checkProblem(t, e.get(t, c.whole, bearer(limitedToken)), http.StatusForbidden)
				must(t, e.get(t, c.whole, bearer(walkAdmin)), http.StatusOK, c.whole+" with an admin token")
			})
		default:
			if len(c.variants) == 0 {
				t.Errorf("%s: tenantWalk gives no request", rt)
			}
			for _, v := range c.variants {
				t.Run(rt+"/"+v.slot, func(t *testing.T) {
					before := e.tenantSnapshot(t, day)
					there := outside + v.kind
					missing := outside + v.kind + "-none"
					ex := send(t, limitedToken, v.build, there, inside)
					mi := send(t, limitedToken, v.build, missing, inside)
					checkProblem(t, ex, http.StatusForbidden)
					checkProblem(t, mi, http.StatusForbidden)
					// The same answer: the names apart, byte for byte
					// but the request id.
					same := func(r response) string {
						b := strings.ReplaceAll(string(r.Body), missing, there)
						var p map[string]any
						if err := json.Unmarshal([]byte(b), &p); err == nil {
							delete(p, "request_id")
							out, _ := json.Marshal(p)
							b = string(out)
						}
						return fmt.Sprintf("%d %s %s", r.Status, r.Header.Get("Content-Type"), b)
					}
					if a, b := same(ex), same(mi); a != b {
						t.Errorf("outside, an existing name and a missing one are told apart:\n%s\n%s", a, b)
					}
					if !strings.Contains(string(ex.Body), "team-a:") {
						t.Errorf("the 403 does not say which names the token may use: %s", ex.Body)
					}
					if d := snapshotDiff(before, e.tenantSnapshot(t, day)); len(d) > 0 {
						t.Errorf("refused requests changed the store:\n%s", strings.Join(d, "\n"))
					}

					in := send(t, limitedToken, v.build, inside+v.kind, inside)
					twin := send(t, writeToken, v.build, outside+v.kind, outside)
					if in.Status != v.want {
						t.Fatalf("inside with the limited token = %v, want %d", in, v.want)
					}
					twin.Body = []byte(strings.ReplaceAll(string(twin.Body), outside, inside))
					if a, b := comparable(t, in), comparable(t, twin); a != b {
						t.Errorf("inside, the limited token answers\n%s\nand an unlimited one on the twin\n%s", a, b)
					}
				})
			}
		}
	}
}

// checkListLeaks lists route (/v1/sketches or /v1/series) with the
// limited token under several prefixes and page sizes: it lists exactly
// the names an unlimited token lists that start with one of its prefixes
// (and the query's), in order, never another.
func (e *env) checkListLeaks(t *testing.T, route string) {
	t.Helper()
	coll, body := "/v1/sketches/", "{}"
	if route == "/v1/series" {
		coll, body = "/v1/series/", `{"levels":{"day":"P30D"}}`
	}
	for _, n := range []string{"shared:x", "shared:y", "team-a", "team-ab:z", "a", "z", "team-a:zz"} {
		r := e.send(t, "PUT", coll+n, "application/json", body, bearer(writeToken))
		if r.Status != http.StatusCreated && r.Status != http.StatusOK {
			t.Fatalf("create %s = %v", n, r)
		}
	}
	all, _ := e.listAll(t, route, "", 1000, writeToken)
	for _, q := range []string{"", "team", "team-a", "team-a:", "team-a:h", "team-b:", "shared:", "s", "zz"} {
		var want []string
		for _, n := range all {
			if strings.HasPrefix(n, q) && (strings.HasPrefix(n, "team-a:") || strings.HasPrefix(n, "shared:")) {
				want = append(want, n)
			}
		}
		query := ""
		if q != "" {
			query = "&prefix=" + q
		}
		for _, limit := range []int{1, 2, 3, 1000} {
			got, _ := e.listAll(t, route, query, limit, limitedToken)
			if !slices.Equal(got, want) {
				t.Errorf("%s?prefix=%s (limit %d) with the limited token lists %q, want %q", route, q, limit, got, want)
			}
		}
	}
}

// TestTokenFilePrefixes: prefix= fields limit a token; a bad one stops
// the load with an error naming its line (never the token), and a line
// without any keeps today's unlimited token.
func TestTokenFilePrefixes(t *testing.T) {
	t.Parallel()
	good := readToken + " read\n" +
		writeToken + " write prefix=team-a: prefix=shared:\n" +
		// Repeated and nested prefixes add nothing.
		otherToken + " read prefix=b prefix=a:x prefix=a: prefix=b\n"
	a, err := LoadAuth(writeTokens(t, t.TempDir(), good))
	if err != nil {
		t.Fatalf("LoadAuth = %v", err)
	}
	for tok, want := range map[string][]string{readToken: nil, writeToken: {"shared:", "team-a:"}, otherToken: {"a:", "b"}} {
		e := a.entryOf(tok)
		var got []string
		if e.tenant != nil {
			got = e.tenant.prefixes
		}
		if !slices.Equal(got, want) {
			t.Errorf("prefixes of %s = %q, want %q", tok[:5], got, want)
		}
	}
	if a.entryOf(readToken).role != roleRead || a.entryOf(writeToken).role != roleWrite {
		t.Errorf("roles changed: %d, %d", a.entryOf(readToken).role, a.entryOf(writeToken).role)
	}
	// An unlimited token's idempotency keys keep the scope they had.
	if got := a.entryOf(readToken).tenant.scope(readToken); got != tokenScope(readToken) {
		t.Errorf("an unlimited token's key scope = %s, want %s as before", got, tokenScope(readToken))
	}
	if a.entryOf(writeToken).tenant.scope(writeToken) == tokenScope(writeToken) {
		t.Errorf("a limited token's key scope ignores its prefixes")
	}

	secret := "s3cret-token-never-shown"
	for _, c := range []struct {
		name, content, says string
		line                int
	}{
		{"empty prefix", readToken + " read\n" + secret + " write prefix=\n", "prefix= is empty", 2},
		{"empty prefix after a good one", "# c\n\n" + secret + " write prefix=a: prefix=\n", "prefix= is empty", 3},
		{"not a name's start", secret + " read prefix=-a\n", "not the start of a name", 1},
		{"space-free junk", secret + " read prefix=a/b\n", "not the start of a name", 1},
		{"misspelt field", secret + " read prefixes=a\n", "only prefix= fields", 1},
		{"no key", secret + " read team-a:\n", "only prefix= fields", 1},
		{"two lines run together", readToken + " read " + secret + " write\n", "field 3 is not prefix=P", 1},
		{"admin", secret + " admin prefix=a\n", "admin", 1},
		{"too many", secret + " read" + strings.Repeat(" prefix=a", maxTenantPrefixes+1) + "\n", "at most", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := LoadAuth(writeTokens(t, t.TempDir(), c.content))
			if err == nil {
				t.Fatalf("LoadAuth(%q) succeeded", c.content)
			}
			msg := err.Error()
			if !strings.Contains(msg, fmt.Sprintf("line %d:", c.line)) || !strings.Contains(msg, c.says) {
				t.Errorf("error %q does not name line %d and say %q", msg, c.line, c.says)
			}
			if strings.Contains(msg, secret) {
				t.Errorf("error %q shows the token", msg)
			}
		})
	}
}

// TestTenantPrefixUnions: a prefix union must lie inside the token's
// prefixes: a wider one is refused, not narrowed, even where every
// sketch it would take is the token's.
func TestTenantPrefixUnions(t *testing.T) {
	t.Parallel()
	e, _, _ := newTenantEnv(t)
	w, lim := bearer(writeToken), bearer(limitedToken)
	for _, n := range []string{"team-a:1", "team-a:2", "team-b:1"} {
		must(t, e.send(t, "PUT", "/v1/sketches/"+n, "application/json", `{"log2m":11}`, w), http.StatusCreated, "create "+n)
		must(t, e.postJSON(t, "/v1/sketches/"+n+"/add", `{"ids":[1,2,3]}`, w), http.StatusOK, "add to "+n)
	}
	var u struct{ Matched int }
	decode(t, must(t, e.postJSON(t, "/v1/union", `{"prefix":"team-a:"}`, lim), http.StatusOK, "union of the token's prefix").Body, &u)
	if u.Matched != 2 {
		t.Errorf("union of team-a: matched %d, want 2", u.Matched)
	}
	for _, p := range []string{"", "team", "team-", "t", "shared"} {
		r := e.postJSON(t, "/v1/union", fmt.Sprintf(`{"prefix":%q}`, p), lim)
		checkProblem(t, r, http.StatusForbidden)
		if !strings.Contains(string(r.Body), `\"team-a:\"`) {
			t.Errorf("union of %q: the 403 does not name the token's prefixes: %s", p, r.Body)
		}
		checkProblem(t, e.postJSON(t, "/v1/intersection", fmt.Sprintf(`{"sketches":[{"prefix":%q},"team-a:1"]}`, p), lim), http.StatusForbidden)
		checkProblem(t, e.postJSON(t, "/v1/union", fmt.Sprintf(`{"prefix":%q,"into":"team-a:u"}`, p), lim), http.StatusForbidden)
	}
	checkProblem(t, e.get(t, "/v1/sketches/team-a:u", w), http.StatusNotFound)
	// The same union by an unlimited token takes them all.
	decode(t, must(t, e.postJSON(t, "/v1/union", `{"prefix":"team"}`, w), http.StatusOK, "unlimited union").Body, &u)
	if u.Matched != 3 {
		t.Errorf("unlimited union of team matched %d, want 3", u.Matched)
	}
	// Metric flags are the operator's: a limited token is never admin.
	checkProblem(t, e.send(t, "PUT", "/v1/sketches/team-a:m", "application/json", `{"metric":true}`, lim), http.StatusForbidden)
}

// TestTenantKeysScoped: a limited token's idempotency keys are its own
// and its prefixes': another token sending the same key and request
// applies it afresh, and once a reload moves the token to other prefixes
// a retry of a write it may no longer make is refused, not replayed.
func TestTenantKeysScoped(t *testing.T) {
	t.Parallel()
	e, a, path := newTenantEnv(t)
	w, lim := bearer(writeToken), bearer(limitedToken)
	must(t, e.send(t, "PUT", "/v1/sketches/team-a:c", "application/json", `{"type":"cms","width":64,"depth":2}`, w), http.StatusCreated, "create")
	total := func() int64 {
		t.Helper()
		var d struct{ Total int64 }
		decode(t, must(t, e.get(t, "/v1/sketches/team-a:c", w), http.StatusOK, "describe").Body, &d)
		return d.Total
	}
	ev := `{"events":[{"id":1,"sketches":["team-a:c"]}]}`
	first := must(t, e.postJSON(t, "/v1/events", ev, lim, keyed("k1")), http.StatusOK, "events")
	sameAnswer(t, "retry", first, e.postJSON(t, "/v1/events", ev, lim, keyed("k1")))
	if got := total(); got != 1 {
		t.Fatalf("total after a replay = %d, want 1", got)
	}
	// Another token's key of the same name is another key.
	r := must(t, e.postJSON(t, "/v1/events", ev, w, keyed("k1")), http.StatusOK, "events by another token")
	if r.Header.Get(headerReplayed) != "" {
		t.Errorf("another token replayed the limited token's answer")
	}
	checkProblem(t, e.postJSON(t, "/v1/events", ev, bearer(teamBToken), keyed("k1")), http.StatusForbidden)

	// The same token, now limited to team-b:.
	if err := os.WriteFile(path, []byte(writeToken+" write\n"+limitedToken+" write prefix=team-b:\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Reload(); err != nil {
		t.Fatal(err)
	}
	r = e.postJSON(t, "/v1/events", ev, lim, keyed("k1"))
	checkProblem(t, r, http.StatusForbidden)
	if r.Header.Get(headerReplayed) != "" {
		t.Errorf("a retry the token may no longer make was replayed")
	}
	checkProblem(t, e.get(t, "/v1/sketches/team-a:c", lim), http.StatusForbidden)
	if got := total(); got != 2 {
		t.Errorf("total = %d, want 2 (the limited token's event and the other token's)", got)
	}
	// Back to its first prefixes (in another order), the key replays
	// again: it is the same token with the same names.
	if err := os.WriteFile(path, []byte(writeToken+" write\n"+limitedToken+" write prefix=shared: prefix=team-a:\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Reload(); err != nil {
		t.Fatal(err)
	}
	sameAnswer(t, "retry after the reload", first, e.postJSON(t, "/v1/events", ev, lim, keyed("k1")))
}

// FuzzTokenFile: no token file makes the parser panic; what it accepts
// has at least a 16-byte token and a role on each entry, prefixes that
// are valid names' starts, sorted, none the start of another, and never
// an admin with prefixes; its errors name a line and never a token.
func FuzzTokenFile(f *testing.F) {
	for _, s := range []string{
		readToken + " read\n",
		writeToken + " write prefix=team-a: prefix=shared:\n",
		otherToken + " read prefix=b prefix=a:x prefix=a:\n",
		"# c\n\n" + readToken + " write prefix=\n",
		readToken + " admin prefix=a\n",
		readToken + " read prefixes=a\n",
		readToken + " read prefix=-a prefix=a/b\n",
		readToken + " read prefix=" + strings.Repeat("a", 201) + "\n",
		"short read prefix=a\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := parseTokens(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") && !strings.Contains(err.Error(), "token too long") {
				t.Fatalf("error %q names no line", err)
			}
			return
		}
		for _, e := range entries {
			if e.role == roleNone {
				t.Fatalf("an entry without a role")
			}
			if e.tenant == nil {
				continue
			}
			if e.role == roleAdmin {
				t.Fatalf("an admin token with prefixes %q", e.tenant.prefixes)
			}
			ps := e.tenant.prefixes
			if len(ps) == 0 || len(ps) > maxTenantPrefixes {
				t.Fatalf("%d prefixes", len(ps))
			}
			for i, p := range ps {
				if p == "" || checkPrefix("prefix", p) != nil {
					t.Fatalf("prefix %q is not a name's start", p)
				}
				if i > 0 && (ps[i-1] >= p || strings.HasPrefix(p, ps[i-1])) {
					t.Fatalf("prefixes %q are not sorted and disjoint", ps)
				}
			}
		}
	})
}

// BenchmarkEventsTenantCheck measures the parse of a 4 MiB events body
// whose events alternate between two lists of three sketches (so no list
// is shared with the previous event's and every name is checked), for an
// unlimited token and for one limited to four prefixes: the cost of
// checking every name of an events request.
//
//	go test -run '^$' -bench EventsTenantCheck -count 6 ./internal/server
func BenchmarkEventsTenantCheck(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"events":[`)
	for i := 0; sb.Len() < 4<<20; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":%d,"sketches":["team-d:dau:%d","team-d:wau:%d","shared:all"]}`, 1_000_000_000+i, i%2, i%2)
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	s := New(DefaultConfig(), Deps{})
	limited, err := parseTenant([]string{"prefix=team-a:", "prefix=team-b:", "prefix=team-d:", "prefix=shared:"})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		ctx  context.Context
	}{
		{"token=unlimited", context.Background()},
		{"token=4-prefixes", context.WithValue(context.Background(), keyTenant, limited)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			n := 0
			for b.Loop() {
				events, err := s.parseEvents(bc.ctx, body)
				if err != nil {
					b.Fatal(err)
				}
				n = len(events)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
