package bolt

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/internal/sketch"
)

// view runs fn with the states of names (in the given order, repeats
// allowed), each locked against writes (for several names, copies; see
// viewKeys). A missing name is NotFound. Reads see every acknowledged
// write; they may also see a write whose record is still being synced.
func (s *DB) view(ctx context.Context, names []string, fn func(sts []*state) error) error {
	return s.viewKeys(ctx, names, func(sts []*state) error {
		for i, st := range sts {
			if st == nil {
				return notFound(names[i])
			}
		}
		return fn(sts)
	})
}

// copies returns unshared entries holding copies of es's states, each
// taken under its own lock: a writer waits for one copy at most, never
// for the whole set. Each copy holds every write acknowledged before the
// read began, and none is taken from memory a log failure is rebuilding.
func (s *DB) copies(es []*entry) ([]*entry, error) {
	out := make([]*entry, len(es))
	for i, e := range es {
		e.mu.Lock()
		if err := s.lockedReadable(); err != nil {
			e.mu.Unlock()
			return nil, err
		}
		out[i] = &entry{name: e.name, unreadable: e.unreadable}
		if e.st != nil {
			out[i].st = e.st.clone()
		}
		e.mu.Unlock()
	}
	return out, nil
}

// Describe returns name's spec, state and estimate.
func (s *DB) Describe(ctx context.Context, name string) (sketch.Info, error) {
	var info sketch.Info
	err := s.view(ctx, []string{name}, func(sts []*state) error {
		info = sts[0].info(name)
		return nil
	})
	return info, err
}

// View runs fn with the sketches of names (in order, repeats allowed),
// each locked against writes while fn runs. fn must not keep or change
// them. A missing name is NotFound.
func (s *DB) View(ctx context.Context, names []string, fn func([]sketch.Sketch) error) error {
	return s.view(ctx, names, func(sts []*state) error {
		sks := make([]sketch.Sketch, len(sts))
		for i, st := range sts {
			sks[i] = st.sk
		}
		return fn(sks)
	})
}

// kindOf returns the kind of the sketch name, NotFound if it is missing.
func (s *DB) kindOf(name string) (*sketch.Kind, error) {
	e, err := s.acquire(name)
	if err != nil {
		return nil, err
	}
	defer s.release(e)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := s.lockedReadable(); err != nil {
		return nil, err
	}
	if e.st == nil || e.st.expired(s.opts.Now()) {
		return nil, notFound(name)
	}
	return e.st.sk.Kind(), nil
}

// List returns up to limit sketches whose names start with prefix and sort
// after after, in name order, and whether more follow.
func (s *DB) List(ctx context.Context, prefix, after string, limit int) ([]sketch.Info, bool, error) {
	infos, more, _, err := s.ListSkipping(ctx, prefix, after, limit)
	return infos, more, err
}

// ListSkipping is List that also returns the names (quoted, safe to
// print) of the records in the range it skipped because they could not
// be decoded.
func (s *DB) ListSkipping(ctx context.Context, prefix, after string, limit int) (infos []sketch.Info, more bool, skipped []string, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, nil, err
	}
	if err := s.readable(); err != nil {
		return nil, false, nil, err
	}
	// Sketches changed since their last committed checkpoint may be
	// missing from bbolt, or deleted from memory but not yet from bbolt:
	// they are read from memory, everything else from bbolt. Both are
	// walked in name order from the page's start, so a page costs about
	// a page of rows however many sketches wait for a checkpoint.
	start := max(prefix, after, firstSketchKey)
	now := s.opts.Now()
	// From memory: up to limit+1 sketches, and every changed name walked
	// to find them (deleted ones included), which bbolt must not answer.
	var mem []sketch.Info
	over := map[string]struct{}{}
	bound := "" // the last name walked once the walk stopped early
	var memErr error
	s.dirtyFrom(start, prefix, after == start, func(e *entry) bool {
		if len(mem) > limit {
			bound = mem[len(mem)-1].Name
			return false
		}
		over[e.name] = struct{}{}
		e.mu.Lock()
		st, err := s.current(e)
		if st != nil && !st.expired(now) {
			mem = append(mem, st.info(e.name))
		}
		e.mu.Unlock()
		memErr = err
		return err == nil
	})
	if memErr != nil {
		return nil, false, nil, memErr
	}
	if len(mem) > limit && bound == "" {
		bound = mem[len(mem)-1].Name
	}
	// From bbolt: up to limit+1 others, not past bound (the page ends
	// there at the latest).
	var disk []sketch.Info
	err = s.bdb.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketSketches).Cursor()
		for k, v := c.Seek([]byte(start)); k != nil && len(disk) <= limit; k, v = c.Next() {
			n := string(k)
			if !strings.HasPrefix(n, prefix) || (bound != "" && n > bound) {
				break
			}
			if n <= after {
				continue
			}
			if _, ok := over[n]; ok {
				continue
			}
			st, err := decodeEntry(n, v)
			if err != nil {
				s.skipUnreadable(k, err, "list")
				skipped = append(skipped, quoteName(k))
				continue
			}
			if st.expired(now) {
				continue
			}
			disk = append(disk, st.info(n))
		}
		return nil
	})
	if err != nil {
		return nil, false, nil, err
	}
	infos = mergeInfos(mem, disk, limit+1)
	more = len(infos) > limit
	return infos[:min(limit, len(infos))], more, skipped, nil
}

// firstSketchKey sorts before every sketch name and after every series
// key (see series.go), so listings of sketches skip the series keyspace.
const firstSketchKey = string(rune(prefixBucket + 1))

