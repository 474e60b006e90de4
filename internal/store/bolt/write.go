package bolt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

// tx is one write: the locked entries it may change and the log
// operations describing what it changed. Mutations go through its methods
// so that every change is logged and accounted.
type tx struct {
	s       *DB
	es      []*entry
	before  []summary
	touched []bool
	now     time.Time
	nops    int
	body    []byte
	scratch []byte
	// res is what the write returns, for its idempotency key's answer:
	// a guarded write's fn sets it.
	res idem.Result
}

func (t *tx) index(name string) int {
	i, _ := slices.BinarySearchFunc(t.es, name, func(e *entry, n string) int {
		switch {
		case e.name < n:
			return -1
		case e.name > n:
			return 1
		}
		return 0
	})
	return i
}

// entry returns the locked entry of name, one of the write's names.
func (t *tx) entry(name string) *entry { return t.es[t.index(name)] }

func (t *tx) touch(e *entry) { t.touched[t.index(e.name)] = true }

// put makes st the state of e.
func (t *tx) put(e *entry, st *state) {
	e.st = st
	t.touch(e)
	t.nops++
	t.body = appendPut(t.body, e.name, st)
}

func (t *tx) delete(e *entry) {
	e.st = nil
	t.touch(e)
	t.nops++
	t.body = appendDelete(t.body, e.name)
}

// add applies the prepared batch b to e's sketch, which must have
// accepted it (Check), and logs what changed it, or the whole new state
// when that is smaller (a fresh HLL taking a big batch changes on almost
// every id: 8 bytes each, against 10 KiB for a whole log2m=14 sketch), so
// no record outgrows the sketch it describes.
func (t *tx) add(e *entry, b sketch.Batch) error {
	delta, err := e.st.sk.Apply(b, t.scratch[:0])
	t.scratch = delta[:0]
	if err != nil {
		return err
	}
	if len(delta) == 0 && (e.st.expiry.After == 0 || b.Len() == 0) {
		return nil
	}
	// An add that changes nothing still moves the last write of a sketch
	// that expires after it: an empty delta logs the new time.
	e.st.updated = t.now
	if len(delta) > e.st.sk.SizeBytes()+recordHeaderLen {
		t.put(e, e.st)
		return nil
	}
	t.touch(e)
	t.nops++
	t.body = appendAdd(t.body, e.name, e.st.sk.Kind().Tag, t.now, delta)
	return nil
}

// putNew makes st, a sketch this write creates, the state of e with the
// prepared batch b (which it accepted: Check) applied: one put of the
// result is logged, not a put of the empty sketch and then its delta, so
// replay and the next checkpoint take the logged record as it is.
func (t *tx) putNew(e *entry, st *state, b sketch.Batch) error {
	delta, err := st.sk.Apply(b, t.scratch[:0])
	t.scratch = delta[:0]
	if err != nil {
		return err
	}
	t.put(e, st)
	return nil
}

func (t *tx) setMetric(e *entry, on bool) {
	e.st.metric = on
	t.touch(e)
	t.nops++
	t.body = appendMetric(t.body, e.name, on)
}

// update runs fn with the entries of names locked, logs what it changed
// as one record and returns once that record is durable. fn must check
// everything before changing anything: an error from fn means nothing
// changed. Under an idempotency key (idem.From(ctx)) the key is claimed
// before fn runs and logged in the same record with the answer of t.res,
// which fn sets.
func (s *DB) update(ctx context.Context, names []string, fn func(t *tx) error) error {
	return s.write(ctx, names, s.acquireAll, fn)
}

