package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
)

// cluster is several sketchd processes over one PostgreSQL schema, as
// behind a load balancer: clients pick any live node.
type cluster struct {
	t     testing.TB
	dsn   string
	mu    sync.Mutex
	nodes []*proc // nil while a node is down
	// args are more flags for every node.
	args []string
}

func (c *cluster) start(i int) {
	c.t.Helper()
	data := filepath.Join(c.t.TempDir(), "unused.db")
	p := startProcess(c.t, data, append([]string{"-postgres", c.dsn, "-postgres-max-conns", "4"}, c.args...)...)
	c.mu.Lock()
	c.nodes[i] = p
	c.mu.Unlock()
}

// pick returns the address of a live node, from a preferred index on.
func (c *cluster) pick(from int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range len(c.nodes) {
		if p := c.nodes[(from+k)%len(c.nodes)]; p != nil {
			return p.addr
		}
	}
	return ""
}

// clusterLedger records, per sketch, the ids sent and those acknowledged,
// and the Count-Min totals sent and acknowledged.
type clusterLedger struct {
	mu                sync.Mutex
	sent, acked       map[string][]int64
	cmsSent, cmsAcked int64
	// Requests answered 200, refused with 503, cut off (unknown outcome)
	// and answered anything else.
	ok, refused, unknown, other atomic.Int64
}

