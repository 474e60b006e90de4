package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/sketch"
)

// op is one write request waiting for the committer.
type op struct {
	// names are the sketches the write touches; full those of them whose
	// whole state it needs. For the others it only adds ids, so an HLL
	// among them is loaded as its parameters only and written back as
	// hll_union with a delta.
	names, full []string
	fn          func(t *tx) error
	// deletes says fn deletes its sketches: it runs on a damaged row
	// too, which fails every other write (row.damage).
	deletes bool
	// guard is the write's idempotency key, if any (keys.go); claimed
	// says the transaction claimed it.
	guard   *idem.Guard
	claimed bool
	// state is opQueued until the committer takes the op or its caller
	// gives up on it.
	state atomic.Int32
	err   error
	done  chan struct{}
	// deadline is the request's (its context's), or zero.
	deadline time.Time
}

// groupContext is the context a group of writes commits under: at most
// WriteTimeout from now, and no later than the earliest of deadlines
// (the requests'), so that a write is answered within its request's
// deadline however long it waited in the queue, and the transaction,
// its queries included, is cancelled then.
func (s *DB) groupContext(deadlines ...time.Time) (context.Context, context.CancelFunc) {
	by := time.Now().Add(s.opts.WriteTimeout)
	for _, d := range deadlines {
		if !d.IsZero() && d.Before(by) {
			by = d
		}
	}
	return context.WithDeadline(context.Background(), by)
}

// deadlines lists the deadlines of group's requests.
func deadlines(group []*op) []time.Time {
	ds := make([]time.Time, len(group))
	for i, o := range group {
		ds[i] = o.deadline
	}
	return ds
}

const (
	opQueued int32 = iota
	opTaken
	opAbandoned
)

// state is one sketch's state within a transaction.
type state struct {
	sk               sketch.Sketch
	metric           bool
	created, updated time.Time
	expiry           sketch.Expiry
}

// info describes the state under name.
func (st *state) info(name string) sketch.Info {
	in := sketch.Info{Name: name, Spec: sketch.Spec{Params: st.sk.Params(), Metric: st.metric, Expiry: st.expiry}, CreatedAt: st.created, UpdatedAt: st.updated}
	st.sk.Describe(&in)
	return in
}

// row is one locked row of a transaction.
type row struct {
	name string
	// had reports whether the row existed when it was locked.
	had bool
	// st is the sketch's state as the transaction's writes leave it; nil
	// when it does not exist.
	st *state
	// delta reports that st.sk is not the stored HLL but an empty one at
	// its parameters holding only this transaction's adds.
	delta   bool
	changed bool
	// read is the checksum of the row the lock read: a rewrite of the
	// row applies only if it is still the stored one (casSQL).
	read []byte
	// damage, when set, is the Damaged error of a row whose value failed
	// its checksum or does not decode (st is nil then): writes that name
	// it fail with it, except a delete.
	damage error
	// expired reports that the row the lock read had expired: it is
	// deleted, and a new state replaces it with a fresh row.
	expired bool
}

// tx is one transaction's view of its rows, in name order. Writes change
// rows through it; the committer writes the changed ones back.
type tx struct {
	rows []*row
	now  time.Time
	// res is what the running write returns, for its idempotency key's
	// answer: a write's fn sets it.
	res idem.Result
}

func (t *tx) row(name string) *row {
	i, _ := slices.BinarySearchFunc(t.rows, name, func(r *row, n string) int {
		switch {
		case r.name < n:
			return -1
		case r.name > n:
			return 1
		}
		return 0
	})
	return t.rows[i]
}

// damaged returns the damage of a row o names, unless o deletes.
func (t *tx) damaged(o *op) error {
	if o.deletes {
		return nil
	}
	for _, n := range o.names {
		if r := t.row(n); r.damage != nil {
			return r.damage
		}
	}
	return nil
}

// put makes st the state of name.
func (t *tx) put(r *row, st *state) {
	r.st, r.delta, r.changed = st, false, true
}

// errRetry makes the committer run a transaction again: a row it found
// missing was inserted by another node meanwhile.
var errRetry = errors.New("postgres: a row appeared while the transaction ran")

// submit queues a write and waits for its outcome. Once the committer has
// taken it the write is waited for even if ctx ends, since it may commit.
func (s *DB) submit(ctx context.Context, names, full []string, fn func(t *tx) error) error {
	if err := s.checkReadBudget(ctx, names, full); err != nil {
		return err
	}
	return s.submitOp(ctx, &op{names: names, full: full, fn: fn})
}

