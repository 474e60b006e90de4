package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/sketch"
)

func notFound(name string) error {
	return sketch.Errorf(sketch.NotFound, "sketch %q does not exist", name)
}

func newState(spec sketch.Spec, now time.Time) (*state, error) {
	sk, err := spec.New()
	if err != nil {
		return nil, err
	}
	return &state{sk: sk, metric: spec.Metric, created: now, updated: now, expiry: spec.Expiry}, nil
}

// add applies the prepared batch b to r's sketch, which accepted it
// (Check).
func (t *tx) add(r *row, b sketch.Batch) error {
	delta, err := r.st.sk.Apply(b, nil)
	if err != nil {
		return err
	}
	// An add that changes nothing still moves the last write of a sketch
	// that expires after it.
	if len(delta) > 0 || (r.delta || r.st.expiry.After > 0) && b.Len() > 0 {
		r.st.updated = t.now
		r.changed = true
	}
	return nil
}

// preDelta builds, in the caller's goroutine, the HLL of an add's batch at
// the parameters the node last saw for name, so that the committer only
// merges it into the row's delta (register maxima) instead of adding every
// id while the transaction's clock runs. It returns nil when the node
// knows no parameters for name or the batch is not for an HLL; the
// committer then adds the batch itself.
func (s *DB) preDelta(name string, kind *sketch.Kind, b sketch.Batch) sketch.Sketch {
	v, ok := s.kinds.Load(name)
	if !ok || kind.Type != sketch.TypeHLL {
		return nil
	}
	k := v.(known)
	if k.kind != kind || k.params == nil {
		return nil
	}
	d, err := k.params.New()
	if err != nil {
		return nil
	}
	if err := sketch.Absorb(d, b); err != nil {
		return nil
	}
	return d
}

// merge unions a delta built by preDelta into r's delta, which has the
// same parameters; n is the number of ids it holds.
func (t *tx) merge(r *row, d sketch.Sketch, n int) error {
	if err := r.st.sk.Merge(d); err != nil {
		return err
	}
	if n > 0 {
		r.st.updated = t.now
		r.changed = true
	}
	return nil
}

// Create creates name with spec. If it exists with the same kind and
// parameters, Create changes only its metric flag and reports created
// false; with other parameters it fails with Conflict.
func (s *DB) Create(ctx context.Context, name string, spec sketch.Spec) (info sketch.Info, created bool, err error) {
	if err := spec.Validate(); err != nil {
		return sketch.Info{}, false, err
	}
	if err := spec.Expiry.Validate(s.opts.Now()); err != nil {
		return sketch.Info{}, false, err
	}
	names := []string{name}
	err = s.submit(ctx, names, names, func(t *tx) error {
		r := t.row(name)
		created = false
		if r.st != nil {
			have := sketch.Spec{Params: r.st.sk.Params()}
			if !have.SameParams(spec) {
				return sketch.Errorf(sketch.Conflict, "sketch %q exists with %s; the request asks for %s", name, have.Params, spec.Params)
			}
			if r.st.metric != spec.Metric {
				r.st.metric = spec.Metric
				r.changed = true
			}
			if r.st.expiry != spec.Expiry {
				r.st.expiry, r.st.updated = spec.Expiry, t.now
				r.changed = true
			}
			info = r.st.info(name)
			t.res = idem.Result{Info: info}
			return nil
		}
		st, err := newState(spec, t.now)
		if err != nil {
			return err
		}
		t.put(r, st)
		info, created = st.info(name), true
		t.res = idem.Result{Info: info, Created: true}
		return nil
	})
	return info, created, err
}

// Delete removes name, also when its stored value is damaged: the one
// write that does not fail on damage, and the way to remove it.
func (s *DB) Delete(ctx context.Context, name string) error {
	names := []string{name}
	return s.submitOp(ctx, &op{names: names, full: names, deletes: true, fn: func(t *tx) error {
		r := t.row(name)
		if r.st == nil && r.damage == nil {
			return notFound(name)
		}
		r.st, r.damage, r.changed = nil, nil, true
		return nil
	}})
}

