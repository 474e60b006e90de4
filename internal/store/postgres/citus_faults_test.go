package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/pgtest/pgcluster"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/postgres"
	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// TestCitusCommitPreparedFails makes COMMIT PREPARED fail on a worker
// after the prepare succeeded, for a write spanning both workers, and
// checks that the write, once acknowledged, is readable at once through
// every node and survives a move of the failed worker's shard.
//
// The failure is placed exactly: the coordinator is made to wait for a
// synchronous standby that does not exist, which holds every commit
// between its two phases (after PREPARE TRANSACTION on the workers and
// the commit record on the coordinator, before COMMIT PREPARED); the test
// then restarts one worker with an immediate shutdown, which breaks the
// coordinator's connection to it, and lets the commit go on. Citus then
// answers COMMIT with its warning and leaves the transaction prepared on
// that worker. Citus's own recovery is switched off
// (citus.recover_2pc_interval = -1), so only sketchd's recovery can make
// the write visible.
func TestCitusCommitPreparedFails(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Citus cluster of its own")
	}
	t.Parallel() // its cluster is its own, and it asserts no timing
	c := pgcluster.StartCitus(t, 2)
	c.Exec(c.Coordinator, "ALTER SYSTEM SET citus.recover_2pc_interval = -1")
	c.Exec(c.Coordinator, "SELECT pg_reload_conf()")
	dsn := pgstoretest.SchemaOn(t, c.DSN(c.Coordinator), t.TempDir())
	// Before the schema is dropped: a transaction left prepared would
	// hold its locks and the drop would wait for ever.
	t.Cleanup(func() { c.Exec(c.Coordinator, "SELECT recover_prepared_transactions()") })
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	statements := &statementLog{}
	dbs := make([]*postgres.DB, 2)
	for i := range dbs {
		var err error
		dbs[i], err = postgres.Open(ctx, dsn, postgres.Options{MaxConns: 3, WriteTimeout: 2 * time.Minute, Logger: logger, Tracer: statements})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dbs[i].Close() })
	}
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)

	// Two sketches, one on each worker.
	a, b := "", ""
	for i := 0; a == "" || b == ""; i++ {
		if i == 100 {
			t.Fatal("no two names on different workers among 100")
		}
		name := fmt.Sprintf("s%02d", i)
		port := workerOf(t, admin, name)
		switch {
		case port == c.Workers[0].Port && a == "":
			a = name
		case port == c.Workers[1].Port && b == "":
			b = name
		}
	}
	for _, n := range []string{a, b} {
		if _, _, err := dbs[0].Create(ctx, n, hllSpec(11)); err != nil {
			t.Fatal(err)
		}
	}

	// Adds to one sketch each, through one node at once, to sketches on
	// both workers: the node commits each worker's in a transaction of
	// its own, in one phase, so Citus records no two-phase commit (its
	// own recovery, which would delete the records, is off).
	count2PC := func() int {
		t.Helper()
		var n int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_dist_transaction").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count2PC()
	var burst sync.WaitGroup
	for i := range 200 {
		burst.Go(func() {
			n := []string{a, b}[i%2]
			if _, err := dbs[0].Add(ctx, n, storetest.Ints(int64(i)*1000+1_000_000, int64(i)*1000+1_000_010), false); err != nil {
				t.Error(err)
			}
		})
	}
	burst.Wait()
	if prepared := count2PC() - before; prepared != 0 {
		t.Errorf("200 adds to single sketches on two workers made %d two-phase commits, want none", prepared)
	}

	c.Exec(c.Coordinator, "ALTER SYSTEM SET synchronous_standby_names = 'sketchd_test_hold'")
	c.Exec(c.Coordinator, "SELECT pg_reload_conf()")
	holdApplied(t, admin)
	var ids []int64
	var events []sketch.Event
	for i := range 3000 {
		id := int64(i)*7919 + 1
		ids = append(ids, id)
		events = append(events, sketch.Event{ID: cms.IntID(id), Sketches: []string{a, b}})
	}
	done := make(chan error, 1)
	go func() {
		_, err := dbs[0].AddEvents(ctx, events, false)
		done <- err
	}()
	waitFor(t, admin, "a commit waiting between the phases",
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event = 'SyncRep'")
	c.Stop(c.Workers[0], "immediate")
	c.Start(c.Workers[0])
	c.Exec(c.Coordinator, "ALTER SYSTEM RESET synchronous_standby_names")
	c.Exec(c.Coordinator, "SELECT pg_reload_conf()")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the write failed (%v); it should have committed", err)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("the write did not return")
	}
	warning := "failed to commit transaction on " + c.Workers[0].Addr()
	if !strings.Contains(c.Log(c.Coordinator), warning) {
		t.Fatalf("the coordinator logged no %q, so the test proves nothing", warning)
	}
	t.Logf("the store logged:\n%s", logs.String())

	check := func(when string) {
		t.Helper()
		for _, n := range []string{a, b} {
			stored := holdsAll(t, admin, n, ids, when)
			for i, db := range dbs {
				err := db.View(ctx, []string{n}, func(sks []sketch.Sketch) error {
					if got := sks[0].AppendBinary(nil); !bytes.Equal(got, stored) {
						t.Errorf("%s: %s read through node %d differs from the row on the coordinator", when, n, i)
					}
					return nil
				})
				if err != nil {
					t.Fatalf("%s: reading %s through node %d: %v", when, n, i, err)
				}
			}
		}
	}
	check("at once")

	var shard int64
	if err := admin.QueryRow(ctx, "SELECT get_shard_id_for_distribution_column('sketchd_sketches', $1::text)", a).Scan(&shard); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "SELECT citus_move_shard_placement($1, '127.0.0.1', $2, '127.0.0.1', $3, 'block_writes')",
		shard, c.Workers[0].Port, c.Workers[1].Port); err != nil {
		t.Fatal(err)
	}
	if port := workerOf(t, admin, a); port != c.Workers[1].Port {
		t.Fatalf("%s is on port %d after the move, want %d", a, port, c.Workers[1].Port)
	}
	check("after the shard move")
	statements.checkDocumented(t)
}

