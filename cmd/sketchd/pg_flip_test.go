package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
)

// pgFlipKinds are the create bodies (without braces) of the sketches and
// series of every registered kind TestStoredValueFlipsPostgres damages,
// keyed by type (and, for KLL, items). An HLL is added in every
// representation besides.
var pgFlipKinds = []struct{ key, body string }{
	{"cms", `"type":"cms","width":64,"depth":3,"topk":4`},
	{"theta", `"type":"theta","lg_k":10`},
	{"freq", `"type":"freq","lg_k":8`},
	{"ds_hll", `"type":"ds_hll","lg_k":10`},
	{"cpc", `"type":"cpc","lg_k":10`},
	{"zeta_hll", `"type":"zeta_hll"`},
	{"airlift_hll", `"type":"airlift_hll","index_bits":11`},
	{"bloom", `"type":"bloom","bits":8192,"hashes":3`},
	{"kll/double", `"type":"kll","k":100`},
	{"kll/long", `"type":"kll","k":100,"items":"long"`},
}

// pgRead is one request of the flip test.
type pgRead struct{ method, path, body string }

func (r pgRead) String() string { return r.method + " " + r.path }

// sketchReads are the read routes of the API that read the sketch n
// (with sib, a healthy sketch of its kind): each answers what it answers
// for n's kind (a 4xx where the route does not apply).
func sketchReads(n, sib string) []pgRead {
	two := fmt.Sprintf(`{"sketches":[%q,%q]}`, sib, n)
	p := "/v1/sketches/" + n
	return []pgRead{
		{"GET", p, ""}, {"GET", p + "/raw", ""}, {"GET", p + "/raw?format=hex", ""},
		{"POST", "/v1/union", two}, {"POST", "/v1/union", fmt.Sprintf(`{"prefix":%q}`, n)},
		{"POST", "/v1/union", fmt.Sprintf(`{"sketches":[%q,{"prefix":%q}]}`, sib, n)},
		{"POST", "/v1/intersection", two}, {"POST", "/v1/overlap", two},
		{"POST", "/v1/funnel", fmt.Sprintf(`{"steps":[%q,%q]}`, sib, n)},
		{"GET", p + "/frequency?id=1", ""}, {"POST", p + "/frequency", `{"ids":[1,2]}`},
		{"GET", p + "/top?k=3", ""}, {"GET", p + "/frequency_report", ""},
		{"POST", p + "/check", `{"ids":[1,2]}`}, {"GET", p + "/range?lo=0&hi=10", ""},
		{"GET", p + "/quantile?q=0.5", ""}, {"GET", p + "/rank?value=5", ""},
		{"GET", p + "/cdf?split=5", ""}, {"GET", p + "/pmf?split=5", ""},
	}
}

// seriesReads are the read routes that read the bucket [from, to) of the
// series s (whose bucket before it is healthy).
func seriesReads(s string, from, to time.Time) []pgRead {
	rng := "from=" + from.Format(time.RFC3339) + "&to=" + to.Format(time.RFC3339)
	prev := fmt.Sprintf(`{"series":%q,"from":%q,"to":%q}`, s, from.Add(-time.Hour).Format(time.RFC3339), from.Format(time.RFC3339))
	this := fmt.Sprintf(`{"series":%q,"from":%q,"to":%q}`, s, from.Format(time.RFC3339), to.Format(time.RFC3339))
	p := "/v1/series/" + s
	return []pgRead{
		{"GET", p, ""}, {"GET", p + "/raw?" + rng, ""}, {"GET", p + "/count?" + rng, ""},
		{"GET", p + "/timeseries?step=PT1H&" + rng, ""}, {"GET", p + "/top?k=3&" + rng, ""},
		{"GET", p + "/frequency_report?" + rng, ""}, {"POST", p + "/check?" + rng, `{"ids":[1,2]}`},
		{"GET", p + "/range?lo=0&hi=10&" + rng, ""}, {"GET", p + "/quantile?q=0.5&" + rng, ""},
		{"GET", p + "/rank?value=5&" + rng, ""}, {"GET", p + "/cdf?split=5&" + rng, ""},
		{"GET", p + "/pmf?split=5&" + rng, ""},
		{"POST", "/v1/union", `{"sketches":[` + prev + `,` + this + `]}`},
		{"POST", "/v1/overlap", `{"sketches":[` + prev + `,` + this + `]}`},
	}
}