// guessKind is the kind name's input is prepared for before its row is
// locked: the kind this node last saw, else the stored one, else (for a
// missing sketch with create) the one a create would give. A missing
// sketch without create is NotFound before the body is read, as on every
// backend.
func (s *DB) guessKind(ctx context.Context, name string, in sketch.Input, create bool) (*sketch.Kind, error) {
	if k, ok := s.kinds.Load(name); ok {
		return k.(known).kind, nil
	}
	var typ string
	err := s.pool.QueryRow(ctx, "SELECT kind FROM sketchd_sketches WHERE name = $1", name).Scan(&typ)
	switch {
	case errors.Is(err, pgx.ErrNoRows) && create:
		return sketch.Lookup(in.Type())
	case errors.Is(err, pgx.ErrNoRows):
		return nil, notFound(name)
	case err != nil:
		return nil, s.classify(ctx, err, "read")
	}
	k, err := sketch.Lookup(sketch.Type(typ))
	if err != nil {
		return nil, s.report(damagedSketch(name, err), "write")
	}
	s.kinds.Store(name, known{kind: k})
	return k, nil
}

// Add adds in's ids to name in the form name's kind takes them, creating
// it with the defaults of in.Type() if it is missing and create is set.
// The input is parsed before the write is queued, for the kind the sketch
// is expected to have; the committer checks that under the row's lock.
func (s *DB) Add(ctx context.Context, name string, in sketch.Input, create bool) (sketch.Added, error) {
	if err := ctx.Err(); err != nil {
		return sketch.Added{}, err
	}
	kind, err := s.guessKind(ctx, name, in, create)
	if err != nil {
		return sketch.Added{}, err
	}
	b, err := sketch.PrepareFor(kind, in)
	if err != nil {
		return sketch.Added{}, err
	}
	pre := s.preDelta(name, kind, b)
	var added sketch.Added
	err = s.submit(ctx, []string{name}, nil, func(t *tx) error {
		r := t.row(name)
		st := r.st
		k, bb, pd := kind, b, pre
		if st == nil {
			if !create {
				return notFound(name)
			}
			want, err := sketch.Lookup(in.Type())
			if err != nil {
				return err
			}
			k = want
			if st, err = newState(sketch.Spec{Params: k.Default()}, t.now); err != nil {
				return err
			}
		} else {
			k = st.sk.Kind()
		}
		if k != kind {
			// The sketch was deleted or created as another kind since the
			// look: parse the input again, for the kind it has now.
			var err error
			if bb, err = sketch.PrepareFor(k, in); err != nil {
				return err
			}
			pd = nil
		}
		if err := st.sk.Check(bb); err != nil {
			return err
		}
		if r.st == nil {
			t.put(r, st)
		}
		added = sketch.Added{Type: k.Type, Accepted: bb.Len()}
		t.res.Added = added
		if pd != nil && r.delta && pd.Params() == st.sk.Params() {
			return t.merge(r, pd, bb.Len())
		}
		if err := t.add(r, bb); err != nil {
			return err
		}
		// A run of the transaction again (a retry) applies bb again to
		// the state it reads then, so this is the committed run's answer;
		// the answer sealed with an idempotency key says it too.
		added.Fresh = sketch.FreshOf(k, bb)
		t.res.Added = added
		return nil
	})
	if err != nil {
		return sketch.Added{}, err
	}
	return added, nil
}

// AddEvents adds every event's id to each of its sketches (count 1) and
// to the buckets its stamp falls in of each of its series, in one
// transaction: all of them or, on any error, none. With create, missing
// sketches are created as default HLLs. It returns how many ids went to
// sketches (or series) of each kind. Events that name no series go
// through the committer; others run in a transaction of their own that
// locks sketches, then series (series.go).
func (s *DB) AddEvents(ctx context.Context, events []sketch.Event, create bool) (map[sketch.Type]int, error) {
	withSeries := slices.ContainsFunc(events, func(ev sketch.Event) bool { return len(ev.SeriesNames()) > 0 })
	if withSeries {
		var err error
		for range 5 {
			var counts map[sketch.Type]int
			counts, err = s.addEventsWithSeries(ctx, events, create)
			if !errors.Is(err, errSeriesChanged) && !errors.Is(err, errRetry) {
				return counts, err
			}
		}
		return nil, s.classifyWrite(err)
	}
	names := sketch.SketchNames(events)
	slices.Sort(names)
	var counts map[sketch.Type]int
	err := s.submit(ctx, names, nil, func(t *tx) error {
		counts = map[sketch.Type]int{}
		t.res.Counts = counts
		return addEventIDs(t, names, events, create, counts)
	})
	if err != nil {
		return nil, err
	}
	return counts, nil
}

