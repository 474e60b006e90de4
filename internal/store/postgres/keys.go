package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sketchd/sketchd/internal/idem"
)

// Idempotency keys live in sketchd_idempotency (migrations/postgres
// 0003), one row per key, written in the transaction of the write it
// guards:
//
//   - the committer claims the keys of its group first, in (target,
//     scope, key) order, before it locks any sketch row (claimSQL, whose
//     insert waits for another transaction holding the same key and then
//     finds it taken); a write whose key is taken changes nothing and
//     gets idem.ErrTaken; the others run, and each claimed key gets its
//     answer (answerSQL) or, if its write failed, is released
//     (releaseSQL), in the batch that COMMITs;
//   - transactions of one write (series, events with series, the fast
//     path of HLL adds) write the whole row at once (recordSQL), failing
//     the transaction if the key is taken;
//
// so keys are always taken before sketch rows, on every path: nodes do not
// deadlock on them. A key past the window is treated as absent and
// overwritten; every node deletes such rows in the background (and the
// oldest beyond Options.KeyBytes).

// claimSQL claims a key, or returns no row when a live record of it
// exists. Its answer stays NULL until answerSQL sets it in the same
// transaction.
const claimSQL = `INSERT INTO sketchd_idempotency AS k (target, scope, idempotency_key, fingerprint, answer, created_at)
VALUES ($1, $2, $3, $4, NULL, $5)
ON CONFLICT (target, scope, idempotency_key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, answer = NULL, checksum = NULL, created_at = EXCLUDED.created_at
WHERE k.created_at <= $6
RETURNING 1`

// answerSQL sets a claimed key's answer and its checksum ($5: see
// keySum).
const answerSQL = `UPDATE sketchd_idempotency SET answer = $4, checksum = $5 WHERE target = $1 AND scope = $2 AND idempotency_key = $3`

const releaseSQL = `DELETE FROM sketchd_idempotency WHERE target = $1 AND scope = $2 AND idempotency_key = $3`

// recordSQL writes a key with its answer, failing (division by zero, which
// aborts the transaction) when a live record of it exists.
const recordSQL = `WITH k AS (INSERT INTO sketchd_idempotency AS k (target, scope, idempotency_key, fingerprint, answer, created_at, checksum)
	VALUES ($1, $2, $3, $4, $5, $6, $8)
	ON CONFLICT (target, scope, idempotency_key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, answer = EXCLUDED.answer, created_at = EXCLUDED.created_at,
		checksum = EXCLUDED.checksum
	WHERE k.created_at <= $7
	RETURNING 1)
SELECT 1 / count(*)::int FROM k`

const lookupSQL = `SELECT fingerprint, answer, created_at, checksum FROM sketchd_idempotency
WHERE target = $1 AND scope = $2 AND idempotency_key = $3 AND created_at > $4 AND answer IS NOT NULL`

// keySizeSQL is the expression of a row's approximate bytes: its values
// and 64 for the tuple header and index entries.
const keySizeSQL = `octet_length(target) + octet_length(scope) + octet_length(idempotency_key) + octet_length(fingerprint) + coalesce(octet_length(answer), 0) + 8 + 64`

// expiredBefore is the creation time at or before which a key is past the
// window at now.
func (s *DB) expiredBefore(now time.Time) time.Time { return now.Add(-s.opts.KeyWindow).UTC() }

// compareIDs orders keys as their rows are claimed.
func compareIDs(a, b idem.ID) int {
	if c := strings.Compare(a.Target, b.Target); c != 0 {
		return c
	}
	if c := strings.Compare(a.Scope, b.Scope); c != 0 {
		return c
	}
	return strings.Compare(a.Key, b.Key)
}

// guarded returns the ops of group that carry a key, in claim order.
func guarded(group []*op) []*op {
	var out []*op
	for _, o := range group {
		if o.guard != nil {
			out = append(out, o)
		}
	}
	slices.SortStableFunc(out, func(a, b *op) int { return compareIDs(a.guard.ID, b.guard.ID) })
	return out
}

