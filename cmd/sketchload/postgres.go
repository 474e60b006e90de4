package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The -postgres mode sends the same batches as bigint[] to PostgreSQL
// itself, which builds the HLL with hll_add_agg and merges it into the
// stored one with hll_union: the work a sketchd add does, done by the
// database, one statement (and one commit) a batch.
const (
	pgTableSQL = `CREATE TABLE IF NOT EXISTS sketchload_hll (name text PRIMARY KEY, hll hll NOT NULL)`
	pgAddSQL   = `INSERT INTO sketchload_hll (name, hll)
SELECT $1, hll_add_agg(hll_hash_bigint(x), $3, $4, -1, 1) FROM unnest($2::bigint[]) x
ON CONFLICT (name) DO UPDATE SET hll = hll_union(sketchload_hll.hll, excluded.hll)`
)

// pgDriver holds what every PostgreSQL worker shares.
type pgDriver struct {
	cfg   *config
	names []string
	pool  [][]int64 // prebuilt batches, read-only once built
}

func newPGDriver(cfg *config) *pgDriver {
	return &pgDriver{cfg: cfg, names: cfg.names()}
}

// setup creates the table (and the hll extension if it may), and with
// -create empties the run's rows.
func (d *pgDriver) setup(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, d.cfg.postgres)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS hll"); err != nil {
		return fmt.Errorf("postgres: the hll extension: %w", err)
	}
	if _, err := conn.Exec(ctx, pgTableSQL); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if d.cfg.create {
		if _, err := conn.Exec(ctx, "DELETE FROM sketchload_hll WHERE name = ANY($1)", d.names); err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
	}
	return nil
}

// buildPool prebuilds n batches (batch j holds batch index j's ids).
func (d *pgDriver) buildPool(n int) {
	if n <= 0 {
		return
	}
	g := newIDGen(d.cfg.dist, d.cfg.ids, d.cfg.zipfS, d.cfg.seed, poolStream)
	arena := make([]int64, n*d.cfg.batch)
	d.pool = make([][]int64, n)
	for j := range d.pool {
		b := arena[j*d.cfg.batch : (j+1)*d.cfg.batch : (j+1)*d.cfg.batch]
		g.fill(b, uint64(j))
		d.pool[j] = b
	}
}

// newWorker returns worker i with its connection open.
func (d *pgDriver) newWorker(ctx context.Context, i int) (*pgWorker, error) {
	w := &pgWorker{d: d, gen: newIDGen(d.cfg.dist, d.cfg.ids, d.cfg.zipfS, d.cfg.seed, uint64(i)+1)}
	if d.cfg.prebuilt == 0 {
		w.ids = make([]int64, d.cfg.batch)
	}
	if err := w.connect(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// pgWorker owns one connection and runs one statement a unit.
type pgWorker struct {
	d    *pgDriver
	conn *pgx.Conn
	gen  *idGen
	ids  []int64
}

func (w *pgWorker) connect(ctx context.Context) error {
	c, err := pgx.Connect(ctx, w.d.cfg.postgres)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	w.conn = c
	return nil
}

func (w *pgWorker) close() {
	if w.conn != nil {
		w.conn.Close(context.Background())
		w.conn = nil
	}
}

func (w *pgWorker) do(ctx context.Context, batch uint64, n int) outcome {
	d := w.d
	o := outcome{requests: 1, idsSent: int64(d.cfg.batch), failKey: "transport"}
	if w.conn == nil {
		if err := w.connect(ctx); err != nil {
			o.canceled = ctx.Err() != nil
			o.failKey = "connect"
			return o
		}
	}
	sk := pickSketch(batch, len(d.names), d.cfg.random, w.gen.rng)
	ids := w.ids
	if len(d.pool) > 0 {
		ids = d.pool[batch%uint64(len(d.pool))]
	} else {
		w.gen.fill(ids, batch)
	}
	o.bytes = 8 * int64(len(ids))
	qctx, cancel := context.WithTimeout(ctx, d.cfg.timeout)
	defer cancel()
	_, err := w.conn.Exec(qctx, pgAddSQL, d.names[sk], ids, d.cfg.log2m, d.cfg.regwidth)
	if err != nil {
		o.canceled = ctx.Err() != nil
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			o.failKey = "postgres:" + pe.Code
		} else {
			w.close()
		}
		return o
	}
	o.ok, o.ids, o.accepted = 1, int64(len(ids)), int64(len(ids))
	return o
}
