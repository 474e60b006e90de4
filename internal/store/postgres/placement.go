package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// On Citus a transaction that writes to one worker commits there in one
// phase; one that writes to several commits in two (PREPARE on each, the
// commit record on the coordinator, COMMIT PREPARED on each), which costs
// more round trips and fsyncs, and whose second phase can fail after the
// first (citus.go). The committer therefore splits each group of waiting
// writes by the worker that holds their rows: the writes whose sketches
// all live on one worker commit in a transaction of that worker's, the
// groups of different workers at once, each on its own connection; only
// writes that span workers (events naming sketches on several) commit in
// two phases. Where rows live is read from Citus's metadata and kept:
// each name's shard, which does not change, and each shard's worker,
// read again every few seconds (a move or rebalance changes it; a stale
// guess only costs a two-phase commit).

// placementTTL is how long the node trusts its map of shards to workers.
const placementTTL = 5 * time.Second

// placements maps sketch names to the workers that hold them, on Citus.
type placements struct {
	shards sync.Map // name → int64 shard id

	mu      sync.Mutex
	workers map[int64]int32 // shard id → worker group
	read    time.Time
}

const (
	// distributedSQL reports whether sketchd_sketches is a distributed
	// table (asked only when the citus extension is installed).
	citusSQL       = `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')`
	distributedSQL = `SELECT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'sketchd_sketches'::regclass)`
	// shardsSQL returns the shard of each name.
	shardsSQL = `SELECT n, get_shard_id_for_distribution_column('sketchd_sketches', n) FROM unnest($1::text[]) n`
	// workersSQL returns the worker group of each shard.
	workersSQL = `SELECT p.shardid, p.groupid FROM pg_dist_placement p JOIN pg_dist_shard s ON s.shardid = p.shardid
WHERE s.logicalrelid = 'sketchd_sketches'::regclass`
)

// openPlacements returns the placements of a Citus database whose
// sketches are distributed, nil for any other.
func openPlacements(ctx context.Context, conn *pgx.Conn) (*placements, error) {
	var citus, distributed bool
	if err := conn.QueryRow(ctx, citusSQL).Scan(&citus); err != nil || !citus {
		return nil, err
	}
	if err := conn.QueryRow(ctx, distributedSQL).Scan(&distributed); err != nil || !distributed {
		return nil, err
	}
	return &placements{}, nil
}

// split divides a group of writes by the worker their sketches live on:
// one part per worker, and last the writes that span workers or whose
// worker it could not learn (then in one transaction, as without Citus).
// Errors reading the metadata only give up the split.
func (s *DB) split(group []*op) [][]*op {
	p := s.placements
	if p == nil || len(group) < 2 {
		return [][]*op{group}
	}
	ctx, cancel := s.groupContext(deadlines(group)...)
	defer cancel()
	var unknown []string
	for _, o := range group {
		for _, n := range o.names {
			if _, ok := p.shards.Load(n); !ok {
				unknown = append(unknown, n)
			}
		}
	}
	if len(unknown) > 0 {
		rows, err := s.pool.Query(ctx, shardsSQL, sortedUnique(unknown))
		if err != nil {
			return [][]*op{group}
		}
		for rows.Next() {
			var n string
			var shard int64
			if rows.Scan(&n, &shard) == nil {
				p.shards.Store(n, shard)
			}
		}
		if rows.Err() != nil {
			return [][]*op{group}
		}
	}
	workers, err := p.workerMap(ctx, s)
	if err != nil {
		return [][]*op{group}
	}
	byWorker := map[int32][]*op{}
	var order []int32
	var spanning []*op
	for _, o := range group {
		w, one := int32(0), true
		for i, n := range o.names {
			v, ok := p.shards.Load(n)
			if !ok {
				one = false
				break
			}
			g, known := workers[v.(int64)]
			if !known || i > 0 && g != w {
				one = false
				break
			}
			w = g
		}
		if !one || len(o.names) == 0 {
			spanning = append(spanning, o)
			continue
		}
		if byWorker[w] == nil {
			order = append(order, w)
		}
		byWorker[w] = append(byWorker[w], o)
	}
	parts := make([][]*op, 0, len(order)+1)
	for _, w := range order {
		parts = append(parts, byWorker[w])
	}
	if len(spanning) > 0 {
		parts = append(parts, spanning)
	}
	return parts
}

// workerMap returns the map of shards to workers, read again when it is
// older than placementTTL.
func (p *placements) workerMap(ctx context.Context, s *DB) (map[int64]int32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.workers != nil && time.Since(p.read) < placementTTL {
		return p.workers, nil
	}
	rows, err := s.pool.Query(ctx, workersSQL)
	if err != nil {
		return nil, err
	}
	m := map[int64]int32{}
	for rows.Next() {
		var shard int64
		var group int32
		if err := rows.Scan(&shard, &group); err != nil {
			rows.Close()
			return nil, err
		}
		m[shard] = group
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	p.workers, p.read = m, time.Now()
	return m, nil
}

// runGroups commits a gathered group of writes: on Citus, split by
// worker, every part at once (parts that share a sketch, a part of one
// worker and the writes spanning workers, serialise on its row lock);
// elsewhere as one group.
func (s *DB) runGroups(group []*op) {
	parts := s.split(group)
	if len(parts) == 1 {
		s.runGroup(parts[0])
		return
	}
	var wg sync.WaitGroup
	for _, part := range parts {
		wg.Go(func() { s.runGroup(part) })
	}
	wg.Wait()
}