// queueClaims queues claimSQL for ops (in claim order).
func queueClaims(b *pgx.Batch, ops []*op, now time.Time, expired time.Time) {
	for _, o := range ops {
		g := o.guard
		b.Queue(claimSQL, g.Target, g.Scope, g.Key, g.Fingerprint[:], now, expired)
	}
}

// readClaims reads what queueClaims queued: an op whose key is taken
// gets idem.ErrTaken (its fn will not run); the others are claimed.
func readClaims(res pgx.BatchResults, ops []*op) error {
	for _, o := range ops {
		var one int
		err := res.QueryRow().Scan(&one)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			o.err = idem.ErrTaken
		case err != nil:
			return err
		default:
			o.claimed = true
		}
	}
	return nil
}

// sealOp renders the answer of a guarded op that ran (with what its fn
// returned) and queues it; a claimed op that failed releases its key.
func sealOp(b *pgx.Batch, o *op, res idem.Result) error {
	if !o.claimed {
		return nil
	}
	g := o.guard
	if o.err != nil {
		b.Queue(releaseSQL, g.Target, g.Scope, g.Key)
		return nil
	}
	answer, err := g.Seal(res)
	if err != nil {
		return err
	}
	b.Queue(answerSQL, g.Target, g.Scope, g.Key, answer, keySum(g.ID, g.Fingerprint[:], answer))
	return nil
}

// keySum is the checksum of a key's row (checksum.go): its fingerprint
// and the answer replayed to a retry.
func keySum(id idem.ID, fingerprint, answer []byte) []byte {
	return checksum(idemKey(id.Target, id.Scope, id.Key), fingerprint, answer)
}

// queueRecord queues recordSQL for g, sealed already, created at now.
func queueRecord(b *pgx.Batch, g *idem.Guard, now, expired time.Time) {
	b.Queue(recordSQL, g.Target, g.Scope, g.Key, g.Fingerprint[:], g.Answer(), now, expired, keySum(g.ID, g.Fingerprint[:], g.Answer()))
}

// keyTaken reports whether err is recordSQL refusing a taken key.
func keyTaken(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "22012"
}

// claimInTx claims g's key (if g is set) first thing in a transaction of
// one write: idem.ErrTaken if a live record of it exists.
func (s *DB) claimInTx(ctx context.Context, ptx pgx.Tx, g *idem.Guard, now time.Time) error {
	if g == nil {
		return nil
	}
	var one int
	err := ptx.QueryRow(ctx, claimSQL, g.Target, g.Scope, g.Key, g.Fingerprint[:], now.UTC(), s.expiredBefore(now)).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return idem.ErrTaken
	}
	return err
}

// answerInTx seals g (if set) with res and writes its answer, last thing
// in a transaction that claimed it.
func answerInTx(ctx context.Context, ptx pgx.Tx, g *idem.Guard, res idem.Result) error {
	if g == nil {
		return nil
	}
	answer, err := g.Seal(res)
	if err != nil {
		return err
	}
	_, err = ptx.Exec(ctx, answerSQL, g.Target, g.Scope, g.Key, answer, keySum(g.ID, g.Fingerprint[:], answer))
	return err
}

// Remembered returns the record kept for id, if its window has not run
// out. A key claimed by a transaction still running is not visible: a
// write that claims it waits for that transaction.
func (s *DB) Remembered(ctx context.Context, id idem.ID) (idem.Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return idem.Record{}, false, err
	}
	var rec idem.Record
	var fp, sum []byte
	err := s.pool.QueryRow(ctx, lookupSQL, id.Target, id.Scope, id.Key, s.expiredBefore(s.opts.Now())).Scan(&fp, &rec.Answer, &rec.Created, &sum)
	if errors.Is(err, pgx.ErrNoRows) {
		return idem.Record{}, false, nil
	}
	if err != nil {
		return idem.Record{}, false, s.classify(ctx, err, "read an idempotency key")
	}
	if err := verify(sum, idemKey(id.Target, id.Scope, id.Key), fp, rec.Answer); err != nil {
		return idem.Record{}, false, s.report(damagedKey(id, err), "read an idempotency key")
	}
	if len(fp) != len(rec.Fingerprint) {
		return idem.Record{}, false, s.report(damagedKey(id, fmt.Errorf("a fingerprint of %d bytes", len(fp))), "read an idempotency key")
	}
	copy(rec.Fingerprint[:], fp)
	return rec, true, nil
}