// sizeSQL is what the rows of names ($1) would cost a write to read: the
// bytes of each value, except for an HLL not in $2, of which a write that
// only adds to it reads the header.
const sizeSQL = `SELECT coalesce(sum(CASE WHEN kind = 'hll' AND NOT name = ANY($2) THEN 0
	ELSE octet_length(coalesce(hll_send(hll), data)) END), 0)::bigint
FROM sketchd_sketches WHERE name = ANY($1)`

// checkReadBudget refuses, before any row is locked or read, a write that
// would hold several sketches at once (a union stored with into, an
// events write naming several filters) whose sizes add up to more than
// Options.CacheBytes (-cache-bytes), as reads of several sketches are
// refused (view). A sketch this node has decoded whole counts what it
// took then, an HLL that the write only adds to nothing (its header is
// read); the rest count their stored bytes, asked of the database in one
// statement only when the others leave room.
func (s *DB) checkReadBudget(ctx context.Context, names, full []string) error {
	if len(names) < 2 {
		return nil
	}
	var total int64
	var ask []string
	for _, n := range names {
		v, ok := s.kinds.Load(n)
		switch k, _ := v.(known); {
		case ok && k.kind.Type == sketch.TypeHLL && !slices.Contains(full, n):
		case ok && k.mem > 0:
			total += k.mem
		default:
			ask = append(ask, n)
		}
	}
	if len(ask) > 0 && total <= s.opts.CacheBytes {
		var stored int64
		if err := s.pool.QueryRow(ctx, sizeSQL, ask, full).Scan(&stored); err != nil {
			return s.classify(ctx, err, "read")
		}
		total += stored
	}
	if total > s.opts.CacheBytes {
		return sketch.Errorf(sketch.TooLarge, "the %d sketches this request names hold %d MiB together, more than the %d MiB one request may hold at once (-cache-bytes); name fewer, or union a prefix, which reads one sketch at a time",
			len(names), total>>20, s.opts.CacheBytes>>20)
	}
	return nil
}

// submitOp is submit for o, whose names, full, fn and deletes are set.
func (s *DB) submitOp(ctx context.Context, o *op) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o.guard, o.done = idem.From(ctx), make(chan struct{})
	o.deadline, _ = ctx.Deadline()
	if err := enqueue(s, ctx, s.queue, o); err != nil {
		return err
	}
	select {
	case <-o.done:
		return o.err
	case <-ctx.Done():
		if o.state.CompareAndSwap(opQueued, opAbandoned) {
			return ctx.Err()
		}
		<-o.done
		return o.err
	}
}

// commitLoop takes every write waiting (up to MaxGroup) whose caller
// still waits for it and commits them in one transaction, until Close;
// then it finishes the writes queued.
func (s *DB) commitLoop() {
	serveGroups(s, s.queue, func(o *op) bool {
		// A write whose request's deadline has passed is left to its
		// caller, which gives it up (nothing of it is applied).
		return (o.deadline.IsZero() || time.Now().Before(o.deadline)) && o.state.CompareAndSwap(opQueued, opTaken)
	}, s.runGroups)
}

// runGroup commits a group and answers its writes. A group that fails as
// a whole for a reason other than the database being unreachable or its
// COMMIT failing (which may have committed it) is run again one write per
// transaction, so that one write's failure is its own.
func (s *DB) runGroup(group []*op) {
	if len(group) == 0 {
		return
	}
	err := s.commitRetrying(group)
	if err != nil && len(group) > 1 && !transient(err) && !committing(err) {
		s.log.Warn("a group of writes failed; running them one by one", "writes", len(group), "err", err)
		for _, o := range group {
			if err := s.commitRetrying([]*op{o}); err != nil {
				o.err = s.classifyWrite(err)
			}
			close(o.done)
		}
		return
	}
	for _, o := range group {
		if err != nil {
			o.err = s.classifyWrite(err)
		}
		close(o.done)
	}
}

func (s *DB) classifyWrite(err error) error {
	if errors.Is(err, errRetry) {
		return sketch.Wrap(sketch.Unavailable, err, "the write kept racing with other nodes; retry")
	}
	return s.classify(context.Background(), err, "write")
}

func (s *DB) commitRetrying(group []*op) error {
	var err error
	for range 5 {
		if err = s.commit(group); !errors.Is(err, errRetry) {
			return err
		}
	}
	return err
}