// workerOf returns the port of the worker holding name's row.
func workerOf(t *testing.T, conn *pgx.Conn, name string) int {
	t.Helper()
	var port int
	err := conn.QueryRow(ctx, `SELECT nodeport FROM citus_shards
		WHERE shardid = get_shard_id_for_distribution_column('sketchd_sketches', $1::text)`, name).Scan(&port)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// holdsAll checks in SQL on the coordinator that name's stored HLL holds
// every id (hll_union(stored, ids) = stored, ids hashed by
// postgresql-hll itself) and returns the stored bytes.
func holdsAll(t *testing.T, conn *pgx.Conn, name string, ids []int64, when string) []byte {
	t.Helper()
	var holds bool
	var card float64
	var stored []byte
	err := conn.QueryRow(ctx, `
		WITH acked AS (SELECT hll_add_agg(hll_hash_bigint(x), 11, 5, -1, 1) AS h FROM unnest($2::bigint[]) x)
		SELECT hll_send(hll_union(s.hll, acked.h)) = hll_send(s.hll), hll_cardinality(s.hll), hll_send(s.hll)
		FROM sketchd_sketches s, acked WHERE s.name = $1`, name, ids).Scan(&holds, &card, &stored)
	if err != nil {
		t.Fatalf("%s: %s: %v", when, name, err)
	}
	if !holds {
		t.Errorf("%s: %s (cardinality %.0f) lacks acknowledged ids: hll_union(stored, acknowledged) != stored", when, name, card)
	}
	return stored
}

// waitFor polls a boolean query until it is true, for at most a minute.
// holdApplied waits until conn's backend runs with the
// synchronous_standby_names that holds every COMMIT. pg_reload_conf
// returns before the server's processes have the new setting: a backend
// takes it before the next command it reads after the postmaster's
// signal, and the postmaster signals them all at once. Without the wait,
// a write could commit before the hold, under load (a CI run: the write
// returned at once, and the test stopped another transaction's COMMIT
// a minute later).
func holdApplied(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	waitFor(t, conn, "the hold on COMMIT in effect", "SELECT current_setting('synchronous_standby_names') = 'sketchd_test_hold'")
}

func waitFor(t *testing.T, conn *pgx.Conn, what, query string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var ok bool
		if err := conn.QueryRow(ctx, query).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within a minute", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestCitusOnePhaseCommitFails breaks a write on one worker while the
// worker commits it: Citus commits a transaction that wrote to one worker
// in one phase, and a failure of that COMMIT fails the transaction on the
// coordinator although the worker may have committed. The write must
// answer Unavailable (503: outcome unknown, the client retries), not an
// internal error, and it must not be run again behind the client's back:
// the Count-Min total is the one before or the one after the write, never
// more.
//
// The worker's COMMIT is held by a synchronous standby that does not
// exist, and its backend is terminated while it waits: the worker has
// then committed locally and the coordinator's connection breaks.
func TestCitusOnePhaseCommitFails(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Citus cluster of its own")
	}
	t.Parallel() // its cluster is its own, and it asserts no timing
	c := pgcluster.StartCitus(t, 2)
	dsn := pgstoretest.SchemaOn(t, c.DSN(c.Coordinator), t.TempDir())
	db, err := postgres.Open(ctx, dsn, postgres.Options{MaxConns: 3, WriteTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	w, err := pgx.Connect(ctx, c.DSN(c.Workers[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	// Names on the first worker, so the transaction is one-phase.
	var names []string
	for i := 0; len(names) < 3; i++ {
		if n := fmt.Sprintf("c%02d", i); workerOf(t, admin, n) == c.Workers[0].Port {
			names = append(names, n)
		}
	}
	spec := sketch.Spec{Params: sketch.CMSParams{Params: cms.Params{Width: 200, Depth: 4}}}
	for _, n := range names {
		if _, _, err := db.Create(ctx, n, spec); err != nil {
			t.Fatal(err)
		}
	}
	var events []sketch.Event
	for i := range 100 {
		events = append(events, sketch.Event{ID: cms.IntID(int64(i)), Sketches: names})
	}

	c.Exec(c.Workers[0], "ALTER SYSTEM SET synchronous_standby_names = 'sketchd_test_hold'")
	c.Exec(c.Workers[0], "SELECT pg_reload_conf()")
	holdApplied(t, w)
	done := make(chan error, 1)
	go func() {
		_, err := db.AddEvents(ctx, events, false)
		done <- err
	}()
	waitFor(t, w, "a COMMIT waiting on the worker", "SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event = 'SyncRep'")
	if _, err := w.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'"); err != nil {
		t.Fatal(err)
	}
	c.Exec(c.Workers[0], "ALTER SYSTEM RESET synchronous_standby_names")
	c.Exec(c.Workers[0], "SELECT pg_reload_conf()")
	err = <-done
	if sketch.KindOf(err) != sketch.Unavailable {
		t.Fatalf("the write whose COMMIT failed on the worker returned %v, want Unavailable (outcome unknown)", err)
	}
	err = db.View(ctx, names, func(sks []sketch.Sketch) error {
		for i, sk := range sks {
			c, _ := sketch.CMSOf(sk)
			if got := c.Total(); got != 0 && got != 100 {
				t.Errorf("%s: total %d, want 0 (not committed) or 100 (committed once)", names[i], got)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCitusRewriteAcrossShardMove places a shard move between the read
// and the write of a read-modify-write (a Count-Min merged in Go): the
// row lock the read took holds the old placement, so another node's add,
// acknowledged meanwhile on the new placement, must not be overwritten
// by the write. Transform's function runs between the two, which lets the
// test move the shard and add at that moment.
func TestCitusRewriteAcrossShardMove(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Citus cluster of its own")
	}
	t.Parallel() // its cluster is its own, and it asserts no timing
	statements := &statementLog{}
	c, dbs, admin := citusNodes(t, statements, statements)
	spec := sketch.Spec{Params: sketch.CMSParams{Params: cms.Params{Width: 200, Depth: 4}}}
	if _, _, err := dbs[0].Create(ctx, "c", spec); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[1].Add(ctx, "c", oneID(5), false); err != nil {
		t.Fatal(err)
	}

	locked, resume := make(chan struct{}), make(chan struct{})
	calls := 0
	done := make(chan error, 1)
	go func() {
		_, err := dbs[0].Transform(ctx, "c", "c", func(cur sketch.Sketch) (sketch.Sketch, error) {
			if calls++; calls == 1 {
				close(locked)
				<-resume
			}
			add, err := spec.New()
			if err != nil {
				return nil, err
			}
			b, err := add.Kind().Prepare(oneID(100))
			if err != nil {
				return nil, err
			}
			if _, err := add.Apply(b, nil); err != nil {
				return nil, err
			}
			return sketch.MergedInto("c", cur, add)
		})
		done <- err
	}()
	<-locked
	from := workerOf(t, admin, "c")
	to := c.Workers[0].Port
	if from == to {
		to = c.Workers[1].Port
	}
	var shard int64
	if err := admin.QueryRow(ctx, "SELECT get_shard_id_for_distribution_column('sketchd_sketches', 'c'::text)").Scan(&shard); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "SELECT citus_move_shard_placement($1, '127.0.0.1', $2, '127.0.0.1', $3, 'block_writes')", shard, from, to); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[1].Add(ctx, "c", oneID(7), false); err != nil {
		t.Fatalf("an add on the new placement: %v", err)
	}
	close(resume)
	if err := <-done; err != nil {
		t.Fatalf("the rewrite: %v", err)
	}
	var total uint64
	err := dbs[1].View(ctx, []string{"c"}, func(sks []sketch.Sketch) error {
		cm, _ := sketch.CMSOf(sks[0])
		total = cm.Total()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total != 112 {
		t.Errorf("total %d after 5, 7 (acknowledged during the rewrite) and 100; want 112", total)
	}
	if calls != 2 {
		t.Errorf("the rewrite's function ran %d times; want 2 (once on the old placement, once more after the write found the row changed)", calls)
	}
	statements.checkDocumented(t)
}

// TestCitusSeriesRewriteAcrossShardMove: a series add or merging import
// of a kind other than HLL reads each bucket under FOR UPDATE and writes
// it back changed. A shard move that completed between the read and the
// write would send the write to the new placement, over an add
// acknowledged there meanwhile. The test holds a rewrite between its read
// and its write (a query tracer pauses it), moves the series' shard with
// block_writes, adds through another node, lets the rewrite go on, and
// finds every count in every bucket. Skipping the INSERT that comes
// before the read, for a bucket that exists, loses the other add (105 of
// 112) on either path.
func TestCitusSeriesRewriteAcrossShardMove(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Citus cluster of its own")
	}
	t.Parallel() // its cluster is its own, and it asserts no timing
	// The held rewrite: an add, or an import merging an hour bucket (and
	// so its day and month), each on a cluster of its own.
	t.Run("add", func(t *testing.T) {
		t.Parallel()
		seriesRewriteAcrossShardMove(t, func(db *postgres.DB, ts time.Time, n int) error {
			_, err := db.AddSeries(ctx, "s", ts, oneID(n))
			return err
		})
	})
	t.Run("import", func(t *testing.T) {
		t.Parallel()
		seriesRewriteAcrossShardMove(t, func(db *postgres.DB, ts time.Time, n int) error {
			_, err := db.ImportSeries(ctx, "s", false, func(spec *series.Spec) ([]series.Import, error) {
				keys, err := spec.Buckets(ts, ts)
				if err != nil {
					return nil, err
				}
				sk, err := spec.Params.New()
				if err != nil {
					return nil, err
				}
				b, err := sk.Kind().Prepare(oneID(n))
				if err != nil {
					return nil, err
				}
				if _, err := sk.Apply(b, nil); err != nil {
					return nil, err
				}
				return []series.Import{{Key: keys[0], Sketch: sk}}, nil
			})
			return err
		})
	})
}

// oneID is n counts of the id 1, for a Count-Min.
func oneID(n int) storetest.Input {
	return storetest.Input{IDs: []cms.ID{cms.IntID(1)}, Counts: []uint64{uint64(n)}}
}

func seriesRewriteAcrossShardMove(t *testing.T, rewrite func(db *postgres.DB, ts time.Time, n int) error) {
	pause := newPause("FROM sketchd_series_buckets WHERE series = $1 AND level = $2 AND start = $3 FOR UPDATE")
	other := &statementLog{}
	c, dbs, admin := citusNodes(t, pause, other)
	spec := testSeriesSpec(t, sketch.CMSParams{Params: cms.Params{Width: 200, Depth: 4}})
	if _, _, err := dbs[0].CreateSeries(ctx, "s", spec); err != nil {
		t.Fatal(err)
	}
	ts := time.Now()
	keys, err := spec.Buckets(ts, ts)
	if err != nil || keys[0].Level != series.Hour {
		t.Fatalf("the first bucket of %v is %v (%v), want an hour", ts, keys, err)
	}
	if _, err := dbs[1].AddSeries(ctx, "s", ts, oneID(5)); err != nil {
		t.Fatal(err)
	}
	moveWhileHeld(t, c, admin, pause, "s", func() error { return rewrite(dbs[0], ts, 100) }, func() error {
		_, err := dbs[1].AddSeries(ctx, "s", ts, oneID(7))
		return err
	})
	for i, sk := range buckets(t, dbs[1], "s", keys) {
		cm, ok := sketch.CMSOf(sk)
		if !ok {
			t.Fatalf("bucket %v: not a Count-Min (%v)", keys[i], sk)
		}
		if cm.Total() != 112 {
			t.Errorf("bucket %s %v: total %d after 5, 100 (held between its read and its write) and 7; want 112", keys[i].Level, keys[i].Start, cm.Total())
		}
	}
	pause.checkDocumented(t)
	other.checkDocumented(t)
}

// moveWhileHeld runs held, which pause holds at its statement, moves the
// shard group of the series name to the other worker with block_writes,
// runs other (through another node), lets held go on, and fails the test
// unless all three succeed and the shard ended on the other worker. The
// move starts first and, if it completes while held is held, other runs
// on the new placement; otherwise the move waits for held and other waits
// too. Either way held goes on after a few seconds. other is retried as a
// client retries a 503 (Citus may cancel it as part of a distributed
// deadlock with the move).
func moveWhileHeld(t *testing.T, c *pgcluster.Cluster, admin *pgx.Conn, pause *pauseAfter, name string, held, other func() error) {
	t.Helper()
	var shard int64
	var from int
	if err := admin.QueryRow(ctx, `SELECT shardid, nodeport FROM citus_shards
		WHERE shardid = get_shard_id_for_distribution_column('sketchd_series', $1::text)`, name).Scan(&shard, &from); err != nil {
		t.Fatal(err)
	}
	to := c.Workers[0].Port
	if from == to {
		to = c.Workers[1].Port
	}
	pause.arm()
	heldDone, moved, otherDone := make(chan error, 1), make(chan error, 1), make(chan error, 1)
	go func() { heldDone <- held() }()
	<-pause.paused
	go func() {
		_, err := admin.Exec(ctx, "SELECT citus_move_shard_placement($1, '127.0.0.1', $2, '127.0.0.1', $3, 'block_writes')", shard, from, to)
		moved <- err
	}()
	errs := map[string]error{}
	var early []string
	select {
	case errs["the move"] = <-moved:
		early = append(early, "the move")
	case <-time.After(3 * time.Second):
	}
	go func() {
		var err error
		for range 20 {
			if err = other(); sketch.KindOf(err) != sketch.Unavailable {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		otherDone <- err
	}()
	select {
	case errs["the other write"] = <-otherDone:
		early = append(early, "the other write")
	case <-time.After(3 * time.Second):
	}
	t.Logf("done while a write was held between its read and its write: %v", early)
	close(pause.resume)
	for what, ch := range map[string]chan error{"the held write": heldDone, "the move": moved, "the other write": otherDone} {
		if _, ok := errs[what]; ok {
			continue
		}
		select {
		case errs[what] = <-ch:
		case <-time.After(time.Minute):
			t.Fatalf("%s did not finish in a minute after the held write went on", what)
		}
	}
	for what, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	var now int
	if err := admin.QueryRow(ctx, "SELECT nodeport FROM citus_shards WHERE shardid = $1", shard).Scan(&now); err != nil || now != to {
		t.Fatalf("shard %d is on port %d after the move (%v), want %d", shard, now, err, to)
	}
}

// TestCitusSeriesChangeAcrossShardMove: a PATCH of a series reads its
// definition FOR UPDATE and writes it back changed. The test holds one
// PATCH (a longer hour retention) between its read and its write while
// the series' shard moves and another node PATCHes the late limit, and
// finds both changes in the definition. A plain UPDATE loses the other
// node's late limit.
func TestCitusSeriesChangeAcrossShardMove(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Citus cluster of its own")
	}
	t.Parallel() // its cluster is its own, and it asserts no timing
	pause := newPause("FROM sketchd_series WHERE name = $1 FOR UPDATE")
	other := &statementLog{}
	c, dbs, admin := citusNodes(t, pause, other)
	spec := testSeriesSpec(t, sketch.HLLParams{Params: hll.DefaultParams()})
	if _, _, err := dbs[0].CreateSeries(ctx, "s", spec); err != nil {
		t.Fatal(err)
	}
	hours := series.Duration{Days: 3}
	late := series.Duration{Days: 1}
	moveWhileHeld(t, c, admin, pause, "s", func() error {
		_, err := dbs[0].ChangeSeries(ctx, "s", series.Change{Retentions: map[series.Level]series.Duration{series.Hour: hours}})
		return err
	}, func() error {
		_, err := dbs[1].ChangeSeries(ctx, "s", series.Change{LateLimit: &late})
		return err
	})
	_, got := view(t, dbs[1], "s", nil)
	if kept, _ := got.Kept(series.Hour); kept != hours {
		t.Errorf("hour retention %v after the held PATCH; want %v", kept, hours)
	}
	if got.LateLimit != late {
		t.Errorf("late limit %v after the other node's PATCH; want %v (lost under the held one)", got.LateLimit, late)
	}
	pause.checkDocumented(t)
	other.checkDocumented(t)
}

// citusNodes starts a Citus cluster of a coordinator and two workers and
// opens a store node on it for each tracer, and an admin connection to
// the coordinator; all are closed when the test ends.
func citusNodes(t *testing.T, tracers ...pgx.QueryTracer) (*pgcluster.Cluster, []*postgres.DB, *pgx.Conn) {
	t.Helper()
	c := pgcluster.StartCitus(t, 2)
	dsn := pgstoretest.SchemaOn(t, c.DSN(c.Coordinator), t.TempDir())
	dbs := make([]*postgres.DB, len(tracers))
	for i, tracer := range tracers {
		var err error
		if dbs[i], err = postgres.Open(ctx, dsn, postgres.Options{MaxConns: 3, WriteTimeout: time.Minute, Tracer: tracer}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dbs[i].Close() })
	}
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(ctx) })
	return c, dbs, admin
}

// pauseAfter is a query tracer that records statements (statementLog)
// and, once armed, holds the first statement containing match when it
// ends: it closes paused and waits for resume.
type pauseAfter struct {
	statementLog
	match          string
	armed          atomic.Bool
	once           sync.Once
	paused, resume chan struct{}
}

type pauseKey struct{}

func newPause(match string) *pauseAfter {
	return &pauseAfter{match: match, paused: make(chan struct{}), resume: make(chan struct{})}
}

func (p *pauseAfter) arm() { p.armed.Store(true) }

func (p *pauseAfter) TraceQueryStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	ctx = p.statementLog.TraceQueryStart(ctx, conn, d)
	if p.armed.Load() && strings.Contains(normalizeSQL(d.SQL), p.match) {
		ctx = context.WithValue(ctx, pauseKey{}, true)
	}
	return ctx
}

func (p *pauseAfter) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if ctx.Value(pauseKey{}) != nil {
		p.once.Do(func() {
			close(p.paused)
			<-p.resume
		})
	}
}

// TestCitusReadiness: a node is ready only while every worker answers
// the coordinator. With one worker stopped it turns unready within a few
// probes (a write to it times out, which probes at once), says which
// worker, and reports it down in Dependencies; once the worker is back it
// is ready again. Pinging the coordinator alone called it ready
// throughout.
func TestCitusReadiness(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Citus cluster of its own")
	}
	t.Parallel() // its cluster is its own, and it asserts no timing
	c, dbs, _ := citusNodes(t, nil)
	db := dbs[0]
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 20 s (ready %v: %q; %+v)", what, db.Ready(), db.NotReady(), db.Dependencies())
			}
		}
	}
	wait("ready at start", db.Ready)
	down := c.Workers[1]
	c.Stop(down, "immediate")
	// A write probes at once when it fails; the next round would anyway.
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	db.Create(wctx, "r1", sketch.Spec{Params: sketch.HLLParams{Params: hll.DefaultParams()}})
	cancel()
	want := fmt.Sprintf("worker %s", down.Addr())
	// (A failed write makes the node unready at once; the probe then
	// finds which dependency failed.)
	wait("unready with a worker stopped, and the probe naming it", func() bool {
		return !db.Ready() && strings.Contains(db.NotReady(), want)
	})
	if why := db.NotReady(); !strings.Contains(why, want) {
		t.Errorf("NotReady = %q, want it to name %s", why, want)
	}
	found := false
	for _, d := range db.Dependencies() {
		if d.Name == want {
			found = true
			if d.Up || d.Err == "" {
				t.Errorf("%s reported %+v with the worker stopped", want, d)
			}
		} else if !d.Up {
			t.Errorf("%s reported down: %+v", d.Name, d)
		}
	}
	if !found {
		t.Errorf("Dependencies %+v do not list %s", db.Dependencies(), want)
	}
	c.Start(down)
	wait("ready once the worker is back", db.Ready)
	for _, d := range db.Dependencies() {
		if !d.Up {
			t.Errorf("%s still down after it came back: %+v", d.Name, d)
		}
	}
}