// write is update with the way entries are acquired.
func (s *DB) write(ctx context.Context, names []string, acquireAll func([]string) ([]*entry, error), fn func(t *tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.gate.RLock()
	// handedOff: the wait for the log sync, and what follows it, went to a
	// goroutine of its own (see below), which releases the gate and the
	// entries.
	handedOff := false
	defer func() {
		if !handedOff {
			s.gate.RUnlock()
		}
	}()
	if s.closing.Load() {
		return ErrClosed
	}
	if err := s.wal.err(); err != nil {
		return errLogFailed(err)
	}
	if s.dirtyBytes.Load() > 2*s.opts.CacheBytes {
		s.kickCheckpoint()
		return sketch.Errorf(sketch.Unavailable, "changed sketches fill the cache; retry once the running checkpoint completes")
	}
	if s.unsettled.Load() > 2*int64(s.opts.CheckpointSketches) {
		s.kickCheckpoint()
		return sketch.Errorf(sketch.Unavailable, "%d changed sketches wait for a checkpoint; retry once the running one completes", s.unsettled.Load())
	}
	names = sortedUnique(names)
	es, err := acquireAll(names)
	if err != nil {
		return err
	}
	b, key, err := s.apply(es, fn, idem.From(ctx))
	if err != nil {
		s.releaseAll(es)
		return err
	}
	if b == nil {
		// Nothing changed, perhaps because records still in flight already
		// hold these ids: wait for them.
		b = s.wal.barrier()
	}
	finish := func() error {
		err := b.wait()
		if key != nil {
			s.keys.settle(key, err, true)
		}
		s.releaseAll(es)
		if err != nil {
			// Memory is rebuilt without this write before the store
			// accepts reads or writes again: the client may retry it.
			return errLogFailed(err)
		}
		if s.dirtyBytes.Load() > s.opts.CacheBytes || s.dirtyN.Load() >= int64(s.opts.CheckpointSketches) {
			s.kickCheckpoint()
		}
		return nil
	}
	if b == nil || ctx.Done() == nil {
		return finish()
	}
	select {
	case <-b.done:
		return finish()
	case <-ctx.Done():
		// The request's deadline passed while its record's sync runs (a
		// disk that stalls an fsync): the request is answered now, and
		// the rest, settling its idempotency key and releasing the gate
		// and its entries, happens when the sync ends. The record holds
		// copies of everything the write needed; nothing of the request
		// is kept.
		handedOff = true
		go func() {
			defer s.gate.RUnlock()
			finish()
		}()
		return sketch.Wrap(sketch.Unavailable, ctx.Err(), "the write's log sync did not finish by the request's deadline; the write may or may not have been applied: retry it with its Idempotency-Key")
	}
}

// apply runs fn under the locks and appends its record, with g's key if
// g is set (the key's entry is returned, to settle once the record is
// durable). The entry locks come first, cp second: a writer waiting for a
// reader's entry lock holds no cp, so a checkpoint pausing writers never
// waits behind a long read.
func (s *DB) apply(es []*entry, fn func(t *tx) error, g *idem.Guard) (*batch, *keyEntry, error) {
	t := &tx{s: s, es: es, before: make([]summary, len(es)), touched: make([]bool, len(es)), now: s.opts.Now().UTC()}
	// One deferred call unlocks every entry locked: a defer in the loop
	// would be a heap record and a call each, 10,000 of them for an
	// events write that creates as many sketches.
	locked := 0
	defer func() {
		for _, e := range es[:locked] {
			e.mu.Unlock()
		}
	}()
	for i, e := range es {
		e.mu.Lock()
		locked++
		t.before[i] = e.summary()
	}
	s.cp.RLock()
	defer s.cp.RUnlock()
	// Checked under cp: once a log failure is seen by the rebuild's
	// barrier, no writer changes memory.
	if err := s.wal.err(); err != nil {
		return nil, nil, errLogFailed(err)
	}
	for _, e := range es {
		if e.snap != nil {
			e.snap.take() // the running checkpoint's copy, before this change
		}
	}
	var key *keyEntry
	if g != nil {
		var err error
		if key, err = s.keys.claim(g.ID, t.now); err != nil {
			return nil, nil, err
		}
	}
	// An expired sketch is gone for the write, as if deleted: fn sees no
	// state, and unless fn puts a new one the deletion is logged with its
	// changes (nothing is changed or logged if fn fails).
	var hidden []*state
	for i, e := range es {
		if e.st != nil && e.st.expired(t.now) {
			if hidden == nil {
				hidden = make([]*state, len(es))
			}
			hidden[i], e.st = e.st, nil
		}
	}
	if err := fn(t); err != nil {
		for i, st := range hidden {
			if st != nil {
				es[i].st = st
			}
		}
		if key != nil {
			s.keys.settle(key, err, false)
		}
		return nil, nil, err
	}
	for i, st := range hidden {
		if st != nil && !t.touched[i] {
			t.delete(es[i])
		}
	}
	if key != nil {
		answer, err := g.Seal(t.res)
		if err != nil {
			s.keys.settle(key, err, false)
			if t.nops > 0 {
				// fn changed memory already: fail the log, so the store
				// rebuilds memory from what is durable.
				s.wal.fail(err)
			}
			return nil, nil, err
		}
		rec := idem.Record{Fingerprint: g.Fingerprint, Answer: answer, Created: t.now}
		s.keys.seal(key, rec)
		t.nops++
		t.body = appendKey(t.body, g.ID, rec)
	}
	if t.nops == 0 {
		return nil, nil, nil
	}
	for i, e := range es {
		if t.touched[i] {
			s.changed(e, t.before[i])
		}
	}
	b, err := s.wal.append(func(b []byte) []byte {
		b = binary.AppendUvarint(b, uint64(t.nops))
		return append(b, t.body...)
	})
	if err != nil {
		// The log failed after the check above (the flusher's sync
		// failing meanwhile): the same answer as every write during
		// the failure.
		if key != nil {
			s.keys.settle(key, err, true)
		}
		return nil, nil, errLogFailed(err)
	}
	return b, key, nil
}

func (s *DB) kickCheckpoint() {
	select {
	case s.cpKick <- struct{}{}:
	default:
	}
}

func sortedUnique(names []string) []string {
	names = slices.Clone(names)
	slices.Sort(names)
	return slices.Compact(names)
}

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

// Create creates name with spec. If it exists with the same kind and
// parameters, Create changes only its metric flag (if spec's differs) and
// reports created false; with other parameters it fails with Conflict.
func (s *DB) Create(ctx context.Context, name string, spec sketch.Spec) (info sketch.Info, created bool, err error) {
	if err := spec.Validate(); err != nil {
		return sketch.Info{}, false, err
	}
	if err := spec.Expiry.Validate(s.opts.Now()); err != nil {
		return sketch.Info{}, false, err
	}
	err = s.update(ctx, []string{name}, func(t *tx) error {
		e := t.entry(name)
		if e.st != nil {
			if have := e.st.spec(); !have.SameParams(spec) {
				return sketch.Errorf(sketch.Conflict, "sketch %q exists with %s; the request asks for %s", name, have.Params, spec.Params)
			}
			if e.st.expiry != spec.Expiry {
				st := e.st.clone()
				st.metric, st.expiry, st.updated = spec.Metric, spec.Expiry, t.now
				t.put(e, st)
			} else if e.st.metric != spec.Metric {
				t.setMetric(e, spec.Metric)
			}
			info = e.st.info(name)
			t.res = idem.Result{Info: info}
			return nil
		}
		st, err := newState(spec, t.now)
		if err != nil {
			return err
		}
		t.put(e, st)
		info, created = st.info(name), true
		t.res = idem.Result{Info: info, Created: true}
		return nil
	})
	return info, created, err
}

// Delete removes name, also when its stored record cannot be decoded.
func (s *DB) Delete(ctx context.Context, name string) error {
	err := s.update(ctx, []string{name}, func(t *tx) error {
		e := t.entry(name)
		if e.st == nil {
			return notFound(name)
		}
		t.delete(e)
		return nil
	})
	if ue := (*unreadableError)(nil); errors.As(err, &ue) {
		return s.deleteUnreadable(ctx, name)
	}
	return err
}

// errKindChanged makes Add prepare its input again: the sketch was deleted
// and created as another kind between the look and the write.
var errKindChanged = errors.New("the sketch changed kind")

// Add adds in's ids to name in the form name's kind takes them, creating
// it with the defaults of in.Type() if it is missing and create is set.
// The input is parsed before any lock is taken.
func (s *DB) Add(ctx context.Context, name string, in sketch.Input, create bool) (sketch.Added, error) {
	for {
		kind, err := s.kindOf(name)
		switch {
		case sketch.KindOf(err) == sketch.NotFound && create:
			if kind, err = sketch.Lookup(in.Type()); err != nil {
				return sketch.Added{}, err
			}
		case err != nil:
			return sketch.Added{}, err
		}
		b, err := sketch.PrepareFor(kind, in)
		if err != nil {
			return sketch.Added{}, err
		}
		err = s.update(ctx, []string{name}, func(t *tx) error {
			e := t.entry(name)
			st := e.st
			if st == nil {
				if !create {
					return notFound(name)
				}
				if st, err = newState(sketch.Spec{Params: kind.Default()}, t.now); err != nil {
					return err
				}
			}
			if st.sk.Kind() != kind {
				return errKindChanged
			}
			if err := st.sk.Check(b); err != nil {
				return err
			}
			var err error
			if e.st == nil {
				err = t.putNew(e, st, b)
			} else {
				err = t.add(e, b)
			}
			if err != nil {
				return err
			}
			// The answer sealed with an idempotency key says which ids
			// were new too.
			t.res.Added = sketch.Added{Type: kind.Type, Accepted: b.Len(), Fresh: sketch.FreshOf(kind, b)}
			return nil
		})
		if err == errKindChanged {
			continue
		}
		if err != nil {
			return sketch.Added{}, err
		}
		return sketch.Added{Type: kind.Type, Accepted: b.Len(), Fresh: sketch.FreshOf(kind, b)}, nil
	}
}

// AddEvents adds every event's id to each of its sketches (count 1) and
// to the buckets its stamp falls in of each of its series, in one durable
// record: all of them or, on any error, none. With create, missing
// sketches are created as default HLLs. It returns how many ids went to
// sketches (or series) of each kind.
func (s *DB) AddEvents(ctx context.Context, events []sketch.Event, create bool) (map[sketch.Type]int, error) {
	for {
		counts, err := s.addEvents(ctx, events, create)
		if err != errSeriesChanged {
			return counts, err
		}
	}
}

func (s *DB) addEvents(ctx context.Context, events []sketch.Event, create bool) (map[sketch.Type]int, error) {
	// The series named, their definitions and each event's buckets: an
	// event whose buckets are those of the event before shares its list.
	specs := map[string]*series.Spec{}
	bucketSeries := map[string]string{} // bucket key -> series name
	var buckets [][]string
	type bucketOf struct {
		series string
		key    series.Key
	}
	var these []bucketOf
	var last sketch.Repeated[bucketOf, []string]
	now := s.opts.Now()
	names := sketch.SketchNames(events)
	keysOf := func() []string {
		keys := make([]string, len(these))
		for i, b := range these {
			keys[i] = bucketKey(b.series, b.key)
			if _, ok := bucketSeries[keys[i]]; !ok {
				bucketSeries[keys[i]] = b.series
				names = append(names, keys[i])
			}
		}
		return keys
	}
	for i, ev := range events {
		these = these[:0]
		for _, sn := range ev.SeriesNames() {
			spec, ok := specs[sn]
			if !ok {
				var err error
				if spec, _, err = s.series(sn); err != nil {
					return nil, sketch.Prefixed(err, fmt.Sprintf("events[%d]: ", i))
				}
				specs[sn] = spec
				names = append(names, seriesKey(sn))
			}
			ts := ev.Stamp()
			if ts.IsZero() {
				ts = now
			}
			keys, err := spec.Buckets(ts, now)
			if err != nil {
				return nil, sketch.Prefixed(err, fmt.Sprintf("events[%d]: series %q: ", i, sn))
			}
			for _, k := range keys {
				these = append(these, bucketOf{sn, k})
			}
		}
		if len(these) == 0 {
			continue
		}
		if buckets == nil {
			buckets = make([][]string, len(events))
		}
		buckets[i] = last.Of(these, keysOf)
	}
	counts := map[sketch.Type]int{}
	err := s.update(ctx, names, func(t *tx) error {
		for sn, spec := range specs {
			if st := t.entry(seriesKey(sn)).st; st == nil || st.def != spec {
				return errSeriesChanged
			}
		}
		sketchesOf, bucketsOf := sketch.ListIndex(t.index), sketch.ListIndex(t.index)
		targets := func(i int, fn func(j int)) {
			for _, j := range sketchesOf(events[i].Sketches) {
				fn(j)
			}
			if buckets != nil {
				for _, j := range bucketsOf(buckets[i]) {
					fn(j)
				}
			}
		}
		if !create {
			for i := range events {
				for _, j := range sketchesOf(events[i].Sketches) {
					if t.es[j].st == nil {
						return sketch.Errorf(sketch.NotFound, "events[%d]: sketch %q does not exist", i, t.es[j].name)
					}
				}
			}
		}
		ids := sketch.IDsByTarget(events, len(t.es), targets)
		sts := make([]*state, len(t.es))
		batches := make([]sketch.Batch, len(t.es))
		for j, e := range t.es {
			if ids[j] == nil {
				continue // a series definition
			}
			if sts[j] = e.st; sts[j] == nil {
				spec := sketch.DefaultHLL()
				if sn, ok := bucketSeries[e.name]; ok {
					spec = sketch.Spec{Params: specs[sn].Params}
				}
				var err error
				if sts[j], err = newState(spec, t.now); err != nil {
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
		// Everything is checked: apply in key order so logs are stable.
		for j, e := range t.es {
			if batches[j] == nil {
				continue
			}
			var err error
			if e.st == nil {
				err = t.putNew(e, sts[j], batches[j])
			} else {
				err = t.add(e, batches[j])
			}
			if err != nil {
				return err // unreachable: checked above
			}
			if isSketchName(e.name) {
				counts[sts[j].typ()] += batches[j].Len()
			}
		}
		// A series counts its events once, not once per level.
		for _, ev := range events {
			for _, sn := range ev.SeriesNames() {
				counts[specs[sn].Params.Kind().Type]++
			}
		}
		t.res.Counts = counts
		return nil
	})
	if err != nil {
		return nil, err
	}
	return counts, nil
}

// Put creates name as sk, or replaces its state with sk keeping its
// creation time and metric flag. A sketch of another kind is a Conflict.
func (s *DB) Put(ctx context.Context, name string, sk sketch.Sketch) (info sketch.Info, created bool, err error) {
	err = s.update(ctx, []string{name}, func(t *tx) error {
		created = t.entry(name).st == nil
		if err := t.putSketch(name, sk); err != nil {
			return err
		}
		info = t.entry(name).st.info(name)
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
// atomically: no write to either lands in between. A missing dst is
// created; an existing one keeps its creation time and metric flag and
// must be of the result's kind.
func (s *DB) Transform(ctx context.Context, src, dst string, fn func(sketch.Sketch) (sketch.Sketch, error)) (info sketch.Info, err error) {
	err = s.update(ctx, []string{src, dst}, func(t *tx) error {
		st := t.entry(src).st
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
		info = t.entry(dst).st.info(dst)
		t.res.Info = info
		return nil
	})
	return info, err
}

// Union returns the union of the sketches names, all of one kind (see
// sketch.Kind.Union for mixed parameters). Unless into is "", the union
// is also stored as into, atomically with respect to writes to any of the
// sketches involved.
func (s *DB) Union(ctx context.Context, names []string, into string) (sketch.Sketch, error) {
	var out sketch.Sketch
	if into == "" {
		err := s.view(ctx, names, func(sts []*state) error {
			var err error
			out, err = unionStates(names, sts)
			return err
		})
		return out, err
	}
	err := s.update(ctx, append(slices.Clone(names), into), func(t *tx) error {
		sts, err := t.states(names)
		if err != nil {
			return err
		}
		if out, err = unionStates(names, sts); err != nil {
			return err
		}
		t.res.Sketch = out
		return t.putSketch(into, out.Clone())
	})
	return out, err
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

// states returns the locked states of names, NotFound for a missing one.
func (t *tx) states(names []string) ([]*state, error) {
	out := make([]*state, len(names))
	for i, n := range names {
		if out[i] = t.entry(n).st; out[i] == nil {
			return nil, notFound(n)
		}
	}
	return out, nil
}

// putSketch stores sk as name within a write, keeping an existing
// sketch's creation time and metric flag.
func (t *tx) putSketch(name string, sk sketch.Sketch) error {
	e := t.entry(name)
	st := &state{sk: sk, created: t.now, updated: t.now}
	if e.st != nil {
		if err := sketch.NeedKind(name, e.st.sk, sk.Kind().Type); err != nil {
			return err
		}
		st.created, st.metric = e.st.created, e.st.metric
	}
	t.put(e, st)
	return nil
}