// lockSQL locks one row and reads what a write needs of it: the whole
// sketch and its checksum, or for an HLL that the write only adds to ($2
// false) its first three bytes, the header that holds its parameters,
// and whether the whole HLL matches its checksum, checked in the database
// ($3 is the key digest of the sketch as an hll).
var lockSQL = `SELECT kind, metric, created_at, updated_at,
	CASE WHEN kind <> 'hll' THEN data
	     WHEN $2 THEN hll_send(hll)
	     ELSE substring(hll_send(hll) FROM 1 FOR 3) END,
	extract(epoch FROM expire_after)::bigint, expire_at, checksum,
	CASE WHEN kind = 'hll' AND NOT $2 THEN checksum = ` + sumSQL("$3", "hll_send(hll)") + ` END
FROM sketchd_sketches WHERE name = $1 FOR UPDATE`

// commit runs group in one transaction: it locks the rows of every name
// the group touches one by one in name order, runs each write's fn on
// them (a write whose fn fails changes nothing and gets its error), and
// writes back what changed. It returns an error only when the
// transaction as a whole failed; then no write of the group committed
// (or, if COMMIT itself failed, the outcome is unknown).
func (s *DB) commit(group []*op) error {
	start := time.Now()
	if rows, ok := s.fastRows(group); ok {
		err := s.commitAdds(group, rows, start)
		if err == nil || transient(err) || committing(err) {
			return err
		}
		// A guess was stale (the sketch is gone, or changed kind or
		// parameters): nothing committed; lock and read the rows.
	}
	ctx, cancel := s.groupContext(deadlines(group)...)
	defer cancel()
	var names []string
	full := map[string]bool{}
	for _, o := range group {
		names = append(names, o.names...)
		for _, n := range o.full {
			full[n] = true
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)

	// The pool destroys a connection released inside a transaction, so an
	// error anywhere below leaves nothing half done on a pooled connection.
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()

	// Two round trips: BEGIN, the idempotency keys and the row locks,
	// then the writes and COMMIT.
	t := &tx{rows: make([]*row, len(names)), now: s.opts.Now().UTC()}
	keyed := guarded(group)
	var lb pgx.Batch
	lb.Queue("BEGIN")
	queueClaims(&lb, keyed, t.now, s.expiredBefore(t.now))
	for i, n := range names {
		t.rows[i] = &row{name: n}
		lb.Queue(lockSQL, n, full[n], hllKey(n))
	}
	res := conn.SendBatch(ctx, &lb)
	if _, err := res.Exec(); err != nil {
		res.Close()
		return err
	}
	for _, o := range keyed {
		o.err, o.claimed = nil, false
	}
	if err := readClaims(res, keyed); err != nil {
		res.Close()
		return err
	}
	for _, r := range t.rows {
		if err := s.readLocked(res, t, r, full[r.name]); err != nil {
			res.Close()
			return err
		}
	}
	if err := res.Close(); err != nil {
		return err
	}

	var kb pgx.Batch // the keys' answers
	for _, o := range group {
		if o.guard != nil && !o.claimed {
			continue // its key is taken: o.err says so
		}
		t.res = idem.Result{}
		if o.err = t.damaged(o); o.err == nil {
			o.err = o.fn(t)
		}
		if err := sealOp(&kb, o, t.res); err != nil {
			return err
		}
	}

	var wb pgx.Batch
	for _, r := range t.rows {
		if err := queueWrite(&wb, r); err != nil {
			return err
		}
	}
	rows := wb.Len()
	wb.QueuedQueries = append(wb.QueuedQueries, kb.QueuedQueries...)
	wb.Queue("COMMIT")
	res = conn.SendBatch(ctx, &wb)
	for range rows + kb.Len() {
		if _, err := res.Exec(); err != nil {
			res.Close()
			return raced(err)
		}
	}
	tag, err := res.Exec()
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	if err == nil && tag.String() != "COMMIT" {
		return fmt.Errorf("postgres: the transaction ended with %s, not COMMIT", tag)
	}
	if err := s.finish(ctx, conn.Conn(), err); err != nil {
		return err
	}
	for _, r := range t.rows {
		if r.st == nil {
			s.kinds.Delete(r.name)
		} else if r.delta {
			s.rememberHeader(r.name, r.st.sk)
		} else {
			s.remember(r.name, r.st.sk)
		}
	}
	if obs := s.opts.Observer; obs != nil {
		obs.ObserveDBCommit(len(group), rows, time.Since(start))
	}
	return nil
}

// hllKey is the key digest of the sketch name as an hll, which the
// statements that merge into a stored HLL in the database need.
func hllKey(name string) []byte {
	k := sketchKey(name, string(sketch.TypeHLL))
	return k[:]
}

// readLocked reads the answer of r's lockSQL (whole if full) from res
// into r: nothing for a missing row; an expired row as gone; a row that
// fails its checksum or does not decode as damaged (reported, and r's
// writes fail with it).
func (s *DB) readLocked(res pgx.BatchResults, t *tx, r *row, full bool) error {
	var kind string
	var b, sum []byte
	var ok *bool
	st := &state{}
	var after *int64
	var at *time.Time
	err := res.QueryRow().Scan(&kind, &st.metric, &st.created, &st.updated, &b, &after, &at, &sum, &ok)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	r.had = true
	st.expiry = expiryOf(after, at)
	if st.expiry.Expired(st.updated, t.now) {
		// Gone, as if deleted: the writes see no row, and the row is
		// deleted with them.
		r.expired, r.changed = true, true
		return nil
	}
	if kind == string(sketch.TypeHLL) && !full {
		// The database checked the HLL it did not send.
		if ok == nil || !*ok {
			err = fmt.Errorf("checked in the database: %w", errChecksum)
		}
	} else {
		err = verify(sum, sketchKey(r.name, kind), b)
	}
	if err == nil {
		st.sk, r.delta, err = decodeLocked(kind, b, full)
	}
	if err != nil {
		r.damage = s.report(damagedSketch(r.name, err), "write")
		return nil
	}
	r.st, r.read = st, sum
	return nil
}

// raced turns the failure of a statement that writes sketches back
// (queueWrite's) into errRetry when it means that another writer got
// there first: a row another node inserted since the lock (a unique
// violation: the only unique key is the name; Citus passes the error on
// from the worker without naming the table), or a row that changed since
// it was read (casSQL's division by zero).
func raced(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "22012") {
		return errRetry
	}
	return err
}

