package bolt

import (
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/internal/sketch"
)

// acquire returns the entry for name, loading it from bbolt if it is not
// cached, and pins it: a pinned entry is never evicted, so every goroutine
// using a name uses the same entry. Callers release it when done. The
// first acquirer of an uncached name decodes it outside the cache lock
// (a large sketch takes a while); later ones wait for it.
func (s *DB) acquire(name string) (*entry, error) {
	s.cacheMu.Lock()
	e, isNew := s.pinLocked(name)
	if !isNew {
		err := s.readyLocked(e)
		s.cacheMu.Unlock()
		if err == nil {
			err = s.unpackPinned(e)
		}
		if err != nil {
			s.release(e)
			return nil, err
		}
		return e, nil
	}
	s.cacheMu.Unlock()

	st, err := s.load(name)
	s.cacheMu.Lock()
	s.loadedLocked(e, st, err)
	s.loadDone.Broadcast()
	s.cacheMu.Unlock()
	if err != nil {
		return nil, err
	}
	return e, nil
}

// pinLocked pins name's entry, taking it off the LRU list, or adds a new
// one that the caller is to load (isNew): loading until loadedLocked.
// Called with cacheMu held.
func (s *DB) pinLocked(name string) (e *entry, isNew bool) {
	if e := s.entries[name]; e != nil {
		e.pins++
		if e.lru != nil {
			s.lru.Remove(e.lru)
			e.lru = nil
		}
		return e, false
	}
	e = &entry{name: name, pins: 1, loading: true}
	s.entries[name] = e
	return e, true
}

// loadedLocked gives e, new from pinLocked, what loading it read: its
// state (nil: none stored), or the error, which also takes e out of the
// cache and drops the loader's pin. The caller broadcasts loadDone once
// it has given every entry it loaded its own. Called with cacheMu held.
func (s *DB) loadedLocked(e *entry, st *state, err error) {
	if err != nil {
		e.loadErr = err
		s.removeLocked(e)
		e.pins--
	} else if st != nil {
		e.st = st
		e.mem.Store(entryMemory(e.name, st))
		e.accounted = e.mem.Load()
		s.cacheBytes += e.accounted
	}
	e.loading = false
}

// readyLocked waits for the entry e, which the caller pinned, to be
// loaded by whoever is loading it, and returns the load's error. Called
// with cacheMu held; it is released while waiting.
func (s *DB) readyLocked(e *entry) error {
	for e.loading {
		s.loadDone.Wait()
	}
	return e.loadErr
}

