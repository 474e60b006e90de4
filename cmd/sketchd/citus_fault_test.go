package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/freq"
	"github.com/sketchd/sketchd/internal/pgtest"
	"github.com/sketchd/sketchd/internal/pgtest/pgcluster"
	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
	"github.com/sketchd/sketchd/internal/theta"
)

// TestCitusFaults runs three sketchd processes on a Citus cluster of its
// own (a coordinator and two workers) under a mixed load from six
// clients, HLL, Count-Min, theta and freq adds, events that span both
// workers and name a series too, and series adds stamped with ts, and
// puts the cluster through one fault after another:
//
//   - kill -9 of a sketchd node, started again;
//   - a worker stopped with -m fast, then started;
//   - a worker stopped with -m immediate, then started;
//   - a shard moved while the writes run, with block_writes;
//   - a shard moved in the default mode (logical replication);
//   - a third worker added and the shards rebalanced onto it.
//
// After each, with the load stopped: every acknowledged id is in its
// sketch, checked in SQL on the coordinator (hll_union(stored, acked) =
// stored, and nothing never sent), and reads the same through every
// node; theta and freq sketches, in exact mode, hold every acknowledged
// id and none never sent, each freq user's impressions between that
// user's acknowledged and sent; Count-Min totals lie between acknowledged
// and sent; clients saw only 2xx, and 503 with
// Retry-After; and every node takes writes again without a restart. The
// checks are shown to catch a doctored ledger, so none is vacuous.
//
// The cluster is configured as docs/scale-out.md tells operators to:
// citus.recover_2pc_interval of 5 s. SKETCHD_CITUS_SOAK=N runs the faults
// N times, with longer load.
func TestCitusFaults(tt *testing.T) {
	if testing.Short() {
		tt.Skip("starts a Citus cluster and three sketchd processes")
	}
	// Mostly waiting on its cluster and its load's pauses: it runs beside
	// the other long tests of the binary that assert no timing.
	tt.Parallel()
	t := &recorder{T: tt}
	tt.Cleanup(t.repeat) // first registered, so it runs last
	rounds := 1
	if v := os.Getenv("SKETCHD_CITUS_SOAK"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SKETCHD_CITUS_SOAK=%q is not a number of rounds", v)
		}
		rounds = n
	}
	// The third worker's instance starts with the others: the fault is
	// its registration and the rebalance, under load.
	cl := pgcluster.StartCitusWithSpares(t, 2, 1, "wal_level = logical", "citus.recover_2pc_interval = '5s'")
	// A few shards per table, so that moves and the rebalance finish
	// quickly; the layout is the production one.
	dsn := pgstoretest.WithSetting(pgstoretest.SchemaOn(t, cl.DSN(cl.Coordinator), t.TempDir()), "citus.shard_count", "6")
	c, admin := startFaultNodes(t, dsn, 3)
	f := newFaultLoad(t, c, admin, cl)
	faults := []struct {
		name string
		do   func()
	}{
		{"kill -9 of a node", func() {
			c.mu.Lock()
			victim := c.nodes[1]
			c.nodes[1] = nil
			c.mu.Unlock()
			victim.kill()
			time.Sleep(300 * time.Millisecond)
			c.start(1)
		}},
		{"a worker stopped with -m fast", func() {
			cl.Stop(cl.Workers[0], "fast")
			time.Sleep(time.Second)
			cl.Start(cl.Workers[0])
		}},
		{"a worker stopped with -m immediate", func() {
			cl.Stop(cl.Workers[1], "immediate")
			time.Sleep(time.Second)
			cl.Start(cl.Workers[1])
		}},
		{"a shard moved with block_writes", func() { f.moveShard("block_writes") }},
		{"a shard moved by logical replication", func() { f.moveShard("") }},
		{"a third worker added and the shards rebalanced", func() {
			if len(cl.Workers) < 3 {
				cl.AddWorker()
				t.Logf("third worker added at %s", time.Now().Format("15:04:05.000"))
			}
			f.exec("SELECT citus_rebalance_start()")
			f.exec("SELECT citus_rebalance_wait()")
			var on int
			if err := admin.QueryRow(context.Background(), `SELECT count(DISTINCT nodeport) FROM citus_shards
				WHERE table_name = 'sketchd_sketches'::regclass`).Scan(&on); err != nil || on < 3 {
				t.Fatalf("after the rebalance the shards are on %d workers (%v), want 3", on, err)
			}
		}},
	}
	load := 1500 * time.Millisecond
	if rounds > 1 {
		load = 5 * time.Second
	}
	for round := range rounds {
		for _, fault := range faults {
			name := fault.name
			if rounds > 1 {
				name = fmt.Sprintf("round %d: %s", round+1, name)
			}
			stop := f.run()
			if rounds > 1 {
				time.Sleep(load)
			} else {
				// The fault strikes once the load flows: ten writes a
				// client acknowledged since it started (a fifth of a
				// second at rest; a fixed 1.5 s before).
				f.untilAcked(f.ledger.ok.Load() + 60)
			}
			atFault := f.ledger.ok.Load()
			start := time.Now()
			fault.do()
			t.Logf("%s: %s to %s", name, start.Format("15:04:05.000"), time.Now().Format("15:04:05.000"))
			time.Sleep(load)
			acked := stop()
			under := f.ledger.ok.Load() - atFault
			t.Logf("load stopped at %s", time.Now().Format("15:04:05.000"))
			f.recovered(name)
			if problems := f.verify(f.ledger); len(problems) > 0 {
				t.Fatalf("after %s:\n%s", name, strings.Join(problems, "\n"))
			}
			if under < 20 {
				t.Fatalf("after %s: only %d writes were acknowledged from the fault on; the test proves little", name, under)
			}
			t.Logf("after %s: %d writes acknowledged, %d from the fault on; all %s", name, acked, under, f.ledger.summary())
		}
	}
	f.checkTheChecks()
}

