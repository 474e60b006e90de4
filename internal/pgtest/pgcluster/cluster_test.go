package pgcluster

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestStartWhilePortTaken: a node whose port something else holds for a
// moment starts once it is let go.
func TestStartWhilePortTaken(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL instance")
	}
	c := StartCitus(t, 0)
	n := c.Coordinator
	c.Stop(n, "fast")
	ln, err := net.Listen("tcp", n.Addr())
	if err != nil {
		t.Fatalf("holding the stopped node's port: %v", err)
	}
	go func() {
		time.Sleep(1500 * time.Millisecond)
		ln.Close()
	}()
	c.Start(n)
	c.Exec(n, "SELECT 1")
}

// TestPostgresCanWriteNamesMissingRunuser: without runuser on PATH the
// error says so, rather than blaming the folder's modes.
func TestPostgresCanWriteNamesMissingRunuser(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := postgresCanWrite(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "runuser, which is not on PATH") || strings.Contains(err.Error(), "mode 700") {
		t.Errorf("postgresCanWrite without runuser = %v, want an error naming runuser", err)
	}
}

// TestSpareJoinsOnAddWorker: a spare runs, outside the cluster, until
// AddWorker registers it, and the next AddWorker starts an instance of
// its own.
func TestSpareJoinsOnAddWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL instances")
	}
	c := StartCitusWithSpares(t, 0, 1)
	conn, err := pgx.Connect(context.Background(), c.DSN(c.Coordinator))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	registered := func() []int {
		rows, err := conn.Query(context.Background(), `SELECT nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeid`)
		if err != nil {
			t.Fatal(err)
		}
		ports, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			t.Fatal(err)
		}
		return ports
	}
	if len(c.spares) != 1 || len(c.Workers) != 0 {
		t.Fatalf("%d spares and %d workers, want 1 and 0", len(c.spares), len(c.Workers))
	}
	spare := c.spares[0]
	c.Exec(spare, "SELECT 1") // running
	if got := registered(); len(got) != 0 {
		t.Fatalf("workers %v before AddWorker, want none", got)
	}
	if n := c.AddWorker(); n != spare {
		t.Errorf("AddWorker added port %d, want the spare's %d", n.Port, spare.Port)
	}
	second := c.AddWorker()
	if got := registered(); !slices.Equal(got, []int{spare.Port, second.Port}) || second == spare {
		t.Errorf("workers %v after two AddWorker, want the spare's %d and a new one", got, spare.Port)
	}
}
