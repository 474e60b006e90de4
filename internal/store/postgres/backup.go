package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sketchd/sketchd/internal/archive"
	"github.com/sketchd/sketchd/internal/backup"
	"github.com/sketchd/sketchd/internal/sketch"
)

// BackupSource is the archive header's source byte of this backend.
func (s *DB) BackupSource() byte { return archive.SourcePostgres }

// Backup writes the store to w as one REPEATABLE READ, READ ONLY
// transaction sees it: every transaction committed before the call
// (every acknowledged write) is in it, none in part, and writers go on
// meanwhile. Each table is read in key order by one query whose rows
// arrive as they are written out (pgx reads them off the connection as
// they come, and PostgreSQL stops sending while the client is behind),
// so neither side holds the store. Every value is checked as a read
// checks it (its checksum, then that it decodes); a damaged one fails the
// backup with a Damaged error naming it. Sketches expired at the
// backup's moment and idempotency keys past their window are left out.
//
// On Citus each worker's rows are read in a snapshot of that worker's,
// taken by the transaction's first statement there; citusMoment takes
// them all at one moment, with no distributed commit in between.
func (s *DB) Backup(ctx context.Context, w *archive.Writer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return s.classify(ctx, err, "backup")
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// A statement_timeout set for the role's requests must not cut a
	// backup short. Then the snapshot: taken at the first query, now,
	// after the call began and before anything is written.
	if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 0"); err != nil {
		return s.classify(ctx, err, "backup")
	}
	if s.placements != nil {
		if err := s.citusMoment(ctx, tx); err != nil {
			return err
		}
	} else if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
		return s.classify(ctx, err, "backup")
	}
	now := s.opts.Now()
	if err := s.backupSketches(ctx, tx, w, now); err != nil {
		return err
	}
	kinds, err := s.backupDefs(ctx, tx, w)
	if err != nil {
		return err
	}
	if err := s.backupBuckets(ctx, tx, w, kinds); err != nil {
		return err
	}
	return s.backupKeys(ctx, tx, w, now)
}

// citusMoment takes the snapshots tx reads the workers in at one moment.
// A write that spans workers commits on each in two phases, and a worker
// snapshot taken between two workers' second phases would hold it on one
// and not the other: half an event in the archive. So, as Citus's own
// citus_create_restore_point does, another transaction locks
// pg_dist_transaction, where every two-phase commit records itself
// before its second phase and which it holds until that phase is done
// on every worker: once the lock is granted no such commit is under way,
// and none starts one until it is let go. Meanwhile tx, held to one
// connection a worker (citus.max_adaptive_executor_pool_size = 1, so
// every later statement reuses it and its snapshot), runs one statement
// on every shard of sketchd_sketches, and so on every worker that holds
// any of the co-located tables. Writes that span workers wait for those
// few milliseconds; writes on one worker commit in one phase and are
// whole in any snapshot.
//
// Locking a Citus catalog needs a superuser, or a role granted UPDATE on
// pg_dist_transaction (docs/scale-out.md): without it the backup goes on
// with each worker's snapshot taken as its first statement there runs,
// and says so in the log.
func (s *DB) citusMoment(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, "SET LOCAL citus.max_adaptive_executor_pool_size = 1"); err != nil {
		return s.classify(ctx, err, "backup")
	}
	lock, err := s.pool.Begin(ctx)
	if err != nil {
		return s.classify(ctx, err, "backup")
	}
	defer lock.Rollback(context.WithoutCancel(ctx))
	if _, err := lock.Exec(ctx, "SET LOCAL lock_timeout = '10s'"); err != nil {
		return s.classify(ctx, err, "backup")
	}
	if _, err := lock.Exec(ctx, "LOCK TABLE pg_catalog.pg_dist_transaction IN EXCLUSIVE MODE"); err != nil {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" {
			return s.classify(ctx, fmt.Errorf("pausing two-phase commits for the backup's snapshots: %w", err), "backup")
		}
		s.log.Warn("backup: sketchd's role may not lock pg_dist_transaction, so writes that span workers are not paused while the backup takes each worker's snapshot: an event committed meanwhile may be in the archive on one worker and not another (docs/scale-out.md)", "err", err)
	}
	if _, err := tx.Exec(ctx, "SELECT count(*) FROM (SELECT 1 FROM sketchd_sketches LIMIT 1) AS t"); err != nil {
		return s.classify(ctx, err, "backup")
	}
	if err := lock.Commit(ctx); err != nil {
		return s.classify(ctx, err, "backup")
	}
	return nil
}

// each runs q and calls fn for each row, classifying database errors.
func (s *DB) each(ctx context.Context, tx pgx.Tx, q string, args []any, fn func(pgx.Rows) error) error {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return s.classify(ctx, err, "backup")
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return s.classify(ctx, err, "backup")
	}
	return nil
}

