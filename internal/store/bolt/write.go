package bolt

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
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

// addHashes adds hs to e's HLL and logs those that changed it, or the
// whole new state when that is smaller (a fresh sketch taking a big batch
// changes on almost every id: 8 bytes each, against 10 KiB for a whole
// log2m=14 sketch), so no record outgrows the sketch it describes.
func (t *tx) addHashes(e *entry, hs []uint64) {
	changed := e.st.hll.AddHashes(hs, nil)
	if len(changed) == 0 {
		return
	}
	e.st.updated = t.now
	if 8*len(changed) > e.st.hll.SizeBytes()+recordHeaderLen {
		t.put(e, e.st)
		return
	}
	t.touch(e)
	t.nops++
	t.body = appendAddHashes(t.body, e.name, t.now, changed)
}

// addItems adds items to e's CMS, all or none.
func (t *tx) addItems(e *entry, items []cms.Item) error {
	if err := e.st.cms.AddBatch(items); err != nil {
		return cmsError(err)
	}
	e.st.updated = t.now
	t.touch(e)
	t.nops++
	t.body = appendAddItems(t.body, e.name, t.now, items)
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
// changed.
func (s *DB) update(ctx context.Context, names []string, fn func(t *tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.gate.RLock()
	defer s.gate.RUnlock()
	if s.closing.Load() {
		return ErrClosed
	}
	if err := s.wal.err(); err != nil {
		return sketch.Wrap(sketch.Unavailable, err, "the write-ahead log failed; writes are refused until sketchd restarts")
	}
	if s.dirtyBytes.Load() > 2*s.opts.CacheBytes {
		s.kickCheckpoint()
		return sketch.Errorf(sketch.Unavailable, "changed sketches fill the cache; retry once the running checkpoint completes")
	}
	names = sortedUnique(names)
	es, err := s.acquireAll(names)
	if err != nil {
		return err
	}
	defer s.releaseAll(es)

	b, err := s.apply(es, fn)
	if err != nil {
		return err
	}
	if b == nil {
		// Nothing changed, perhaps because records still in flight already
		// hold these ids: wait for them.
		b = s.wal.barrier()
	}
	if err := b.wait(); err != nil {
		return sketch.Wrap(sketch.Internal, err, "the write could not be made durable")
	}
	if s.dirtyBytes.Load() > s.opts.CacheBytes {
		s.kickCheckpoint()
	}
	return nil
}

// apply runs fn under the locks and appends its record.
func (s *DB) apply(es []*entry, fn func(t *tx) error) (*batch, error) {
	s.cp.RLock()
	defer s.cp.RUnlock()
	t := &tx{s: s, es: es, before: make([]summary, len(es)), touched: make([]bool, len(es)), now: s.opts.Now().UTC()}
	for i, e := range es {
		e.mu.Lock()
		defer e.mu.Unlock()
		t.before[i] = e.summary()
	}
	if err := fn(t); err != nil {
		return nil, err
	}
	if t.nops == 0 {
		return nil, nil
	}
	for i, e := range es {
		if t.touched[i] {
			s.changed(e, t.before[i])
		}
	}
	return s.wal.append(func(b []byte) []byte {
		b = binary.AppendUvarint(b, uint64(t.nops))
		return append(b, t.body...)
	})
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

func wrongType(name string, st *state, want sketch.Type) error {
	return sketch.Errorf(sketch.Conflict, "sketch %q is a %s sketch, not %s", name, st.typ, want)
}

func cmsError(err error) error {
	if errors.Is(err, cms.ErrOverflow) || errors.Is(err, cms.ErrIncompatible) {
		return sketch.Wrap(sketch.Conflict, err, trim(err.Error(), "cms: "))
	}
	return sketch.Wrap(sketch.Invalid, err, trim(err.Error(), "cms: "))
}

func trim(s, prefix string) string {
	if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):]
	}
	return s
}

