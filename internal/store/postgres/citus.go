package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sketchd/sketchd/internal/sketch"
)

// Citus commits a transaction that wrote to several workers in two
// phases: PREPARE TRANSACTION on each worker, the commit record on the
// coordinator, then COMMIT PREPARED on each worker. When COMMIT PREPARED
// fails on a worker (it restarted, or the connection broke, between the
// phases), the COMMIT still succeeds, with only a warning
// ("failed to commit transaction on HOST:PORT"), and the worker keeps the
// prepared transaction, invisible to every reader and holding its row
// locks, until Citus's maintenance daemon recovers it
// (citus.recover_2pc_interval, a minute by default). A write answered
// then would be acknowledged but not yet readable, and lost if a shard
// move copied the shard meanwhile.
//
// So the store listens for that warning on each connection and, before a
// write is answered, finishes the transaction itself: it runs
// recover_prepared_transactions() on the same connection until the
// transaction's records in pg_dist_transaction are gone (recovery
// commits the prepared transaction on the worker and then deletes them),
// or the write timeout runs out; then the write fails as Unavailable, as
// any write whose outcome is unknown. On plain PostgreSQL the warning
// never comes and nothing changes.

// commitWarning starts the warning Citus sends when COMMIT PREPARED (or a
// one-phase COMMIT) failed on a worker. Citus's messages are not
// translated, so it does not depend on lc_messages.
const commitWarning = "failed to commit transaction on "

// noticeBook keeps, per connection, the workers Citus warned about since
// the connection's last commit was settled.
type noticeBook struct {
	mu      sync.Mutex
	workers map[*pgconn.PgConn][]string
}

// onNotice is the connections' notice handler (pgconn.Config.OnNotice).
// It runs on the goroutine reading the connection's results, so a warning
// sent with a COMMIT is recorded before the COMMIT returns.
func (b *noticeBook) onNotice(c *pgconn.PgConn, n *pgconn.Notice) {
	if n.SeverityUnlocalized != "WARNING" && n.Severity != "WARNING" {
		return
	}
	addr, ok := strings.CutPrefix(n.Message, commitWarning)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.workers == nil {
		b.workers = map[*pgconn.PgConn][]string{}
	}
	b.workers[c] = append(b.workers[c], addr)
}

// take returns and forgets the workers recorded for c.
func (b *noticeBook) take(c *pgconn.PgConn) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.workers[c]
	delete(b.workers, c)
	return w
}

// commitError marks a failure of the COMMIT statement itself: the
// transaction may or may not have committed (on Citus, a one-phase commit
// on a worker that failed is such an error), so the write is not run
// again by the store and its caller learns that the outcome is unknown.
type commitError struct{ err error }

func (e *commitError) Error() string { return "postgres: COMMIT failed: " + e.err.Error() }
func (e *commitError) Unwrap() error { return e.err }

// committing reports whether err is a commitError.
func committing(err error) bool {
	var ce *commitError
	return errors.As(err, &ce)
}

// unknownOutcome is what a client learns of a commitError.
func unknownOutcome(err error) error {
	return sketch.Wrap(sketch.Unavailable, err, "the database failed while committing the write; its outcome is unknown: retry")
}

// recoverSQL finishes the two-phase commits this node's connection
// started whose second phase failed, then counts those still unfinished
// on the workers named: transactions sketchd's backend (pid $2) began,
// whose records recovery has not yet removed. Citus names a prepared
// transaction citus_<initiator group>_<backend pid>_<transaction>_<n>.
const (
	recoverSQL = `SELECT recover_prepared_transactions()`
	pendingSQL = `SELECT count(*) FROM pg_dist_transaction t JOIN pg_dist_node n ON n.groupid = t.groupid
WHERE split_part(t.gid, '_', 3) = $2 AND n.nodename || ':' || n.nodeport = ANY($1)`
)

// finish is called with the outcome of every write transaction's COMMIT
// on conn (err, nil when it succeeded), before the write is answered. A
// failed COMMIT becomes a commitError. If Citus warned that the commit
// failed on a worker, finish recovers the prepared transactions until
// none of this connection's is pending on those workers, or ctx ends;
// then it too returns a commitError.
func (s *DB) finish(ctx context.Context, conn *pgx.Conn, err error) error {
	workers := s.notices.take(conn.PgConn())
	if err != nil {
		return &commitError{err}
	}
	if len(workers) == 0 {
		return nil
	}
	pid := conn.PgConn().PID()
	s.log.Warn("Citus committed a write but could not commit it on a worker; recovering the prepared transaction before answering",
		"workers", workers, "backend_pid", pid)
	wait := 20 * time.Millisecond
	for {
		pending, err := s.pendingAfterRecovery(ctx, conn, workers, pid)
		if err == nil && pending == 0 {
			s.log.Info("recovered the prepared transaction; the write is visible on every worker", "workers", workers)
			return nil
		}
		if err == nil {
			err = fmt.Errorf("%d prepared transactions still pending on %v", pending, workers)
		}
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42501" {
			s.log.Error("sketchd's role may not run recover_prepared_transactions(); grant it EXECUTE (docs/scale-out.md)", "err", err)
			return &commitError{err}
		}
		select {
		case <-ctx.Done():
			s.log.Warn("could not recover a prepared transaction within the write timeout; the write answers 503", "workers", workers, "err", err)
			return &commitError{fmt.Errorf("recovering a prepared transaction on %v: %w", workers, err)}
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// pendingAfterRecovery runs recovery and counts what is still pending, in
// one round trip, on conn while it works and on a pooled connection once
// it broke.
func (s *DB) pendingAfterRecovery(ctx context.Context, conn *pgx.Conn, workers []string, pid uint32) (int64, error) {
	var b pgx.Batch
	b.Queue(recoverSQL)
	b.Queue(pendingSQL, workers, strconv.FormatUint(uint64(pid), 10))
	var res pgx.BatchResults
	if conn.IsClosed() {
		res = s.pool.SendBatch(ctx, &b)
	} else {
		res = conn.SendBatch(ctx, &b)
	}
	defer res.Close()
	if _, err := res.Exec(); err != nil {
		return 0, err
	}
	var n int64
	if err := res.QueryRow().Scan(&n); err != nil {
		return 0, err
	}
	return n, res.Close()
}