func (s *DB) backupSketches(ctx context.Context, tx pgx.Tx, w *archive.Writer, now time.Time) error {
	return s.each(ctx, tx, selectState+" ORDER BY name", nil, func(rows pgx.Rows) error {
		var name, kind string
		var b, sum []byte
		st := &state{}
		var after *int64
		var at *time.Time
		if err := rows.Scan(&name, &kind, &st.metric, &st.created, &st.updated, &b, &after, &at, &sum); err != nil {
			return err
		}
		st.expiry = expiryOf(after, at)
		if st.expired(now) {
			return nil
		}
		p, err := checkedRow(name, kind, b, sum)
		if err != nil {
			return s.report(err, "backup")
		}
		rec, err := backup.SketchRecord(name, p.Kind().Type, p, b, st.metric, st.expiry, st.created.UTC(), st.updated.UTC())
		if err != nil {
			return err
		}
		return w.Sketch(rec)
	})
}

// backupDefs writes the series definitions and returns each one's kind.
func (s *DB) backupDefs(ctx context.Context, tx pgx.Tx, w *archive.Writer) (map[string]string, error) {
	kinds := map[string]string{}
	err := s.each(ctx, tx, `SELECT name, kind, proto, tz, levels::text, late_limit, created_at, checksum FROM sketchd_series ORDER BY name`, nil, func(rows pgx.Rows) error {
		var name, kind, tz, levels, late string
		var proto, sum []byte
		var created time.Time
		if err := rows.Scan(&name, &kind, &proto, &tz, &levels, &late, &created, &sum); err != nil {
			return err
		}
		err := verify(sum, defKey(name, kind, tz, late, levels), proto)
		if err == nil {
			var rec *archive.Series
			spec, derr := decodeDef(kind, proto, tz, []byte(levels), late)
			if err = derr; err == nil {
				if rec, err = backup.SeriesRecord(name, spec, created.UTC()); err == nil {
					kinds[name] = kind
					return w.Series(rec)
				}
			}
		}
		return s.report(damaged(seriesLabel(name), "sketchd_series", deleteSeriesHint, err), "backup")
	})
	return kinds, err
}

func (s *DB) backupBuckets(ctx context.Context, tx pgx.Tx, w *archive.Writer, kinds map[string]string) error {
	const q = `SELECT series, level, start, updated_at, coalesce(hll_send(hll), data), checksum FROM sketchd_series_buckets
		ORDER BY series, level COLLATE "C", start`
	return s.each(ctx, tx, q, nil, func(rows pgx.Rows) error {
		var name, level string
		var start, updated time.Time
		var b, sum []byte
		if err := rows.Scan(&name, &level, &start, &updated, &b, &sum); err != nil {
			return err
		}
		kind, ok := kinds[name]
		if !ok {
			return nil // a bucket of no series: no read sees it
		}
		err := verify(sum, bucketKeyDigest(name, level, start), b)
		if err == nil {
			_, err = checkStored(kind, b)
		}
		if err != nil {
			return s.report(damagedBucket(name, level, start, err), "backup")
		}
		return w.Bucket(&archive.Bucket{Series: name, Level: level, Start: start.UTC(), Updated: updated.UTC(), Bytes: b})
	})
}

func (s *DB) backupKeys(ctx context.Context, tx pgx.Tx, w *archive.Writer, now time.Time) error {
	const q = `SELECT target, scope, idempotency_key, fingerprint, answer, created_at, checksum FROM sketchd_idempotency
		WHERE answer IS NOT NULL AND created_at > $1 ORDER BY target, scope, idempotency_key`
	return s.each(ctx, tx, q, []any{s.expiredBefore(now)}, func(rows pgx.Rows) error {
		var k archive.Key
		var fp, sum []byte
		if err := rows.Scan(&k.Target, &k.Scope, &k.Key, &fp, &k.Answer, &k.Created, &sum); err != nil {
			return err
		}
		err := verify(sum, idemKey(k.Target, k.Scope, k.Key), fp, k.Answer)
		if err == nil && len(fp) != len(k.Fingerprint) {
			err = fmt.Errorf("fingerprint of %d bytes", len(fp))
		}
		if err != nil {
			return fmt.Errorf("postgres: backup: stored idempotency key %s of a write to %s in sketchd_idempotency is damaged: %w", quote(k.Key), quote(k.Target), err)
		}
		copy(k.Fingerprint[:], fp)
		k.Created = k.Created.UTC()
		return w.Key(&k)
	})
}

// ErrNotEmpty is the cause of a restore refused because its target holds
// data and replacing it was not asked for.
var ErrNotEmpty = errors.New("postgres: the target is not empty")