func newState(spec sketch.Spec, now time.Time) (*state, error) {
	st := &state{typ: spec.Type, metric: spec.Metric, created: now, updated: now}
	var err error
	if spec.Type == sketch.TypeCMS {
		st.cms, err = cms.New(spec.CMS)
	} else {
		st.hll, err = hll.New(spec.HLL)
	}
	if err != nil {
		return nil, sketch.Wrap(sketch.Invalid, err, "invalid parameters")
	}
	return st, nil
}

// Create creates name with spec. If it exists with the same type and
// parameters, Create changes only its metric flag (if spec's differs) and
// reports created false; with other parameters it fails with Conflict.
func (s *DB) Create(ctx context.Context, name string, spec sketch.Spec) (info sketch.Info, created bool, err error) {
	if err := spec.Validate(); err != nil {
		return sketch.Info{}, false, err
	}
	err = s.update(ctx, []string{name}, func(t *tx) error {
		e := t.entry(name)
		if e.st != nil {
			if have := e.st.spec(); !have.SameParams(spec) {
				return sketch.Errorf(sketch.Conflict, "sketch %q exists with %s; the request asks for %s", name, have.ParamsString(), spec.ParamsString())
			}
			if e.st.metric != spec.Metric {
				t.setMetric(e, spec.Metric)
			}
			info = e.st.info(name)
			return nil
		}
		st, err := newState(spec, t.now)
		if err != nil {
			return err
		}
		t.put(e, st)
		info, created = st.info(name), true
		return nil
	})
	return info, created, err
}

// Delete removes name.
func (s *DB) Delete(ctx context.Context, name string) error {
	return s.update(ctx, []string{name}, func(t *tx) error {
		e := t.entry(name)
		if e.st == nil {
			return notFound(name)
		}
		t.delete(e)
		return nil
	})
}

// AddHashes adds already hashed ids to the HLL sketch name, creating it
// with the default parameters if it is missing and create is set.
func (s *DB) AddHashes(ctx context.Context, name string, hashes []uint64, create bool) error {
	return s.update(ctx, []string{name}, func(t *tx) error {
		e := t.entry(name)
		if e.st == nil {
			if !create {
				return notFound(name)
			}
			st, _ := newState(sketch.DefaultHLL(), t.now)
			t.put(e, st)
		}
		if e.st.typ != sketch.TypeHLL {
			return wrongType(name, e.st, sketch.TypeHLL)
		}
		t.addHashes(e, hashes)
		return nil
	})
}

// AddItems adds counted ids to the CMS sketch name, all or none.
func (s *DB) AddItems(ctx context.Context, name string, items []cms.Item) error {
	return s.update(ctx, []string{name}, func(t *tx) error {
		e, err := t.typed(name, sketch.TypeCMS)
		if err != nil {
			return err
		}
		return t.addItems(e, items)
	})
}

// typed returns the locked entry of name, which must exist and be of type
// typ.
func (t *tx) typed(name string, typ sketch.Type) (*entry, error) {
	e := t.entry(name)
	if e.st == nil {
		return nil, notFound(name)
	}
	if e.st.typ != typ {
		return nil, wrongType(name, e.st, typ)
	}
	return e, nil
}