// addEventIDs adds every event's id to each of its sketches, names (the
// sketches named, sorted) being t's locked rows, and counts the ids per
// kind. Nothing changes unless every sketch accepts its ids.
func addEventIDs(t *tx, names []string, events []sketch.Event, create bool, counts map[sketch.Type]int) error {
	rows := make([]*row, len(names))
	for j, n := range names {
		rows[j] = t.row(n)
	}
	sketchesOf := sketch.ListIndex(func(n string) int { j, _ := slices.BinarySearch(names, n); return j })
	if !create {
		for i := range events {
			for _, j := range sketchesOf(events[i].Sketches) {
				if rows[j].st == nil {
					return sketch.Errorf(sketch.NotFound, "events[%d]: sketch %q does not exist", i, names[j])
				}
			}
		}
	}
	targets := func(i int, fn func(j int)) {
		for _, j := range sketchesOf(events[i].Sketches) {
			fn(j)
		}
	}
	ids := sketch.IDsByTarget(events, len(names), targets)
	sts := make([]*state, len(names))
	batches := make([]sketch.Batch, len(names))
	for j, r := range rows {
		if sts[j] = r.st; sts[j] == nil {
			var err error
			if sts[j], err = newState(sketch.DefaultHLL(), t.now); err != nil {
				return err
			}
		}
		b, err := sts[j].sk.Kind().Prepare(sketch.IDs(ids[j]))
		if err == nil {
			err = sts[j].sk.Check(b)
		}
		if err != nil {
			return sketch.EventError(sts[j].sk, events, targets, j, ids[j], err)
		}
		batches[j] = b
	}
	for j, r := range rows {
		if r.st == nil {
			t.put(r, sts[j])
		}
		if err := t.add(r, batches[j]); err != nil {
			return err // unreachable: checked above
		}
		counts[sts[j].sk.Kind().Type] += batches[j].Len()
	}
	return nil
}

// Put creates name as sk, or replaces its state with sk keeping its
// creation time and metric flag. A sketch of another kind is a Conflict.
func (s *DB) Put(ctx context.Context, name string, sk sketch.Sketch) (info sketch.Info, created bool, err error) {
	names := []string{name}
	err = s.submit(ctx, names, names, func(t *tx) error {
		r := t.row(name)
		created = r.st == nil
		if err := t.putSketch(name, sk.Clone()); err != nil {
			return err
		}
		info = r.st.info(name)
		t.res = idem.Result{Info: info, Created: created}
		return nil
	})
	return info, created, err
}

// Merge unions sk into name, keeping name's parameters (see
// sketch.Sketch.Merge).
func (s *DB) Merge(ctx context.Context, name string, sk sketch.Sketch) (sketch.Info, error) {
	return s.Transform(ctx, name, name, func(cur sketch.Sketch) (sketch.Sketch, error) {
		return sketch.MergedInto(name, cur, sk)
	})
}

// Transform stores fn of src's sketch as dst (which may be src itself),
// atomically: both rows are locked while fn runs. A missing dst is
// created; an existing one keeps its creation time and metric flag and
// must be of the result's kind.
func (s *DB) Transform(ctx context.Context, src, dst string, fn func(sketch.Sketch) (sketch.Sketch, error)) (info sketch.Info, err error) {
	names := sortedUnique([]string{src, dst})
	err = s.submit(ctx, names, names, func(t *tx) error {
		st := t.row(src).st
		if st == nil {
			return notFound(src)
		}
		out, err := fn(st.sk)
		if err != nil {
			return err
		}
		if err := t.putSketch(dst, out); err != nil {
			return err
		}
		info = t.row(dst).st.info(dst)
		t.res.Info = info
		return nil
	})
	return info, err
}

