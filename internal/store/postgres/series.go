package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

// Series live in two tables (migrations/postgres/0002_series.sql): the
// definitions in sketchd_series and one row per bucket in
// sketchd_series_buckets, keyed by (series, level, start), an HLL bucket
// in a real hll column. HLL series adds go through seriesLoop, which
// commits those waiting on this node in one transaction, as the committer
// does for sketches; other series writes run in transactions of their
// own. Every write locks in one order, so that writes
// never deadlock: sketch rows (in name order), then series definitions (in
// name order; FOR SHARE by adds, FOR UPDATE by create and delete), then
// buckets in (series, level, start) order.

// def is a series definition as stored.
type def struct {
	spec    *series.Spec
	created time.Time
	// version is the definition row's xmin (see bucketCache).
	version int64
	// levels, late and sum are the levels, late_limit and checksum
	// columns as read, for ChangeSeries' compare-and-swap.
	levels, late string
	sum          []byte
}

// same reports whether d is the definition o read earlier: a series
// deleted and created again meanwhile is another.
func (d def) same(o def) bool { return d.created.Equal(o.created) && d.spec.Same(o.spec) }

// levelJSON is one element of the levels column.
type levelJSON struct {
	Level     string `json:"level"`
	Retention string `json:"retention"`
}

// selectDef reads a definition; its levels as the text PostgreSQL
// writes jsonb in, which its checksum covers.
const selectDef = `SELECT kind, proto, tz, levels::text, late_limit, created_at, xmin::text::bigint, checksum FROM sketchd_series WHERE name = $1`

// defSumSQL is the checksum of a definition (checksum.go) from the
// columns of a row (the migration, a PATCH) or, in CreateSeries, from
// its parameters.
func defSumSQL(name, kind, tz, late, levels, proto string) string {
	return sumSQL("decode(md5('series ' || "+name+" || ' ' || "+kind+" || ' ' || "+tz+" || ' ' || "+late+" || ' ' || "+levels+"::jsonb::text), 'hex')", proto)
}

// readDef reads name's definition through q, with lock ("", "FOR SHARE"
// or "FOR UPDATE") appended to the statement. A missing series is
// NotFound; a definition that fails its checksum or does not decode (as
// a create would validate it) is Damaged, and reported.
func (s *DB) readDef(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, name, lock string) (def, error) {
	var kind, tz, late, levels string
	var proto, sum []byte
	var d def
	err := q.QueryRow(ctx, selectDef+" "+lock, name).Scan(&kind, &proto, &tz, &levels, &late, &d.created, &d.version, &sum)
	if errors.Is(err, pgx.ErrNoRows) {
		return def{}, seriesNotFound(name)
	}
	if err != nil {
		return def{}, err
	}
	err = verify(sum, defKey(name, kind, tz, late, levels), proto)
	if err == nil {
		d.spec, err = decodeDef(kind, proto, tz, []byte(levels), late)
	}
	if err != nil {
		return def{}, s.report(damaged(seriesLabel(name), "sketchd_series", deleteSeriesHint, err), "read series")
	}
	d.created = d.created.UTC()
	d.levels, d.late, d.sum = levels, late, sum
	return d, nil
}

// decodeDef rebuilds a spec from its columns and validates it as a create
// would.
func decodeDef(kindName string, proto []byte, tz string, levels []byte, late string) (*series.Spec, error) {
	kind, err := sketch.LookupFor(sketch.Type(kindName), proto)
	if err != nil {
		return nil, err
	}
	empty, err := kind.Decode(proto)
	if err != nil {
		return nil, err
	}
	spec := &series.Spec{Params: empty.Params(), TZ: tz}
	var ls []levelJSON
	if err := json.Unmarshal(levels, &ls); err != nil {
		return nil, err
	}
	if len(ls) > len(series.Levels) {
		return nil, fmt.Errorf("%d levels", len(ls))
	}
	for _, l := range ls {
		lv, err := series.ParseLevel(l.Level)
		if err != nil {
			return nil, err
		}
		r, err := series.ParseDuration(l.Retention)
		if err != nil {
			return nil, err
		}
		spec.Levels = append(spec.Levels, series.LevelSpec{Level: lv, Retention: r})
	}
	if spec.LateLimit, err = series.ParseDuration(late); err != nil {
		return nil, err
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return spec, nil
}

func seriesNotFound(name string) error {
	return sketch.Errorf(sketch.NotFound, "series %q does not exist", name)
}

// errSeriesChanged makes a write or read start again: the series was
// deleted and created anew between the look and the locked read.
var errSeriesChanged = errors.New("the series changed")

// inTx runs fn in one transaction and commits it; fn's error (or any
// failure) rolls everything back. The store's Close waits for it.
func (s *DB) inTx(ctx context.Context, what string, fn func(ctx context.Context, tx pgx.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closing.Load() {
		return ErrClosed
	}
	tctx, cancel := context.WithTimeout(ctx, s.opts.WriteTimeout)
	defer cancel()
	// The connection is held past COMMIT, for finish.
	conn, err := s.pool.Acquire(tctx)
	if err != nil {
		return s.classify(ctx, err, what)
	}
	defer conn.Release()
	tx, err := conn.Begin(tctx)
	if err != nil {
		return s.classify(ctx, err, what)
	}
	// A no-op after Commit; the pool drops a connection whose rollback
	// fails.
	defer func() { _ = tx.Rollback(context.Background()) }()
	if err := fn(tctx, tx); err != nil {
		if errors.Is(err, errSeriesChanged) || errors.Is(err, errRetry) {
			return err
		}
		return s.classify(ctx, err, what)
	}
	return s.classify(ctx, s.finish(tctx, conn.Conn(), tx.Commit(tctx)), what)
}

// CreateSeries creates the series name with spec; the same spec again
// changes nothing, another is a Conflict. Buckets left under the name
// (none, unless written by hand) are removed in the same transaction.
func (s *DB) CreateSeries(ctx context.Context, name string, spec *series.Spec) (info series.Info, created bool, err error) {
	if err := spec.Validate(); err != nil {
		return series.Info{}, false, err
	}
	empty, err := spec.Params.New()
	if err != nil {
		return series.Info{}, false, err
	}
	params, err := paramsJSON(spec.Params)
	if err != nil {
		return series.Info{}, false, err
	}
	lj, err := levelsJSON(spec)
	if err != nil {
		return series.Info{}, false, err
	}
	g := idem.From(ctx)
	err = s.inTx(ctx, "create series", func(ctx context.Context, tx pgx.Tx) error {
		created = false
		now := s.opts.Now()
		if err := s.claimInTx(ctx, tx, g, now); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, createDefSQL,
			name, string(spec.Params.Kind().Type), params, empty.AppendBinary(nil), spec.TZ, lj, spec.LateLimit.String(), now.UTC())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			created = true
			if _, err := tx.Exec(ctx, `DELETE FROM sketchd_series_buckets WHERE series = $1`, name); err != nil {
				return err
			}
		} else {
			have, err := s.readDef(ctx, tx, name, "FOR SHARE")
			if err != nil {
				return err
			}
			if !have.spec.Same(spec) {
				return sketch.Errorf(sketch.Conflict, "series %q exists with %s; the request asks for %s", name, have.spec, spec)
			}
		}
		// The description as this transaction leaves the series.
		if info, err = s.describeSeries(ctx, tx, name); err != nil {
			return err
		}
		return answerInTx(ctx, tx, g, idem.Result{Series: info, Created: created})
	})
	if err != nil {
		return series.Info{}, false, err
	}
	return info, created, nil
}