// casSQL rewrites a row, with its new checksum ($12), only if it still
// holds the checksum that was read ($9), and fails the transaction
// (division by zero) otherwise. The row lock taken by the read makes that
// the rule, but on Citus a lock holds one placement of the shard: when a
// shard move completes between the read and the write, the write goes to
// the new placement, where other writers may have changed the row
// meanwhile, and a plain UPDATE would overwrite their acknowledged writes.
// Every write of a value writes its checksum, so an unchanged checksum is
// an unchanged row.
const casSQL = `WITH u AS (UPDATE sketchd_sketches SET kind = $2, params = $3, metric = $4, hll = $5::bytea::hll, data = $6,
	created_at = $7, updated_at = $8, expire_after = $10::float8 * interval '1 second', expire_at = $11, checksum = $12
	WHERE name = $1 AND checksum = $9 RETURNING 1)
SELECT 1 / count(*)::int FROM u`

// insertSQL inserts a new row.
const insertSQL = `INSERT INTO sketchd_sketches (name, kind, params, metric, hll, data, created_at, updated_at, expire_after, expire_at, checksum)
	VALUES ($1, $2, $3, $4, $5::bytea::hll, $6, $7, $8, $9::float8 * interval '1 second', $10, $11)`

// mergeSQL merges a delta ($2) into a stored HLL in the database and
// writes the checksum of the result ($4 is the sketch's key digest, as
// an hll), only if the stored HLL matches its checksum: a merge must not
// give a damaged value a valid checksum. Otherwise, or if there is no
// such row, the transaction fails (division by zero). It is the write of
// an add after the lock read the HLL's header (and checked it); a shard
// move on Citus between the two is the only way it finds a mismatch, and
// the write then runs again and finds the damage under the lock.
var mergeSQL = `WITH u AS (UPDATE sketchd_sketches SET ` + mergeSet + `, updated_at = $3
	WHERE name = $1 AND checksum = ` + sumSQL("$4", "hll_send(hll)") + ` RETURNING 1)
SELECT 1 / count(*)::int FROM u`

