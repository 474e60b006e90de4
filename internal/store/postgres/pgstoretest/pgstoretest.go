// Package pgstoretest gives the PostgreSQL backend to the tests that run
// over every backend: storetest's conformance suite and the server's
// tests, on plain PostgreSQL (Backend) and on a Citus cluster (Citus).
// Each store lives in a schema of its own in the test database (pgtest),
// one per place the suite names, so tests run in parallel and a reopen
// finds the same data. On Citus the schema's tables are distributed by
// the migrations, as in production.
//
// Backend and Citus reuse schemas: when a test ends, its schema's tables
// are emptied and the schema goes to the next test of the process,
// already migrated (see pool). Schema and CitusSchema give a new schema,
// dropped when the test ends.
package pgstoretest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/pgtest"
	"github.com/sketchd/sketchd/internal/store/postgres"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// Backend opens a PostgreSQL store with opts in a schema of its own.
func Backend(opts postgres.Options) storetest.Backend {
	return backend("postgres", opts)
}

// Citus opens a store with opts in a schema of its own on the Citus
// coordinator pgtest.CitusDSN names (skipping without one).
func Citus(opts postgres.Options) storetest.Backend {
	return backend("citus", opts)
}

func backend(name string, opts postgres.Options) storetest.Backend {
	return storetest.Backend{
		Name: name,
		Open: func(tb testing.TB, place string) (storetest.Store, func() error) {
			tb.Helper()
			dsn := pooled(tb, name, place)
			o := opts
			if o.MaxConns == 0 {
				o.MaxConns = 4
			}
			db, err := postgres.Open(context.Background(), dsn, o)
			if err != nil {
				tb.Fatal(err)
			}
			return db, db.Close
		},
		WithClock: func(now func() time.Time) storetest.Backend {
			o := opts
			o.Now = now
			return backend(name, o)
		},
	}
}

// Schema creates (if needed) the schema that belongs to place, drops it
// when tb ends, and returns a connection string whose search_path puts it
// first (then public, where the hll extension lives).
func Schema(tb testing.TB, place string) string {
	tb.Helper()
	return SchemaOn(tb, pgtest.DSN(tb), place)
}

// CitusSchema is Schema on the Citus coordinator pgtest.CitusDSN names.
// Its tables get 4 shards each (citus.shard_count; the default 32 makes
// creating and dropping a test's schema several times slower, and the
// suite opens hundreds): still hash-distributed over every worker of a
// small cluster, which is what the tests need.
func CitusSchema(tb testing.TB, place string) string {
	tb.Helper()
	return WithSetting(SchemaOn(tb, pgtest.CitusDSN(tb), place), "citus.shard_count", "4")
}

// SchemaOn is Schema on the server dsn names (which must have the hll
// extension).
func SchemaOn(tb testing.TB, dsn, place string) string {
	tb.Helper()
	sum := sha256.Sum256([]byte(tb.Name() + "\x00" + place))
	schema := "sketchd_test_" + hex.EncodeToString(sum[:8])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			tb.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			tb.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return WithSearchPath(dsn, schema)
}

// WithSearchPath returns dsn with search_path set to schema, public.
func WithSearchPath(dsn, schema string) string {
	return WithSetting(dsn, "search_path", schema+",public")
}

// WithSetting returns dsn with the run-time setting key set to value on
// every connection (value must need no quoting).
func WithSetting(dsn, key, value string) string {
	if strings.Contains(dsn, "://") {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		return dsn + sep + key + "=" + value
	}
	return dsn + " " + key + "=" + value
}