// createDefSQL inserts a definition with its checksum, computed from the
// values inserted (the levels as PostgreSQL writes them back as text).
var createDefSQL = `INSERT INTO sketchd_series (name, kind, params, proto, tz, levels, late_limit, created_at, checksum)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, ` + defSumSQL("$1::text", "$2::text", "$5::text", "$7::text", "$6", "$4::bytea") + `) ON CONFLICT (name) DO NOTHING`

// changeDefSQL writes a changed definition, with its new checksum, only if
// the row still holds the levels, late limit and checksum read ($4, $5,
// $7) under the same created_at ($6), and fails the transaction (division
// by zero) otherwise. The FOR UPDATE read makes that the rule on
// PostgreSQL; on Citus a row lock holds one placement of the shard, and a
// move that completes between the read and the write sends the write to
// the new placement, where another node's change may have been
// acknowledged meanwhile (see casSQL).
var changeDefSQL = `WITH u AS (UPDATE sketchd_series SET levels = $2, late_limit = $3,
	checksum = ` + defSumSQL("name", "kind", "tz", "$3::text", "$2", "proto") + `
	WHERE name = $1 AND levels = $4::jsonb AND late_limit = $5 AND created_at = $6 AND checksum = $7 RETURNING 1)
SELECT 1 / count(*)::int FROM u`

// ChangeSeries applies c to name's definition in one transaction that
// locks it FOR UPDATE (adds, which lock it FOR SHARE, wait), and runs it
// again when the row changed under it (changeDefSQL). A change to what
// the definition already is writes nothing.
func (s *DB) ChangeSeries(ctx context.Context, name string, c series.Change) (series.Info, error) {
	for {
		info, err := s.changeSeries(ctx, name, c)
		if !errors.Is(err, errRetry) {
			return info, err
		}
	}
}

func (s *DB) changeSeries(ctx context.Context, name string, c series.Change) (series.Info, error) {
	g := idem.From(ctx)
	var info series.Info
	err := s.inTx(ctx, "change series", func(ctx context.Context, tx pgx.Tx) error {
		if err := s.claimInTx(ctx, tx, g, s.opts.Now()); err != nil {
			return err
		}
		d, err := s.readDef(ctx, tx, name, "FOR UPDATE")
		if err != nil {
			return err
		}
		spec, err := d.spec.Changed(c)
		if err != nil {
			return err
		}
		if !spec.Same(d.spec) {
			lj, err := levelsJSON(spec)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, changeDefSQL, name, lj, spec.LateLimit.String(), d.levels, d.late, d.created, d.sum); err != nil {
				return raced(err)
			}
		}
		// The description as this transaction leaves the series.
		if info, err = s.describeSeries(ctx, tx, name); err != nil {
			return err
		}
		return answerInTx(ctx, tx, g, idem.Result{Series: info})
	})
	s.defs.drop(name)
	if err != nil {
		return series.Info{}, err
	}
	return info, nil
}

// levelsJSON is the levels column of spec.
func levelsJSON(spec *series.Spec) ([]byte, error) {
	levels := make([]levelJSON, len(spec.Levels))
	for i, l := range spec.Levels {
		levels[i] = levelJSON{l.Level.String(), l.Retention.String()}
	}
	return json.Marshal(levels)
}

// DescribeSeries returns name's spec and, per level, its buckets.
func (s *DB) DescribeSeries(ctx context.Context, name string) (series.Info, error) {
	if err := ctx.Err(); err != nil {
		return series.Info{}, err
	}
	var info series.Info
	// One snapshot for the definition and its buckets.
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		info, err = s.describeSeries(ctx, tx, name)
		return err
	})
	if err != nil {
		return series.Info{}, s.classify(ctx, err, "describe series")
	}
	return info, nil
}

// describeSQL counts a series' buckets per level, with the check of each
// bucket's checksum as a grouping column (computed once per row; see
// prefixUnionSQL), so that a damaged bucket lands in a group of its own
// whose least start names it.
var describeSQL = `SELECT level, checksum = ` + sumSQL(bucketKeySQL(""), "coalesce(hll_send(hll), data)") + `,
	count(*), min(start), max(start), sum(octet_length(coalesce(hll_send(hll), data)))::bigint
FROM sketchd_series_buckets WHERE series = $1 GROUP BY 1, 2`