// pgFlipTarget is a stored value the test damages: its row, how a
// damaged answer names it, the reads that depend on it and what each
// answered before, and the writes that must refuse it.
type pgFlipTarget struct {
	what   string // for the tally
	table  string
	where  string // the row: a condition on $3 and $4
	args   []any
	label  string
	list   string // the listing that must skip it and name it
	quoted string // its name as the listing's header gives it
	reads  []pgRead
	writes []pgRead
	before []pgAnswer
}

type pgAnswer struct {
	status int
	body   string
}

// TestStoredValueFlipsPostgres: on the PostgreSQL backend (and on Citus,
// with SKETCHD_CITUS_DSN), single bytes of the stored value of a sketch
// of every registered kind (an HLL in every representation) and of a
// series bucket of every kind are flipped with SQL UPDATE while sketchd
// runs. Every read route that answered 200 before must then answer 500
// with problem type damaged naming the sketch or bucket (a route that
// does not apply to the kind may keep its 4xx); none may answer 2xx:
// none is served silently. The listing answers 200 without it and names
// it in Sketchd-Unreadable; writes to it answer 500 damaged; each
// detection is logged and counted on /metrics. Flipped back, every read
// answers exactly as before. Before sketchd kept checksums of its own on
// this backend, most flips were served and the rest answered 500
// internal.
func TestStoredValueFlipsPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary over PostgreSQL")
	}
	// Minutes of requests, mostly waiting on the database; it asserts no
	// timing, and runs beside the binary's other long tests.
	t.Parallel()
	for _, b := range []struct {
		name   string
		schema func(testing.TB, string) string
	}{{"postgres", pgstoretest.Schema}, {"citus", pgstoretest.CitusSchema}} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			pgFlips(t, b.schema(t, t.TempDir()))
		})
	}
}

