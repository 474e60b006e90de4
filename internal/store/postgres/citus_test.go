package postgres_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/store/postgres"
	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// openCitus opens a store on a fresh schema of the shared Citus cluster
// (SKETCHD_CITUS_DSN) and returns it with its connection string.
func openCitus(t *testing.T, opts postgres.Options) (*postgres.DB, string) {
	t.Helper()
	dsn := pgstoretest.CitusSchema(t, t.TempDir())
	db, err := postgres.Open(ctx, dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, dsn
}

// TestCitusDistributesTables checks that on Citus the migrations
// distribute the three tables by name, co-located, with shards on more
// than one worker: the layout every other Citus test relies on.
func TestCitusDistributesTables(t *testing.T) {
	_, dsn := openCitus(t, postgres.Options{})
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
		SELECT c.relname, p.partmethod::text, a.attname::text, p.colocationid,
		       (SELECT count(DISTINCT pl.groupid) FROM pg_dist_shard s JOIN pg_dist_placement pl USING (shardid)
		        WHERE s.logicalrelid = p.logicalrelid),
		       (SELECT count(*) FROM pg_dist_shard s WHERE s.logicalrelid = p.logicalrelid)
		FROM pg_dist_partition p
		JOIN pg_class c ON c.oid = p.logicalrelid
		JOIN pg_attribute a ON a.attrelid = p.logicalrelid AND a.attname = column_to_column_name(p.logicalrelid, p.partkey)
		WHERE c.relnamespace = current_schema()::regnamespace
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	type dist struct {
		table, method, column string
		colocation            int32
		workers, shards       int64
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dist, error) {
		var d dist
		err := r.Scan(&d.table, &d.method, &d.column, &d.colocation, &d.workers, &d.shards)
		return d, err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"sketchd_idempotency": "target", "sketchd_series": "name", "sketchd_series_buckets": "series", "sketchd_sketches": "name"}
	if len(got) != len(want) {
		t.Fatalf("distributed tables %+v, want %v", got, want)
	}
	for _, d := range got {
		if want[d.table] != d.column || d.method != "h" {
			t.Errorf("%s is distributed by %s (method %s), want hash by %s", d.table, d.column, d.method, want[d.table])
		}
		if d.colocation != got[0].colocation {
			t.Errorf("%s is in co-location group %d, %s in %d", d.table, d.colocation, got[0].table, got[0].colocation)
		}
		if d.workers < 2 {
			t.Errorf("%s has shards on %d workers, want at least 2", d.table, d.workers)
		}
		t.Logf("%s: %d shards on %d workers", d.table, d.shards, d.workers)
	}
}

// TestCitusPrefixUnionRunsOnWorkers explains the prefix union's statement
// on Citus and checks that every shard is a task whose query on the
// worker computes hll_union_agg grouped by parameters, so that only a
// partial union per shard and group travels to the coordinator, which
// merges them with hll_union_agg.
func TestCitusPrefixUnionRunsOnWorkers(t *testing.T) {
	db, dsn := openCitus(t, postgres.Options{})
	for i := range 40 {
		name := fmt.Sprintf("campaign:%02d", i)
		if _, _, err := db.Create(ctx, name, hllSpec(11)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Add(ctx, name, storetest.Ints(int64(i)*100, int64(i)*100+150), false); err != nil {
			t.Fatal(err)
		}
	}
	lines, shards := explainCitus(t, dsn, postgres.PrefixUnionSQL, "campaign:", "", "campaign:\x7f", time.Now())
	plan := strings.Join(lines, "\n")
	var tasks int
	var workerQuery, merge string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "Task Count: "):
			tasks, _ = strconv.Atoi(strings.TrimPrefix(l, "Task Count: "))
		case strings.HasPrefix(l, "Query: "):
			workerQuery = l
		case strings.HasPrefix(l, "Output: ") && strings.Contains(l, "remote_scan") && merge == "":
			merge = l
		}
	}
	if !strings.Contains(plan, "Custom Scan (Citus Adaptive)") || tasks != shards {
		t.Fatalf("the plan has %d tasks for %d shards; want one per shard through Citus's executor:\n%s", tasks, shards, plan)
	}
	if !strings.Contains(workerQuery, "hll_union_agg(hll)") || !strings.Contains(workerQuery, "GROUP BY") {
		t.Errorf("the workers' query does not union the HLLs by group:\n%s", workerQuery)
	}
	if !strings.Contains(merge, "hll_union_agg(remote_scan.") {
		t.Errorf("the coordinator does not merge the workers' partial unions:\n%s", merge)
	}
	// And the statement gives the union the store answers.
	u, n, err := db.UnionPrefix(ctx, "campaign:", "", 1000)
	if err != nil || n != 40 {
		t.Fatalf("UnionPrefix = %d sketches, %v", n, err)
	}
	if got := u.Estimate(); got < 4050*0.95 || got > 4050*1.05 {
		t.Errorf("the union of 40 overlapping ranges covering 4050 ids estimates %.0f, want 4050 ± 5%%", got)
	}
}