// mergeInfos merges two lists sorted by name, with no name in both, into
// one of at most n.
func mergeInfos(a, b []sketch.Info, n int) []sketch.Info {
	out := make([]sketch.Info, 0, min(n, len(a)+len(b)))
	for len(out) < n && (len(a) > 0 || len(b) > 0) {
		if len(b) == 0 || (len(a) > 0 && a[0].Name < b[0].Name) {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return out
}

// SketchCounts calls yield for each (kind, representation) with its
// number of sketches.
func (s *DB) SketchCounts(yield func(kind, representation string, n int)) {
	s.statsMu.Lock()
	counts := maps.Clone(s.counts)
	s.statsMu.Unlock()
	for k, n := range counts {
		yield(k.typ, k.rep, n)
	}
}

// DiskBytes returns the sizes of the bbolt file and the write-ahead log.
func (s *DB) DiskBytes() (db, wal int64) {
	if fi, err := os.Stat(s.path); err == nil {
		db = fi.Size()
	}
	return db, s.wal.bytes()
}

// CacheStats returns the number of cached sketches and their approximate
// memory.
func (s *DB) CacheStats() (entries int, bytes int64) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	return len(s.entries), s.cacheBytes
}

// MetricQuantiles calls yield with the values at the fractions qs of
// every KLL sketch created with the metric flag that holds values, read
// at the moment of the scrape (metrics.QuantileSource).
func (s *DB) MetricQuantiles(qs []float64, yield func(name string, q, value float64)) {
	s.statsMu.Lock()
	names := slices.Sorted(maps.Keys(s.estimates))
	s.statsMu.Unlock()
	type value struct {
		name string
		vs   []float64
	}
	var out []value
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, n := range names {
		// A sketch deleted or damaged since is skipped.
		_ = s.View(ctx, []string{n}, func(sks []sketch.Sketch) error {
			if vs := sketch.QuantilesOf(sks[0], qs); vs != nil {
				out = append(out, value{n, vs})
			}
			return nil
		})
	}
	for _, v := range out {
		for i, q := range qs {
			yield(v.name, q, v.vs[i])
		}
	}
}

// MetricEstimates calls yield with the current estimate of every sketch
// created with the metric flag (a CMS reports its total) but those
// expired at the scrape: those are gone, as if deleted, before a pass
// removes them.
func (s *DB) MetricEstimates(yield func(name string, estimate float64)) {
	now := s.opts.Now()
	s.statsMu.Lock()
	est := maps.Clone(s.estimates)
	s.statsMu.Unlock()
	for n, v := range est {
		if v.live(now) {
			yield(n, v.estimate)
		}
	}
}

// unionPage is how many names UnionPrefix reads at a time.
const unionPage = 256

// UnionPrefix returns the union of every sketch whose name starts with
// prefix, except exclude, and how many it unioned (see server.Store). It
// walks the names in pages, in name order, and reads each page's
// sketches as View does, keeping only the running union: each sketch
// holds every write acknowledged before it was read.
func (s *DB) UnionPrefix(ctx context.Context, prefix, exclude string, limit int) (sketch.Sketch, int, error) {
	var u sketch.Unioner
	after := ""
	for {
		names, more, err := s.listKeys(ctx, "", bucketSketches, prefix, after, unionPage)
		if err != nil {
			return nil, 0, err
		}
		if len(names) > 0 {
			// Dirty series entries (keys below every name) come along
			// when prefix is empty; they still serve as a page's end.
			after = names[len(names)-1]
		}
		keep := slices.DeleteFunc(names, func(n string) bool { return !isSketchName(n) || n == exclude })
		if u.Len()+len(keep) > limit {
			return nil, 0, sketch.TooManyWithPrefix(prefix, limit)
		}
		// One sketch at a time, read in place under its lock: the union
		// holds its running result and what the Unioner batches, never
		// a page of copies.
		for _, name := range keep {
			err = s.viewKeys(ctx, []string{name}, func(sts []*state) error {
				if sts[0] == nil {
					return nil // deleted since the names were read
				}
				return u.AddLent(name, sts[0].sk)
			})
			if err != nil {
				return nil, 0, err
			}
		}
		if !more {
			break
		}
	}
	if u.Len() == 0 {
		return nil, 0, sketch.NoneWithPrefix(prefix)
	}
	out, err := u.Result()
	return out, u.Len(), err
}

// EachPrefix calls fn with each sketch whose name starts with prefix,
// except exclude, in name order, and returns how many it gave fn (see
// server.Store). It first counts the names, a page at a time, and
// refuses more than limit before reading any sketch; then it walks them
// again, reading each sketch as View does and lending it to fn under its
// lock: the walk holds one page of names and one sketch, never the
// prefix.
func (s *DB) EachPrefix(ctx context.Context, prefix, exclude string, limit int, fn func(name string, sk sketch.Sketch) error) (int, error) {
	walk := func(page func(names []string) error) error {
		after := ""
		for {
			names, more, err := s.listKeys(ctx, "", bucketSketches, prefix, after, unionPage)
			if err != nil {
				return err
			}
			if len(names) > 0 {
				after = names[len(names)-1]
			}
			if err := page(slices.DeleteFunc(names, func(n string) bool { return !isSketchName(n) || n == exclude })); err != nil {
				return err
			}
			if !more {
				return nil
			}
		}
	}
	n := 0
	err := walk(func(names []string) error {
		if n += len(names); n > limit {
			return sketch.TooManyWithPrefix(prefix, limit)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	n = 0
	err = walk(func(names []string) error {
		for _, name := range names {
			err := s.viewKeys(ctx, []string{name}, func(sts []*state) error {
				if sts[0] == nil {
					return nil // deleted since the names were read
				}
				if n++; n > limit {
					return sketch.TooManyWithPrefix(prefix, limit)
				}
				return fn(name, sts[0].sk)
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}
