package postgres_test

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/store/postgres"
	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
)

// BenchmarkUnionPrefix unions 10,000 HLL sketches (log2m=14, 1,000 ids
// each: EXPLICIT, 8 KB, 80 MB in all) on plain PostgreSQL and on Citus (SKETCHD_CITUS_DSN; a
// coordinator and its workers), two ways: by prefix, one SQL aggregate
// where the rows are (UnionPrefix), and by listing their names, which
// reads every sketch onto the node and unions them in Go (Union, as a
// union of listed names does). The sketches are written in SQL with
// postgresql-hll's own functions, with their checksums, before the clock
// starts.
//
//	go test -run '^$' -bench UnionPrefix -benchtime 5x ./internal/store/postgres
func BenchmarkUnionPrefix(b *testing.B) {
	const sketches, ids = 10000, 1000
	for _, backend := range []string{"postgres", "citus"} {
		b.Run("backend="+backend, func(b *testing.B) {
			var dsn string
			if backend == "citus" {
				dsn = pgstoretest.CitusSchema(b, b.TempDir())
			} else {
				dsn = pgstoretest.Schema(b, b.TempDir())
			}
			db, err := postgres.Open(ctx, dsn, postgres.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close(ctx)
			_, err = conn.Exec(ctx, `INSERT INTO sketchd_sketches (name, kind, params, hll, created_at, updated_at, checksum)
				SELECT name, 'hll', '{"log2m":14,"regwidth":5,"expthresh":-1,"sparse":true}', h, now(), now(),
				       decode(md5(decode(md5('sketch ' || name || ' hll'), 'hex') || hll_send(h)), 'hex')
				FROM (SELECT format('campaign:%s', lpad(s::text, 5, '0')) AS name,
				             hll_add_agg(hll_hash_bigint(s::bigint * 397 + i), 14, 5, -1, 1) AS h
				      FROM generate_series(1, $1) s, generate_series(1, $2) i GROUP BY s) x`, sketches, ids)
			if err != nil {
				b.Fatal(err)
			}
			names := make([]string, sketches)
			for i := range names {
				names[i] = fmt.Sprintf("campaign:%05d", i+1)
			}
			var want float64
			b.Run("by=prefix", func(b *testing.B) {
				for b.Loop() {
					u, n, err := db.UnionPrefix(ctx, "campaign:", "", 1_000_000)
					if err != nil || n != sketches {
						b.Fatalf("UnionPrefix: %d sketches, %v", n, err)
					}
					want = u.Estimate()
				}
				b.ReportMetric(float64(sketches)*float64(b.N)/b.Elapsed().Seconds(), "sketches/s")
			})
			b.Run("by=names", func(b *testing.B) {
				for b.Loop() {
					u, err := db.Union(ctx, names, "")
					if err != nil {
						b.Fatal(err)
					}
					if got := u.Estimate(); got != want {
						b.Fatalf("the union of the listed names estimates %v, the prefix union %v", got, want)
					}
				}
				b.ReportMetric(float64(sketches)*float64(b.N)/b.Elapsed().Seconds(), "sketches/s")
			})
		})
	}
}