// unpackPinned unpacks e, which the caller pinned, if it is packed
// (pack.go).
func (s *DB) unpackPinned(e *entry) error {
	if !e.packed.Load() {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return s.unpack(e)
}

// load reads and decodes name's record (nil if there is none).
func (s *DB) load(name string) (*state, error) {
	var st *state
	var err error
	s.loadEach([]string{name}, func(_ int, got *state, gotErr error) { st, err = got, gotErr })
	return st, err
}

// loadEach reads and decodes the records of names in one read
// transaction (a record per name, one at a time; nil if there is none),
// calling fn with each name's index and what it got. An error is what a
// read of a damaged record returns (and the record is reported).
func (s *DB) loadEach(names []string, fn func(i int, st *state, err error)) {
	view := s.bdb.View
	if s.replayTx != nil {
		view = func(fn func(*bbolt.Tx) error) error { return fn(s.replayTx) }
	}
	done := 0
	err := view(func(tx *bbolt.Tx) error {
		for i, name := range names {
			bucket, key := location(name)
			var st *state
			var err error
			if rec := tx.Bucket(bucket).Get(key); rec != nil {
				st, err = decodeEntry(name, rec)
			}
			if err != nil {
				s.reportUnreadable([]byte(name), err, "read")
				err = damaged(name, s.path, err)
			}
			fn(i, st, err)
			done = i + 1
		}
		return nil
	})
	if err != nil {
		// The transaction itself failed: the names not read yet fail
		// with it.
		for i := done; i < len(names); i++ {
			s.reportUnreadable([]byte(names[i]), err, "read")
			fn(i, nil, damaged(names[i], s.path, err))
		}
	}
}

// removeLocked takes e out of the cache, if it is still the entry for its
// name. Called with cacheMu held.
func (s *DB) removeLocked(e *entry) {
	if s.entries[e.name] == e {
		delete(s.entries, e.name)
		s.cacheBytes -= e.accounted
	}
}

// acquireAll acquires the distinct names in order; on error it releases
// what it took.
func (s *DB) acquireAll(names []string) ([]*entry, error) {
	if err := s.checkPinBudget(names); err != nil {
		return nil, err
	}
	return s.acquireEach(names)
}

// acquireEach is acquireAll without the budget, for the store's own
// passes (expiry deletes a page of expired sketches, however big).
//
// The names not cached are read in one read transaction (a transaction a
// name cost more than the rest of a new small sketch's write), after
// pinning every name; then it waits for the names that others are
// loading. On error it releases what it took and returns the error of
// the first name (in order) that failed.
func (s *DB) acquireEach(names []string) ([]*entry, error) {
	if len(names) == 1 {
		e, err := s.acquire(names[0])
		if err != nil {
			return nil, err
		}
		return []*entry{e}, nil
	}
	es := make([]*entry, len(names))
	var mine []int // the indexes of the entries this call loads
	s.cacheMu.Lock()
	for i, n := range names {
		var isNew bool
		if es[i], isNew = s.pinLocked(n); isNew {
			mine = append(mine, i)
		}
	}
	s.cacheMu.Unlock()
	errs := make([]error, len(names))
	if len(mine) > 0 {
		toLoad := make([]string, len(mine))
		for j, i := range mine {
			toLoad[j] = names[i]
		}
		sts := make([]*state, len(mine))
		s.loadEach(toLoad, func(j int, st *state, err error) { sts[j], errs[mine[j]] = st, err })
		s.cacheMu.Lock()
		for j, i := range mine {
			s.loadedLocked(es[i], sts[j], errs[i])
		}
		s.loadDone.Broadcast()
		s.cacheMu.Unlock()
	}
	// A failed load of this call's dropped its pin already (loadedLocked);
	// every other entry is pinned by this call.
	dropped := make([]bool, len(names))
	for i, err := range errs {
		dropped[i] = err != nil
	}
	s.cacheMu.Lock()
	for i, e := range es {
		if errs[i] == nil {
			errs[i] = s.readyLocked(e)
		}
	}
	s.cacheMu.Unlock()
	for i, e := range es {
		if errs[i] == nil {
			errs[i] = s.unpackPinned(e)
		}
	}
	for _, err := range errs {
		if err == nil {
			continue
		}
		for i, e := range es {
			if !dropped[i] {
				s.release(e)
			}
		}
		return nil, err
	}
	return es, nil
}

// checkPinBudget refuses, before any is read, a request that would hold
// several sketches at once (a union or intersection of named sketches, an
// overlap, an events write) whose sizes add up to more than the cache's
// bound, Options.CacheBytes (-cache-bytes): cached sketches count their
// memory, the others their stored bytes (what decoding them costs, about).
// A read of several copies them besides, so such a request holds at most
// about twice the cache. A prefix union, which reads one sketch at a
// time, is not bounded by it.
func (s *DB) checkPinBudget(names []string) error {
	if len(names) < 2 {
		return nil
	}
	var total int64
	var uncached []string
	s.cacheMu.Lock()
	for _, n := range names {
		if !isSketchName(n) {
			continue // a series bucket: -max-series-buckets bounds those
		}
		if e := s.entries[n]; e != nil {
			total += e.mem.Load()
		} else {
			uncached = append(uncached, n)
		}
	}
	s.cacheMu.Unlock()
	if len(uncached) > 0 && total <= s.opts.CacheBytes {
		view := s.bdb.View
		if s.replayTx != nil {
			view = func(fn func(*bbolt.Tx) error) error { return fn(s.replayTx) }
		}
		err := view(func(tx *bbolt.Tx) error {
			for _, n := range uncached {
				bucket, key := location(n)
				total += int64(len(tx.Bucket(bucket).Get(key)))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if total > s.opts.CacheBytes {
		return sketch.Errorf(sketch.TooLarge, "the %d sketches this request names hold %d MiB together, more than the %d MiB one request may hold at once (-cache-bytes); name fewer, or union a prefix, which reads one sketch at a time",
			len(names), total>>20, s.opts.CacheBytes>>20)
	}
	return nil
}

func (s *DB) releaseAll(es []*entry) {
	for _, e := range es {
		s.release(e)
	}
}

// release unpins e. An unpinned clean entry joins the LRU list (or leaves
// the cache if it holds no sketch), and the cache is trimmed to its bound;
// an unpinned changed small sketch is packed (pack.go). The caller must
// not hold e.mu.
func (s *DB) release(e *entry) {
	var packed int64
	locked := packCandidate(e)
	if locked {
		e.mu.Lock()
		defer func() {
			s.adjustDirty(e, packed)
			e.mu.Unlock()
		}()
	}
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	if locked && e.pins == 1 {
		packed = s.packLocked(e) // the last user
	}
	mem := e.mem.Load()
	s.cacheBytes += mem - e.accounted
	e.accounted = mem
	e.pins--
	if e.pins == 0 && !e.dirty.Load() {
		s.parkLocked(e)
	}
	s.evictLocked()
}

// smallEntryBytes is the most an entry holding a sketch may cost
// (entryMemory) for it to leave the cache as soon as it is unpinned and
// clean: an EXPLICIT HLL of up to about 50 ids, a SPARSE one of up to
// about 120 registers. Such a sketch is kept in its compact form, the
// encoded record in bbolt's mapped pages, and decoded on use (about a
// microsecond for a few ids), instead of costing several times its bytes
// in entry, state and sketch headers for as long as the cache has room.
const smallEntryBytes = 1024

// parkLocked puts an unpinned clean entry where it belongs: on the LRU
// list, or out of the cache if it holds nothing or only a small sketch.
// Called with cacheMu held.
func (s *DB) parkLocked(e *entry) {
	if e.st == nil || (e.st.sk != nil && e.mem.Load() <= smallEntryBytes) {
		s.removeLocked(e)
		return
	}
	if e.lru == nil {
		e.lru = s.lru.PushFront(e)
	}
}

// evictLocked drops least recently used clean entries while the cache is
// over its bound. Called with cacheMu held.
func (s *DB) evictLocked() {
	for s.cacheBytes > s.opts.CacheBytes {
		back := s.lru.Back()
		if back == nil {
			return
		}
		e := s.lru.Remove(back).(*entry)
		e.lru = nil
		s.removeLocked(e)
	}
}

// markDirty records that e changed: it joins the set the next checkpoint
// copies and stays in memory until a checkpoint has committed it. Called
// with e.mu held.
func (s *DB) markDirty(e *entry, memDelta int64) {
	e.gen++
	s.dirtyMu.Lock()
	if !e.dirty.Load() {
		s.dirtyIdx.set(e.name, e)
		s.unsettled.Store(int64(s.dirtyIdx.len()))
		e.dirty.Store(true)
	}
	if e.inDirty {
		s.dirtyBytes.Add(memDelta)
	} else {
		e.inDirty = true
		s.dirty = append(s.dirty, e)
		s.dirtyN.Store(int64(len(s.dirty)))
		s.dirtyBytes.Add(e.mem.Load())
	}
	s.dirtyMu.Unlock()
}

// entryOverhead approximates the heap an entry costs besides its state
// and name: the entry, its map slot, list element and state header. With
// a million small sketches it is most of their memory.
const entryOverhead = 320

// entryMemory approximates the heap of name's entry holding st (nil: a
// tombstone).
func entryMemory(name string, st *state) int64 {
	mem := int64(entryOverhead + len(name))
	if st != nil {
		mem += st.memory()
	}
	return mem
}

// metricValue is what /metrics exports of a sketch created with the
// metric flag: its estimate, until its deadline (zero: it never expires).
type metricValue struct {
	estimate float64
	deadline time.Time
}

func metricValueOf(st *state) metricValue {
	return metricValue{st.sk.Estimate(), st.expiry.Deadline(st.updated)}
}

// live reports whether the sketch is still there at now: not expired.
func (v metricValue) live(now time.Time) bool {
	return v.deadline.IsZero() || now.Before(v.deadline)
}

// summary is what the scrape-time statistics need of an entry's state.
type summary struct {
	exists bool
	key    countKey
	metric bool
}

// summary describes e's state. Called with e.mu held (or single-threaded).
func (e *entry) summary() summary {
	if e.st == nil || !isSketchName(e.name) {
		return summary{} // series are not counted among sketches
	}
	return summary{exists: true, key: countKey{string(e.st.typ()), e.st.sk.Representation()}, metric: e.st.metric}
}

// changed updates the statistics, memory accounting and dirty set after
// e's state changed from before. Called with e.mu held.
func (s *DB) changed(e *entry, before summary) {
	after := e.summary()
	var est metricValue
	if after.metric {
		est = metricValueOf(e.st)
	}
	s.statsMu.Lock()
	if before.exists {
		s.counts[before.key]--
	}
	if after.exists {
		s.counts[after.key]++
	}
	if after.metric {
		s.estimates[e.name] = est
	} else if before.metric {
		delete(s.estimates, e.name)
	}
	s.statsMu.Unlock()
	mem := entryMemory(e.name, e.st)
	delta := mem - e.mem.Swap(mem)
	s.markDirty(e, delta)
}

// loadStats counts the stored sketches by kind and representation and
// reads the estimates of those exported on /metrics.
func (s *DB) loadStats(tx *bbolt.Tx) error {
	sketches := tx.Bucket(bucketSketches)
	sketches.ForEach(func(name, rec []byte) error {
		s.countRecord(name, rec)
		return nil
	})
	return tx.Bucket(bucketMetric).ForEach(func(name, _ []byte) error {
		s.metricEstimate(sketches, name)
		return nil
	})
}

// recordKey reads a sketch record's kind and the representation in its
// stored bytes (written by this package, so as Representation says)
// without decoding the sketch, once its checksum matches.
func recordKey(name string, rec []byte) (countKey, error) {
	body, err := checkRecord2(name, rec)
	if err != nil {
		return countKey{}, err
	}
	kind, err := sketch.ByTag(rec[1])
	if err != nil {
		return countKey{}, err
	}
	key := countKey{typ: string(kind.Type)}
	if kind.Representation != nil {
		if key.rep, err = kind.Representation(body); err != nil {
			return countKey{}, err
		}
	}
	return key, nil
}