// startFaultNodes starts n sketchd nodes on dsn, with more flags args,
// and connects an admin connection to dsn; both end with the test.
func startFaultNodes(t testing.TB, dsn string, n int, args ...string) (*cluster, *pgx.Conn) {
	t.Helper()
	c := &cluster{t: t, dsn: dsn, nodes: make([]*proc, n), args: args}
	// Registered after the Citus cluster's, so run before it stops the
	// nodes.
	t.Cleanup(func() { c.logTails(20) })
	var wg sync.WaitGroup
	for i := range c.nodes {
		wg.Go(func() { c.start(i) })
	}
	wg.Wait()
	admin, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	return c, admin
}

// faultLoad is the load of TestCitusFaults and what it knows: the
// sketches, the ledger of what was sent and acknowledged, and how to check
// it against the cluster.
type faultLoad struct {
	t      testing.TB
	c      *cluster
	admin  *pgx.Conn
	cl     *pgcluster.Cluster
	ledger *faultLedger
	ts     time.Time // every series add's stamp
	// Sketch names by kind; spans are pairs of HLLs on different workers.
	hlls, thetas []string
	spans        [][2]string
	probes       [2]string // one sketch on each worker, for the recovery probe
	// times, when set, records how long each request took to answer.
	times *answerTimes
	// seen is what the last verify read from the cluster.
	seen reads
}

// reads is what a verify read from the cluster (SQL results, HTTP
// answers), keyed by everything the read depends on: the sketch, the
// node, the ids asked about. checkTheChecks runs verify on doctored
// ledgers against the cluster as the last verify saw it, load stopped,
// so a read whose key a doctoring left as it was answers the same, and
// only what the doctoring changed is read again.
type reads map[string]any

// read returns the answer to key from r, asking do the first time.
func read[T any](r reads, key string, do func() T) T {
	if v, ok := r[key]; ok {
		return v.(T)
	}
	v := do()
	r[key] = v
	return v
}

// idsKey names a set of ids, in any order, in a reads key: its size and
// two sums of its ids, each mixed by a bijection of its own, so two sets
// differing in a few ids (a doctored ledger) never share a key. Sorting
// each set and hashing the list, as this did, was a fifth of the test's
// CPU under the race detector.
func idsKey(ids []int64) string {
	var a, b uint64
	for _, id := range ids {
		a += mix64(uint64(id))
		b += mix64(uint64(id) ^ 0x5851f42d4c957f2d)
	}
	return fmt.Sprintf("%d:%x:%x", len(ids), a, b)
}

// mix64 is SplitMix64's output function: a bijection of uint64.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// answer is an HTTP answer as client.do returns it.
type answer struct {
	status int
	body   []byte
	err    error
}

// answerTimes records how long requests took to answer, and the slowest.
type answerTimes struct {
	mu      sync.Mutex
	all     []time.Duration
	slowest string
}

func (a *answerTimes) add(d time.Duration, label string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.all) == 0 || d > slices.Max(a.all) {
		a.slowest = label
	}
	a.all = append(a.all, d)
}

// take returns the times recorded since the last take, sorted, and the
// label of the slowest, and starts afresh.
func (a *answerTimes) take() ([]time.Duration, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	all, slowest := a.all, a.slowest
	a.all, a.slowest = nil, ""
	slices.Sort(all)
	return all, slowest
}

const (
	faultCMS    = "clicks"
	faultFreq   = "reach"
	faultSeries = "dau"
	faultLog2m  = 12
)