// Restore writes the archive r reads into the store, in one transaction
// that commits only once r has confirmed the archive's trailer (its
// counts and digest) and every record passed backup.Checker: a damaged,
// truncated or refused archive changes nothing. A store holding any
// sketch, series or idempotency key is refused (ErrNotEmpty) unless
// replace is set; then its tables are emptied in the same transaction.
// Values keep their bytes and get their checksums. progress, if set, is
// called after each record with the archive's bytes read so far.
func (s *DB) Restore(ctx context.Context, r *archive.Reader, replace bool, progress func(read int64)) (archive.Counts, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return r.Counts(), s.classify(ctx, err, "restore")
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 0"); err != nil {
		return r.Counts(), s.classify(ctx, err, "restore")
	}
	if !replace {
		var what string
		err := tx.QueryRow(ctx, `SELECT CASE WHEN EXISTS (SELECT 1 FROM sketchd_sketches) THEN 'sketches'
			WHEN EXISTS (SELECT 1 FROM sketchd_series) THEN 'series'
			WHEN EXISTS (SELECT 1 FROM sketchd_idempotency) THEN 'idempotency keys' ELSE '' END`).Scan(&what)
		if err != nil {
			return r.Counts(), s.classify(ctx, err, "restore")
		}
		if what != "" {
			return r.Counts(), fmt.Errorf("%w: the database holds %s; restore into an empty store, or pass -replace to replace its contents", ErrNotEmpty, what)
		}
	} else if _, err := tx.Exec(ctx, `TRUNCATE sketchd_sketches, sketchd_series, sketchd_series_buckets, sketchd_idempotency`); err != nil {
		return r.Counts(), s.classify(ctx, err, "restore")
	}
	if err := s.restoreRecords(ctx, tx, r, progress); err != nil {
		return r.Counts(), err
	}
	if err := tx.Commit(ctx); err != nil {
		return r.Counts(), s.classify(ctx, err, "restore")
	}
	return r.Counts(), nil
}

const (
	restoreBucketSQL = `INSERT INTO sketchd_series_buckets (series, level, start, hll, data, updated_at, checksum)
	VALUES ($1, $2, $3, $4::bytea::hll, $5, $6, $7)`
	restoreKeySQL = `INSERT INTO sketchd_idempotency (target, scope, idempotency_key, fingerprint, answer, created_at, checksum)
	VALUES ($1, $2, $3, $4, $5, $6, $7)`
	// restoreBatch is how many rows one round trip inserts.
	restoreBatch = 512
)

// split is a value's columns: hll for an HLL, data for any other kind.
func split(kind sketch.Type, b []byte) (hllBytes, data []byte) {
	if kind == sketch.TypeHLL {
		return b, nil
	}
	return nil, b
}

func (s *DB) restoreRecords(ctx context.Context, tx pgx.Tx, r *archive.Reader, progress func(int64)) error {
	check := backup.NewChecker()
	batch := &pgx.Batch{}
	flush := func() error {
		if batch.Len() == 0 {
			return nil
		}
		err := tx.SendBatch(ctx, batch).Close()
		batch = &pgx.Batch{}
		if err != nil {
			return s.classify(ctx, err, "restore")
		}
		return nil
	}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return flush()
		}
		if err != nil {
			return err
		}
		d, err := check.Check(rec)
		if err != nil {
			return err
		}
		switch rec.Type {
		case archive.TypeSketch:
			a := rec.Sketch
			sk, x := d.Sketch, d.Expiry
			kind := string(sk.Kind().Type)
			params, err := sketch.ParamsJSON(sk.Params())
			if err != nil {
				return err
			}
			h, data := split(sk.Kind().Type, a.Bytes)
			after, at := expiryArgs(x)
			batch.Queue(insertSQL, a.Name, kind, params, a.Metric, h, data, a.Created, a.Updated, after, at, checksum(sketchKey(a.Name, kind), a.Bytes))
		case archive.TypeSeries:
			a := rec.Series
			spec := d.Spec
			params, err := sketch.ParamsJSON(spec.Params)
			if err != nil {
				return err
			}
			lj, err := levelsJSON(spec)
			if err != nil {
				return err
			}
			empty, err := spec.Params.New()
			if err != nil {
				return err
			}
			batch.Queue(createDefSQL, a.Name, string(spec.Params.Kind().Type), params, empty.AppendBinary(nil), spec.TZ, lj, spec.LateLimit.String(), a.Created)
		case archive.TypeBucket:
			a := rec.Bucket
			lv := d.Level.String()
			h, data := split(d.Sketch.Kind().Type, a.Bytes)
			batch.Queue(restoreBucketSQL, a.Series, lv, a.Start, h, data, a.Updated, checksum(bucketKeyDigest(a.Series, lv, a.Start), a.Bytes))
		case archive.TypeKey:
			id, kr := d.ID, d.Key
			batch.Queue(restoreKeySQL, id.Target, id.Scope, id.Key, kr.Fingerprint[:], kr.Answer, kr.Created, keySum(id, kr.Fingerprint[:], kr.Answer))
		}
		if batch.Len() >= restoreBatch {
			if err := flush(); err != nil {
				return err
			}
		}
		if progress != nil {
			progress(r.Offset())
		}
	}
}