func pgFlips(t *testing.T, dsn string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	p := startProcess(t, filepath.Join(t.TempDir(), "unused.db"), "-postgres", dsn, "-postgres-max-conns", "4")
	c := newClient(p.addr)
	put := func(path, body string) {
		c.must(t, http.StatusCreated, "PUT", path, "application/json", []byte(body), nil)
	}
	// field is what an add's body lists for the kind key: values for a
	// KLL, ids for the others.
	field := func(key string) string {
		if strings.HasPrefix(key, "kll") {
			return "values"
		}
		return "ids"
	}
	add := func(key, path string, from, to int) {
		ids := make([]int, 0, to-from)
		for i := from; i < to; i++ {
			ids = append(ids, i)
		}
		c.must(t, http.StatusOK, "POST", path, "application/json", jsonBody(t, map[string]any{field(key): ids}), nil)
	}
	hour := time.Now().UTC().Truncate(time.Hour)
	ts := "?ts=" + hour.Format(time.RFC3339)
	prevTS := "?ts=" + hour.Add(-time.Hour).Format(time.RFC3339)

	// Every registered kind has a target.
	have := map[string]bool{"hll": true}
	for _, k := range pgFlipKinds {
		have[k.key] = true
	}
	for _, k := range sketch.Kinds() {
		key := string(k.Type)
		if kp, ok := k.Default().(sketch.KLLParams); ok {
			key += "/" + kp.Items.String()
		}
		if !have[key] {
			t.Errorf("kind %s (tag %d) has no flip target: add it to pgFlipKinds", key, k.Tag)
		}
	}

	var targets []*pgFlipTarget
	sketchTarget := func(key, what, name, body string, ids int) {
		for _, n := range []string{name, name + ".2"} {
			put("/v1/sketches/"+n, body)
			if ids > 0 {
				add(key, "/v1/sketches/"+n+"/add", 0, ids)
			}
		}
		targets = append(targets, &pgFlipTarget{
			what: what, table: "sketchd_sketches", where: "name = $3", args: []any{name},
			label: `sketch "` + name + `"`, list: "/v1/sketches?prefix=" + name, quoted: strconv.Quote(name),
			reads: sketchReads(name, name+".2"),
			writes: []pgRead{
				{"POST", "/v1/sketches/" + name + "/add", `{"` + field(key) + `":[1000001]}`},
				{"POST", "/v1/union", fmt.Sprintf(`{"sketches":[%q,%q],"into":%q}`, name+".2", name, name+".2")},
			},
		})
	}
	sketchTarget("hll", "hll EMPTY", "hll-empty", `{"log2m":11}`, 0)
	sketchTarget("hll", "hll EXPLICIT", "hll-explicit", `{"log2m":11}`, 5)
	sketchTarget("hll", "hll SPARSE", "hll-sparse", `{"log2m":14,"expthresh":0}`, 300)
	sketchTarget("hll", "hll FULL", "hll-full", `{"log2m":11}`, 20000)
	seriesKinds := append([]struct{ key, body string }{{"hll", `"log2m":11`}}, pgFlipKinds...)
	for _, k := range pgFlipKinds {
		sketchTarget(k.key, k.key, "k-"+strings.ReplaceAll(k.key, "/", "-"), "{"+k.body+"}", 3000)
	}
	for _, k := range seriesKinds {
		s := "s-" + strings.ReplaceAll(k.key, "/", "-")
		put("/v1/series/"+s, `{`+k.body+`,"tz":"UTC","levels":{"hour":"P2D"}}`)
		add(k.key, "/v1/series/"+s+"/add"+prevTS, 0, 300)
		add(k.key, "/v1/series/"+s+"/add"+ts, 100, 400)
		targets = append(targets, &pgFlipTarget{
			what: "series bucket " + k.key, table: "sketchd_series_buckets", where: "series = $3 AND level = 'hour' AND start = $4", args: []any{s, hour},
			label: fmt.Sprintf("bucket hour %s of series %q", hour.Format(time.RFC3339), s), list: "/v1/series?prefix=" + s, quoted: strconv.Quote(s),
			reads: seriesReads(s, hour, hour.Add(time.Hour)),
			writes: []pgRead{
				{"POST", "/v1/series/" + s + "/add" + ts, `{"` + field(k.key) + `":[1000001]}`},
				{"POST", "/v1/events", fmt.Sprintf(`{"events":[{"id":1,"ts":%q,"series":[%q]}]}`, hour.Format(time.RFC3339), s)},
			},
		})
	}

	// The answers before any damage; the reads that apply to each kind.
	applies := 0
	for _, tg := range targets {
		n := 0
		for _, r := range tg.reads {
			a := pgDo(t, c, r)
			if a.status >= 500 {
				t.Fatalf("%s: %s answered %d before any damage: %s", tg.what, r, a.status, a.body)
			}
			if a.status < 300 {
				n++
			}
			tg.before = append(tg.before, a)
		}
		if n < 3 {
			t.Errorf("%s: only %d read routes answer 200; the test reads too little of it", tg.what, n)
		}
		applies += n
	}

	r := rand.New(rand.NewPCG(11, 0))
	flips, loud := 0, 0
	failures := func() float64 { return metricValue(t, c, "sketchd_store_checksum_failures_total") }
	for _, tg := range targets {
		var n int
		if err := conn.QueryRow(ctx, `SELECT octet_length(coalesce(hll_send(hll), data)) FROM `+tg.table+` WHERE `+strings.NewReplacer("$3", "$1", "$4", "$2").Replace(tg.where), tg.args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		// Every route meets damage in the header, the body and the last
		// byte. Which bytes are caught is the store's to show, and its
		// tests flip every byte of a short value and 24 of a long one
		// (internal/store/postgres, TestDamagedSketchIsLoud and
		// TestDamagedBucketIsLoud): here each flip is read through
		// every route, twice, at 1.2 MB for a Bloom filter.
		ats := []int{0, n / 2, n - 1}
		for _, at := range ats {
			mask := 1 + r.IntN(255)
			where := fmt.Sprintf("%s, byte %d of %d ^ %#02x", tg.what, at, n, mask)
			flip := func() {
				t.Helper()
				tag, err := conn.Exec(ctx, `UPDATE `+tg.table+` SET
					hll = CASE WHEN hll IS NOT NULL THEN set_byte(hll_send(hll), $1, get_byte(hll_send(hll), $1) # $2)::hll END,
					data = CASE WHEN data IS NOT NULL THEN set_byte(data, $1, get_byte(data, $1) # $2) END
					WHERE `+tg.where, append([]any{at, mask}, tg.args...)...)
				if err != nil || tag.RowsAffected() != 1 {
					t.Fatalf("%s: flipping: %v, %v", where, tag, err)
				}
			}
			flip()
			flips++
			before := failures()
			silent := false
			for i, rd := range tg.reads {
				a := pgDo(t, c, rd)
				switch {
				case a.status == http.StatusInternalServerError && pgDamaged(a.body, tg.label):
				case a.status == tg.before[i].status && a.status >= 400:
					// The route does not apply to the kind: refused as before.
				default:
					silent = silent || a.status < 300
					t.Errorf("%s: %s = %d %.300s; want 500 damaged naming %s", where, rd, a.status, a.body, tg.label)
				}
			}
			for _, wr := range tg.writes {
				if a := pgDo(t, c, wr); a.status != http.StatusInternalServerError || !pgDamaged(a.body, tg.label) {
					t.Errorf("%s: the write %s = %d %.300s; want 500 damaged naming %s", where, wr, a.status, a.body, tg.label)
				}
			}
			if got := pgUnreadable(t, c, tg.list); got != tg.quoted {
				t.Errorf("%s: GET %s names %q in Sketchd-Unreadable, want %s", where, tg.list, got, tg.quoted)
			}
			if !silent {
				loud++
			}
			if failures() <= before {
				t.Errorf("%s: sketchd_store_checksum_failures_total did not grow", where)
			}
			flip()
			for i, rd := range tg.reads {
				if a := pgDo(t, c, rd); a != tg.before[i] {
					t.Fatalf("%s: flipped back, %s = %d %.300s; before the damage %d %.300s", where, rd, a.status, a.body, tg.before[i].status, tg.before[i].body)
				}
			}
		}
	}
	t.Logf("%d flips of %d stored values (%d reads that apply to their kinds): %d loud, %d served silently", flips, len(targets), applies, loud, flips-loud)
	if unreadable := metricValue(t, c, "sketchd_store_unreadable_records_total"); unreadable == 0 {
		t.Error("sketchd_store_unreadable_records_total = 0 after listings that skipped damaged values")
	}
	log := p.log()
	for _, tg := range targets {
		if !strings.Contains(log, strconv.Quote(tg.label)[1:len(strconv.Quote(tg.label))-1]) {
			t.Errorf("the log never names %s", tg.label)
		}
	}
	if !strings.Contains(log, "stored record is unreadable") {
		t.Errorf("the log lacks the damage:\n%.3000s", log)
	}
	// DELETE removes a damaged sketch.
	if _, err := conn.Exec(ctx, `UPDATE sketchd_sketches SET data = set_byte(data, 3, get_byte(data, 3) # 1) WHERE name = 'k-cms'`); err != nil {
		t.Fatal(err)
	}
	c.must(t, http.StatusNoContent, "DELETE", "/v1/sketches/k-cms", "", nil, nil)
	c.must(t, http.StatusNotFound, "GET", "/v1/sketches/k-cms", "", nil, nil)
}

// pgDo sends r and returns its answer.
func pgDo(t *testing.T, c *client, r pgRead) pgAnswer {
	t.Helper()
	ct := ""
	if r.body != "" {
		ct = "application/json"
	}
	status, b, err := c.do(r.method, r.path, ct, []byte(r.body))
	if err != nil {
		t.Fatalf("%s: %v", r, err)
	}
	// A problem's request id is the request's own.
	return pgAnswer{status, requestID.ReplaceAllString(string(b), "")}
}

var requestID = regexp.MustCompile(`,"request_id":"[0-9a-f]+"`)

// pgDamaged reports whether body is the problem of type damaged whose
// detail names label.
func pgDamaged(body, label string) bool {
	var p struct{ Type, Detail string }
	return json.Unmarshal([]byte(body), &p) == nil && p.Type == "urn:sketchd:problem:damaged" && strings.Contains(p.Detail, label+" is damaged")
}

// pgUnreadable returns the Sketchd-Unreadable header of a listing, which
// must answer 200.
func pgUnreadable(t *testing.T, c *client, path string) string {
	t.Helper()
	resp, err := c.http.Get(c.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s = %d, want 200", path, resp.StatusCode)
	}
	return resp.Header.Get("Sketchd-Unreadable")
}