func newFaultLoad(t testing.TB, c *cluster, admin *pgx.Conn, cl *pgcluster.Cluster) *faultLoad {
	t.Helper()
	f := &faultLoad{t: t, c: c, admin: admin, cl: cl, ledger: newFaultLedger(), ts: time.Now().Add(-10 * time.Minute).UTC()}
	first := newClient(c.pick(0))
	js := "application/json"
	for i := range 8 {
		n := fmt.Sprintf("h%02d", i)
		f.hlls = append(f.hlls, n)
		first.must(t, http.StatusCreated, "PUT", "/v1/sketches/"+n, js, []byte(fmt.Sprintf(`{"log2m":%d}`, faultLog2m)), nil)
	}
	for i := range 2 {
		n := fmt.Sprintf("t%d", i)
		f.thetas = append(f.thetas, n)
		first.must(t, http.StatusCreated, "PUT", "/v1/sketches/"+n, js, []byte(`{"type":"theta"}`), nil)
	}
	first.must(t, http.StatusCreated, "PUT", "/v1/sketches/"+faultCMS, js, []byte(`{"type":"cms","width":300,"depth":4}`), nil)
	first.must(t, http.StatusCreated, "PUT", "/v1/sketches/"+faultFreq, js, []byte(`{"type":"freq"}`), nil)
	first.must(t, http.StatusCreated, "PUT", "/v1/series/"+faultSeries, js,
		[]byte(fmt.Sprintf(`{"log2m":%d,"levels":{"hour":"P2D","day":"P30D"}}`, faultLog2m)), nil)
	// Pairs of HLLs on different workers, for events that span them.
	var on [2][]string
	for _, n := range f.hlls {
		w := f.worker(n)
		on[w] = append(on[w], n)
	}
	if len(on[0]) == 0 || len(on[1]) == 0 {
		t.Fatalf("the HLLs are all on one worker (%v)", on)
	}
	for i := range max(len(on[0]), len(on[1])) {
		f.spans = append(f.spans, [2]string{on[0][i%len(on[0])], on[1][i%len(on[1])]})
	}
	for i := 0; f.probes[0] == "" || f.probes[1] == ""; i++ {
		n := fmt.Sprintf("probe%02d", i)
		if w := f.worker(n); f.probes[w] == "" {
			f.probes[w] = n
			first.must(t, http.StatusCreated, "PUT", "/v1/sketches/"+n, js, []byte(`{"log2m":10}`), nil)
		}
	}
	return f
}

// worker returns 0 or 1: which of the first two workers holds name.
func (f *faultLoad) worker(name string) int {
	f.t.Helper()
	var port int
	err := f.admin.QueryRow(context.Background(), `SELECT nodeport FROM citus_shards
		WHERE shardid = get_shard_id_for_distribution_column('sketchd_sketches', $1::text)`, name).Scan(&port)
	if err != nil {
		f.t.Fatal(err)
	}
	if port == f.cl.Workers[0].Port {
		return 0
	}
	return 1
}

func (f *faultLoad) exec(sql string, args ...any) {
	f.t.Helper()
	if _, err := f.admin.Exec(context.Background(), sql, args...); err != nil {
		f.t.Fatalf("%s: %v", sql, err)
	}
}

// moveShard moves the shard group of a loaded HLL to another worker,
// with the transfer mode given ("" for Citus's default).
func (f *faultLoad) moveShard(mode string) {
	f.t.Helper()
	ctx := context.Background()
	var shard int64
	var from int
	err := f.admin.QueryRow(ctx, `SELECT shardid, nodeport FROM citus_shards
		WHERE table_name = 'sketchd_sketches'::regclass
		AND shardid IN (SELECT get_shard_id_for_distribution_column('sketchd_sketches', n) FROM unnest($1::text[]) n)
		ORDER BY random() LIMIT 1`, f.hlls).Scan(&shard, &from)
	if err != nil {
		f.t.Fatal(err)
	}
	to := f.cl.Workers[0].Port
	if from == to {
		to = f.cl.Workers[1].Port
	}
	if mode == "" {
		f.exec("SELECT citus_move_shard_placement($1, '127.0.0.1', $2, '127.0.0.1', $3)", shard, from, to)
	} else {
		f.exec("SELECT citus_move_shard_placement($1, '127.0.0.1', $2, '127.0.0.1', $3, $4::citus.shard_transfer_mode)", shard, from, to, mode)
	}
	var now int
	if err := f.admin.QueryRow(ctx, "SELECT nodeport FROM citus_shards WHERE shardid = $1", shard).Scan(&now); err != nil || now != to {
		f.t.Fatalf("shard %d is on port %d after the move (%v), want %d", shard, now, err, to)
	}
}

// untilAcked waits until the ledger counts n writes acknowledged, for a
// minute at most.
func (f *faultLoad) untilAcked(n int64) {
	f.t.Helper()
	for deadline := time.Now().Add(time.Minute); f.ledger.ok.Load() < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			f.t.Fatalf("the load's writes are not acknowledged: %d of %d a minute after it started (%s)", f.ledger.ok.Load(), n, f.ledger.summary())
		}
	}
}

// run starts six clients and returns the function that stops them and
// says how many writes they got acknowledged.
func (f *faultLoad) run() (stop func() int64) {
	done := make(chan struct{})
	before := f.ledger.ok.Load()
	var wg sync.WaitGroup
	for i := range 6 {
		seed := uint64(time.Now().UnixNano()) + uint64(i)
		wg.Go(func() { f.client(seed, done) })
	}
	return func() int64 {
		close(done)
		wg.Wait()
		return f.ledger.ok.Load() - before
	}
}

