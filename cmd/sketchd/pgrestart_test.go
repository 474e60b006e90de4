package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
)

// TestPostgresRestart restarts PostgreSQL under a node taking writes from
// four clients: every answer is 200 or 503 (with Retry-After), /readyz
// says not ready while the database is away, the node takes writes again
// by itself, and nothing acknowledged is lost.
//
// It restarts a server, so it runs only on one of its own:
// SKETCHD_PG_RESTART_DSN names it and SKETCHD_PG_RESTART_CMD is the
// command that restarts it (for a cluster made with
// pg_createcluster 15 sketchdfault -p 5471: "pg_ctlcluster 15 sketchdfault
// restart").
func TestPostgresRestart(t *testing.T) {
	t.Parallel() // it asserts no timing
	dsn, restart := os.Getenv("SKETCHD_PG_RESTART_DSN"), os.Getenv("SKETCHD_PG_RESTART_CMD")
	if dsn == "" || restart == "" {
		if os.Getenv("SKETCHD_REQUIRE_PG_RESTART") == "1" {
			t.Fatal("SKETCHD_REQUIRE_PG_RESTART=1 but SKETCHD_PG_RESTART_DSN or SKETCHD_PG_RESTART_CMD is unset")
		}
		t.Skip("set SKETCHD_PG_RESTART_DSN and SKETCHD_PG_RESTART_CMD to a PostgreSQL server this test may restart")
	}
	ctx := context.Background()
	schema := fmt.Sprintf("sketchd_restart_%d", time.Now().UnixNano())
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS hll; CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	admin.Close(ctx)
	t.Cleanup(func() {
		if c, err := pgx.Connect(ctx, dsn); err == nil {
			c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			c.Close(ctx)
		}
	})
	sdsn := pgstoretest.WithSearchPath(dsn, schema)
	p := startProcess(t, filepath.Join(t.TempDir(), "unused.db"), "-postgres", sdsn, "-postgres-max-conns", "4")
	c := &cluster{t: t, dsn: sdsn, nodes: []*proc{p}}
	first := newClient(p.addr)
	var names []string
	for i := range 5 {
		n := fmt.Sprintf("r%d", i)
		names = append(names, n)
		first.must(t, http.StatusCreated, "PUT", "/v1/sketches/"+n, "application/json", []byte(`{"log2m":12}`), nil)
	}
	first.must(t, http.StatusCreated, "PUT", "/v1/sketches/counts", "application/json", []byte(`{"type":"cms","width":300,"depth":4}`), nil)

	var notReady atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		rc := newClient(p.addr)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if status, _, err := rc.do("GET", "/readyz", "", nil); err == nil && status == http.StatusServiceUnavailable {
				notReady.Store(true)
			}
		}
	})
	l := &clusterLedger{sent: map[string][]int64{}, acked: map[string][]int64{}}
	for i := range 4 {
		wg.Go(func() { l.client(c, uint64(100+i), names, stop) })
	}
	time.Sleep(time.Second)
	args := strings.Fields(restart)
	if out, err := execOutput(args[0], args[1:]...); err != nil {
		t.Fatalf("%s: %v\n%s", restart, err, out)
	}
	// Ready again by itself, then still taking writes.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if status, _, err := first.do("GET", "/readyz", "", nil); err == nil && status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the node did not become ready within 30s of the restart")
		}
		time.Sleep(50 * time.Millisecond)
	}
	before := l.ok.Load()
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	t.Logf("requests: %d acknowledged, %d refused with 503, %d cut off, %d other answers",
		l.ok.Load(), l.refused.Load(), l.unknown.Load(), l.other.Load())
	if n := l.other.Load(); n > 0 {
		t.Errorf("%d answers were neither 200 nor 503", n)
	}
	if l.refused.Load() == 0 {
		t.Error("no write was refused with 503: the restart went unnoticed, so the test proved nothing")
	}
	if !notReady.Load() {
		t.Error("/readyz never said not ready while PostgreSQL restarted")
	}
	if l.ok.Load() == before {
		t.Error("no write was acknowledged after the node was ready again")
	}
	l.check(t, sdsn, names, c)
}