// mergeSet sets an HLL to its union with $2 and its checksum to that of
// the union ($4: the key digest), computing the union once: a sub-select
// (kept from being flattened by OFFSET 0) whose two columns both read it.
// Citus routes it with the UPDATE, to the one shard $1 names.
var mergeSet = `(hll, checksum) = (SELECT m.h, ` + sumSQL("$4", "hll_send(m.h)") + `
	FROM (SELECT hll_union(sketchd_sketches.hll, $2::bytea::hll) AS h OFFSET 0) m)`

// queueWrite queues the statement that writes r back, if it changed.
func queueWrite(wb *pgx.Batch, r *row) error {
	if !r.changed {
		return nil
	}
	if r.expired {
		// The lock held the expired row: delete it, and insert what
		// replaces it, if anything.
		wb.Queue("DELETE FROM sketchd_sketches WHERE name = $1", r.name)
		if r.st == nil {
			return nil
		}
		r.had, r.delta = false, false
	}
	switch {
	case r.st == nil && r.had:
		wb.Queue("DELETE FROM sketchd_sketches WHERE name = $1", r.name)
	case r.st == nil:
	case r.delta:
		if r.st.sk.Representation() == "EMPTY" {
			return nil
		}
		wb.Queue(mergeSQL, r.name, r.st.sk.AppendBinary(nil), r.st.updated, hllKey(r.name))
	default:
		kind := string(r.st.sk.Kind().Type)
		hllBytes, data := body(r.st.sk)
		sum := checksum(sketchKey(r.name, kind), hllBytes, data)
		params, err := paramsJSON(r.st.sk.Params())
		if err != nil {
			return err
		}
		after, at := expiryArgs(r.st.expiry)
		if r.had {
			wb.Queue(casSQL, r.name, kind, params, r.st.metric, hllBytes, data, r.st.created, r.st.updated, r.read, after, at, sum)
		} else {
			// A row another node inserted since the lock fails this
			// insert (unique violation) and the transaction with it;
			// the write then runs again.
			wb.Queue(insertSQL, r.name, kind, params, r.st.metric, hllBytes, data, r.st.created, r.st.updated, after, at, sum)
		}
	}
	return nil
}