// client sends random writes to random live nodes until done is closed.
func (f *faultLoad) client(seed uint64, done <-chan struct{}) {
	r := rand.New(rand.NewPCG(seed, 29))
	hc := &http.Client{Timeout: 30 * time.Second}
	for k := 0; ; k++ {
		select {
		case <-done:
			return
		default:
		}
		addr := f.c.pick(int(seed) + k)
		if addr == "" {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		w := f.write(r)
		f.ledger.sent(w)
		sentAt := time.Now()
		status, retryAfter, body, err := post(hc, "http://"+addr+w.path, w.body)
		w.label += fmt.Sprintf(" to %s, sent %s, answered %s", addr, sentAt.Format("15:04:05.000"), time.Now().Format("15:04:05.000"))
		if f.times != nil {
			f.times.add(time.Since(sentAt), fmt.Sprintf("%s: %d %s %v", w.label, status, body, err))
		}
		f.ledger.answered(w, status, retryAfter, body, err)
	}
}

// faultWrite is one request of the load and what it adds where.
type faultWrite struct {
	path string
	body []byte
	// ids added to each named HLL, theta or series (by "series:"+name).
	ids map[string][]int64
	// counts added to the Count-Min (total) and the freq sketch (per id).
	cms   int64
	freq  map[int64]int64
	label string
}

func (f *faultLoad) write(r *rand.Rand) faultWrite {
	randomIDs := func(n int) []int64 {
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = int64(r.Uint64())
		}
		return ids
	}
	switch p := r.IntN(20); {
	case p < 6: // HLL add
		n := f.hlls[r.IntN(len(f.hlls))]
		ids := randomIDs(1 + r.IntN(300))
		return faultWrite{path: "/v1/sketches/" + n + "/add", body: mustJSON(map[string]any{"ids": ids}), ids: map[string][]int64{n: ids}, label: "hll add"}
	case p < 10: // events across both workers, some naming the series
		span := f.spans[r.IntN(len(f.spans))]
		withSeries := r.IntN(2) == 0
		ids := randomIDs(1 + r.IntN(50))
		events := make([]map[string]any, len(ids))
		for i, id := range ids {
			ev := map[string]any{"id": id, "sketches": []string{span[0], span[1]}}
			if withSeries {
				ev["series"] = []string{faultSeries}
				ev["ts"] = f.ts.Format(time.RFC3339Nano)
			}
			events[i] = ev
		}
		w := faultWrite{path: "/v1/events", body: mustJSON(map[string]any{"events": events}),
			ids: map[string][]int64{span[0]: ids, span[1]: ids}, label: "events"}
		if withSeries {
			w.ids["series:"+faultSeries] = ids
		}
		return w
	case p < 12: // Count-Min
		items := make([]map[string]int64, 1+r.IntN(30))
		var total int64
		for i := range items {
			n := int64(1 + r.IntN(9))
			items[i] = map[string]int64{"id": int64(r.IntN(500)), "count": n}
			total += n
		}
		return faultWrite{path: "/v1/sketches/" + faultCMS + "/add", body: mustJSON(map[string]any{"items": items}), cms: total, label: "cms add"}
	case p < 14: // theta, ids from a domain small enough for exact mode
		n := f.thetas[r.IntN(len(f.thetas))]
		ids := make([]int64, 1+r.IntN(40))
		for i := range ids {
			ids[i] = int64(r.IntN(3000))
		}
		return faultWrite{path: "/v1/sketches/" + n + "/add", body: mustJSON(map[string]any{"ids": ids}), ids: map[string][]int64{n: ids}, label: "theta add"}
	case p < 16: // freq: users and their impressions
		items := make([]map[string]int64, 1+r.IntN(20))
		counts := map[int64]int64{}
		for i := range items {
			id, n := int64(r.IntN(2000)), int64(1+r.IntN(5))
			items[i] = map[string]int64{"id": id, "count": n}
			counts[id] += n
		}
		return faultWrite{path: "/v1/sketches/" + faultFreq + "/add", body: mustJSON(map[string]any{"items": items}), freq: counts, label: "freq add"}
	default: // a series add stamped ts
		ids := randomIDs(1 + r.IntN(200))
		return faultWrite{path: "/v1/series/" + faultSeries + "/add?ts=" + f.ts.Format(time.RFC3339Nano),
			body: mustJSON(map[string]any{"ids": ids}), ids: map[string][]int64{"series:" + faultSeries: ids}, label: "series add"}
	}
}

// post sends a JSON body and returns the status, the Retry-After header
// and the body.
func post(hc *http.Client, url string, body []byte) (int, string, []byte, error) {
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), b, err
}

