// Package postgres is the store backend that keeps sketches in
// PostgreSQL with the hll extension, so that any number of sketchd nodes
// share one database (DESIGN.md, v2 "Backends"). It implements the store
// contract of internal/server (server.Store) and passes its conformance
// suite, internal/store/storetest.
//
// One row per sketch in sketchd_sketches (migrations/postgres): an HLL in
// a real hll column, any other kind's encoding in bytea. Writes go through
// a committer that gathers the requests waiting on this node into one
// transaction: it locks their rows one by one in name order (so nodes
// never deadlock), applies the requests in Go, writes HLL adds back as
// hll_union of a delta built at the stored parameters and everything else
// as the new state, and answers each request only after COMMIT. Reads are
// single statements over committed rows (name = ANY($1)) computed in Go;
// there is no cache, so a node sees every write any node acknowledged.
//
// Every stored value carries a checksum of sketchd's own in its row,
// written where the value is encoded and checked wherever it is decoded
// (checksum.go): a value that fails it, or does not decode, is a Damaged
// error naming it, logged and counted, and only a delete touches it.
//
// On Citus the migrations distribute the tables by name, and a write
// whose two-phase commit failed on a worker after the prepare is
// finished before it is answered (citus.go).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sketchd/sketchd/internal/sketch"
)

// Observer receives the store's commit timings; the metrics package
// implements it.
type Observer interface {
	// ObserveDBCommit records one committed transaction: the write
	// requests it carried, the sketch rows it wrote and its time from
	// BEGIN to COMMIT.
	ObserveDBCommit(requests, rows int, d time.Duration)
}

// Options configure a DB. Zero values choose the defaults.
type Options struct {
	// MaxConns is the pool's size (default 8): each committer holds one
	// connection while it commits, the rest serve reads.
	MaxConns int32
	// WriteTimeout bounds one write transaction (default 10s); past it the
	// write fails as Unavailable.
	WriteTimeout time.Duration
	// MaxGroup is the most write requests one transaction carries
	// (default 256).
	MaxGroup int
	// Committers is how many transactions a node runs at once (default
	// 1). More overlap one transaction's round trips with the next, but
	// split the waiting writes into smaller groups: for a few hot sketches
	// one committer, which coalesces most, commits most ids per second.
	Committers int
	// CacheBytes bounds the decoded series buckets a node keeps (default
	// 256 MiB; see bucketCache), and what a read of several named
	// sketches (a union, intersection or overlap) may hold at once.
	CacheBytes int64
	Logger     *slog.Logger
	Observer   Observer
	// Now returns the time stamped on writes (default time.Now).
	Now func() time.Time
	// KeyWindow is how long an idempotency key is remembered after its
	// write commits (default 24h).
	KeyWindow time.Duration
	// KeyBytes bounds the bytes of sketchd_idempotency (default 256
	// MiB): past it each sweep deletes the oldest keys.
	KeyBytes int64
	// KeySweepInterval is how often a node deletes old idempotency keys
	// (default 1 minute).
	KeySweepInterval time.Duration
	// RankOnNode makes a rank read every candidate on this node even
	// where the sketchd_hll extension could compute their joint tables
	// on the database (rank.go): -postgres-rank-on-node.
	RankOnNode bool

	// Tracer, if set, sees every statement the store sends (pgx's
	// QueryTracer, and BatchTracer if it implements it): for tests that
	// check what sketchd runs on the database.
	Tracer pgx.QueryTracer

	// wholeGroups keeps each group of writes in one transaction on Citus
	// too, for the benchmark that compares it with the split by worker.
	wholeGroups bool
}