// describeSeries describes name as tx sees it. The database checks every
// bucket's checksum, as the embedded backend reads every bucket: a
// damaged one is a Damaged error naming it (and the first of its level,
// when there are several).
func (s *DB) describeSeries(ctx context.Context, tx pgx.Tx, name string) (series.Info, error) {
	var info series.Info
	err := func() error {
		d, err := s.readDef(ctx, tx, name, "")
		if err != nil {
			return err
		}
		info = series.Info{Name: name, Spec: d.spec, CreatedAt: d.created}
		for _, ls := range d.spec.Levels {
			info.Levels = append(info.Levels, series.LevelInfo{Level: ls.Level, Retention: ls.Retention})
		}
		rows, err := tx.Query(ctx, describeSQL, name)
		if err != nil {
			return err
		}
		defer rows.Close()
		var bad error
		var badLevel series.Level
		var badStart time.Time
		for rows.Next() {
			var level string
			var ok *bool
			var n, size int64
			var oldest, newest time.Time
			if err := rows.Scan(&level, &ok, &n, &oldest, &newest, &size); err != nil {
				return err
			}
			if ok == nil || !*ok {
				l, _ := series.ParseLevel(level)
				if bad == nil || l < badLevel || l == badLevel && oldest.Before(badStart) {
					why := fmt.Errorf("%d of the level's buckets fail their checksums, checked in the database: %w", n, errChecksum)
					bad, badLevel, badStart = damagedBucket(name, level, oldest, why), l, oldest
				}
				continue
			}
			for j := range info.Levels {
				li := &info.Levels[j]
				if li.Level.String() != level {
					continue
				}
				li.Buckets, li.Bytes = int(n), size
				li.Oldest, li.Newest = oldest.In(d.spec.Location()), newest.In(d.spec.Location())
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if bad != nil {
			return s.report(bad, "describe series")
		}
		return nil
	}()
	return info, err
}

// ListSeries returns up to limit series whose names start with prefix and
// sort after after, in name order, and whether more follow.
func (s *DB) ListSeries(ctx context.Context, prefix, after string, limit int) ([]series.Info, bool, error) {
	infos, more, _, err := s.ListSeriesSkipping(ctx, prefix, after, limit)
	return infos, more, err
}

// ListSeriesSkipping is ListSeries that also returns the names (quoted,
// safe to print) of the series it skipped because their definition or a
// bucket is damaged; each is logged and counted.
func (s *DB) ListSeriesSkipping(ctx context.Context, prefix, after string, limit int) (infos []series.Info, more bool, skipped []string, err error) {
	names, more, err := s.seriesNames(ctx, prefix, after, limit)
	if err != nil {
		return nil, false, nil, err
	}
	infos = make([]series.Info, 0, len(names))
	for _, n := range names {
		info, err := s.DescribeSeries(ctx, n)
		switch sketch.KindOf(err) {
		case sketch.NotFound:
			continue // deleted since
		case sketch.Damaged:
			s.unreadable.Add(1) // logged by the describe
			skipped = append(skipped, quote(n))
			continue
		}
		if err != nil {
			return nil, false, nil, err
		}
		infos = append(infos, info)
	}
	return infos, more, skipped, nil
}

// seriesNames lists up to limit series names as List lists sketches.
func (s *DB) seriesNames(ctx context.Context, prefix, after string, limit int) ([]string, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	limit = max(limit, 0)
	// Names sort below prefix+0x7f, as in List.
	q := `SELECT name FROM sketchd_series WHERE name > $1 AND name >= $2 AND starts_with(name, $2)`
	args := []any{after, prefix, limit + 1}
	if prefix != "" {
		q += ` AND name < $4`
		args = append(args, prefix+"\x7f")
	}
	rows, err := s.pool.Query(ctx, q+` ORDER BY name LIMIT $3`, args...)
	if err != nil {
		return nil, false, s.classify(ctx, err, "list series")
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, false, s.classify(ctx, err, "list series")
	}
	more := len(names) > limit
	return names[:min(limit, len(names))], more, nil
}

// DeleteSeries removes name and its buckets in one transaction.
func (s *DB) DeleteSeries(ctx context.Context, name string) error {
	g := idem.From(ctx)
	return s.inTx(ctx, "delete series", func(ctx context.Context, tx pgx.Tx) error {
		if err := s.claimInTx(ctx, tx, g, s.opts.Now()); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM sketchd_series WHERE name = $1`, name)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return seriesNotFound(name)
		}
		if _, err = tx.Exec(ctx, `DELETE FROM sketchd_series_buckets WHERE series = $1`, name); err != nil {
			return err
		}
		return answerInTx(ctx, tx, g, idem.Result{})
	})
}

// bucketAdd is what one write adds to one bucket.
type bucketAdd struct {
	series string
	key    series.Key
	params sketch.Params
	// For events: the ids, and the bucket's index among those the events
	// name (its target in sketch.IDsByTarget).
	ids []cms.ID
	j   int
	b   sketch.Batch
}

func compareBuckets(a, b *bucketAdd) int {
	if c := strings.Compare(a.series, b.series); c != 0 {
		return c
	}
	if c := int(a.key.Level) - int(b.key.Level); c != 0 {
		return c
	}
	return a.key.Start.Compare(b.key.Start)
}

// upsertHLL merges a delta ($4) into a bucket, creating it: the conflict
// on the key locks an existing row, the insert a new one. $6 is the
// bucket's key digest, $7 the checksum of the delta as a new bucket. An
// existing bucket is merged, and given the checksum of the result, only
// if it matches its checksum, so that a merge never gives a damaged
// bucket a valid checksum; otherwise the transaction fails (division by
// zero: sendBuckets).
var upsertHLL = `WITH u AS (INSERT INTO sketchd_series_buckets AS b (series, level, start, hll, updated_at, checksum)
VALUES ($1, $2, $3, $4::bytea::hll, $5, $7)
ON CONFLICT (series, level, start) DO UPDATE SET hll = hll_union(b.hll, EXCLUDED.hll), updated_at = EXCLUDED.updated_at,
	checksum = ` + sumSQL("$6", "hll_send(hll_union(b.hll, EXCLUDED.hll))") + `
WHERE b.checksum = ` + sumSQL("$6", "hll_send(b.hll)") + `
RETURNING 1)
SELECT 1 / count(*)::int FROM u`

// Statements of buckets of kinds other than HLL, which are read, changed
// in Go and written back with their checksums ($6).
const (
	insertEmptyBucket = `INSERT INTO sketchd_series_buckets (series, level, start, data, updated_at, checksum)
	VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (series, level, start) DO NOTHING`
	lockBucket   = `SELECT data, checksum FROM sketchd_series_buckets WHERE series = $1 AND level = $2 AND start = $3 FOR UPDATE`
	updateBucket = `UPDATE sketchd_series_buckets SET data = $4, updated_at = $5, checksum = $6 WHERE series = $1 AND level = $2 AND start = $3`
)

// bucketRef names the bucket a statement of a batch writes.
type bucketRef struct {
	series, level string
	start         time.Time
}

// sendBuckets sends b, whose statements write the buckets refs in order
// within tx, and turns a statement's refusal of a damaged bucket (a
// division by zero: upsertHLL, replaceBucket) into a Damaged error
// naming it.
func (s *DB) sendBuckets(ctx context.Context, tx pgx.Tx, b *pgx.Batch, refs []bucketRef) error {
	if b.Len() == 0 {
		return nil
	}
	res := tx.SendBatch(ctx, b)
	for _, r := range refs {
		if _, err := res.Exec(); err != nil {
			res.Close()
			if divisionByZero(err) {
				return s.report(damagedBucket(r.series, r.level, r.start, fmt.Errorf("checked in the database: %w", errChecksum)), "write series")
			}
			return err
		}
	}
	return res.Close()
}

// divisionByZero reports whether err is a statement's deliberate division
// by zero (the CTEs that fail a transaction when they changed no row).
func divisionByZero(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "22012"
}

// lockedBucket locks and reads the bucket of series at (level, start) of
// kind params, checks it and decodes it.
func (s *DB) lockedBucket(ctx context.Context, tx pgx.Tx, name, level string, start time.Time, params sketch.Params) (sketch.Sketch, error) {
	var data, sum []byte
	if err := tx.QueryRow(ctx, lockBucket, name, level, start).Scan(&data, &sum); err != nil {
		return nil, err
	}
	err := verify(sum, bucketKeyDigest(name, level, start), data)
	var cur sketch.Sketch
	if err == nil {
		cur, err = params.Kind().Decode(data)
	}
	if err == nil && cur.Params() != params {
		err = fmt.Errorf("it has parameters %s, not the series' %s", cur.Params(), params)
	}
	if err != nil {
		return nil, s.report(damagedBucket(name, level, start, err), "write series")
	}
	return cur, nil
}

// writeBuckets applies adds (sorted by compareBuckets) within tx, each
// bucket's batch checked before anything is written. An HLL bucket gets
// hll_union of a delta built here at the series' parameters; a bucket of
// another kind is locked, read, changed in Go and written back. check
// names a refusal (events name the event). A damaged bucket fails the
// write with a Damaged error naming it.
func (s *DB) writeBuckets(ctx context.Context, tx pgx.Tx, adds []*bucketAdd, now time.Time, check func(a *bucketAdd, st *state, err error) error) error {
	var batch pgx.Batch
	var refs []bucketRef
	flush := func() error {
		if batch.Len() == 0 {
			return nil
		}
		err := s.sendBuckets(ctx, tx, &batch, refs)
		batch, refs = pgx.Batch{}, nil
		return err
	}
	for _, a := range adds {
		level := a.key.Level.String()
		key := bucketKeyDigest(a.series, level, a.key.Start)
		sk, err := a.params.New()
		if err != nil {
			return err
		}
		if a.params.Kind().Type == sketch.TypeHLL {
			if err := sk.Check(a.b); err != nil {
				return check(a, &state{sk: sk}, err)
			}
			if _, err := sk.Apply(a.b, nil); err != nil {
				return err
			}
			delta := sk.AppendBinary(nil)
			batch.Queue(upsertHLL, a.series, level, a.key.Start, delta, now, key[:], checksum(key, delta))
			refs = append(refs, bucketRef{a.series, level, a.key.Start})
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		// Insert the empty bucket unless it exists (waiting for a writer
		// that is inserting it), then lock and read it.
		empty := sk.AppendBinary(nil)
		if _, err := tx.Exec(ctx, insertEmptyBucket, a.series, level, a.key.Start, empty, now, checksum(key, empty)); err != nil {
			return err
		}
		cur, err := s.lockedBucket(ctx, tx, a.series, level, a.key.Start, a.params)
		if err != nil {
			return err
		}
		if err := cur.Check(a.b); err != nil {
			return check(a, &state{sk: cur}, err)
		}
		if _, err := cur.Apply(a.b, nil); err != nil {
			return err
		}
		b := cur.AppendBinary(nil)
		if _, err := tx.Exec(ctx, updateBucket, a.series, level, a.key.Start, b, now, checksum(key, b)); err != nil {
			return err
		}
	}
	return flush()
}

// AddSeries adds in's ids stamped ts to one bucket per level that keeps
// ts, creating the buckets it needs, in one transaction: the definition
// locked FOR SHARE (a delete or change waits), then the buckets in
// (level, start) order.
func (s *DB) AddSeries(ctx context.Context, name string, ts time.Time, in sketch.Input) (series.Added, error) {
	for fresh := false; ; fresh = true {
		if err := ctx.Err(); err != nil {
			return series.Added{}, err
		}
		// The definition as the node last read it; the write's own
		// transaction checks it is still the stored one (errSeriesChanged
		// reads it again).
		d, cached, err := s.knownDef(ctx, name, fresh)
		if err != nil {
			return series.Added{}, err
		}
		now := s.opts.Now()
		keys, err := d.spec.Buckets(ts, now)
		if err != nil {
			if cached {
				continue // perhaps only under a definition since replaced
			}
			return series.Added{}, err
		}
		kind := d.spec.Params.Kind()
		b, err := kind.Prepare(in)
		if err != nil {
			return series.Added{}, err
		}
		adds := make([]*bucketAdd, len(keys))
		for i, k := range keys {
			adds[i] = &bucketAdd{series: name, key: k, params: d.spec.Params, b: b}
		}
		slices.SortFunc(adds, compareBuckets)
		added := d.spec.AddedTo(sketch.Added{Type: kind.Type, Accepted: b.Len()}, keys)
		if kind.Type == sketch.TypeHLL {
			err = s.addHLLSeries(ctx, name, d, adds, added)
		} else {
			err = s.addSeriesLocked(ctx, name, d, adds, now, added)
		}
		if errors.Is(err, errSeriesChanged) {
			continue
		}
		if err != nil {
			return series.Added{}, err
		}
		return added, nil
	}
}

// checkDefSQL locks a series' definition FOR SHARE and fails (division by
// zero, which aborts the transaction) unless it is the one created at $2
// and last changed by transaction $3 (its xmin: a definition changed
// since, by ChangeSeries on any node, fails it).
const checkDefSQL = `SELECT 1 / count(*)::int FROM (SELECT 1 FROM sketchd_series WHERE name = $1 AND created_at = $2 AND xmin::text::bigint = $3 FOR SHARE) d`

// seriesOp is one HLL series add waiting for seriesLoop: its buckets
// (sorted) and the delta of its ids, built and checked by the caller.
type seriesOp struct {
	name  string
	d     def
	keys  []series.Key
	delta sketch.Sketch
	// guard is the add's idempotency key, sealed already, if any.
	guard *idem.Guard
	err   error
	done  chan struct{}
	// deadline is the request's (its context's), or zero.
	deadline time.Time
}

// addHLLSeries queues an HLL add for seriesLoop, which commits the adds
// waiting on this node together, and waits for its outcome. Under an
// idempotency key the answer (of added) is sealed first: it does not
// depend on the transaction.
func (s *DB) addHLLSeries(ctx context.Context, name string, d def, adds []*bucketAdd, added series.Added) error {
	g := idem.From(ctx)
	if g != nil {
		if _, err := g.Seal(idem.Result{Added: added.Added, SeriesAdded: added}); err != nil {
			return err
		}
	}
	if len(adds) == 0 && g == nil {
		return nil
	}
	delta, err := d.spec.Params.New()
	if err != nil {
		return err
	}
	if len(adds) > 0 {
		if err := delta.Check(adds[0].b); err != nil {
			return err
		}
		if err := sketch.Absorb(delta, adds[0].b); err != nil {
			return err
		}
	}
	o := &seriesOp{name: name, d: d, delta: delta, guard: g, done: make(chan struct{})}
	o.deadline, _ = ctx.Deadline()
	for _, a := range adds {
		o.keys = append(o.keys, a.key)
	}
	if err := enqueue(s, ctx, s.squeue, o); err != nil {
		return err
	}
	// Once queued the add may commit: wait for it whatever ctx says.
	<-o.done
	return o.err
}

// seriesLoop takes every HLL series add waiting (up to MaxGroup) and
// commits them in one transaction, until Close; then it finishes the
// adds queued. A group that fails for a reason other than the database
// being unreachable runs again one add per transaction, so that one
// add's failure (its series deleted or created anew) is its own.
func (s *DB) seriesLoop() {
	serveGroups(s, s.squeue, func(*seriesOp) bool { return true }, s.runSeriesGroup)
}

func (s *DB) runSeriesGroup(group []*seriesOp) {
	// An add whose request's deadline passed while it waited is not
	// applied: it is answered so at once.
	now := time.Now()
	group = slices.DeleteFunc(group, func(o *seriesOp) bool {
		if o.deadline.IsZero() || now.Before(o.deadline) {
			return false
		}
		o.err = sketch.Wrap(sketch.Unavailable, context.DeadlineExceeded, "the request's deadline passed before its add was committed; it was not applied")
		close(o.done)
		return true
	})
	if len(group) == 0 {
		return
	}
	err := s.commitHLLSeries(group)
	if err != nil && len(group) > 1 && !transient(err) {
		for _, o := range group {
			o.err = s.commitHLLSeries([]*seriesOp{o})
			close(o.done)
		}
		return
	}
	for _, o := range group {
		o.err = err
		close(o.done)
	}
}

// commitHLLSeries commits a group of HLL series adds in one round trip:
// BEGIN, checkDefSQL for each series in name order (its definition locked
// FOR SHARE), one upsert per bucket in (series, level, start) order of
// the union of the group's deltas for it, and COMMIT. A definition gone
// or created anew aborts it: errSeriesChanged.
func (s *DB) commitHLLSeries(group []*seriesOp) error {
	type bucket struct {
		name  string
		key   series.Key
		delta sketch.Sketch
	}
	defs := map[string]def{}
	merged := map[seriesBucket]*bucket{}
	for _, o := range group {
		if d, ok := defs[o.name]; ok && !d.same(o.d) {
			return errSeriesChanged // two definitions of one name: alone, one fails
		}
		defs[o.name] = o.d
		for _, k := range o.keys {
			id := seriesBucket{o.name, bucketID{k.Level, k.Start.Unix()}}
			b := merged[id]
			if b == nil {
				merged[id] = &bucket{name: o.name, key: k, delta: o.delta.Clone()}
				continue
			}
			if err := b.delta.Merge(o.delta); err != nil {
				return err
			}
		}
	}
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	slices.Sort(names)
	buckets := make([]*bucket, 0, len(merged))
	for _, b := range merged {
		buckets = append(buckets, b)
	}
	slices.SortFunc(buckets, func(a, b *bucket) int {
		return compareBuckets(&bucketAdd{series: a.name, key: a.key}, &bucketAdd{series: b.name, key: b.key})
	})

	ds := make([]time.Time, len(group))
	for i, o := range group {
		ds[i] = o.deadline
	}
	ctx, cancel := s.groupContext(ds...)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.classifyWrite(err)
	}
	// Released inside a failed transaction, the connection is destroyed.
	defer conn.Release()
	now := s.opts.Now().UTC()
	var keyed []*seriesOp
	for _, o := range group {
		if o.guard != nil {
			keyed = append(keyed, o)
		}
	}
	slices.SortStableFunc(keyed, func(a, b *seriesOp) int { return compareIDs(a.guard.ID, b.guard.ID) })
	var b pgx.Batch
	b.Queue("BEGIN")
	for _, o := range keyed {
		queueRecord(&b, o.guard, now, s.expiredBefore(now))
	}
	for _, n := range names {
		b.Queue(checkDefSQL, n, defs[n].created, defs[n].version)
	}
	for _, bk := range buckets {
		level := bk.key.Level.String()
		key, delta := bucketKeyDigest(bk.name, level, bk.key.Start), bk.delta.AppendBinary(nil)
		b.Queue(upsertHLL, bk.name, level, bk.key.Start, delta, now, key[:], checksum(key, delta))
	}
	b.Queue("COMMIT")
	res := conn.SendBatch(ctx, &b)
	for i := range b.Len() - 1 {
		if _, err = res.Exec(); err != nil {
			res.Close()
			var pe *pgconn.PgError
			k := len(keyed)
			switch {
			case i >= 1 && i <= k && keyTaken(err):
				return idem.ErrTaken
			case i > k && i <= k+len(names) && errors.As(err, &pe) && pe.Code == "22012":
				return errSeriesChanged
			case i > k+len(names) && divisionByZero(err):
				// upsertHLL refused a bucket that fails its checksum.
				bk := buckets[i-k-len(names)-1]
				return s.report(damagedBucket(bk.name, bk.key.Level.String(), bk.key.Start, fmt.Errorf("checked in the database: %w", errChecksum)), "write series")
			}
			return s.classifyWrite(err)
		}
	}
	tag, err := res.Exec()
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	if err == nil && tag.String() != "COMMIT" {
		return fmt.Errorf("postgres: the transaction ended with %s, not COMMIT", tag)
	}
	return s.classifyWrite(s.finish(ctx, conn.Conn(), err))
}

// addSeriesLocked writes an add to a series of another kind: the
// definition locked FOR SHARE, then each bucket locked, changed in Go and
// written back, in (level, start) order.
func (s *DB) addSeriesLocked(ctx context.Context, name string, d def, adds []*bucketAdd, now time.Time, added series.Added) error {
	g := idem.From(ctx)
	return s.inTx(ctx, "add to series", func(ctx context.Context, tx pgx.Tx) error {
		if err := s.claimInTx(ctx, tx, g, now); err != nil {
			return err
		}
		have, err := s.readDef(ctx, tx, name, "FOR SHARE")
		if err != nil {
			return err
		}
		if !have.same(d) {
			return errSeriesChanged
		}
		if err := s.writeBuckets(ctx, tx, adds, now.UTC(), func(_ *bucketAdd, _ *state, err error) error { return err }); err != nil {
			return err
		}
		return answerInTx(ctx, tx, g, idem.Result{Added: added.Added, SeriesAdded: added})
	})
}

// knownDef returns name's definition as the node last read it (cached),
// or as stored when there is none or fresh is set.
func (s *DB) knownDef(ctx context.Context, name string, fresh bool) (d def, cached bool, err error) {
	if d, ok := s.defs.get(name); ok && !fresh {
		return d, true, nil
	}
	if d, err = s.readDef(ctx, s.pool, name, ""); err != nil {
		s.defs.drop(name)
		return def{}, false, s.classify(ctx, err, "read series")
	}
	s.defs.put(name, d)
	return d, false, nil
}

// ViewSeries calls plan with name's spec, then fn with the stored
// buckets inside the runs it returned, read in one statement that checks
// the definition plan saw, so they are one committed state. The statement
// asks for each run by range, so its cost follows the buckets stored
// there; the definition and the buckets come from the node's caches where
// their rows are unchanged (bucketCache). fn gets copies.
func (s *DB) ViewSeries(ctx context.Context, name string, plan func(*series.Spec) ([]series.Run, error), fn func(*series.Spec, []series.Bucket) error) error {
	for fresh := false; ; fresh = true {
		if err := ctx.Err(); err != nil {
			return err
		}
		d, cached, err := s.knownDef(ctx, name, fresh)
		if err != nil {
			return err
		}
		runs, err := plan(d.spec)
		if err != nil {
			if cached {
				// The plan may have failed only for a definition since
				// replaced (a level it lacked): plan with the stored one.
				continue
			}
			return err
		}
		bs, err := s.readRuns(ctx, name, d, runs)
		if errors.Is(err, errSeriesChanged) {
			continue
		}
		if err != nil {
			if sketch.KindOf(err) == sketch.NotFound {
				s.defs.drop(name)
			}
			return err
		}
		return fn(d.spec, bs)
	}
}

type bucketID struct {
	level series.Level
	start int64
}

// readRunsSQL reads the definition's version and, for each run (level,
// first start, last start) in order, the buckets stored in it by start:
// level, start, the row's version and its bytes and checksum unless that
// version is the one the node holds (the held arrays: level, start,
// version). A
// missing series gives no row; a series without such buckets one row of
// NULLs after the version. Each run is a range scan of the primary key:
// the lateral subquery (kept apart by OFFSET 0) gives the planner no
// other way, even in a generic plan that cannot see how few runs there
// are (a hash join over every bucket of the series, otherwise).
const readRunsSQL = `SELECT d.xmin::text::bigint, k.i, k.level, k.start, k.xmin, CASE WHEN k.xmin = k.held THEN NULL ELSE coalesce(hll_send(k.hll), k.data) END,
	CASE WHEN k.xmin = k.held THEN NULL ELSE k.checksum END
FROM sketchd_series d LEFT JOIN (
	SELECT r.i, b.level, b.start, b.xmin, h.held, b.hll, b.data, b.checksum
	FROM unnest($2::text[], $3::timestamptz[], $4::timestamptz[]) WITH ORDINALITY AS r(level, first, last, i)
	CROSS JOIN LATERAL (SELECT level, start, xmin::text::bigint AS xmin, hll, data, checksum FROM sketchd_series_buckets
		WHERE series = $1 AND level = r.level AND start >= r.first AND start <= r.last OFFSET 0) b
	LEFT JOIN unnest($5::text[], $6::timestamptz[], $7::bigint[]) AS h(level, start, held) ON h.level = b.level AND h.start = b.start
) k ON true
WHERE d.name = $1
ORDER BY k.i, k.start`

// readRuns reads the buckets stored in runs of the series d describes, in
// one statement that also checks the definition's version: a series gone
// is NotFound, one changed or created anew errSeriesChanged.
func (s *DB) readRuns(ctx context.Context, name string, d def, runs []series.Run) ([]series.Bucket, error) {
	var levels []string
	var firsts, lasts []time.Time
	for _, r := range runs {
		if r.Count > 0 {
			levels, firsts, lasts = append(levels, r.Level.String()), append(firsts, r.First), append(lasts, r.Last)
		}
	}
	ref := seriesRef{name, d.version}
	held := s.buckets.heldIn(ref, runs)
	byID := make(map[bucketID]heldBucket, len(held))
	hLevels, hStarts, hVersions := make([]string, len(held)), make([]time.Time, len(held)), make([]int64, len(held))
	for i, h := range held {
		byID[bucketID{h.key.level, h.key.startNs}] = h
		hLevels[i], hStarts[i], hVersions[i] = h.key.level.String(), time.Unix(0, h.key.startNs), h.version
	}
	rows, err := s.pool.Query(ctx, readRunsSQL, name, levels, firsts, lasts, hLevels, hStarts, hVersions)
	if err != nil {
		return nil, s.classify(ctx, err, "read series")
	}
	defer rows.Close()
	kind, loc := d.spec.Params.Kind(), d.spec.Location()
	var bs []series.Bucket
	seen := false
	found := make(map[bucketID]sketch.Sketch, len(held)) // each read once, should runs overlap
	for rows.Next() {
		var version int64
		var i, xmin *int64
		var level *string
		var start *time.Time
		var b, sum []byte
		if err := rows.Scan(&version, &i, &level, &start, &xmin, &b, &sum); err != nil {
			return nil, s.classify(ctx, err, "read series")
		}
		if version != d.version {
			return nil, errSeriesChanged
		}
		seen = true
		if i == nil {
			continue
		}
		l, err := series.ParseLevel(*level)
		if err != nil {
			return nil, s.report(damagedBucket(name, *level, *start, err), "read series")
		}
		key := bucketKey{series: name, def: d.version, level: l, startNs: start.UnixNano()}
		id := bucketID{l, key.startNs}
		sk := found[id]
		switch {
		case sk != nil:
		case b == nil:
			h, ok := byID[id]
			if !ok || *xmin != h.version {
				return nil, sketch.Errorf(sketch.Internal, "bucket %s %s of series %q came back without its bytes", l, start.UTC().Format(time.RFC3339), name)
			}
			s.buckets.hits.Add(1)
			sk = h.sk
		default:
			s.buckets.misses.Add(1)
			// Checked and decoded once, when it fills the cache: a later
			// change of the row (an UPDATE, by anyone) changes its
			// version, and the next read gets its bytes again.
			err := verify(sum, bucketKeyDigest(name, *level, *start), b)
			if err == nil {
				sk, err = kind.Decode(b)
			}
			if err != nil {
				return nil, s.report(damagedBucket(name, *level, *start, err), "read series")
			}
			s.buckets.put(key, *xmin, sk)
		}
		found[id] = sk
		bs = append(bs, series.Bucket{Key: series.Key{Level: l, Start: start.In(loc)}, Sketch: sk.Clone()})
	}
	if err := rows.Err(); err != nil {
		return nil, s.classify(ctx, err, "read series")
	}
	if !seen {
		return nil, seriesNotFound(name)
	}
	for _, h := range held {
		if found[bucketID{h.key.level, h.key.startNs}] == nil {
			s.buckets.drop(h.key) // the row is gone (expired)
		}
	}
	return bs, nil
}

// ExpireSeries removes, in every series, the buckets whose end is at or
// before their level's cutoff at now (and those of levels the series does
// not keep).
func (s *DB) ExpireSeries(ctx context.Context, now time.Time) (series.Expired, error) {
	var out series.Expired
	after := ""
	for {
		names, more, err := s.seriesNames(ctx, "", after, 100)
		if err != nil {
			return out, err
		}
		for _, n := range names {
			x, err := s.expire(ctx, n, now)
			out.Buckets += x.Buckets
			out.Bytes += x.Bytes
			// A series deleted since is done; one whose definition is
			// damaged (logged as it was read) keeps its buckets.
			if err != nil && sketch.KindOf(err) != sketch.NotFound && sketch.KindOf(err) != sketch.Damaged {
				return out, err
			}
		}
		if !more || len(names) == 0 {
			return out, nil
		}
		after = names[len(names)-1]
	}
}

// expire removes name's expired buckets in one transaction, level by
// level finest first (the order adds lock them in). A bucket expires when
// it ends at or before the cutoff, that is when it starts before the
// bucket that holds the cutoff.
func (s *DB) expire(ctx context.Context, name string, now time.Time) (series.Expired, error) {
	var x series.Expired
	err := s.inTx(ctx, "expire series", func(ctx context.Context, tx pgx.Tx) error {
		x = series.Expired{}
		d, err := s.readDef(ctx, tx, name, "FOR SHARE")
		if err != nil {
			return err
		}
		loc := d.spec.Location()
		var kept []string
		var batch pgx.Batch
		for _, ls := range d.spec.Levels {
			kept = append(kept, ls.Level.String())
			before := ls.Level.Start(d.spec.Cutoff(ls.Level, now), loc)
			batch.Queue(`DELETE FROM sketchd_series_buckets WHERE series = $1 AND level = $2 AND start < $3
				RETURNING octet_length(coalesce(hll_send(hll), data))`, name, ls.Level.String(), before)
		}
		batch.Queue(`DELETE FROM sketchd_series_buckets WHERE series = $1 AND level <> ALL($2)
			RETURNING octet_length(coalesce(hll_send(hll), data))`, name, kept)
		res := tx.SendBatch(ctx, &batch)
		for range batch.Len() {
			rows, err := res.Query()
			if err != nil {
				res.Close()
				return err
			}
			sizes, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				res.Close()
				return err
			}
			for _, n := range sizes {
				x.Buckets++
				x.Bytes += n
			}
		}
		return res.Close()
	})
	if err != nil {
		return series.Expired{}, err
	}
	return x, nil
}

// addEventsWithSeries is AddEvents for events that name series: one
// transaction that locks the sketches in name order (the committer's
// order), then the series' definitions FOR SHARE in name order, then the
// buckets in (series, level, start) order, checks every add and only then
// writes. It returns errSeriesChanged or errRetry to be run again.
func (s *DB) addEventsWithSeries(ctx context.Context, events []sketch.Event, create bool) (map[sketch.Type]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := s.opts.Now()
	defs := map[string]def{}
	// The buckets the events go to, in the order first named, and each
	// event's: an event whose buckets are those of the event before
	// shares its list (what is kept per event stays small; see
	// sketch.IDsByTarget).
	adds := map[seriesBucket]int{}
	var list []*bucketAdd
	perEvent := make([][]int, len(events))
	var these []seriesBucket
	var last sketch.Repeated[seriesBucket, []int]
	addsOf := func() []int {
		js := make([]int, len(these))
		for i, b := range these {
			js[i] = adds[b]
		}
		return js
	}
	names := sketch.SketchNames(events)
	var seriesNames []string
	for i, ev := range events {
		these = these[:0]
		for _, sn := range ev.SeriesNames() {
			d, ok := defs[sn]
			if !ok {
				var err error
				if d, err = s.readDef(ctx, s.pool, sn, ""); err != nil {
					return nil, sketch.Prefixed(s.classify(ctx, err, "read series"), fmt.Sprintf("events[%d]: ", i))
				}
				defs[sn] = d
				seriesNames = append(seriesNames, sn)
			}
			ts := ev.Stamp()
			if ts.IsZero() {
				ts = now
			}
			keys, err := d.spec.Buckets(ts, now)
			if err != nil {
				return nil, sketch.Prefixed(err, fmt.Sprintf("events[%d]: series %q: ", i, sn))
			}
			for _, k := range keys {
				b := seriesBucket{sn, bucketID{k.Level, k.Start.Unix()}}
				if _, ok := adds[b]; !ok {
					adds[b] = len(list)
					list = append(list, &bucketAdd{series: sn, key: k, params: d.spec.Params, j: len(list)})
				}
				these = append(these, b)
			}
		}
		if len(these) > 0 {
			perEvent[i] = last.Of(these, addsOf)
		}
	}
	targets := func(i int, fn func(j int)) {
		for _, j := range perEvent[i] {
			fn(j)
		}
	}
	for j, ids := range sketch.IDsByTarget(events, len(list), targets) {
		list[j].ids = ids
	}
	slices.Sort(names)
	slices.Sort(seriesNames)
	sorted := make([]*bucketAdd, 0, len(list))
	for _, a := range list {
		b, err := a.params.Kind().Prepare(sketch.IDs(a.ids))
		if err != nil {
			sk, nerr := a.params.New()
			if nerr != nil {
				return nil, nerr
			}
			return nil, sketch.EventError(sk, events, targets, a.j, a.ids, err)
		}
		a.b = b
		sorted = append(sorted, a)
	}
	slices.SortFunc(sorted, compareBuckets)

	counts := map[sketch.Type]int{}
	var written []*row
	g := idem.From(ctx)
	err := s.inTx(ctx, "add events", func(ctx context.Context, ptx pgx.Tx) error {
		clear(counts)
		t := &tx{rows: make([]*row, len(names)), now: now.UTC()}
		if err := s.claimInTx(ctx, ptx, g, now); err != nil {
			return err
		}
		if err := s.lockSketches(ctx, ptx, t, names); err != nil {
			return err
		}
		if err := addEventIDs(t, names, events, create, counts); err != nil {
			return err
		}
		for _, sn := range seriesNames {
			have, err := s.readDef(ctx, ptx, sn, "FOR SHARE")
			if sketch.KindOf(err) == sketch.NotFound {
				return errSeriesChanged
			}
			if err != nil {
				return err
			}
			if !have.same(defs[sn]) {
				return errSeriesChanged
			}
		}
		check := func(a *bucketAdd, st *state, err error) error {
			return sketch.EventError(st.sk, events, targets, a.j, a.ids, err)
		}
		if err := s.writeBuckets(ctx, ptx, sorted, now.UTC(), check); err != nil {
			return err
		}
		var wb pgx.Batch
		for _, r := range t.rows {
			if err := queueWrite(&wb, r); err != nil {
				return err
			}
		}
		if wb.Len() > 0 {
			if err := ptx.SendBatch(ctx, &wb).Close(); err != nil {
				return raced(err)
			}
		}
		written = t.rows
		// A series counts its events once, not once per level.
		for _, ev := range events {
			for _, sn := range ev.SeriesNames() {
				counts[defs[sn].spec.Params.Kind().Type]++
			}
		}
		return answerInTx(ctx, ptx, g, idem.Result{Counts: counts})
	})
	if err != nil {
		return nil, err
	}
	for _, r := range written {
		if r.st == nil {
			s.kinds.Delete(r.name)
		} else if r.delta {
			s.rememberHeader(r.name, r.st.sk)
		} else {
			s.remember(r.name, r.st.sk)
		}
	}
	return counts, nil
}

// seriesBucket names one bucket of one series.
type seriesBucket struct {
	series string
	id     bucketID
}

// lockSketches locks and reads, within tx, the rows of names (sorted) in
// name order into t, as the committer does. A damaged one fails the
// events: they are all or nothing.
func (s *DB) lockSketches(ctx context.Context, ptx pgx.Tx, t *tx, names []string) error {
	if len(names) == 0 {
		return nil
	}
	var lb pgx.Batch
	for i, n := range names {
		t.rows[i] = &row{name: n}
		// Events only add ids: an HLL is read as its parameters and
		// written back as hll_union with a delta, as the committer does.
		lb.Queue(lockSQL, n, false, hllKey(n))
	}
	res := ptx.SendBatch(ctx, &lb)
	defer res.Close()
	for _, r := range t.rows {
		if err := s.readLocked(res, t, r, false); err != nil {
			return err
		}
		if r.damage != nil {
			return r.damage
		}
	}
	return res.Close()
}

// ImportSeries plans and applies an import into name's buckets in one
// transaction (see server.SeriesStore): the definition locked FOR SHARE
// and checked to be the one the plan used, then each bucket in (level,
// start) order: an HLL bucket upserted in its hll column (replaced, or
// merged with hll_union), a bucket of another kind replaced, or locked,
// merged in Go and written back.
func (s *DB) ImportSeries(ctx context.Context, name string, replace bool, prepare func(*series.Spec) ([]series.Import, error)) ([]series.Write, error) {
	for fresh := false; ; fresh = true {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d, cached, err := s.knownDef(ctx, name, fresh)
		if err != nil {
			return nil, err
		}
		imports, err := prepare(d.spec)
		if err != nil {
			if cached {
				continue // perhaps only under a definition since replaced
			}
			return nil, err
		}
		writes, err := d.spec.ImportWrites(imports, replace, s.opts.Now())
		if err != nil {
			if cached {
				continue
			}
			return nil, err
		}
		now := s.opts.Now().UTC()
		g := idem.From(ctx)
		err = s.inTx(ctx, "import series buckets", func(ctx context.Context, tx pgx.Tx) error {
			if err := s.claimInTx(ctx, tx, g, now); err != nil {
				return err
			}
			have, err := s.readDef(ctx, tx, name, "FOR SHARE")
			if err != nil {
				return err
			}
			if have.version != d.version || !have.same(d) {
				return errSeriesChanged
			}
			if err := s.importBuckets(ctx, tx, name, d.spec.Params, writes, now); err != nil {
				return err
			}
			return answerInTx(ctx, tx, g, idem.Result{Writes: writes})
		})
		if errors.Is(err, errSeriesChanged) {
			continue
		}
		if err != nil {
			if sketch.KindOf(err) == sketch.NotFound {
				s.defs.drop(name)
			}
			return nil, err
		}
		return writes, nil
	}
}

// replaceBucket replaces a bucket's state ($4, in the column col of
// replaceHLL or replaceData) with its checksum ($7), creating the bucket,
// only if an existing one matches its checksum ($6 is the key digest),
// as on the embedded backend every write but a delete refuses a damaged
// value; otherwise the transaction fails (division by zero: sendBuckets).
func replaceBucket(col, value string) string {
	return `WITH u AS (INSERT INTO sketchd_series_buckets AS b (series, level, start, ` + col + `, updated_at, checksum)
VALUES ($1, $2, $3, ` + value + `, $5, $7)
ON CONFLICT (series, level, start) DO UPDATE SET ` + col + ` = EXCLUDED.` + col + `, updated_at = EXCLUDED.updated_at, checksum = EXCLUDED.checksum
WHERE b.checksum = ` + sumSQL("$6", "coalesce(hll_send(b.hll), b.data)") + `
RETURNING 1)
SELECT 1 / count(*)::int FROM u`
}

var (
	replaceHLL  = replaceBucket("hll", "$4::bytea::hll")
	replaceData = replaceBucket("data", "$4")
)

// importBuckets applies writes (in (level, start) order) within tx.
func (s *DB) importBuckets(ctx context.Context, tx pgx.Tx, name string, params sketch.Params, writes []series.Write, now time.Time) error {
	var b pgx.Batch
	var refs []bucketRef
	for _, w := range writes {
		level := w.Level.String()
		key := bucketKeyDigest(name, level, w.Start)
		switch {
		case params.Kind().Type == sketch.TypeHLL || w.Action == series.Replaced:
			q := upsertHLL
			switch {
			case w.Action == series.Replaced && params.Kind().Type == sketch.TypeHLL:
				q = replaceHLL
			case w.Action == series.Replaced:
				q = replaceData
			}
			v := w.Sketch.AppendBinary(nil)
			b.Queue(q, name, level, w.Start, v, now, key[:], checksum(key, v))
			refs = append(refs, bucketRef{name, level, w.Start})
			continue
		}
		if err := s.sendBuckets(ctx, tx, &b, refs); err != nil {
			return err
		}
		b, refs = pgx.Batch{}, nil
		empty, err := params.New()
		if err != nil {
			return err
		}
		e := empty.AppendBinary(nil)
		if _, err := tx.Exec(ctx, insertEmptyBucket, name, level, w.Start, e, now, checksum(key, e)); err != nil {
			return err
		}
		cur, err := s.lockedBucket(ctx, tx, name, level, w.Start, params)
		if err != nil {
			return err
		}
		merged, err := sketch.MergedInto(name, cur, w.Sketch)
		if err != nil {
			return err
		}
		v := merged.AppendBinary(nil)
		if _, err := tx.Exec(ctx, updateBucket, name, level, w.Start, v, now, checksum(key, v)); err != nil {
			return err
		}
	}
	return s.sendBuckets(ctx, tx, &b, refs)
}
