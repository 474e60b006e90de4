package postgres_test

import (
	"testing"

	"github.com/sketchd/sketchd/internal/store/postgres"
	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
)

// BenchmarkMetricEstimates is a /metrics scrape of 1,000 metric HLLs
// (log2m=14, FULL: 10 KB each, written in SQL with postgresql-hll's own
// functions and their checksums) on plain PostgreSQL, two ways: none
// changed since the last scrape, so each value is read and checked
// against its checksum but not decoded again (unchanged), and every one
// decoded, as each scrape did before the node remembered the estimates
// (decoded, the peer).
//
//	go test -run '^$' -bench MetricEstimates -count 6 ./internal/store/postgres
func BenchmarkMetricEstimates(b *testing.B) {
	const sketches = 1000
	dsn := pgstoretest.Schema(b, b.TempDir())
	db, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	_, err = db.Pool().Exec(ctx, `INSERT INTO sketchd_sketches (name, kind, params, metric, hll, created_at, updated_at, checksum)
		SELECT name, 'hll', '{"log2m":14,"regwidth":5,"expthresh":-1,"sparse":true}', true, h, now(), now(),
		       decode(md5(decode(md5('sketch ' || name || ' hll'), 'hex') || hll_send(h)), 'hex')
		FROM (SELECT format('m%04s', s) AS name, hll_add_agg(hll_hash_bigint(s::bigint * 100003 + i), 14, 5, -1, 1) AS h
		      FROM generate_series(1, $1) s, generate_series(1, 20000) i GROUP BY s) x`, sketches)
	if err != nil {
		b.Fatal(err)
	}
	scrape := func(b *testing.B) {
		n := 0
		db.MetricEstimates(func(string, float64) { n++ })
		if n != sketches {
			b.Fatalf("a scrape gave %d estimates, want %d", n, sketches)
		}
	}
	for _, remember := range []bool{true, false} {
		name := "unchanged"
		if !remember {
			name = "decoded"
		}
		b.Run(name, func(b *testing.B) {
			scrape(b)
			for b.Loop() {
				if !remember {
					db.ForgetEstimates()
				}
				scrape(b)
			}
		})
	}
}
