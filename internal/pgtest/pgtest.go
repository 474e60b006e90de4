// Package pgtest connects tests to a real PostgreSQL with the hll
// extension. Without one a test skips with a message saying how to provide
// it; with SKETCHD_REQUIRE_PG=1 (set by CI) it fails instead, so a missing
// server can never pass as green.
//
// The server is found through SKETCHD_PG_DSN (a libpq connection string or
// URL); the default is the local Unix socket as the current OS user, which
// is what .ci/run sets up.
package pgtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultDSN is used when SKETCHD_PG_DSN is unset.
const DefaultDSN = "host=/var/run/postgresql dbname=postgres"

// Connect returns a connection with the hll extension created, closed when
// the test ends, or skips (fails under SKETCHD_REQUIRE_PG=1) when there is
// none.
func Connect(tb testing.TB) *pgx.Conn {
	tb.Helper()
	dsn := os.Getenv("SKETCHD_PG_DSN")
	if dsn == "" {
		dsn = DefaultDSN
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		unavailable(tb, "cannot connect to PostgreSQL (%q): %v", dsn, err)
	}
	tb.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS hll"); err != nil {
		unavailable(tb, "PostgreSQL has no hll extension (install postgresql-15-hll): %v", err)
	}
	return conn
}

func unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("SKETCHD_REQUIRE_PG") == "1" {
		tb.Fatalf("SKETCHD_REQUIRE_PG=1 but "+format, args...)
	}
	tb.Skipf("skipping PostgreSQL interop test: "+format+" (set SKETCHD_PG_DSN to a server with the hll extension)", args...)
}

// DSN returns the connection string of the test server after checking
// that it answers and has the hll extension, or skips (fails under
// SKETCHD_REQUIRE_PG=1) when there is none.
func DSN(tb testing.TB) string {
	tb.Helper()
	Connect(tb)
	if dsn := os.Getenv("SKETCHD_PG_DSN"); dsn != "" {
		return dsn
	}
	return DefaultDSN
}