// client adds random ids to random sketches through the cluster until
// stop is closed. A request whose connection fails has an unknown
// outcome: its ids count as sent, not acknowledged.
func (l *clusterLedger) client(c *cluster, seed uint64, names []string, stop <-chan struct{}) {
	r := rand.New(rand.NewPCG(seed, 13))
	hc := &http.Client{Timeout: 30 * time.Second}
	for k := 0; ; k++ {
		select {
		case <-stop:
			return
		default:
		}
		addr := c.pick(int(seed) + k)
		if addr == "" {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		var path string
		var body []byte
		var ids []int64
		var total int64
		name := "counts"
		if r.IntN(5) == 0 {
			items := make([]map[string]int64, 1+r.IntN(30))
			for i := range items {
				n := int64(1 + r.IntN(9))
				items[i] = map[string]int64{"id": int64(r.IntN(500)), "count": n}
				total += n
			}
			body = mustJSON(map[string]any{"items": items})
		} else {
			name = names[r.IntN(len(names))]
			ids = make([]int64, 1+r.IntN(2000))
			for i := range ids {
				ids[i] = int64(r.Uint64())
			}
			body = mustJSON(map[string]any{"ids": ids})
		}
		path = "/v1/sketches/" + name + "/add"
		l.mu.Lock()
		if ids != nil {
			l.sent[name] = append(l.sent[name], ids...)
		} else {
			l.cmsSent += total
		}
		l.mu.Unlock()
		status, _, err := (&client{base: "http://" + addr, http: hc}).do("POST", path, "application/json", body)
		switch {
		case err != nil:
			l.unknown.Add(1)
			continue
		case status == http.StatusOK:
			l.ok.Add(1)
			l.mu.Lock()
			if ids != nil {
				l.acked[name] = append(l.acked[name], ids...)
			} else {
				l.cmsAcked += total
			}
			l.mu.Unlock()
		case status == http.StatusServiceUnavailable:
			l.refused.Add(1)
		default:
			l.other.Add(1)
		}
	}
}

// TestClusterKill9 runs three sketchd processes on one database while
// eight clients add random ids to the same 20 HLLs and a Count-Min, and
// kills one node with SIGKILL and restarts it. Then every sketch, read
// through any node, holds every acknowledged id and nothing never sent,
// checked byte-wise in PostgreSQL with hll_union; the Count-Min's total
// lies between what was acknowledged and what was sent.
func TestClusterKill9(t *testing.T) {
	t.Parallel() // it asserts no timing
	if testing.Short() {
		t.Skip("builds the real binary and runs three of it")
	}
	dsn := pgstoretest.Schema(t, t.TempDir())
	c := &cluster{t: t, dsn: dsn, nodes: make([]*proc, 3)}
	var wg sync.WaitGroup
	for i := range c.nodes {
		wg.Go(func() { c.start(i) })
	}
	wg.Wait()
	first := newClient(c.pick(0))
	var names []string
	for i := range 20 {
		n := fmt.Sprintf("s%02d", i)
		names = append(names, n)
		first.must(t, http.StatusCreated, "PUT", "/v1/sketches/"+n, "application/json", []byte(`{"log2m":12}`), nil)
	}
	first.must(t, http.StatusCreated, "PUT", "/v1/sketches/counts", "application/json", []byte(`{"type":"cms","width":300,"depth":4}`), nil)

	l := &clusterLedger{sent: map[string][]int64{}, acked: map[string][]int64{}}
	stop := make(chan struct{})
	var clients sync.WaitGroup
	for i := range 8 {
		clients.Go(func() { l.client(c, uint64(i), names, stop) })
	}
	time.Sleep(1500 * time.Millisecond)
	c.mu.Lock()
	victim := c.nodes[1]
	c.nodes[1] = nil
	c.mu.Unlock()
	victim.kill()
	time.Sleep(700 * time.Millisecond)
	c.start(1)
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	clients.Wait()
	t.Logf("requests: %d acknowledged, %d refused with 503, %d cut off by the kill, %d other answers",
		l.ok.Load(), l.refused.Load(), l.unknown.Load(), l.other.Load())
	if n := l.other.Load(); n > 0 {
		t.Errorf("%d answers were neither 200 nor 503", n)
	}
	if l.ok.Load() < 50 {
		t.Fatalf("only %d writes were acknowledged; the test proves nothing", l.ok.Load())
	}

	l.check(t, dsn, names, c)
}

// check verifies the ledger against the database and every live node of
// c: each HLL holds every acknowledged id and nothing never sent
// (byte-wise, with hll_union in PostgreSQL), reads the same through every
// node, and the Count-Min total lies between acknowledged and sent.
func (l *clusterLedger) check(t *testing.T, dsn string, names []string, c *cluster) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, n := range names {
		if len(l.acked[n]) == 0 {
			t.Errorf("%s: no write acknowledged", n)
			continue
		}
		var holdsAcked, withinSent bool
		var stored []byte
		err := conn.QueryRow(ctx, `
			WITH acked AS (SELECT hll_add_agg(hll_hash_bigint(x), 12, 5, -1, 1) AS h FROM unnest($2::bigint[]) x),
			     sent AS (SELECT hll_add_agg(hll_hash_bigint(x), 12, 5, -1, 1) AS h FROM unnest($3::bigint[]) x)
			SELECT hll_send(hll_union(s.hll, acked.h)) = hll_send(s.hll),
			       hll_send(hll_union(s.hll, sent.h)) = hll_send(sent.h),
			       hll_send(s.hll)
			FROM sketchd_sketches s, acked, sent WHERE s.name = $1`,
			n, l.acked[n], l.sent[n]).Scan(&holdsAcked, &withinSent, &stored)
		if err != nil {
			t.Fatal(err)
		}
		if !holdsAcked {
			t.Errorf("%s: hll_union(stored, acknowledged) != stored: an acknowledged id is missing", n)
		}
		if !withinSent {
			t.Errorf("%s: hll_union(stored, sent) != sent: the sketch holds an id never sent", n)
		}
		for i := range c.nodes {
			body := newClient(c.pick(i)).must(t, http.StatusOK, "GET", "/v1/sketches/"+n+"/raw", "", nil, nil)
			if string(body) != string(stored) {
				t.Errorf("%s read through node %d differs from the stored row", n, i)
			}
		}
	}
	for i := range c.nodes {
		var info struct {
			Total int64 `json:"total"`
		}
		newClient(c.pick(i)).must(t, http.StatusOK, "GET", "/v1/sketches/counts", "", nil, &info)
		if info.Total < l.cmsAcked || info.Total > l.cmsSent {
			t.Errorf("node %d: cms total %d, want between %d acknowledged and %d sent", i, info.Total, l.cmsAcked, l.cmsSent)
		}
	}
}