// explainCitus returns the lines of EXPLAIN (VERBOSE) of the statement
// sql with args on the Citus database dsn, and how many shards
// sketchd_sketches has there.
func explainCitus(t *testing.T, dsn, sql string, args ...any) (lines []string, shards int) {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "EXPLAIN (VERBOSE) "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	if lines, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'sketchd_sketches'::regclass").Scan(&shards); err != nil {
		t.Fatal(err)
	}
	return lines, shards
}

// TestCitusSplitsGroupsByWorker checks the committer's split of a group of
// writes on Citus against Citus's own placement of the sketches: writes to
// sketches of one worker share a part, different workers' writes are in
// different parts, and writes that span workers are together in the last.
// On plain PostgreSQL a group stays whole.
func TestCitusSplitsGroupsByWorker(t *testing.T) {
	db, dsn := openCitus(t, postgres.Options{})
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	worker := map[string]int{}
	var byWorker [2][]string
	var ports []int
	for i := 0; len(byWorker[0]) < 3 || len(byWorker[1]) < 3; i++ {
		n := fmt.Sprintf("s%02d", i)
		var port int
		if err := conn.QueryRow(ctx, `SELECT nodeport FROM citus_shards
			WHERE shardid = get_shard_id_for_distribution_column('sketchd_sketches', $1::text)`, n).Scan(&port); err != nil {
			t.Fatal(err)
		}
		w := slices.Index(ports, port)
		if w < 0 {
			ports = append(ports, port)
			w = len(ports) - 1
		}
		if w > 1 {
			continue
		}
		worker[n] = w
		byWorker[w] = append(byWorker[w], n)
	}
	a, b := byWorker[0], byWorker[1]
	writes := [][]string{{a[0]}, {b[0]}, {a[1], a[2]}, {a[0], b[1]}, {b[1], b[2]}, {a[2]}}
	part, parts := db.Split(writes)
	if parts != 3 {
		t.Fatalf("%d parts, want 3 (one per worker and the spanning write): %v", parts, part)
	}
	if part[3] != 2 {
		t.Errorf("the write spanning both workers is in part %d, want the last (2)", part[3])
	}
	for i, w := range writes {
		if i == 3 {
			continue
		}
		for j, v := range writes {
			if j == 3 {
				continue
			}
			same := worker[w[0]] == worker[v[0]]
			if (part[i] == part[j]) != same {
				t.Errorf("writes %v and %v: parts %d and %d; their sketches are on workers %d and %d", w, v, part[i], part[j], worker[w[0]], worker[v[0]])
			}
		}
	}
	// On plain PostgreSQL the group stays whole.
	plain := openWith(t, 1, postgres.Options{})[0]
	if _, parts := plain.Split(writes); parts != 1 {
		t.Errorf("on PostgreSQL the group was split in %d", parts)
	}
}

// TestCitusConcurrentCreates has two nodes create the same sketches at
// once (adds with create): one node's INSERT then fails with a unique
// violation, which Citus passes on without naming the table, and the
// write must run again and add to the row the other node created, not
// fail.
func TestCitusConcurrentCreates(t *testing.T) {
	dsn := pgstoretest.CitusSchema(t, t.TempDir())
	var dbs []*postgres.DB
	for range 2 {
		db, err := postgres.Open(ctx, dsn, postgres.Options{MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs = append(dbs, db)
	}
	var failed atomic.Int64
	for i := range 40 {
		// Eight writers released together on a sketch that is missing.
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				<-start
				in := storetest.Ints(int64(g)*1000+int64(i), int64(g)*1000+int64(i)+1)
				if _, err := dbs[g%2].Add(ctx, fmt.Sprintf("new%02d", i), in, true); err != nil {
					if failed.Add(1) == 1 {
						t.Errorf("a create racing with another node's: %v", err)
					}
				}
			})
		}
		close(start)
		wg.Wait()
	}
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of 320 adds with create failed", n)
	}
	for i := range 40 {
		info, err := dbs[0].Describe(ctx, fmt.Sprintf("new%02d", i))
		if err != nil || info.Cardinality < 7.5 || info.Cardinality > 8.5 {
			t.Errorf("new%02d: %v, %v; want 8 ids, one from each writer", i, info.Cardinality, err)
		}
	}
}