// AddEvents adds every event's id to each of its sketches (HLL or CMS,
// count 1) in one durable record: all of them or, on any error, none.
// With create, missing sketches are created as default HLLs.
func (s *DB) AddEvents(ctx context.Context, events []sketch.Event, create bool) error {
	var names []string
	for _, ev := range events {
		names = append(names, ev.Sketches...)
	}
	return s.update(ctx, names, func(t *tx) error {
		hashes := map[*entry][]uint64{}
		items := map[*entry][]cms.Item{}
		for i, ev := range events {
			for _, name := range ev.Sketches {
				e := t.entry(name)
				switch {
				case e.st == nil && !create:
					return sketch.Errorf(sketch.NotFound, "events[%d]: sketch %q does not exist", i, name)
				case e.st == nil || e.st.typ == sketch.TypeHLL:
					hashes[e] = append(hashes[e], hashID(ev.ID))
				default:
					if err := ev.ID.Validate(); err != nil {
						return sketch.Wrap(sketch.Invalid, err, "events["+strconv.Itoa(i)+"]: "+trim(err.Error(), "cms: "))
					}
					items[e] = append(items[e], cms.Item{ID: ev.ID, Count: 1})
				}
			}
		}
		for e, its := range items {
			if err := e.st.cms.CheckAdd(uint64(len(its))); err != nil {
				return cmsError(err)
			}
		}
		// Everything is checked: apply in name order so logs are stable.
		for _, e := range t.es {
			if hs, ok := hashes[e]; ok {
				if e.st == nil {
					st, _ := newState(sketch.DefaultHLL(), t.now)
					t.put(e, st)
				}
				t.addHashes(e, hs)
			}
			if its, ok := items[e]; ok {
				if err := t.addItems(e, its); err != nil {
					return err // unreachable: checked above
				}
			}
		}
		return nil
	})
}

func hashID(id cms.ID) uint64 {
	if id.IsText() {
		return hll.HashString(id.Text())
	}
	return hll.HashInt64(id.Int())
}

// PutHLL creates name as h, or replaces its state with h keeping its
// creation time and metric flag. A CMS of that name is a Conflict.
func (s *DB) PutHLL(ctx context.Context, name string, h *hll.Sketch) (created bool, err error) {
	return s.putState(ctx, name, &state{typ: sketch.TypeHLL, hll: h})
}

// PutCMS is PutHLL for a Count-Min sketch.
func (s *DB) PutCMS(ctx context.Context, name string, c *cms.Sketch) (created bool, err error) {
	return s.putState(ctx, name, &state{typ: sketch.TypeCMS, cms: c})
}

func (s *DB) putState(ctx context.Context, name string, st *state) (created bool, err error) {
	if st.typ == sketch.TypeHLL && st.hll.Representation() == hll.Undefined {
		return false, sketch.Errorf(sketch.Invalid, "an UNDEFINED hll (the result of an undefined operation in PostgreSQL) cannot be stored")
	}
	err = s.update(ctx, []string{name}, func(t *tx) error {
		created = t.entry(name).st == nil
		return t.putTyped(name, st)
	})
	return created, err
}

// MergeHLL unions h into the HLL sketch name, keeping its parameters: h
// is folded to them, and one with fewer registers is a Conflict.
func (s *DB) MergeHLL(ctx context.Context, name string, h *hll.Sketch) error {
	return s.update(ctx, []string{name}, func(t *tx) error {
		e, err := t.typed(name, sketch.TypeHLL)
		if err != nil {
			return err
		}
		merged := e.st.hll.Clone()
		if err := merged.Union(h); err != nil {
			return sketch.Wrap(sketch.Conflict, err, "cannot union into "+strconv.Quote(name)+": "+trim(err.Error(), "hll: "))
		}
		st := *e.st
		st.hll, st.updated = merged, t.now
		t.put(e, &st)
		return nil
	})
}

// MergeCMS adds c's counts into the CMS sketch name (same width and depth).
func (s *DB) MergeCMS(ctx context.Context, name string, c *cms.Sketch) error {
	return s.update(ctx, []string{name}, func(t *tx) error {
		e, err := t.typed(name, sketch.TypeCMS)
		if err != nil {
			return err
		}
		merged := e.st.cms.Clone()
		if err := merged.Union(c); err != nil {
			return cmsError(err)
		}
		st := *e.st
		st.cms, st.updated = merged, t.now
		t.put(e, &st)
		return nil
	})
}