// fastRows returns the rows of a group that only adds to HLLs whose
// parameters this node knows, each holding an empty HLL at those
// parameters: commitAdds can then build the deltas without reading the
// rows. ok is false for any other group.
func (s *DB) fastRows(group []*op) (rows []*row, ok bool) {
	var names []string
	for _, o := range group {
		if len(o.full) > 0 {
			return nil, false
		}
		names = append(names, o.names...)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	for _, n := range names {
		v, found := s.kinds.Load(n)
		if !found {
			return nil, false
		}
		k := v.(known)
		if k.kind.Type != sketch.TypeHLL || k.params == nil {
			return nil, false
		}
		sk, err := k.params.New()
		if err != nil {
			return nil, false
		}
		rows = append(rows, &row{name: n, had: true, st: &state{sk: sk}, delta: true})
	}
	return rows, true
}

// addSQL merges a delta into a stored HLL with the checksum of the
// result, as mergeSQL does, failing (and so failing the transaction) when
// there is no such HLL, it has expired at $3 or it does not match its
// checksum (division by zero), or it has other parameters (hll_union
// refuses other log2m, regwidth or expthresh).
var addSQL = `WITH u AS (UPDATE sketchd_sketches SET ` + mergeSet + `, updated_at = $3
	WHERE name = $1 AND kind = 'hll' AND ` + liveSQL + ` AND checksum = ` + sumSQL("$4", "hll_send(hll)") + ` RETURNING 1)
SELECT 1 / count(*)::int FROM u`

// commitAdds commits a group of HLL adds in one round trip, BEGIN, one
// addSQL per row in name order (each UPDATE locks its row, so rows are
// locked in name order) and COMMIT, on the parameters fastRows guessed.
// Any write's failure, or any failure of the transaction, means nothing
// committed.
func (s *DB) commitAdds(group []*op, rows []*row, start time.Time) error {
	t := &tx{rows: rows, now: s.opts.Now().UTC()}
	for _, o := range group {
		t.res = idem.Result{}
		if o.err = o.fn(t); o.err != nil {
			return errRetry
		}
		if o.guard != nil {
			if _, err := o.guard.Seal(t.res); err != nil {
				return err
			}
		}
	}
	ctx, cancel := s.groupContext(deadlines(group)...)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	// The keys first, as on every path; one already recorded fails the
	// transaction, and the careful path sorts it out.
	var b pgx.Batch
	b.Queue("BEGIN")
	for _, o := range guarded(group) {
		queueRecord(&b, o.guard, t.now, s.expiredBefore(t.now))
	}
	keys := b.Len() - 1
	for _, r := range rows {
		if r.changed && r.st.sk.Representation() != "EMPTY" {
			b.Queue(addSQL, r.name, r.st.sk.AppendBinary(nil), r.st.updated, hllKey(r.name))
		}
	}
	n := b.Len() - 1 - keys
	b.Queue("COMMIT")
	res := conn.SendBatch(ctx, &b)
	for range keys + n + 1 {
		if _, err = res.Exec(); err != nil {
			res.Close()
			return err
		}
	}
	tag, err := res.Exec()
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	if err == nil && tag.String() != "COMMIT" {
		return fmt.Errorf("postgres: the transaction ended with %s, not COMMIT", tag)
	}
	if err := s.finish(ctx, conn.Conn(), err); err != nil {
		return err
	}
	if obs := s.opts.Observer; obs != nil {
		obs.ObserveDBCommit(len(group), n, time.Since(start))
	}
	return nil
}

// decodeLocked decodes what lockSQL read: a whole sketch, or an HLL's
// header, which it turns into an empty HLL at the stored parameters (the
// delta an add-only write builds).
func decodeLocked(kindName string, b []byte, full bool) (sketch.Sketch, bool, error) {
	kind, err := storedKind(kindName, b)
	if err != nil {
		return nil, false, err
	}
	if kind.Type == sketch.TypeHLL && !full {
		if len(b) != 3 {
			return nil, false, sketch.Errorf(sketch.Internal, "a stored hll has a %d-byte header", len(b))
		}
		// The same version and parameters, storage type EMPTY (1).
		hdr := []byte{b[0]&0xf0 | 1, b[1], b[2]}
		sk, err := kind.Decode(hdr)
		if err != nil {
			return nil, false, sketch.Wrap(sketch.Internal, err, "a stored hll has a bad header")
		}
		return sk, true, nil
	}
	sk, err := kind.Decode(b)
	if err != nil {
		return nil, false, sketch.Wrap(sketch.Internal, err, "a stored sketch does not decode")
	}
	return sk, false, nil
}

// storedKind is the kind of a stored sketch of kind kindName and bytes b.
func storedKind(kindName string, b []byte) (*sketch.Kind, error) {
	kind, err := sketch.LookupFor(sketch.Type(kindName), b)
	if err != nil {
		return nil, sketch.Wrap(sketch.Internal, err, "a stored sketch has an unknown kind")
	}
	return kind, nil
}

// body returns what goes in the hll column and what in data.
func body(sk sketch.Sketch) (hllBytes, data []byte) {
	b := sk.AppendBinary(nil)
	if sk.Kind().Type == sketch.TypeHLL {
		return b, nil
	}
	return nil, b
}

// paramsJSON is the params column: the kind's parameters for SQL readers.
func paramsJSON(p sketch.Params) ([]byte, error) { return sketch.ParamsJSON(p) }

// liveSQL is the condition of a row not expired at $3 (the expiry
// columns as 0004_expiry.sql describes them). It subtracts timestamps
// (immutable) rather than adding the interval to updated_at: timestamptz
// + interval is STABLE, and Citus refuses a modification (addSQL) that
// applies a STABLE function to columns.
const liveSQL = `(expire_at IS NULL OR expire_at > $3) AND (expire_after IS NULL OR $3 - updated_at < expire_after)`

// live is liveSQL with the time in the parameter param.
func live(param string) string { return strings.ReplaceAll(liveSQL, "$3", param) }

// expiryOf is the expiry of a row's expire_after (whole seconds) and
// expire_at columns.
func expiryOf(after *int64, at *time.Time) sketch.Expiry {
	var x sketch.Expiry
	if after != nil {
		x.After = time.Duration(*after) * time.Second
	}
	if at != nil {
		x.At = at.UTC()
	}
	return x
}

// expiryArgs are the arguments that write x to the expiry columns: whole
// seconds, or NULL, and the instant, or NULL.
func expiryArgs(x sketch.Expiry) (after *float64, at *time.Time) {
	if x.After > 0 {
		f := float64(x.After / time.Second)
		after = &f
	}
	if !x.At.IsZero() {
		t := x.At
		at = &t
	}
	return after, at
}

// expired reports whether st is expired at now.
func (st *state) expired(now time.Time) bool { return st.expiry.Expired(st.updated, now) }
