package server

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/pgtest"
)

// importBody is a series of log2m-12 HLLs in UTC keeping the README's
// levels, taking adds up to 90 days late.
const importBody = `{"log2m":12,"tz":"UTC","levels":{"hour":"P14D","day":"P400D","month":"P5Y"},"late_limit":"P90D"}`

type importAnswer struct {
	Buckets []struct {
		Level  string
		Start  time.Time
		Action string
	}
}

// bucketPath is the route of one bucket of series s.
func bucketPath(level string, start time.Time) string {
	return "/v1/series/s/buckets/" + level + "/" + url.PathEscape(start.Format(time.RFC3339))
}

func pgHex(b []byte) string { return `\x` + hex.EncodeToString(b) }

// count answers the series' count over [from, to).
func (e *env) count(tb testing.TB, from, to time.Time) float64 {
	tb.Helper()
	var c countAnswer
	decode(tb, must(tb, e.get(tb, "/v1/series/s/count?from="+rfc(from)+"&to="+rfc(to)), http.StatusOK, "count").Body, &c)
	return c.Cardinality
}

// TestSeriesImport: one bucket replaced or merged from uploaded bytes
// (binary or \x hex, folded on request), a month of buckets from one
// NDJSON body; range counts see them as they see adds; every refusal is
// a 4xx problem and changes nothing.
func TestSeriesImport(t *testing.T) {
	t.Parallel()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", importBody), http.StatusCreated, "create")
	p := hll.DefaultParams()
	p.Log2m = 12
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -40)
	next := day.AddDate(0, 0, 1)
	a, b := idRange(0, 3000), idRange(2000, 5000)

	var ans importAnswer
	decode(t, must(t, e.send(t, http.MethodPut, bucketPath("day", day), "application/octet-stream", string(encode(t, hllOf(t, p, a...)))), http.StatusOK, "put a day").Body, &ans)
	if len(ans.Buckets) != 2 || ans.Buckets[0].Level != "day" || !ans.Buckets[0].Start.Equal(day) || ans.Buckets[0].Action != "replaced" ||
		ans.Buckets[1].Level != "month" || ans.Buckets[1].Action != "rolled_up" {
		t.Errorf("PUT a day = %+v, want the day replaced and its month rolled up", ans)
	}
	if got, want := e.count(t, day, next), hllOf(t, p, a...).Estimate(); got != want {
		t.Errorf("count of the imported day = %v, want %v", got, want)
	}
	must(t, e.send(t, http.MethodPost, bucketPath("day", day), "text/plain", pgHex(encode(t, hllOf(t, p, b...)))), http.StatusOK, "merge into the day")
	ab := slices.Concat(a, b)
	if got, want := e.count(t, day, next), hllOf(t, p, ab...).Estimate(); got != want {
		t.Errorf("count after a merge = %v, want %v", got, want)
	}
	// A month holding the day answers from the month bucket.
	month := time.Date(day.Year(), day.Month(), 1, 0, 0, 0, 0, time.UTC)
	if got, want := e.count(t, month, month.AddDate(0, 1, 0)), hllOf(t, p, ab...).Estimate(); got != want {
		t.Errorf("count of the month = %v, want %v (the rolled-up imports)", got, want)
	}
	// More registers: 409 unless folded; fewer: never.
	p14 := hll.DefaultParams()
	big := encode(t, hllOf(t, p14, idRange(9000, 9500)...))
	checkProblem(t, e.send(t, http.MethodPut, bucketPath("day", next), "application/octet-stream", string(big)), http.StatusConflict)
	must(t, e.send(t, http.MethodPut, bucketPath("day", next)+"?fold=true", "application/octet-stream", string(big)), http.StatusOK, "put folded")
	folded, err := hllOf(t, p14, idRange(9000, 9500)...).Fold(12, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.count(t, next, next.AddDate(0, 0, 1)), folded.Estimate(); got != want {
		t.Errorf("count of a folded import = %v, want %v", got, want)
	}
	p11 := hll.DefaultParams()
	p11.Log2m = 11
	checkProblem(t, e.send(t, http.MethodPut, bucketPath("day", next)+"?fold=true", "application/octet-stream", string(encode(t, hllOf(t, p11, 1, 2, 3)))), http.StatusConflict)

	// A month of days in one body, hex and base64 lines.
	first := day.AddDate(0, 0, -35)
	var body strings.Builder
	var all []int64
	for i := range 30 {
		ids := idRange(int64(100000+i*500), int64(100000+i*500+800))
		all = append(all, ids...)
		raw := encode(t, hllOf(t, p, ids...))
		enc := pgHex(raw)
		if i%2 == 1 {
			enc = base64.StdEncoding.EncodeToString(raw)
		}
		fmt.Fprintf(&body, `{"level":"day","start":%q,"bytes":%q}`+"\r\n", first.AddDate(0, 0, i).Format(time.RFC3339), enc)
	}
	decode(t, must(t, e.send(t, http.MethodPut, "/v1/series/s/buckets", "application/x-ndjson", body.String()+"\n"), http.StatusOK, "bulk").Body, &ans)
	days := 0
	for _, bk := range ans.Buckets {
		if bk.Level == "day" && bk.Action == "replaced" {
			days++
		}
	}
	if days != 30 || ans.Buckets[len(ans.Buckets)-1].Action != "rolled_up" {
		t.Errorf("bulk import: %d days replaced in %+v, want 30 and months rolled up", days, ans)
	}
	if got, want := e.count(t, first, first.AddDate(0, 0, 30)), hllOf(t, p, all...).Estimate(); got != want {
		t.Errorf("count of 30 imported days = %v, want %v", got, want)
	}

	// Refusals change nothing.
	before := e.count(t, first.AddDate(0, 0, -5), next.AddDate(0, 0, 1))
	small := string(encode(t, hllOf(t, p, 7, 8, 9)))
	line := func(level string, start time.Time) string {
		return fmt.Sprintf(`{"level":%q,"start":%q,"bytes":%q}`, level, start.Format(time.RFC3339), pgHex([]byte(small)))
	}
	ok := line("day", first)
	cms := `{"type":"cms","width":64,"depth":2}`
	e.create(t, "c", cms)
	cmsBytes := e.raw(t, "c")
	nd, oct := "application/x-ndjson", "application/octet-stream"
	for _, c := range []struct {
		name, method, path, ctype, body string
		want                            int
	}{
		{"unknown level", "PUT", "/v1/series/s/buckets/fortnight/" + first.Format(time.RFC3339), oct, small, 400},
		{"bad start", "PUT", "/v1/series/s/buckets/day/yesterday", oct, small, 400},
		{"start inside a day", "PUT", bucketPath("day", first.Add(time.Hour)), oct, small, 400},
		{"level not kept", "PUT", bucketPath("week", first.AddDate(0, 0, -int(first.Weekday()+6)%7)), oct, small, 409},
		{"expired hour", "PUT", bucketPath("hour", first), oct, small, 422},
		{"future day", "PUT", bucketPath("day", time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 3)), oct, small, 422},
		{"missing series", "PUT", "/v1/series/none/buckets/day/" + first.Format(time.RFC3339), oct, small, 404},
		{"garbage bytes", "PUT", bucketPath("day", first), oct, "garbage", 400},
		{"cms into hll", "PUT", bucketPath("day", first), oct, string(cmsBytes), 409},
		{"unknown query", "PUT", bucketPath("day", first) + "?x=1", oct, small, 400},
		{"json body", "PUT", bucketPath("day", first), "application/json", `{}`, 415},
		{"bulk: not ndjson", "PUT", "/v1/series/s/buckets", "application/json", ok, 415},
		{"bulk: empty", "PUT", "/v1/series/s/buckets", nd, "\n\n", 400},
		{"bulk: unknown member", "PUT", "/v1/series/s/buckets", nd, ok + "\n" + `{"level":"day","start":"2026-01-01T00:00:00Z","bytes":"\\x00","x":1}`, 400},
		{"bulk: missing bytes", "PUT", "/v1/series/s/buckets", nd, `{"level":"day","start":"2026-01-01T00:00:00Z"}`, 400},
		{"bulk: repeated member", "PUT", "/v1/series/s/buckets", nd, `{"level":"day","level":"day","start":"2026-01-01T00:00:00Z","bytes":"\\x00"}`, 400},
		{"bulk: bad base64", "PUT", "/v1/series/s/buckets", nd, ok + "\n" + fmt.Sprintf(`{"level":"day","start":%q,"bytes":"%%%%"}`, first.Format(time.RFC3339)), 400},
		{"bulk: bad hex", "PUT", "/v1/series/s/buckets", nd, fmt.Sprintf(`{"level":"day","start":%q,"bytes":"\\xzz"}`, first.Format(time.RFC3339)), 400},
		{"bulk: not an object", "PUT", "/v1/series/s/buckets", nd, `[1,2]`, 400},
		{"bulk: trailing data", "PUT", "/v1/series/s/buckets", nd, ok + ` {}`, 400},
		{"bulk: named twice", "POST", "/v1/series/s/buckets", nd, ok + "\n" + ok, 400},
		{"bulk: last line expired", "PUT", "/v1/series/s/buckets", nd, ok + "\n" + line("hour", first), 422},
		{"bulk: last line undecodable", "PUT", "/v1/series/s/buckets", nd, ok + "\n" + fmt.Sprintf(`{"level":"day","start":%q,"bytes":"\\x00"}`, first.AddDate(0, 0, 1).Format(time.RFC3339)), 400},
		{"bulk: too many lines", "PUT", "/v1/series/s/buckets", nd, strings.Repeat(ok+"\n", 10001), 413},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkProblem(t, e.send(t, c.method, c.path, c.ctype, c.body), c.want)
		})
	}
	if after := e.count(t, first.AddDate(0, 0, -5), next.AddDate(0, 0, 1)); after != before {
		t.Errorf("refused imports changed the series: count %v, was %v", after, before)
	}
}