// recovered waits until every node answers /readyz and acknowledges a
// write that spans both workers, without being restarted.
func (f *faultLoad) recovered(after string) {
	f.t.Helper()
	body := mustJSON(map[string]any{"events": []map[string]any{{"id": 1, "sketches": []string{f.probes[0], f.probes[1]}}}})
	hc := &http.Client{Timeout: 30 * time.Second}
	for i := range f.c.nodes {
		addr := f.c.pick(i)
		deadline := time.Now().Add(90 * time.Second)
		for {
			ready, _, _, rerr := get(hc, "http://"+addr+"/readyz")
			status, _, b, err := post(hc, "http://"+addr+"/v1/events", body)
			if rerr == nil && ready == http.StatusOK && err == nil && status == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				f.t.Fatalf("after %s: node %d does not take writes 90 s later (readyz %d %v; write %d %s %v)", after, i, ready, rerr, status, b, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

func get(hc *http.Client, url string) (int, string, []byte, error) {
	resp, err := hc.Get(url)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), b, err
}

// faultLedger records what the clients sent and what was acknowledged.
type faultLedger struct {
	mu                sync.Mutex
	sentIDs, ackedIDs map[string]map[int64]bool
	cmsSent, cmsAcked int64
	freqSent          map[int64]int64 // impressions per user
	freqAcked         map[int64]int64
	// Requests answered 2xx, 503, cut off (unknown outcome), and the
	// answers that were neither 2xx nor 503 with Retry-After.
	ok, refused, unknown atomic.Int64
	bad                  []string
	// how tells, for a failure's message, how an id was acknowledged.
	how map[int64]string
}

func newFaultLedger() *faultLedger {
	return &faultLedger{sentIDs: map[string]map[int64]bool{}, ackedIDs: map[string]map[int64]bool{},
		freqSent: map[int64]int64{}, freqAcked: map[int64]int64{}, how: map[int64]string{}}
}

func addTo(m map[string]map[int64]bool, ids map[string][]int64) {
	for n, list := range ids {
		if m[n] == nil {
			m[n] = map[int64]bool{}
		}
		for _, id := range list {
			m[n][id] = true
		}
	}
}

func (l *faultLedger) sent(w faultWrite) {
	l.mu.Lock()
	defer l.mu.Unlock()
	addTo(l.sentIDs, w.ids)
	l.cmsSent += w.cms
	for id, n := range w.freq {
		l.freqSent[id] += n
	}
}

func (l *faultLedger) answered(w faultWrite, status int, retryAfter string, body []byte, err error) {
	switch {
	case err != nil:
		l.unknown.Add(1)
	case status/100 == 2:
		l.ok.Add(1)
		l.mu.Lock()
		addTo(l.ackedIDs, w.ids)
		for _, ids := range w.ids {
			for _, id := range ids {
				l.how[id] = w.label
			}
		}
		l.cmsAcked += w.cms
		for id, n := range w.freq {
			l.freqAcked[id] += n
		}
		l.mu.Unlock()
	case status == http.StatusServiceUnavailable && retryAfter != "":
		l.refused.Add(1)
	default:
		l.mu.Lock()
		l.bad = append(l.bad, fmt.Sprintf("%s %s: %d (Retry-After %q) %.300s", w.label, w.path, status, retryAfter, body))
		l.mu.Unlock()
	}
}

func (l *faultLedger) summary() string {
	return fmt.Sprintf("%d acknowledged, %d refused with 503, %d cut off", l.ok.Load(), l.refused.Load(), l.unknown.Load())
}

// clone copies the ledger, for the checks' controls.
func (l *faultLedger) clone() *faultLedger {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := newFaultLedger()
	for n, m := range l.sentIDs {
		c.sentIDs[n] = maps.Clone(m)
	}
	for n, m := range l.ackedIDs {
		c.ackedIDs[n] = maps.Clone(m)
	}
	c.cmsSent, c.cmsAcked = l.cmsSent, l.cmsAcked
	c.freqSent, c.freqAcked = maps.Clone(l.freqSent), maps.Clone(l.freqAcked)
	c.bad = slices.Clone(l.bad)
	return c
}

// keys are m's keys, in no order.
func keys(m map[int64]bool) []int64 { return slices.Collect(maps.Keys(m)) }

// hashesOf maps the theta hash of each id to the id.
func hashesOf(ids iter.Seq[int64]) map[uint64]int64 {
	m := map[uint64]int64{}
	for id := range ids {
		m[theta.HashInt(id)] = id
	}
	return m
}

// verify checks the cluster against a ledger and returns what is wrong.
func (f *faultLoad) verify(l *faultLedger) []string {
	f.seen = reads{}
	return f.verifyFrom(l, f.seen)
}

// verifyFrom is verify reading through seen: what seen holds is not read
// again, and what is read is added to it.
func (f *faultLoad) verifyFrom(l *faultLedger, seen reads) []string {
	ctx := context.Background()
	getFrom := func(i int, path string) (int, []byte, error) {
		a := read(seen, fmt.Sprintf("GET %d %s", i, path), func() answer {
			status, b, err := newClient(f.c.pick(i)).do("GET", path, "", nil)
			return answer{status, b, err}
		})
		return a.status, a.body, a.err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if len(l.bad) > 0 {
		bad("%d answers were neither 2xx nor 503 with Retry-After, first: %s", len(l.bad), l.bad[0])
	}
	const aggregate = `WITH acked AS (SELECT hll_add_agg(hll_hash_bigint(x), 12, 5, -1, 1) AS h FROM unnest($2::bigint[]) x),
		sent AS (SELECT hll_add_agg(hll_hash_bigint(x), 12, 5, -1, 1) AS h FROM unnest($3::bigint[]) x)`
	// HLLs: in SQL on the coordinator, and the same bytes through every node.
	type hllRow struct {
		holdsAcked, withinSent bool
		stored                 []byte
		err                    error
	}
	for _, n := range f.hlls {
		acked, sent := keys(l.ackedIDs[n]), keys(l.sentIDs[n])
		row := read(seen, "hll "+n+" "+idsKey(acked)+" "+idsKey(sent), func() (r hllRow) {
			r.err = f.admin.QueryRow(ctx, aggregate+`
			SELECT hll_send(hll_union(s.hll, acked.h)) = hll_send(s.hll), hll_send(hll_union(s.hll, sent.h)) = hll_send(sent.h), hll_send(s.hll)
			FROM sketchd_sketches s, acked, sent WHERE s.name = $1`, n, acked, sent).Scan(&r.holdsAcked, &r.withinSent, &r.stored)
			return r
		})
		holdsAcked, withinSent, stored, err := row.holdsAcked, row.withinSent, row.stored, row.err
		if err != nil {
			bad("%s: %v", n, err)
			continue
		}
		if !holdsAcked {
			bad("%s: hll_union(stored, acknowledged) != stored: an acknowledged id is missing", n)
			missing := read(seen, "missing "+n+" "+idsKey(acked), func() []int64 {
				rows, err := f.admin.Query(ctx, `SELECT x FROM sketchd_sketches s, unnest($2::bigint[]) x WHERE s.name = $1
				AND hll_send(hll_union(s.hll, hll_add(hll_empty(12, 5, -1, 1), hll_hash_bigint(x)))) <> hll_send(s.hll) LIMIT 5`, n, acked)
				if err != nil {
					return nil
				}
				missing, _ := pgx.CollectRows(rows, pgx.RowTo[int64])
				return missing
			})
			for _, id := range missing {
				bad("  %s lacks %d, acknowledged by %s", n, id, l.how[id])
			}
		}
		if !withinSent {
			bad("%s: hll_union(stored, sent) != sent: the sketch holds an id never sent", n)
		}
		for i := range f.c.nodes {
			status, b, err := getFrom(i, "/v1/sketches/"+n+"/raw")
			if err != nil || status != http.StatusOK || !bytes.Equal(b, stored) {
				bad("%s read through node %d (%d, %v) differs from the row on the coordinator", n, i, status, err)
			}
		}
	}
	// The series: one bucket per level, each holding every acknowledged id.
	sk := "series:" + faultSeries
	type bucketRow struct {
		level                  string
		holdsAcked, withinSent bool
	}
	type bucketRows struct {
		rows []bucketRow
		err  error
	}
	sAcked, sSent := keys(l.ackedIDs[sk]), keys(l.sentIDs[sk])
	buckets := read(seen, "series "+idsKey(sAcked)+" "+idsKey(sSent), func() (out bucketRows) {
		rows, err := f.admin.Query(ctx, aggregate+`
		SELECT b.level, hll_send(hll_union(b.hll, acked.h)) = hll_send(b.hll), hll_send(hll_union(b.hll, sent.h)) = hll_send(sent.h)
		FROM sketchd_series_buckets b, acked, sent WHERE b.series = $1 ORDER BY 1`, faultSeries, sAcked, sSent)
		if err != nil {
			out.err = err
			return out
		}
		defer rows.Close()
		for rows.Next() {
			var r bucketRow
			if err := rows.Scan(&r.level, &r.holdsAcked, &r.withinSent); err != nil {
				out.err = err
				return out
			}
			out.rows = append(out.rows, r)
		}
		out.err = rows.Err()
		return out
	})
	if buckets.err != nil {
		bad("series: %v", buckets.err)
	} else {
		levels := 0
		for _, r := range buckets.rows {
			level, holdsAcked, withinSent := r.level, r.holdsAcked, r.withinSent
			levels++
			if !holdsAcked {
				bad("series %s, %s bucket: an acknowledged id is missing", faultSeries, level)
			}
			if !withinSent {
				bad("series %s, %s bucket: holds an id never sent", faultSeries, level)
			}
		}
		if levels != 2 {
			bad("series %s has %d buckets, want one per level (2)", faultSeries, levels)
		}
	}
	// Theta and freq in exact mode: what they retain is the distinct ids
	// they were given, so it lies between acknowledged and sent; the same
	// for freq impressions and the Count-Min total.
	type described struct {
		Retained    int     `json:"retained"`
		Theta       float64 `json:"theta"`
		Total       int64   `json:"total"`       // cms
		Impressions int64   `json:"impressions"` // freq
	}
	describe := func(name string) []described {
		var out []described
		for i := range f.c.nodes {
			var d described
			status, b, err := getFrom(i, "/v1/sketches/"+name)
			if err != nil || status != http.StatusOK || json.Unmarshal(b, &d) != nil {
				bad("%s through node %d: %d %s %v", name, i, status, b, err)
				continue
			}
			out = append(out, d)
		}
		return out
	}
	download := func(name string, i int) []byte {
		status, b, err := getFrom(i, "/v1/sketches/"+name+"/raw")
		if err != nil || status != http.StatusOK {
			bad("%s/raw through node %d: %d %.200s %v", name, i, status, b, err)
			return nil
		}
		return b
	}
	for _, n := range f.thetas {
		for i, d := range describe(n) {
			if d.Theta != 1 {
				bad("%s left exact mode (theta %v); the check needs it", n, d.Theta)
			}
			if d.Retained < len(l.ackedIDs[n]) || d.Retained > len(l.sentIDs[n]) {
				bad("%s through node %d retains %d ids, want between %d acknowledged and %d sent", n, i, d.Retained, len(l.ackedIDs[n]), len(l.sentIDs[n]))
			}
		}
		// Counts alone miss an acknowledged id lost beside a cut-off
		// write that was stored; in exact mode the hashes tell each id.
		sent := hashesOf(maps.Keys(l.sentIDs[n]))
		for i := range f.c.nodes {
			b := download(n, i)
			if b == nil {
				continue
			}
			sk, err := theta.Decode(b)
			if err != nil {
				bad("%s through node %d: %v", n, i, err)
				continue
			}
			kept := map[uint64]bool{}
			for _, h := range sk.Hashes(nil) {
				kept[h] = true
			}
			for _, id := range keys(l.ackedIDs[n]) {
				if !kept[theta.HashInt(id)] {
					bad("%s through node %d lacks %d, acknowledged by %s", n, i, id, l.how[id])
				}
			}
			for h := range kept {
				if _, ok := sent[h]; !ok {
					bad("%s through node %d holds hash %#x of no id sent", n, i, h)
				}
			}
		}
	}
	var impAcked, impSent int64
	for _, v := range l.freqAcked {
		impAcked += v
	}
	for _, v := range l.freqSent {
		impSent += v
	}
	for i, d := range describe(faultFreq) {
		if d.Theta != 1 {
			bad("%s left exact mode (theta %v)", faultFreq, d.Theta)
		}
		if d.Retained < len(l.freqAcked) || d.Retained > len(l.freqSent) {
			bad("%s through node %d reaches %d users, want between %d acknowledged and %d sent", faultFreq, i, d.Retained, len(l.freqAcked), len(l.freqSent))
		}
		if d.Impressions < impAcked || d.Impressions > impSent {
			bad("%s through node %d counts %d impressions, want between %d acknowledged and %d sent", faultFreq, i, d.Impressions, impAcked, impSent)
		}
	}
	// And each user's impressions, between that user's acknowledged and
	// sent.
	users := hashesOf(maps.Keys(l.freqSent))
	for i := range f.c.nodes {
		b := download(faultFreq, i)
		if b == nil {
			continue
		}
		sk, err := freq.Decode(b)
		if err != nil {
			bad("%s through node %d: %v", faultFreq, i, err)
			continue
		}
		hs, counts := sk.Entries()
		got := map[int64]int64{}
		for j, h := range hs {
			id, ok := users[h]
			if !ok {
				bad("%s through node %d holds hash %#x of no user sent", faultFreq, i, h)
				continue
			}
			got[id] = int64(counts[j])
		}
		for _, id := range slices.Sorted(maps.Keys(l.freqSent)) {
			if got[id] < l.freqAcked[id] || got[id] > l.freqSent[id] {
				bad("%s through node %d counts %d impressions of user %d, want between %d acknowledged and %d sent",
					faultFreq, i, got[id], id, l.freqAcked[id], l.freqSent[id])
			}
		}
	}
	for i, d := range describe(faultCMS) {
		if d.Total < l.cmsAcked || d.Total > l.cmsSent {
			bad("%s through node %d: total %d, want between %d acknowledged and %d sent", faultCMS, i, d.Total, l.cmsAcked, l.cmsSent)
		}
	}
	return problems
}

// checkTheChecks runs verify on doctored copies of the ledger, each of
// which one check must catch: an acknowledged id never stored, an id
// stored but never sent (in an HLL, the series, a theta and the freq
// sketch), a Count-Min total above what was stored, and a 500. Each
// runs against what the last verify read (reads), and reads again only
// what its doctoring changed.
func (f *faultLoad) checkTheChecks() {
	f.t.Helper()
	// Ids lost from an HLL show only if one raises its register, which
	// one id does with a chance under 1/(k+1) when the register has seen
	// k ids. The series sees some 50 ids a register in one round, about
	// ten times as many in a 3-round soak: 300 ids would all hide in about
	// one round in seventy; 20,000 hide less than once in e^28 even in
	// the soak.
	never := make([]int64, 20000)
	for i := range never {
		never[i] = -int64(i+1) * 7919
	}
	lose := func(m map[int64]bool) {
		for _, id := range never {
			m[id] = true
		}
	}
	controls := map[string]func(l *faultLedger){
		"an acknowledged write missing from an HLL": func(l *faultLedger) { lose(l.ackedIDs[f.hlls[0]]) },
		"HLL ids never sent": func(l *faultLedger) {
			n := 0
			for id := range l.sentIDs[f.hlls[1]] {
				if n++; n%2 == 0 {
					delete(l.sentIDs[f.hlls[1]], id)
				}
			}
		},
		"an acknowledged write missing from the series": func(l *faultLedger) { lose(l.ackedIDs["series:"+faultSeries]) },
		"a series id never sent": func(l *faultLedger) {
			l.sentIDs["series:"+faultSeries] = map[int64]bool{}
		},
		// The theta and freq losses leave every count in range: the id
		// or impression lost comes with one stored though its write was
		// cut off, as a fault can make it.
		"a theta id acknowledged but not retained": func(l *faultLedger) {
			t := f.thetas[0]
			for id := range l.ackedIDs[t] {
				delete(l.ackedIDs[t], id) // stored, its write cut off
				break
			}
			l.sentIDs[t][never[0]], l.ackedIDs[t][never[0]] = true, true
		},
		"theta ids never sent": func(l *faultLedger) { l.sentIDs[f.thetas[1]] = map[int64]bool{} },
		"a freq impression acknowledged but not counted": func(l *faultLedger) {
			users := slices.Sorted(maps.Keys(l.freqAcked))
			// One more impression of the first user, acknowledged, after
			// all it was sent: at least one is not stored.
			u := users[0]
			l.freqSent[u]++
			lift := l.freqSent[u] - l.freqAcked[u]
			l.freqAcked[u] = l.freqSent[u]
			for _, v := range users[1:] { // stored, their writes cut off
				d := min(lift, l.freqAcked[v])
				l.freqAcked[v] -= d
				if lift -= d; lift == 0 {
					break
				}
			}
		},
		"a freq user acknowledged but not retained": func(l *faultLedger) {
			for id := range l.freqAcked {
				delete(l.freqAcked, id) // stored, its writes cut off
				break
			}
			l.freqSent[never[0]], l.freqAcked[never[0]] = 1, 1
		},
		"freq impressions never sent": func(l *faultLedger) {
			for id := range l.freqSent {
				l.freqSent[id] = 0
			}
		},
		"a Count-Min total above what is stored": func(l *faultLedger) { l.cmsAcked = l.cmsSent + 1 },
		"a Count-Min total above what was sent":  func(l *faultLedger) { l.cmsSent = 0 },
		"a 500":                                  func(l *faultLedger) { l.bad = append(l.bad, "a 500") },
	}
	seen := f.seen // the reads of the verify that passed
	for name, doctor := range controls {
		l := f.ledger.clone()
		doctor(l)
		if problems := f.verifyFrom(l, seen); len(problems) == 0 {
			f.t.Errorf("the checks did not catch %s", name)
		}
	}
}

// recorder is TestCitusFaults' testing.TB: it keeps the failure
// messages and repeats them when the test ends, after the logs of the
// database nodes and sketchd processes, so that the end of a failing
// run's output, which is what CI shows, says what failed.
type recorder struct {
	*testing.T
	mu   sync.Mutex
	msgs []string
}

// keep records a failure message with the time it was made.
func (r *recorder) keep(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, time.Now().Format("15:04:05.000")+" "+msg)
}

// repeat logs the failure messages again.
func (r *recorder) repeat() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.msgs) > 0 {
		r.T.Logf("TestCitusFaults failed (the messages again, after the logs):\n%s", strings.Join(r.msgs, "\n"))
	}
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.T.Helper()
	r.keep(fmt.Sprintf(format, args...))
	r.T.Fatalf(format, args...)
}

func (r *recorder) Fatal(args ...any) {
	r.T.Helper()
	r.keep(fmt.Sprint(args...))
	r.T.Fatal(args...)
}

func (r *recorder) Errorf(format string, args ...any) {
	r.T.Helper()
	r.keep(fmt.Sprintf(format, args...))
	r.T.Errorf(format, args...)
}

// logTails logs the end of each live sketchd process's log when the test
// has failed.
func (c *cluster) logTails(lines int) {
	if !c.t.Failed() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, p := range c.nodes {
		if p != nil {
			c.t.Logf("log of sketchd node %d on %s (tail):\n%s", i, p.addr, pgtest.Tail(p.log(), lines))
		}
	}
}
