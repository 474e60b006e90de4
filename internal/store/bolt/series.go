package bolt

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/migrations"
)

// Series live in the same cache, log and checkpoints as sketches, as
// entries whose keys start with a byte no sketch name can (names start
// with a letter or digit):
//
//	"\x01" name                              a series' definition
//	"\x02" name "\x00" level start(8, BE s)  one bucket: a sketch
//
// In bbolt, definitions are in bucket "series" under the name and buckets
// in "series_buckets" under the key without its first byte, so one
// series' buckets of one level are a range in time order.
const (
	prefixSeries = '\x01'
	prefixBucket = '\x02'
)

var (
	bucketSeries  = []byte(migrations.BucketSeries)
	bucketBuckets = []byte(migrations.BucketBuckets)
)

func seriesKey(name string) string { return string(prefixSeries) + name }

func bucketKey(name string, k series.Key) string {
	b := make([]byte, 0, len(name)+11)
	b = append(b, prefixBucket)
	b = append(b, name...)
	b = append(b, 0, byte(k.Level))
	b = binary.BigEndian.AppendUint64(b, uint64(k.Start.Unix()))
	return string(b)
}

// bucketPrefix is the key prefix of all of name's buckets.
func bucketPrefix(name string) string { return string(prefixBucket) + name + "\x00" }

// parseBucketKey reads a bucket key's level and start (in UTC).
func parseBucketKey(key string) (series.Level, time.Time, error) {
	i := strings.IndexByte(key, 0)
	if key == "" || key[0] != prefixBucket || i < 0 || len(key)-i != 10 {
		return 0, time.Time{}, fmt.Errorf("bucket key %q is malformed", key)
	}
	l := series.Level(key[i+1])
	if !l.Valid() {
		return 0, time.Time{}, fmt.Errorf("bucket key %q: level %d", key, l)
	}
	return l, time.Unix(int64(binary.BigEndian.Uint64([]byte(key[i+2:]))), 0).UTC(), nil
}

// isSketchName reports whether an entry key names a plain sketch.
func isSketchName(key string) bool {
	return key != "" && key[0] != prefixSeries && key[0] != prefixBucket
}

// location returns the bbolt bucket and key an entry is stored under.
func location(key string) (bucket, k []byte) {
	switch {
	case key != "" && key[0] == prefixSeries:
		return bucketSeries, []byte(key[1:])
	case key != "" && key[0] == prefixBucket:
		return bucketBuckets, []byte(key[1:])
	}
	return bucketSketches, []byte(key)
}

