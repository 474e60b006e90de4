package pgcluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/pgtest"
)

// Cluster is a Citus cluster of one test's own: a coordinator and
// workers, each a PostgreSQL instance in a temporary directory on a free
// port, for tests that stop workers, move shards or add nodes, which the
// shared cluster (CitusDSN) must never see. It needs PostgreSQL's server
// binaries (SKETCHD_PG_BIN, default /usr/lib/postgresql/15/bin) with the
// citus and hll extensions installed; without them the test skips, or
// fails under SKETCHD_REQUIRE_CITUS=1. Run as root, the instances run as
// the user postgres. The cluster is stopped and removed when the test
// ends.
type Cluster struct {
	tb   testing.TB
	bin  string
	dir  string
	conf []string

	mu          sync.Mutex
	Coordinator *Node
	Workers     []*Node
	// spares are instances started with the cluster and not registered,
	// for AddWorker (StartCitusWithSpares).
	spares []*Node
	// all is every node started, registered or not, for remove.
	all []*Node
	// net is the cluster's network namespaces, or nil (StartCitusNetns).
	net *netns
}

// Node is one PostgreSQL instance of a Cluster.
type Node struct {
	Port int
	data string
	log  string
	// host is the address it listens on and the cluster's metadata names
	// it by; ns the network namespace it runs in ("" for this one's).
	host, ns string
}

// Addr is the node's address as the cluster's metadata names it.
func (n *Node) Addr() string { return n.hostname() + ":" + strconv.Itoa(n.Port) }

// Host is the node's host as the cluster's metadata names it.
func (n *Node) Host() string { return n.hostname() }

func (n *Node) hostname() string {
	if n.host == "" {
		return "127.0.0.1"
	}
	return n.host
}

// StartCitus starts a cluster with a coordinator (which holds no shards)
// and workers workers, with the citus and hll extensions created on each
// and the workers registered. conf are extra postgresql.conf lines for
// every node ("wal_level = logical").
func StartCitus(tb testing.TB, workers int, conf ...string) *Cluster {
	tb.Helper()
	return StartCitusWithSpares(tb, workers, 0, conf...)
}

// StartCitusWithSpares is StartCitus that also starts spares instances
// like the workers, at the same time, and leaves them out of the cluster
// until AddWorker registers one: a test that adds a worker under load
// then waits for the registration and the rebalance only, not for an
// initdb and the extensions.
func StartCitusWithSpares(tb testing.TB, workers, spares int, conf ...string) *Cluster {
	tb.Helper()
	c := newCluster(tb, conf)
	nodes := c.newNodes(make([]nodeAt, 1+workers+spares)...)
	// Workers is capped: AddWorker appends to it, and must not write
	// over the spares.
	c.Coordinator, c.Workers, c.spares = nodes[0], nodes[1:1+workers:1+workers], nodes[1+workers:]
	c.register()
	return c
}

// register names the coordinator and adds the workers.
func (c *Cluster) register() {
	c.tb.Helper()
	c.Exec(c.Coordinator, fmt.Sprintf("SELECT citus_set_coordinator_host('%s', %d)", c.Coordinator.hostname(), c.Coordinator.Port))
	for _, w := range c.Workers {
		c.Exec(c.Coordinator, fmt.Sprintf("SELECT citus_add_node('%s', %d)", w.hostname(), w.Port))
	}
}

// newCluster checks for the server binaries and citus, and makes the
// cluster's directory.
func newCluster(tb testing.TB, conf []string) *Cluster {
	tb.Helper()
	bin := os.Getenv("SKETCHD_PG_BIN")
	if bin == "" {
		bin = "/usr/lib/postgresql/15/bin"
	}
	out, err := exec.Command(filepath.Join(bin, "pg_config"), "--pkglibdir").Output()
	if err != nil {
		pgtest.CitusUnavailable(tb, "no PostgreSQL server binaries in %s (SKETCHD_PG_BIN): %v", bin, err)
	}
	lib := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(lib, "citus.so")); err != nil {
		pgtest.CitusUnavailable(tb, "citus is not installed in %s", lib)
	}
	dir, err := os.MkdirTemp("", "sketchd-citus-")
	if err != nil {
		tb.Fatal(err)
	}
	c := &Cluster{tb: tb, bin: bin, dir: dir, conf: conf}
	tb.Cleanup(c.remove)
	if err := c.chownPostgres(dir); err != nil {
		tb.Fatal(err)
	}
	return c
}

// chownPostgres gives dir to the user postgres when running as root (the
// instances run as postgres), and checks that postgres can write it.
func (c *Cluster) chownPostgres(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	pg, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("running as root, the instances run as postgres, which does not exist: %v", err)
	}
	uid, _ := strconv.Atoi(pg.Uid)
	gid, _ := strconv.Atoi(pg.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return err
	}
	return postgresCanWrite(dir)
}

