package pgcluster

import (
	"net"
	"strings"
	"testing"
	"time"
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