// appendDef appends a series definition's body: the empty sketch of its
// parameters (which carries them), the zone, the levels and the late
// limit, each length-prefixed.
func appendDef(b []byte, spec *series.Spec) []byte {
	empty, err := spec.Params.New()
	if err != nil {
		panic("bolt: a validated series spec has parameters New refuses: " + err.Error())
	}
	b = appendBytes(b, empty.AppendBinary(nil))
	b = appendBytes(b, []byte(spec.TZ))
	b = binary.AppendUvarint(b, uint64(len(spec.Levels)))
	for _, l := range spec.Levels {
		b = append(b, byte(l.Level))
		b = appendBytes(b, []byte(l.Retention.String()))
	}
	return appendBytes(b, []byte(spec.LateLimit.String()))
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// decodeDef reads what appendDef wrote, with kind the record's kind, and
// validates it as a create would.
func decodeDef(kind *sketch.Kind, b []byte) (*series.Spec, error) {
	r := &opReader{b: b}
	field := func() ([]byte, error) {
		n, err := r.uvarint()
		if err != nil {
			return nil, err
		}
		return r.bytes(n)
	}
	empty, err := field()
	if err != nil {
		return nil, err
	}
	sk, err := kind.Decode(empty)
	if err != nil {
		return nil, err
	}
	spec := &series.Spec{Params: sk.Params()}
	tz, err := field()
	if err != nil {
		return nil, err
	}
	spec.TZ = string(tz)
	n, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	if n > 8 {
		return nil, fmt.Errorf("series definition with %d levels", n)
	}
	for range n {
		l, err := r.bytes(1)
		if err != nil {
			return nil, err
		}
		ret, err := field()
		if err != nil {
			return nil, err
		}
		d, err := series.ParseDuration(string(ret))
		if err != nil {
			return nil, err
		}
		spec.Levels = append(spec.Levels, series.LevelSpec{Level: series.Level(l[0]), Retention: d})
	}
	late, err := field()
	if err != nil {
		return nil, err
	}
	if spec.LateLimit, err = series.ParseDuration(string(late)); err != nil {
		return nil, err
	}
	if r.off != len(b) {
		return nil, fmt.Errorf("%d bytes after the series definition", len(b)-r.off)
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return spec, nil
}

func seriesNotFound(name string) error {
	return sketch.Errorf(sketch.NotFound, "series %q does not exist", name)
}

// CreateSeries creates the series name with spec; the same spec again
// changes nothing, another is a Conflict. Buckets left by a deletion that
// a crash interrupted are removed in the same write.
func (s *DB) CreateSeries(ctx context.Context, name string, spec *series.Spec) (info series.Info, created bool, err error) {
	if err := spec.Validate(); err != nil {
		return series.Info{}, false, err
	}
	// No series of that name, so no add can create buckets meanwhile.
	stale, err := s.bucketKeys(name)
	if err != nil {
		return series.Info{}, false, err
	}
	key := seriesKey(name)
	err = s.update(ctx, append([]string{key}, stale...), func(t *tx) error {
		e := t.entry(key)
		if e.st != nil {
			if !e.st.def.Same(spec) {
				return sketch.Errorf(sketch.Conflict, "series %q exists with %s; the request asks for %s", name, e.st.def, spec)
			}
			// The buckets listed before the locks, as they are now.
			sts := make([]*state, len(stale))
			for i, k := range stale {
				sts[i] = t.entry(k).st
			}
			info, err = seriesInfo(name, e.st, stale, sts)
			t.res = idem.Result{Series: info}
			return err
		}
		for _, k := range stale {
			if be := t.entry(k); be.st != nil {
				t.delete(be)
			}
		}
		st := &state{def: spec, created: t.now, updated: t.now}
		t.put(e, st)
		created = true
		info, err = seriesInfo(name, st, nil, nil)
		t.res = idem.Result{Series: info, Created: true}
		return err
	})
	if err != nil {
		return series.Info{}, false, err
	}
	return info, created, nil
}

// bucketKeys lists the keys of name's buckets that exist: those in bbolt,
// with the changes since the last committed checkpoint laid over them
// (read first, so that a checkpoint moving an entry into bbolt meanwhile
// cannot hide it).
func (s *DB) bucketKeys(name string) ([]string, error) {
	prefix := bucketPrefix(name)
	keys := map[string]bool{}
	for _, e := range s.dirtyBucketsOf(name) {
		e.mu.Lock()
		keys[e.name] = e.exists()
		e.mu.Unlock()
	}
	err := s.bdb.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketBuckets).Cursor()
		p := []byte(prefix[1:])
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
			if key := string(prefixBucket) + string(k); !hasKey(keys, key) {
				keys[key] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(keys))
	for k, ok := range keys {
		if ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out, nil
}

func hasKey(m map[string]bool, k string) bool {
	_, ok := m[k]
	return ok
}

// bucketsIn lists the keys of name's buckets inside runs that may exist,
// in the order of the runs and by start within each: bbolt's keys in each
// run's range (a seek and a step per key found, whatever the span) and
// the entries changed since the last committed checkpoint, read first as
// bucketKeys does. A key may name a bucket deleted since; its state says.
func (s *DB) bucketsIn(name string, runs []series.Run) ([]string, error) {
	type found struct {
		run   int
		start int64
		key   string
	}
	var keys []found
	for _, e := range s.dirtyBucketsOf(name) {
		e.mu.Lock()
		exists := e.exists()
		e.mu.Unlock()
		if !exists {
			continue
		}
		l, start, err := parseBucketKey(e.name)
		if err != nil {
			return nil, err
		}
		for i, r := range runs {
			if r.Count > 0 && r.Contains(l, start) {
				keys = append(keys, found{i, start.Unix(), e.name})
			}
		}
	}
	err := s.bdb.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketBuckets).Cursor()
		for i, r := range runs {
			if r.Count == 0 {
				continue
			}
			p := []byte(bucketPrefix(name)[1:] + string([]byte{byte(r.Level)}))
			for _, span := range unixSpans(r.First.Unix(), r.Last.Unix()) {
				for k, _ := c.Seek(binary.BigEndian.AppendUint64(slices.Clip(p), span[0])); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
					if len(k) != len(p)+8 {
						continue // not a bucket key of this level
					}
					start := binary.BigEndian.Uint64(k[len(p):])
					if start > span[1] {
						break
					}
					keys = append(keys, found{i, int64(start), string(prefixBucket) + string(k)})
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(keys, func(a, b found) int {
		return cmp.Or(cmp.Compare(a.run, b.run), cmp.Compare(a.start, b.start), strings.Compare(a.key, b.key))
	})
	out := make([]string, 0, len(keys))
	for i, k := range keys {
		if i == 0 || k.key != keys[i-1].key {
			out = append(out, k.key)
		}
	}
	return out, nil
}

// unixSpans turns the Unix seconds [a, b] into the spans of stored key
// values (uint64, big-endian) that hold them in order: times before 1970
// are negative, stored above every later one.
func unixSpans(a, b int64) [][2]uint64 {
	if a < 0 && b >= 0 {
		return [][2]uint64{{uint64(a), math.MaxUint64}, {0, uint64(b)}}
	}
	return [][2]uint64{{uint64(a), uint64(b)}}
}

// dirtyBucketsOf returns the buckets of series name changed since their
// last committed checkpoint, in key order.
func (s *DB) dirtyBucketsOf(name string) []*entry {
	prefix := bucketPrefix(name)
	var out []*entry
	s.dirtyFrom(prefix, prefix, false, func(e *entry) bool {
		out = append(out, e)
		return true
	})
	return out
}

// series returns name's definition and creation time.
func (s *DB) series(name string) (*series.Spec, time.Time, error) {
	e, err := s.acquire(seriesKey(name))
	if err != nil {
		return nil, time.Time{}, err
	}
	defer s.release(e)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := s.lockedReadable(); err != nil {
		return nil, time.Time{}, err
	}
	if e.st == nil {
		return nil, time.Time{}, seriesNotFound(name)
	}
	return e.st.def, e.st.created, nil
}

// DescribeSeries returns name's spec and, per level, its buckets.
func (s *DB) DescribeSeries(ctx context.Context, name string) (series.Info, error) {
	if err := ctx.Err(); err != nil {
		return series.Info{}, err
	}
	spec, created, err := s.series(name)
	if err != nil {
		return series.Info{}, err
	}
	keys, err := s.bucketKeys(name)
	if err != nil {
		return series.Info{}, err
	}
	var info series.Info
	err = s.viewKeys(ctx, keys, func(sts []*state) error {
		var err error
		info, err = seriesInfo(name, &state{def: spec, created: created}, keys, sts)
		return err
	})
	return info, err
}

// seriesInfo describes the series name whose definition is def and whose
// buckets are keys, with states sts (nil for a missing one).
func seriesInfo(name string, def *state, keys []string, sts []*state) (series.Info, error) {
	spec := def.def
	info := series.Info{Name: name, Spec: spec, CreatedAt: def.created}
	for _, ls := range spec.Levels {
		info.Levels = append(info.Levels, series.LevelInfo{Level: ls.Level, Retention: ls.Retention})
	}
	for i, st := range sts {
		if st == nil {
			continue
		}
		l, start, err := parseBucketKey(keys[i])
		if err != nil {
			return series.Info{}, err
		}
		for j := range info.Levels {
			li := &info.Levels[j]
			if li.Level != l {
				continue
			}
			li.Buckets++
			li.Bytes += int64(st.sk.SizeBytes())
			start = start.In(spec.Location())
			if li.Oldest.IsZero() || start.Before(li.Oldest) {
				li.Oldest = start
			}
			if start.After(li.Newest) {
				li.Newest = start
			}
		}
	}
	return info, nil
}

// viewKeys runs fn with the states of keys, in order, repeats allowed
// (nil for a missing one), each locked against writes while fn runs; for
// several keys, copies taken one lock at a time, so a long union never
// holds writers. An unreadable record is an error naming it.
func (s *DB) viewKeys(ctx context.Context, keys []string, fn func([]*state) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.readable(); err != nil {
		return err
	}
	uniq := sortedUnique(keys)
	es, err := s.acquireAll(uniq)
	if err != nil {
		return err
	}
	defer s.releaseAll(es)
	if len(es) > 1 {
		// A read of several sketches (a union, an intersection, a series
		// range) can take many milliseconds: it works on copies, so
		// writers to those sketches wait only for a copy.
		if es, err = s.copies(es); err != nil {
			return err
		}
	}
	for _, e := range es {
		e.mu.Lock()
		defer e.mu.Unlock()
	}
	if len(es) == 1 {
		// Read in place (copies checked each entry as they took it).
		if err := s.lockedReadable(); err != nil {
			return err
		}
	}
	sts := make([]*state, len(keys))
	now := s.opts.Now()
	for i, k := range keys {
		j, _ := slices.BinarySearch(uniq, k)
		if sts[i] = es[j].st; sts[i] == nil && es[j].unreadable {
			return damaged(k, s.path, errors.New("being deleted"))
		}
		if sts[i] != nil && sts[i].expired(now) {
			sts[i] = nil // gone, as if deleted
		}
	}
	return fn(sts)
}

// ListSeries returns up to limit series whose names start with prefix and
// sort after after, in name order, and whether more follow.
func (s *DB) ListSeries(ctx context.Context, prefix, after string, limit int) ([]series.Info, bool, error) {
	infos, more, _, err := s.ListSeriesSkipping(ctx, prefix, after, limit)
	return infos, more, err
}

// ListSeriesSkipping is ListSeries that also returns the names (quoted,
// safe to print) of the series it skipped because a stored record of
// theirs (the definition or a bucket) is damaged.
func (s *DB) ListSeriesSkipping(ctx context.Context, prefix, after string, limit int) (infos []series.Info, more bool, skipped []string, err error) {
	names, more, err := s.listKeys(ctx, string(prefixSeries), bucketSeries, prefix, after, limit)
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
			s.unreadable.Add(1)
			skipped = append(skipped, quoteName([]byte(n)))
			continue
		}
		if err != nil {
			return nil, false, nil, err
		}
		infos = append(infos, info)
	}
	return infos, more, skipped, nil
}

// listKeys lists up to limit names (without keyPrefix) of one keyspace
// that exist, start with prefix and sort after after, and whether more
// follow: bbolt's bucket with the changes since the checkpoint laid over.
func (s *DB) listKeys(ctx context.Context, keyPrefix string, bucket []byte, prefix, after string, limit int) ([]string, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	// As ListSkipping: the changed keys and bbolt's, merged in order
	// from the page's start.
	start := max(prefix, after)
	var mem []string
	over := map[string]struct{}{}
	bound := ""
	s.dirtyFrom(keyPrefix+start, keyPrefix+prefix, after == start, func(e *entry) bool {
		if len(mem) > limit {
			bound = mem[len(mem)-1]
			return false
		}
		n := e.name[len(keyPrefix):]
		over[n] = struct{}{}
		e.mu.Lock()
		if e.exists() {
			mem = append(mem, n)
		}
		e.mu.Unlock()
		return true
	})
	if len(mem) > limit && bound == "" {
		bound = mem[len(mem)-1]
	}
	var disk []string
	err := s.bdb.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		for k, _ := c.Seek([]byte(start)); k != nil && len(disk) <= limit; k, _ = c.Next() {
			n := string(k)
			if !strings.HasPrefix(n, prefix) || (bound != "" && n > bound) {
				break
			}
			if _, ok := over[n]; n <= after || ok {
				continue
			}
			disk = append(disk, n)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	names := make([]string, 0, min(limit+1, len(mem)+len(disk)))
	for len(names) <= limit && (len(mem) > 0 || len(disk) > 0) {
		if len(disk) == 0 || (len(mem) > 0 && mem[0] < disk[0]) {
			names, mem = append(names, mem[0]), mem[1:]
		} else {
			names, disk = append(names, disk[0]), disk[1:]
		}
	}
	more := len(names) > limit
	return names[:min(limit, len(names))], more, nil
}

// DeleteSeries removes name and its buckets, also those whose stored
// records are damaged (and a damaged definition). Adds stop once the
// definition is gone; a bucket an add created while the keys were listed
// is removed by a second pass.
func (s *DB) DeleteSeries(ctx context.Context, name string) error {
	key := seriesKey(name)
	for pass := 0; ; pass++ {
		keys, err := s.bucketKeys(name)
		if err != nil {
			return err
		}
		if pass > 0 && len(keys) == 0 {
			return nil
		}
		if pass == 1 {
			// Only the first pass is the delete an idempotency key
			// guards; later ones sweep buckets up.
			ctx = idem.Without(ctx)
		}
		err = s.write(ctx, append([]string{key}, keys...), s.acquireAllTolerant, func(t *tx) error {
			e := t.entry(key)
			if pass == 0 {
				if e.st == nil && !e.unreadable {
					return seriesNotFound(name)
				}
				t.delete(e)
				e.unreadable = false
			}
			for _, k := range keys {
				if be := t.entry(k); be.st != nil || be.unreadable {
					t.delete(be)
					be.unreadable = false
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
}

// errSeriesChanged makes AddSeries start again: the series was deleted and
// created anew between the look and the write.
var errSeriesChanged = errors.New("the series changed")

// sameSeries checks that d, the definition state of the series name read
// inside a write or view, is still spec, the one looked at before it: a
// missing series is NotFound, another definition errSeriesChanged.
func sameSeries(name string, d *state, spec *series.Spec) error {
	if d == nil {
		return seriesNotFound(name)
	}
	if d.def != spec {
		return errSeriesChanged
	}
	return nil
}

// AddSeries adds in's ids stamped ts to one bucket per level that keeps
// ts, creating the buckets it needs, in one durable write.
func (s *DB) AddSeries(ctx context.Context, name string, ts time.Time, in sketch.Input) (series.Added, error) {
	for {
		spec, _, err := s.series(name)
		if err != nil {
			return series.Added{}, err
		}
		keys, err := spec.Buckets(ts, s.opts.Now())
		if err != nil {
			return series.Added{}, err
		}
		kind := spec.Params.Kind()
		b, err := kind.Prepare(in)
		if err != nil {
			return series.Added{}, err
		}
		names := []string{seriesKey(name)}
		for _, k := range keys {
			names = append(names, bucketKey(name, k))
		}
		added := spec.AddedTo(sketch.Added{Type: kind.Type, Accepted: b.Len()}, keys)
		err = s.update(ctx, names, func(t *tx) error {
			if err := sameSeries(name, t.entry(names[0]).st, spec); err != nil {
				return err
			}
			sts := make([]*state, len(keys))
			for i, n := range names[1:] {
				if sts[i] = t.entry(n).st; sts[i] == nil {
					if sts[i], err = newState(sketch.Spec{Params: spec.Params}, t.now); err != nil {
						return err
					}
				}
				if err := sts[i].sk.Check(b); err != nil {
					return err
				}
			}
			for i, n := range names[1:] {
				// A new bucket is logged as one put of its state with the
				// batch applied, as a new sketch is (putNew).
				e := t.entry(n)
				var err error
				if e.st == nil {
					err = t.putNew(e, sts[i], b)
				} else {
					err = t.add(e, b)
				}
				if err != nil {
					return err // unreachable: checked above
				}
			}
			t.res.SeriesAdded = added
			t.res.Added = added.Added
			return nil
		})
		if err == errSeriesChanged {
			continue
		}
		if err != nil {
			return series.Added{}, err
		}
		return added, nil
	}
}

// ChangeSeries applies c to name's definition in one durable write; a
// change to what the definition already is writes nothing.
func (s *DB) ChangeSeries(ctx context.Context, name string, c series.Change) (series.Info, error) {
	if idem.From(ctx) == nil {
		if err := s.changeSeries(ctx, name, c, nil); err != nil {
			return series.Info{}, err
		}
		return s.DescribeSeries(ctx, name)
	}
	// Under an idempotency key the answer is decided with the change:
	// the buckets listed before the locks, as they are then.
	stale, err := s.bucketKeys(name)
	if err != nil {
		return series.Info{}, err
	}
	var info series.Info
	err = s.changeSeries(ctx, name, c, func(t *tx, st *state) error {
		sts := make([]*state, len(stale))
		for i, k := range stale {
			sts[i] = t.entry(k).st
		}
		var err error
		info, err = seriesInfo(name, st, stale, sts)
		t.res = idem.Result{Series: info}
		return err
	}, stale...)
	return info, err
}

// changeSeries applies c to name's definition, then calls answer (if
// set) with the definition as changed, inside the write locking name and
// also.
func (s *DB) changeSeries(ctx context.Context, name string, c series.Change, answer func(*tx, *state) error, also ...string) error {
	key := seriesKey(name)
	return s.update(ctx, append([]string{key}, also...), func(t *tx) error {
		e := t.entry(key)
		if e.st == nil {
			return seriesNotFound(name)
		}
		spec, err := e.st.def.Changed(c)
		if err != nil {
			return err
		}
		st := e.st
		if !spec.Same(e.st.def) {
			st = &state{def: spec, created: e.st.created, updated: t.now}
			t.put(e, st)
		}
		if answer != nil {
			return answer(t, st)
		}
		return nil
	})
}

// ViewSeries calls plan with name's spec, then fn with the stored
// buckets inside the runs it returned (in run order, by start within
// each), all locked against writes. Only buckets that exist are looked
// up, loaded and cached: a run spanning a century of empty hours costs a
// seek.
func (s *DB) ViewSeries(ctx context.Context, name string, plan func(*series.Spec) ([]series.Run, error), fn func(*series.Spec, []series.Bucket) error) error {
	for {
		spec, _, err := s.series(name)
		if err != nil {
			return err
		}
		runs, err := plan(spec)
		if err != nil {
			return err
		}
		found, err := s.bucketsIn(name, runs)
		if err != nil {
			return err
		}
		keys := append([]string{seriesKey(name)}, found...)
		err = s.viewKeys(ctx, keys, func(sts []*state) error {
			if err := sameSeries(name, sts[0], spec); err != nil {
				return err
			}
			bs := make([]series.Bucket, 0, len(found))
			for i, st := range sts[1:] {
				if st == nil {
					continue // deleted since the scan
				}
				l, start, err := parseBucketKey(found[i])
				if err != nil {
					return err
				}
				bs = append(bs, series.Bucket{Key: series.Key{Level: l, Start: start.In(spec.Location())}, Sketch: st.sk})
			}
			return fn(spec, bs)
		})
		if err != errSeriesChanged {
			return err
		}
	}
}

// ExpireSeries removes, in every series, the buckets whose end is at or
// before their level's cutoff at now.
func (s *DB) ExpireSeries(ctx context.Context, now time.Time) (series.Expired, error) {
	var out series.Expired
	after := ""
	for {
		names, more, err := s.listKeys(ctx, string(prefixSeries), bucketSeries, "", after, 100)
		if err != nil {
			return out, err
		}
		for _, n := range names {
			x, err := s.expire(ctx, n, now)
			out.Buckets += x.Buckets
			out.Bytes += x.Bytes
			if err != nil && sketch.KindOf(err) != sketch.NotFound {
				return out, err
			}
		}
		if !more || len(names) == 0 {
			return out, nil
		}
		after = names[len(names)-1]
	}
}

func (s *DB) expire(ctx context.Context, name string, now time.Time) (series.Expired, error) {
	spec, _, err := s.series(name)
	if err != nil {
		return series.Expired{}, err
	}
	keys, err := s.bucketKeys(name)
	if err != nil {
		return series.Expired{}, err
	}
	var old []string
	for _, k := range keys {
		l, start, err := parseBucketKey(k)
		if err != nil {
			return series.Expired{}, err
		}
		if _, kept := spec.Kept(l); !kept || !l.Next(start.In(spec.Location()), spec.Location()).After(spec.Cutoff(l, now)) {
			old = append(old, k)
		}
	}
	var x series.Expired
	if len(old) == 0 {
		return x, nil
	}
	err = s.update(ctx, old, func(t *tx) error {
		for _, k := range old {
			if e := t.entry(k); e.st != nil {
				x.Buckets++
				x.Bytes += int64(e.st.sk.SizeBytes())
				t.delete(e)
			}
		}
		return nil
	})
	if err != nil {
		return series.Expired{}, err
	}
	return x, nil
}

// ImportSeries plans and applies an import into name's buckets in one
// durable write (see server.SeriesStore): every bucket is computed first,
// so a merge that fails changes nothing.
func (s *DB) ImportSeries(ctx context.Context, name string, replace bool, prepare func(*series.Spec) ([]series.Import, error)) ([]series.Write, error) {
	for {
		spec, _, err := s.series(name)
		if err != nil {
			return nil, err
		}
		imports, err := prepare(spec)
		if err != nil {
			return nil, err
		}
		writes, err := spec.ImportWrites(imports, replace, s.opts.Now())
		if err != nil {
			return nil, err
		}
		names := make([]string, 1+len(writes))
		names[0] = seriesKey(name)
		for i, w := range writes {
			names[i+1] = bucketKey(name, w.Key)
		}
		err = s.update(ctx, names, func(t *tx) error {
			if err := sameSeries(name, t.entry(names[0]).st, spec); err != nil {
				return err
			}
			sts := make([]*state, len(writes))
			for i, w := range writes {
				old := t.entry(names[i+1]).st
				st := &state{created: t.now, updated: t.now}
				if old != nil {
					st.created = old.created
				}
				if old != nil && w.Action != series.Replaced {
					// MergedInto copies the stored sketch before merging.
					merged, err := sketch.MergedInto(name, old.sk, w.Sketch)
					if err != nil {
						return err
					}
					st.sk = merged
				} else {
					st.sk = w.Sketch.Clone()
				}
				sts[i] = st
			}
			for i := range writes {
				t.put(t.entry(names[i+1]), sts[i])
			}
			t.res = idem.Result{Writes: writes}
			return nil
		})
		if err == errSeriesChanged {
			continue
		}
		if err != nil {
			return nil, err
		}
		return writes, nil
	}
}