// damagedKey is the Damaged error of id's row: its answer cannot be
// replayed, and the write it guards may or may not have been applied.
func damagedKey(id idem.ID, err error) error {
	entry := "idempotency key " + quote(id.Key)
	if id.Target != "" {
		entry += " of " + quote(id.Target)
	}
	return damaged(entry, "sketchd_idempotency", "its answer cannot be replayed (the write it guards was applied once); check the target before sending it again under a new key", err)
}

// SweepKeys deletes the keys past the window at now and, while the keys
// take more than Options.KeyBytes, the oldest; it returns how many of the
// latter it deleted. Every node runs it every Options.KeySweepInterval;
// nodes sweeping at once only repeat each other's deletes.
func (s *DB) SweepKeys(ctx context.Context, now time.Time) (evicted int64, err error) {
	if _, err := s.pool.Exec(ctx, `DELETE FROM sketchd_idempotency WHERE created_at <= $1`, s.expiredBefore(now)); err != nil {
		return 0, s.classify(ctx, err, "sweep idempotency keys")
	}
	var n, size int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(`+keySizeSQL+`), 0)::bigint FROM sketchd_idempotency`).Scan(&n, &size); err != nil {
		return 0, s.classify(ctx, err, "count idempotency keys")
	}
	if size > s.opts.KeyBytes && n > 0 {
		// Delete the oldest share that brings the keys under the bound
		// (rows are about equal in size): the rows created before the
		// creation time of the first row to keep.
		drop := int64(math.Ceil(float64(n) * (1 - float64(s.opts.KeyBytes)/float64(size))))
		// A bound smaller than one key keeps none made before now.
		cutoff, err := now, error(nil)
		if drop < n {
			err = s.pool.QueryRow(ctx, `SELECT created_at FROM sketchd_idempotency ORDER BY created_at LIMIT 1 OFFSET $1`, drop).Scan(&cutoff)
		}
		if err == nil {
			tag, err := s.pool.Exec(ctx, `DELETE FROM sketchd_idempotency WHERE created_at < $1`, cutoff)
			if err != nil {
				return 0, s.classify(ctx, err, "sweep idempotency keys")
			}
			evicted = tag.RowsAffected()
			s.keysEvicted.Add(evicted)
			size = max(size-int64(float64(size)*float64(evicted)/float64(n)), 0)
			n -= evicted
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return 0, s.classify(ctx, err, "sweep idempotency keys")
		}
	}
	s.keyCount.Store(n)
	s.keyBytes.Store(size)
	return evicted, nil
}

// sweepLoop runs SweepKeys every KeySweepInterval until Close.
func (s *DB) sweepLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.KeySweepInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		n, err := s.SweepKeys(ctx, s.opts.Now())
		cancel()
		switch {
		case err != nil:
			s.log.Warn("removing old idempotency keys failed", "err", err)
		case n > 0:
			s.log.Warn("idempotency keys passed -idempotency-max-bytes: dropped the oldest before their window ran out", "keys", n)
		}
	}
}

// IdempotencyKeys reports the keys the database held at the last sweep,
// their approximate bytes, and how many this node's sweeps dropped early.
func (s *DB) IdempotencyKeys() (keys int, bytes int64, evicted int64) {
	return int(s.keyCount.Load()), s.keyBytes.Load(), s.keysEvicted.Load()
}
