package pgstoretest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/pgtest"
)

// A pool keeps migrated schemas for the next test of the process.
// Creating a schema and migrating it took 126 ms on PostgreSQL and 413 ms
// on Citus (distributing four tables), emptying one and opening a store
// on it 67 and 150 ms; the server's suite opens about 170 stores on each.
//
// A schema is lent to a test for one place: every open of that place
// (a reopen, a crash) finds it. When the test ends it is emptied with
// TRUNCATE and given back, unless the test failed or the TRUNCATE did,
// in which case it is dropped. The schemas a process still holds when it
// exits are left behind; the next process on the same host drops those
// whose process is gone (their names carry the host and the pid).
type pool struct {
	mu    sync.Mutex
	free  map[string][]string // server DSN: emptied schemas
	lent  map[string]string   // server DSN + place: schema
	next  int
	swept map[string]bool // server DSN: stale schemas dropped
}

var schemas = &pool{free: map[string][]string{}, lent: map[string]string{}, swept: map[string]bool{}}

// poolPrefix starts the name of every pooled schema of this host.
var poolPrefix = func() string {
	host, _ := os.Hostname()
	sum := sha256.Sum256([]byte(host))
	return "sketchd_test_pool_" + hex.EncodeToString(sum[:4]) + "_"
}()

// pooled returns the connection string of a schema for place on the
// server the backend name uses (an emptied one from the pool, or a new
// one), lent to tb until it ends. On Citus, the tables a store creates
// there get 4 shards each, as in CitusSchema.
func pooled(tb testing.TB, name, place string) string {
	tb.Helper()
	server := pgtest.DSN(tb)
	setting := func(dsn string) string { return dsn }
	if name == "citus" {
		server = pgtest.CitusDSN(tb)
		setting = func(dsn string) string { return WithSetting(dsn, "citus.shard_count", "4") }
	}
	key := server + "\x00" + place
	schemas.mu.Lock()
	if s, ok := schemas.lent[key]; ok {
		schemas.mu.Unlock()
		return setting(WithSearchPath(server, s))
	}
	sweep := !schemas.swept[server]
	schemas.swept[server] = true
	var schema string
	if free := schemas.free[server]; len(free) > 0 {
		schema, schemas.free[server] = free[len(free)-1], free[:len(free)-1]
	} else {
		schemas.next++
		schema = poolPrefix + strconv.Itoa(os.Getpid()) + "_" + strconv.Itoa(schemas.next)
	}
	schemas.lent[key] = schema
	schemas.mu.Unlock()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	if sweep {
		if err := dropStale(ctx, conn); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { schemas.giveBack(tb, server, key, schema) })
	return setting(WithSearchPath(server, schema))
}

// giveBack empties schema and returns it to the pool, or drops it.
func (p *pool) giveBack(tb testing.TB, server, key, schema string) {
	p.mu.Lock()
	delete(p.lent, key)
	p.mu.Unlock()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		tb.Errorf("emptying schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if !tb.Failed() {
		if err := truncate(ctx, conn, schema); err == nil {
			p.mu.Lock()
			p.free[server] = append(p.free[server], schema)
			p.mu.Unlock()
			return
		}
	}
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		tb.Errorf("dropping schema %s: %v", schema, err)
	}
}

// truncate empties every table of schema but the migrations' record, in
// one statement.
func truncate(ctx context.Context, conn *pgx.Conn, schema string) error {
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename <> 'sketchd_schema_migrations' ORDER BY tablename`, schema)
	if err != nil {
		return err
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, pgx.Identifier{schema, t}.Sanitize())
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(tables) == 0 {
		return nil
	}
	_, err = conn.Exec(ctx, "TRUNCATE "+strings.Join(tables, ", "))
	return err
}

// dropStale drops the pooled schemas of this host whose process has
// exited.
func dropStale(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)`, poolPrefix)
	if err != nil {
		return err
	}
	var stale []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		pid, _, _ := strings.Cut(strings.TrimPrefix(n, poolPrefix), "_")
		if id, err := strconv.Atoi(pid); err == nil && !alive(id) {
			stale = append(stale, n)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, n := range stale {
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{n}.Sanitize()+" CASCADE"); err != nil {
			return fmt.Errorf("dropping the stale schema %s: %w", n, err)
		}
	}
	return nil
}