// postgresCanWrite checks, as root, that the user postgres can write dir,
// asking runuser, and says which of the two is wrong when not: runuser
// missing (util-linux) or a folder postgres cannot reach.
func postgresCanWrite(dir string) error {
	runuser, err := exec.LookPath("runuser")
	if err != nil {
		return fmt.Errorf("running as root, the instances run as the user postgres through runuser, which is not on PATH (%v): install util-linux", err)
	}
	out, err := exec.Command(runuser, "-u", "postgres", "--", "test", "-w", dir).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit) && exit.ExitCode() == 1 && len(out) == 0:
		// test -w answered no.
		return fmt.Errorf("the user postgres cannot write %s (is a parent folder mode 700? set TMPDIR to a folder it can reach)", dir)
	default:
		return fmt.Errorf("runuser -u postgres -- test -w %s: %v %s", dir, err, bytes.TrimSpace(out))
	}
}

// nodeAt names where a new node runs: in network namespace ns ("" for
// this one's), named host ("" for 127.0.0.1).
type nodeAt struct{ ns, host string }

// newNode initialises, configures and starts an instance with the
// extensions created: on 127.0.0.1 in this network namespace, or in
// namespace ns listening on every address there, named host.
func (c *Cluster) newNode(ns, host string) *Node {
	c.tb.Helper()
	return c.newNodes(nodeAt{ns, host})[0]
}

// newNodes makes the nodes at once: each start and CREATE EXTENSION (and
// the first initdb: initdbTemplate) takes seconds, most of them spent
// waiting on the disk and the server, so a cluster starts in about the
// time of one node.
func (c *Cluster) newNodes(at ...nodeAt) []*Node {
	c.tb.Helper()
	nodes := make([]*Node, len(at))
	for i, a := range at {
		port := pgtest.FreePort(c.tb)
		nodes[i] = &Node{Port: port, data: filepath.Join(c.dir, fmt.Sprintf("pg%d", port)), log: filepath.Join(c.dir, fmt.Sprintf("pg%d.log", port)), host: a.host, ns: a.ns}
	}
	c.mu.Lock()
	c.all = append(c.all, nodes...)
	c.mu.Unlock()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { errs[i] = c.initNode(n) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.tb.Fatal(err)
	}
	return nodes
}

// initNode initialises, configures and starts n with the extensions
// created. It may run beside other nodes' (it never fails the test
// itself).
func (c *Cluster) initNode(n *Node) error {
	tpl, err := c.initdbTemplate()
	if err != nil {
		return err
	}
	if out, err := exec.Command("cp", "-a", tpl, n.data).CombinedOutput(); err != nil {
		return fmt.Errorf("cp -a %s %s: %v\n%s", tpl, n.data, err, out)
	}
	listen := "127.0.0.1"
	if n.ns != "" {
		// Only the namespace's own loopback and links are there; the
		// other nodes connect over the links.
		listen = "*"
		if err := appendFile(filepath.Join(n.data, "pg_hba.conf"), "host all all "+netnsSubnet+" trust\n"); err != nil {
			return err
		}
	}
	conf := fmt.Sprintf(`
shared_preload_libraries = 'citus'
listen_addresses = '%s'
port = %d
unix_socket_directories = '%s'
max_connections = 200
max_prepared_transactions = 200
fsync = on
%s
`, listen, n.Port, c.dir, strings.Join(c.conf, "\n"))
	if err := appendFile(filepath.Join(n.data, "postgresql.conf"), conf); err != nil {
		return err
	}
	if err := c.startErr(n); err != nil {
		return err
	}
	if err := c.execErr(n, "CREATE EXTENSION citus"); err != nil {
		return err
	}
	return c.execErr(n, "CREATE EXTENSION hll")
}

// initdbTemplate returns a data directory initdb made, for initNode to
// copy: one for each server installation and user, kept in the
// temporary folder across tests and runs, as a build cache is. initdb
// took 0.9 CPU-seconds a node, and a run of the tests starts some twenty
// nodes; the copy takes 0.07. The copies share initdb's system
// identifier, which only Citus's clone nodes (physical replicas) read.
// The template appears whole or not at all: it is made in a folder of
// its own and renamed into place, and a test binary that loses the race
// to another uses the winner's.
func (c *Cluster) initdbTemplate() (string, error) {
	templateMu.Lock() // a cluster's nodes start at once: one initdb
	defer templateMu.Unlock()
	version, err := c.command("initdb", "--version").Output()
	if err != nil {
		return "", fmt.Errorf("initdb --version: %v", err)
	}
	key := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d", c.bin, version, os.Geteuid())))
	tpl := filepath.Join(os.TempDir(), fmt.Sprintf("sketchd-pgcluster-initdb-%x", key[:8]))
	if _, err := os.Stat(filepath.Join(tpl, "PG_VERSION")); err == nil {
		return tpl, nil
	}
	work, err := os.MkdirTemp(os.TempDir(), "sketchd-pgcluster-initdb-new-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	if err := c.chownPostgres(work); err != nil {
		return "", err
	}
	data := filepath.Join(work, "data")
	if err := c.runErr("initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync"); err != nil {
		return "", err
	}
	if err := os.Rename(data, tpl); err != nil {
		if _, serr := os.Stat(filepath.Join(tpl, "PG_VERSION")); serr == nil {
			return tpl, nil // another test binary made it first
		}
		return "", err
	}
	return tpl, nil
}