// Union returns the union of the sketches names, all HLL (see hll.Union:
// folded to the smallest log2m, widened to the largest regwidth) or all
// CMS (counters added; same width and depth). Unless into is "", the union
// is also stored as into, atomically with respect to writes to any of the
// sketches involved. Exactly one of the results is non-nil.
func (s *DB) Union(ctx context.Context, names []string, into string) (*hll.Sketch, *cms.Sketch, error) {
	var h *hll.Sketch
	var c *cms.Sketch
	if into == "" {
		err := s.view(ctx, names, func(sts []*state) error {
			var err error
			h, c, err = unionStates(names, sts)
			return err
		})
		return h, c, err
	}
	err := s.update(ctx, append(slices.Clone(names), into), func(t *tx) error {
		sts, err := t.states(names)
		if err != nil {
			return err
		}
		if h, c, err = unionStates(names, sts); err != nil {
			return err
		}
		if h != nil {
			return t.putHLL(into, h.Clone())
		}
		return t.putCMS(into, c.Clone())
	})
	return h, c, err
}

func unionStates(names []string, sts []*state) (*hll.Sketch, *cms.Sketch, error) {
	for i, st := range sts[1:] {
		if st.typ != sts[0].typ {
			return nil, nil, sketch.Errorf(sketch.Invalid, "cannot union %s sketch %q with %s sketch %q", sts[0].typ, names[0], st.typ, names[i+1])
		}
	}
	if sts[0].typ == sketch.TypeHLL {
		hs := make([]*hll.Sketch, len(sts))
		for i, st := range sts {
			hs[i] = st.hll
		}
		h, err := hll.Union(hs...)
		if err != nil {
			return nil, nil, sketch.Wrap(sketch.Invalid, err, trim(err.Error(), "hll: "))
		}
		return h, nil, nil
	}
	c := sts[0].cms.Clone()
	for i, st := range sts[1:] {
		if err := c.Union(st.cms); err != nil {
			return nil, nil, sketch.Wrap(sketch.Conflict, err, "cannot union "+strconv.Quote(names[0])+" with "+strconv.Quote(names[i+1])+": "+trim(err.Error(), "cms: "))
		}
	}
	return nil, c, nil
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

// FoldInto folds the HLL sketch name to log2m and regwidth (0: keep its
// own) and stores the result as into (which may be name itself),
// atomically.
func (s *DB) FoldInto(ctx context.Context, name string, log2m, regwidth int, into string) (*hll.Sketch, error) {
	var out *hll.Sketch
	err := s.update(ctx, []string{name, into}, func(t *tx) error {
		hs, err := t.hlls([]string{name})
		if err != nil {
			return err
		}
		if regwidth == 0 {
			regwidth = hs[0].Params().Regwidth
		}
		if out, err = foldHLL(hs[0], log2m, regwidth); err != nil {
			return err
		}
		return t.putHLL(into, out.Clone())
	})
	return out, err
}

func foldHLL(h *hll.Sketch, log2m, regwidth int) (*hll.Sketch, error) {
	f, err := h.Fold(log2m, regwidth)
	if err != nil {
		return nil, sketch.Wrap(sketch.Invalid, err, trim(err.Error(), "hll: "))
	}
	return f, nil
}

// hlls returns the locked HLL sketches of names (not copies).
func (t *tx) hlls(names []string) ([]*hll.Sketch, error) {
	out := make([]*hll.Sketch, len(names))
	for i, n := range names {
		e, err := t.typed(n, sketch.TypeHLL)
		if err != nil {
			return nil, err
		}
		out[i] = e.st.hll
	}
	return out, nil
}

// putHLL stores h as name within a write, keeping an existing sketch's
// creation time and metric flag.
func (t *tx) putHLL(name string, h *hll.Sketch) error {
	return t.putTyped(name, &state{typ: sketch.TypeHLL, hll: h})
}

func (t *tx) putCMS(name string, c *cms.Sketch) error {
	return t.putTyped(name, &state{typ: sketch.TypeCMS, cms: c})
}

func (t *tx) putTyped(name string, st *state) error {
	e := t.entry(name)
	st.created, st.updated = t.now, t.now
	if e.st != nil {
		if e.st.typ != st.typ {
			return wrongType(name, e.st, st.typ)
		}
		st.created, st.metric = e.st.created, e.st.metric
	}
	t.put(e, st)
	return nil
}
