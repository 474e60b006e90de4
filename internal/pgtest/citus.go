package pgtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// CitusDSN returns the connection string of the Citus coordinator that
// SKETCHD_CITUS_DSN names, after checking that it answers, has the citus
// and hll extensions and at least one active worker. Without one the test
// skips with a message saying how to start a cluster; with
// SKETCHD_REQUIRE_CITUS=1 (set by CI) it fails instead.
//
// The cluster is shared by every test that runs at the same time: tests
// isolate themselves in schemas of their own and never stop its nodes.
// Tests that stop workers or move shards start a cluster of their own
// (pgcluster.StartCitus).
func CitusDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv("SKETCHD_CITUS_DSN")
	if dsn == "" {
		CitusUnavailable(tb, "SKETCHD_CITUS_DSN is unset")
	}
	ConnectCitus(tb, dsn)
	return dsn
}

// ConnectCitus connects to the Citus coordinator at dsn, closed when the
// test ends, and checks it as CitusDSN does.
func ConnectCitus(tb testing.TB, dsn string) *pgx.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		CitusUnavailable(tb, "cannot connect to the Citus coordinator (%q): %v", dsn, err)
	}
	tb.Cleanup(func() { conn.Close(context.Background()) })
	var version string
	if err := conn.QueryRow(ctx, "SELECT extversion FROM pg_extension WHERE extname = 'citus'").Scan(&version); err != nil {
		CitusUnavailable(tb, "%q has no citus extension: %v", dsn, err)
	}
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS hll"); err != nil {
		CitusUnavailable(tb, "the Citus coordinator has no hll extension (install postgresql-15-hll on every node): %v", err)
	}
	var workers int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM citus_get_active_worker_nodes()").Scan(&workers); err != nil || workers == 0 {
		CitusUnavailable(tb, "the Citus coordinator %q has no active worker (%d, %v)", dsn, workers, err)
	}
	return conn
}

// CitusUnavailable skips the test, saying why no Citus cluster is there
// and how to get one, or fails it under SKETCHD_REQUIRE_CITUS=1.
func CitusUnavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("SKETCHD_REQUIRE_CITUS") == "1" {
		tb.Fatalf("SKETCHD_REQUIRE_CITUS=1 but "+format, args...)
	}
	tb.Skipf("skipping Citus test: "+format+"; "+citusHowTo, args...)
}

// citusHowTo says where a Citus cluster for the tests comes from. The
// scripts CI uses (../shared/citus/) live beside its checkout, not in the
// repository, so the hint names what anyone can do.
const citusHowTo = "set SKETCHD_CITUS_DSN to a Citus 13 coordinator with at least one worker, postgresql-hll on every node (install Citus's own packages: docs/scale-out.md, \"Citus\"); the fault tests start clusters of their own from the PostgreSQL binaries in SKETCHD_PG_BIN, which need citus.so installed there"
