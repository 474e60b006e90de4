// Package pgstoretest gives the PostgreSQL backend to the tests that run
// over every backend: storetest's conformance suite and the server's
// tests. Each store lives in a schema of its own in the test database
// (pgtest), derived from the place the suite names, so tests run in
// parallel and a reopen finds the same data; the schema is dropped when
// the test ends.
package pgstoretest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/pgtest"
	"github.com/sketchd/sketchd/internal/store/postgres"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// Backend opens a PostgreSQL store with opts in a schema of its own.
func Backend(opts postgres.Options) storetest.Backend {
	return storetest.Backend{
		Name: "postgres",
		Open: func(tb testing.TB, place string) (storetest.Store, func() error) {
			tb.Helper()
			dsn := Schema(tb, place)
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
	}
}

// Schema creates (if needed) the schema that belongs to place, drops it
// when tb ends, and returns a connection string whose search_path puts it
// first (then public, where the hll extension lives).
func Schema(tb testing.TB, place string) string {
	tb.Helper()
	dsn := pgtest.DSN(tb)
	sum := sha256.Sum256([]byte(tb.Name() + "\x00" + place))
	schema := "sketchd_test_" + hex.EncodeToString(sum[:8])
	conn := pgtest.Connect(tb)
	ctx := context.Background()
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
	if strings.Contains(dsn, "://") {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		return dsn + sep + "search_path=" + schema + ",public"
	}
	return dsn + " search_path=" + schema + ",public"
}