// Union returns the union of the sketches names, all of one kind (see
// sketch.Kind.Union for mixed parameters). Unless into is "", the union
// is also stored as into, in the transaction that locks the operands.
func (s *DB) Union(ctx context.Context, names []string, into string) (sketch.Sketch, error) {
	if into == "" {
		var out sketch.Sketch
		err := s.view(ctx, names, func(sts []*state) error {
			var err error
			out, err = unionStates(names, sts)
			return err
		})
		return out, err
	}
	all := sortedUnique(append(slices.Clone(names), into))
	var out sketch.Sketch
	err := s.submit(ctx, all, all, func(t *tx) error {
		sts := make([]*state, len(names))
		for i, n := range names {
			if sts[i] = t.row(n).st; sts[i] == nil {
				return notFound(n)
			}
		}
		var err error
		if out, err = unionStates(names, sts); err != nil {
			return err
		}
		t.res.Sketch = out
		return t.putSketch(into, out.Clone())
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func unionStates(names []string, sts []*state) (sketch.Sketch, error) {
	sks := make([]sketch.Sketch, len(sts))
	for i, st := range sts {
		sks[i] = st.sk
	}
	if err := sketch.SameKind(names, sks); err != nil {
		return nil, err
	}
	return sks[0].Kind().Union(sks)
}

// putSketch stores sk as name within a write, keeping an existing
// sketch's creation time and metric flag.
func (t *tx) putSketch(name string, sk sketch.Sketch) error {
	r := t.row(name)
	st := &state{sk: sk, created: t.now, updated: t.now}
	if r.st != nil {
		if err := sketch.NeedKind(name, r.st.sk, sk.Kind().Type); err != nil {
			return err
		}
		st.created, st.metric = r.st.created, r.st.metric
	}
	t.put(r, st)
	return nil
}

func sortedUnique(names []string) []string {
	names = slices.Clone(names)
	slices.Sort(names)
	return slices.Compact(names)
}

// SetExpiry makes x name's expiry (the zero Expiry: never) and returns
// its new description. It is a write: expire_after counts from it.
func (s *DB) SetExpiry(ctx context.Context, name string, x sketch.Expiry) (info sketch.Info, err error) {
	if err := x.Validate(s.opts.Now()); err != nil {
		return sketch.Info{}, err
	}
	names := []string{name}
	err = s.submit(ctx, names, names, func(t *tx) error {
		r := t.row(name)
		if r.st == nil {
			return notFound(name)
		}
		r.st.expiry, r.st.updated = x, t.now
		r.changed = true
		info = r.st.info(name)
		t.res = idem.Result{Info: info}
		return nil
	})
	return info, err
}

// expiredSQL finds up to $2 sketches expired at $1 (on Citus, on every
// shard); deleteExpiredSQL deletes one of them if it is still expired
// once its row is locked (an add may have moved its last write since).
// A page at a time, so that no statement holds the locks of millions of
// rows.
const (
	expiredSQL       = `SELECT name FROM sketchd_sketches WHERE expire_at <= $1 OR $1 - updated_at >= expire_after ORDER BY name LIMIT $2`
	deleteExpiredSQL = `DELETE FROM sketchd_sketches WHERE name = $1 AND (expire_at <= $2 OR $2 - updated_at >= expire_after)`
)

// expiryPage is how many sketches ExpireSketches deletes per round trip.
const expiryPage = 500

// ExpireSketches removes every sketch expired at now and says how many.
func (s *DB) ExpireSketches(ctx context.Context, now time.Time) (int, error) {
	now = now.UTC()
	removed := 0
	for {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		rows, err := s.pool.Query(ctx, expiredSQL, now, expiryPage)
		if err != nil {
			return removed, s.classify(ctx, err, "expire")
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return removed, s.classify(ctx, err, "expire")
		}
		if len(names) == 0 {
			return removed, nil
		}
		var b pgx.Batch
		for _, n := range names {
			b.Queue(deleteExpiredSQL, n, now)
		}
		res := s.pool.SendBatch(ctx, &b)
		for range names {
			tag, err := res.Exec()
			if err != nil {
				res.Close()
				return removed, s.classify(ctx, err, "expire")
			}
			// 0 rows: written meanwhile, so no longer expired at now
			// (and not found again by the next page).
			removed += int(tag.RowsAffected())
		}
		if err := res.Close(); err != nil {
			return removed, s.classify(ctx, err, "expire")
		}
		for _, n := range names {
			s.kinds.Delete(n)
		}
		if len(names) < expiryPage {
			return removed, nil
		}
	}
}