func (o *Options) setDefaults() {
	if o.MaxConns <= 0 {
		o.MaxConns = 8
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.MaxGroup <= 0 {
		o.MaxGroup = 256
	}
	if o.Committers <= 0 {
		o.Committers = 1
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = 256 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.KeyWindow <= 0 {
		o.KeyWindow = 24 * time.Hour
	}
	if o.KeyBytes <= 0 {
		o.KeyBytes = 256 << 20
	}
	if o.KeySweepInterval <= 0 {
		o.KeySweepInterval = time.Minute
	}
}

// DB is the PostgreSQL store. Its methods are safe for concurrent use.
type DB struct {
	opts Options
	pool *pgxpool.Pool
	log  *slog.Logger

	queue   chan *op
	squeue  chan *seriesOp // HLL series adds, for seriesLoop
	closing atomic.Bool
	closeMu sync.RWMutex // held for reading while a write is submitted
	done    chan struct{}
	wg      sync.WaitGroup

	// ready is false from a failure to reach the database until a ping
	// succeeds again.
	ready atomic.Bool
	// health is what the last probe found of each dependency (ready.go).
	health health
	kick   chan struct{}

	// kinds remembers each sketch's kind and parameters, only to prepare
	// a write before its row is locked and to try a group of HLL adds
	// without reading their rows first: a wrong guess makes the write
	// fail inside its transaction and run again the careful way. It never
	// answers a read.
	kinds sync.Map // name → known

	buckets *bucketCache
	defs    defCache

	// estimates holds what the last /metrics scrape read of each metric
	// sketch: a scrape decodes only the sketches whose checksum changed
	// (MetricEstimates).
	estimatesMu sync.Mutex
	estimates   map[string]knownEstimate

	// The idempotency keys at the last sweep (keys.go).
	keyCount, keyBytes, keysEvicted atomic.Int64
	// Damaged stored values found (checksum.go).
	checksumFailures, unreadable atomic.Int64
	// notices records Citus's warnings of commits that failed on a
	// worker (citus.go).
	notices *noticeBook
	// placements says which worker holds each sketch, on Citus (nil
	// elsewhere), so that writes to one worker commit in one phase
	// (placement.go).
	placements *placements
	// jointFn is the extension's function a rank runs on the database,
	// "" without it (rank.go).
	jointFn string
}

// known is what a node last saw of a sketch: its kind, and its
// parameters when it saw the sketch itself.
type known struct {
	kind   *sketch.Kind
	params sketch.Params
	// mem is what the sketch took in memory (sketch.MemoryBytes) when the
	// node last decoded it whole, or 0 if it has not: the read budget's
	// guess of what reading it again costs.
	mem int64
}

// remember records what a node saw of name's sketch, decoded whole.
func (s *DB) remember(name string, sk sketch.Sketch) {
	s.kinds.Store(name, known{sk.Kind(), sk.Params(), sk.MemoryBytes()})
}

// rememberHeader records what a node saw of an HLL whose header alone it
// read: its kind and parameters, and the size it last saw it whole.
func (s *DB) rememberHeader(name string, sk sketch.Sketch) {
	k := known{kind: sk.Kind(), params: sk.Params()}
	if v, ok := s.kinds.Load(name); ok && v.(known).kind == k.kind {
		k.mem = v.(known).mem
	}
	s.kinds.Store(name, k)
}

// cancelGrace is how long after a query's context ends its connection
// waits for the server to answer the cancel request before giving up on
// the connection: the most a request answers past its deadline when the
// database does not answer.
const cancelGrace = 500 * time.Millisecond

// ErrClosed is returned by writes after Close.
var ErrClosed = sketch.Errorf(sketch.Unavailable, "the store is closed")

// Open connects to the database dsn names (a libpq connection string or
// URL), checks for the hll extension (creating it when allowed), applies
// the schema's migrations and starts the committer.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	opts.setDefaults()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: the connection string: %w", err)
	}
	cfg.MaxConns = opts.MaxConns
	// A dead link fails a connection within about a write's timeout, and
	// a request's deadline cancels its query on the server (a cancel
	// request), giving up on the connection half a second later if the
	// server does not answer: the deadline reaches the database.
	cfg.ConnConfig.DialFunc = dialer(cfg.ConnConfig.ConnectTimeout, opts.WriteTimeout)
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: cancelGrace}
	}
	notices := &noticeBook{}
	cfg.ConnConfig.OnNotice = notices.onNotice
	cfg.ConnConfig.Tracer = opts.Tracer
	cfg.BeforeClose = func(c *pgx.Conn) { notices.take(c.PgConn()) }
	cfg.MinConns = 0
	cfg.MaxConnIdleTime = time.Minute
	cfg.HealthCheckPeriod = 5 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := migrate(ctx, pool, opts.Logger); err != nil {
		pool.Close()
		return nil, err
	}
	var pl *placements
	err = pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
		if opts.wholeGroups {
			return nil
		}
		var err error
		pl, err = openPlacements(ctx, c.Conn())
		return err
	})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: reading Citus's metadata: %w", err)
	}
	var jointFn string
	if !opts.RankOnNode {
		err = pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
			var citus bool
			if err := c.QueryRow(ctx, citusSQL).Scan(&citus); err != nil {
				return err
			}
			jointFn = openJoint(ctx, c.Conn(), citus, opts.Logger)
			return nil
		})
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("postgres: looking for Citus: %w", err)
		}
	}
	s := &DB{
		jointFn: jointFn,
		opts:    opts,
		pool:    pool,
		log:     opts.Logger,
		queue:   make(chan *op, 4096),
		squeue:  make(chan *seriesOp, 4096),
		done:    make(chan struct{}),
		kick:    make(chan struct{}, 1),

		buckets:    newBucketCache(opts.CacheBytes),
		notices:    notices,
		placements: pl,
	}
	s.ready.Store(true)
	s.wg.Add(3 + opts.Committers)
	go s.sweepLoop()
	go s.seriesLoop()
	for range opts.Committers {
		go s.commitLoop()
	}
	go s.watch()
	return s, nil
}