var templateMu sync.Mutex

// appendFile appends text to the file at path.
func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// DSN is the connection string of a node.
func (c *Cluster) DSN(n *Node) string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres", c.dir, n.Port)
}

// Exec runs statements on a node, failing the test on an error.
func (c *Cluster) Exec(n *Node, sql string, args ...any) {
	c.tb.Helper()
	if err := c.execErr(n, sql, args...); err != nil {
		c.tb.Fatal(err)
	}
}

func (c *Cluster) execErr(n *Node, sql string, args ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.DSN(n))
	if err != nil {
		return fmt.Errorf("node %s: %v", n.Addr(), err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("node %s: %s: %v", n.Addr(), sql, err)
	}
	return nil
}

// Stop stops a node with pg_ctl's shutdown mode ("fast", "immediate").
func (c *Cluster) Stop(n *Node, mode string) {
	c.tb.Helper()
	c.run("pg_ctl", "-D", n.data, "-m", mode, "-w", "stop")
}

// Start starts a stopped node and waits until it takes connections. A
// start that fails because its port is in use is tried again, four times
// a second apart: the port may have been taken for a moment (a node
// stopped for a second leaves it free for anything to take).
func (c *Cluster) Start(n *Node) {
	c.tb.Helper()
	if err := c.startErr(n); err != nil {
		c.tb.Fatal(err)
	}
}

func (c *Cluster) startErr(n *Node) error {
	args := []string{"-D", n.data, "-l", n.log, "-w", "-t", "120", "start"}
	for attempt := 1; ; attempt++ {
		cmd := c.command("pg_ctl", args...)
		if n.ns != "" {
			// The server starts in the node's namespace.
			cmd.Args = append([]string{"ip", "netns", "exec", n.ns}, cmd.Args...)
			cmd.Path, _ = exec.LookPath("ip")
		}
		out, err := cmd.CombinedOutput()
		if err == nil {
			return nil
		}
		if attempt < 5 && strings.Contains(pgtest.Tail(c.Log(n), 10), "Address already in use") {
			c.tb.Logf("node %s: port in use, starting again in a second", n.Addr())
			time.Sleep(time.Second)
			continue
		}
		return fmt.Errorf("pg_ctl %s: %v\n%s\n%s", strings.Join(args, " "), err, out, pgtest.Tail(c.Log(n), 20))
	}
}

// AddWorker registers a new worker with the coordinator: a spare
// (StartCitusWithSpares) if one is left, else an instance it starts.
func (c *Cluster) AddWorker() *Node {
	c.tb.Helper()
	c.mu.Lock()
	var n *Node
	if len(c.spares) > 0 {
		n, c.spares = c.spares[0], c.spares[1:]
	}
	c.mu.Unlock()
	if n == nil {
		n = c.newNode("", "")
	}
	c.Exec(c.Coordinator, fmt.Sprintf("SELECT citus_add_node('%s', %d)", n.hostname(), n.Port))
	c.mu.Lock()
	c.Workers = append(c.Workers, n)
	c.mu.Unlock()
	return n
}

// Log returns a node's server log.
func (c *Cluster) Log(n *Node) string {
	b, _ := os.ReadFile(n.log)
	return string(b)
}

// run runs a server binary, as postgres when this process is root.
func (c *Cluster) run(name string, args ...string) {
	c.tb.Helper()
	if err := c.runErr(name, args...); err != nil {
		c.tb.Fatal(err)
	}
}

func (c *Cluster) runErr(name string, args ...string) error {
	if out, err := c.command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(c.bin, name)
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

// remove stops every node the cluster started (a worker that never got
// registered too) and removes the directory; after a failure it logs the
// end of each node's log.
func (c *Cluster) remove() {
	c.mu.Lock()
	nodes := slices.Clone(c.all)
	c.mu.Unlock()
	for _, n := range nodes {
		if _, err := os.Stat(filepath.Join(n.data, "postmaster.pid")); err == nil {
			_ = c.command("pg_ctl", "-D", n.data, "-m", "immediate", "-w", "stop").Run()
		}
	}
	if c.tb.Failed() {
		for _, n := range nodes {
			role := "worker"
			if n == c.Coordinator {
				role = "coordinator"
			}
			c.tb.Logf("log of the %s on %s (tail):\n%s", role, n.Addr(), pgtest.Tail(c.Log(n), 40))
		}
	}
	os.RemoveAll(c.dir)
	if c.net != nil {
		c.net.remove()
	}
}