// TestSeriesImportBodyLimit: a bulk import is bounded by -max-body.
func TestSeriesImportBodyLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *Config) { c.MaxBody = 4096 }))
	if _, ok := e.db.Store.(SeriesStore); !ok {
		t.Skip("no series on this backend")
	}
	must(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", importBody), http.StatusCreated, "create")
	line := fmt.Sprintf(`{"level":"day","start":%q,"bytes":"\\x118b7f"}`, time.Now().UTC().Truncate(24*time.Hour).Format(time.RFC3339))
	checkProblem(t, e.send(t, http.MethodPut, "/v1/series/s/buckets", "application/x-ndjson", strings.Repeat(line+"\n", 100)), http.StatusRequestEntityTooLarge)
}

// TestSeriesImportPostgreSQL loads 60 days of history into a three-level
// series: odd days by adds stamped in them (older than the hour level
// keeps, so they go to days and months), even days as buckets built in
// PostgreSQL with hll_add_agg per day and imported in one NDJSON body,
// and a few days by both. Every count over day-aligned ranges inside
// them equals PostgreSQL's hll_union_agg of the same days, to 1e-9.
func TestSeriesImportPostgreSQL(t *testing.T) {
	t.Parallel()
	conn := pgtest.Connect(t)
	ctx := t.Context()
	e := seriesEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/series/s", "application/json", importBody), http.StatusCreated, "create")
	table := fmt.Sprintf("import_events_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE TEMP TABLE "+table+" (day date, user_id bigint)"); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(26, 2))
	today := time.Now().UTC().Truncate(24 * time.Hour)
	first := today.AddDate(0, 0, -61)
	var nd strings.Builder
	for i := range 60 {
		d := first.AddDate(0, 0, i)
		// Users come back: ids are drawn from a pool that grows by day.
		n := 200 + r.IntN(3000)
		ids := make([]int64, n)
		for j := range ids {
			ids[j] = r.Int64N(int64(20000 + 500*i))
		}
		if _, err := conn.Exec(ctx, "INSERT INTO "+table+" SELECT $1::date, x FROM unnest($2::bigint[]) x", d.Format("2006-01-02"), ids); err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 || i%7 == 0 {
			must(t, e.postJSON(t, "/v1/series/s/add?ts="+rfc(d.Add(13*time.Hour)), idsJSON(ids...)), http.StatusOK, "add")
		}
		if i%2 == 0 {
			var h string
			if err := conn.QueryRow(ctx, "SELECT hll_add_agg(hll_hash_bigint(user_id), 12, 5, -1, 1)::text FROM "+table+" WHERE day = $1", d.Format("2006-01-02")).Scan(&h); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&nd, `{"level":"day","start":%q,"bytes":%q}`+"\n", d.Format(time.RFC3339), h)
		}
	}
	// POST merges: the days that also had adds keep them.
	must(t, e.send(t, http.MethodPost, "/v1/series/s/buckets", "application/x-ndjson", nd.String()), http.StatusOK, "import")
	ranges := [][2]int{{0, 60}, {0, 1}, {59, 60}, {3, 34}}
	for range 20 {
		a := r.IntN(60)
		ranges = append(ranges, [2]int{a, a + 1 + r.IntN(60-a)})
	}
	for _, rg := range ranges {
		from, to := first.AddDate(0, 0, rg[0]), first.AddDate(0, 0, rg[1])
		var pg float64
		if err := conn.QueryRow(ctx, "SELECT hll_cardinality(hll_union_agg(h)) FROM (SELECT hll_add_agg(hll_hash_bigint(user_id), 12, 5, -1, 1) h FROM "+table+" WHERE day >= $1 AND day < $2 GROUP BY day) d",
			from.Format("2006-01-02"), to.Format("2006-01-02")).Scan(&pg); err != nil {
			t.Fatal(err)
		}
		if got := e.count(t, from, to); math.Abs(got-pg) > 1e-9*max(1, pg) {
			t.Errorf("days [%d, %d): sketchd %v, PostgreSQL %v", rg[0], rg[1], got, pg)
		}
	}
}