// Close stops taking writes, lets the committer finish the ones it has
// and closes the pool. It is safe to call more than once.
func (s *DB) Close() error {
	s.closeMu.Lock()
	already := s.closing.Swap(true)
	s.closeMu.Unlock()
	if already {
		return nil
	}
	close(s.done)
	s.wg.Wait()
	s.pool.Close()
	return nil
}

// Ready reports whether the database answered the last time it was asked:
// false from a connection failure until a ping succeeds.
func (s *DB) Ready() bool { return !s.closing.Load() && s.ready.Load() }

// Pool is the connection pool, for tests and tools that query the same
// database.
func (s *DB) Pool() *pgxpool.Pool { return s.pool }

// PoolStats reports the pool's connections in use, idle and its maximum.
func (s *DB) PoolStats() (inUse, idle, max int) {
	st := s.pool.Stat()
	return int(st.AcquiredConns()), int(st.IdleConns()), int(st.MaxConns())
}

// unreachable marks the database as not ready and wakes the watcher.
func (s *DB) unreachable(err error) {
	s.health.failed(err)
	if s.ready.Swap(false) {
		s.log.Warn("PostgreSQL is unreachable; writes answer 503 until it is back", "err", err)
	}
	s.recheck()
}

// recheck wakes the watcher to probe now: after a write that timed out
// (a worker behind a cut link looks like that), readiness is not left
// to the next round.
func (s *DB) recheck() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// watch probes the database (and on Citus its workers: ready.go) every
// second while it is not ready, and every 5 seconds otherwise, and sets
// ready from the answer. A write that timed out wakes it early.
func (s *DB) watch() {
	defer s.wg.Done()
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-s.kick:
		case <-t.C:
		}
		ok, deps := s.probe()
		s.health.set(deps)
		switch {
		case ok:
			if !s.ready.Swap(true) {
				s.log.Info("PostgreSQL is reachable again")
			}
			t.Reset(5 * time.Second)
		default:
			if s.ready.Swap(false) {
				s.log.Warn("PostgreSQL is unreachable; writes answer 503 until it is back", "why", s.NotReady())
			}
			t.Reset(time.Second)
		}
	}
}

// classify turns a database error into the contract's kinds: a failed
// commit (commitError), a failure to reach the database, a server
// shutting down or starting, too many connections or a timeout is
// Unavailable (the client retries); anything else is internal. ctx's own
// error is returned as is.
func (s *DB) classify(ctx context.Context, err error, what string) error {
	if err == nil {
		return nil
	}
	var se *sketch.Error
	if errors.As(err, &se) {
		return err
	}
	if ce := (*commitError)(nil); errors.As(err, &ce) {
		if transient(ce.err) && !timedOut(ce.err) {
			s.unreachable(ce.err)
		} else if timedOut(ce.err) {
			s.recheck()
		}
		return unknownOutcome(ce.err)
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return ctx.Err()
	}
	if transient(err) {
		if !timedOut(err) {
			s.unreachable(err)
		} else {
			s.recheck()
		}
		return sketch.Wrap(sketch.Unavailable, err, "the database is unavailable; retry shortly")
	}
	return fmt.Errorf("postgres: %s: %w", what, err)
}
