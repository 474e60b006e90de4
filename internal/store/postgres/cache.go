package postgres

import (
	"container/list"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

// bucketCache keeps series buckets decoded, each with the version of the
// row it was read from: the row's xmin, the transaction that wrote that
// version of it. A read sends PostgreSQL the versions it holds and gets
// bytes back only for the buckets whose row another transaction has
// written since, so every read still sees every committed write (on any
// node) while unchanged buckets cross the wire and decode only once.
// xmin is PostgreSQL's usual optimistic-concurrency token; it repeats only
// after 2^32 transactions, and an entry would have to sit unread through
// exactly that many while its row changed to be mistaken.
//
// The cache holds at most max bytes of decoded sketches (MemoryBytes),
// dropping the least recently used first. Cached sketches are never
// changed; readers get copies. Its methods are safe for concurrent use.
type bucketCache struct {
	mu    sync.Mutex
	max   int64
	bytes int64
	lru   *list.List // of *cached, most recently used first
	byKey map[bucketKey]*list.Element
	// bySeries indexes byKey by series (and definition), so a read finds
	// the buckets it holds of a range without a lookup per bucket the
	// range spans.
	bySeries map[seriesRef]map[bucketKey]struct{}

	hits, misses atomic.Uint64
}

// seriesRef names one series as a bucketKey does: its name and the
// version of its definition.
type seriesRef struct {
	series string
	def    int64
}

// bucketKey names a bucket. The series' own version (its definition row's
// xmin) is part of it: a series deleted and created again under the same
// name shares no bucket with the old one.
type bucketKey struct {
	series  string
	def     int64
	level   series.Level
	startNs int64
}

type cached struct {
	key     bucketKey
	version int64
	sk      sketch.Sketch
	size    int64
}

func newBucketCache(max int64) *bucketCache {
	return &bucketCache{max: max, lru: list.New(), byKey: map[bucketKey]*list.Element{}, bySeries: map[seriesRef]map[bucketKey]struct{}{}}
}

// heldBucket is a cached bucket a read may reuse.
type heldBucket struct {
	key     bucketKey
	version int64
	sk      sketch.Sketch
}

// heldIn returns the cached buckets of the series ref that lie in one of
// runs: a pass over what the cache holds of that series, however long
// the runs are.
func (c *bucketCache) heldIn(ref seriesRef, runs []series.Run) []heldBucket {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []heldBucket
	for k := range c.bySeries[ref] {
		for _, r := range runs {
			if r.Count > 0 && r.Contains(k.level, time.Unix(0, k.startNs)) {
				e := c.byKey[k]
				c.lru.MoveToFront(e)
				b := e.Value.(*cached)
				out = append(out, heldBucket{key: k, version: b.version, sk: b.sk})
				break
			}
		}
	}
	return out
}

// put caches sk, which no one may change from then on, as the bucket k at
// version; a sketch larger than the whole cache is not kept.
func (c *bucketCache) put(k bucketKey, version int64, sk sketch.Sketch) {
	size := sk.MemoryBytes() + int64(len(k.series)) + 128
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(k)
	if size > c.max {
		return
	}
	c.byKey[k] = c.lru.PushFront(&cached{key: k, version: version, sk: sk, size: size})
	ref := seriesRef{k.series, k.def}
	if c.bySeries[ref] == nil {
		c.bySeries[ref] = map[bucketKey]struct{}{}
	}
	c.bySeries[ref][k] = struct{}{}
	c.bytes += size
	for c.bytes > c.max {
		c.removeLocked(c.lru.Back().Value.(*cached).key)
	}
}

// drop forgets the bucket k (its row is gone).
func (c *bucketCache) drop(k bucketKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(k)
}

func (c *bucketCache) removeLocked(k bucketKey) {
	e, ok := c.byKey[k]
	if !ok {
		return
	}
	c.bytes -= e.Value.(*cached).size
	c.lru.Remove(e)
	delete(c.byKey, k)
	ref := seriesRef{k.series, k.def}
	if delete(c.bySeries[ref], k); len(c.bySeries[ref]) == 0 {
		delete(c.bySeries, ref)
	}
}

// size returns the bytes and buckets held.
func (c *bucketCache) size() (bytes int64, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes, len(c.byKey)
}

// defCache keeps series definitions a node read, each with its row's
// version, so that a read plans its buckets without a round trip first;
// the read's statement checks the version and a stale one reads the
// definition again. It holds at most maxDefs definitions (forgetting them
// all when full: they cost one round trip each to read again).
type defCache struct {
	mu   sync.Mutex
	defs map[string]def
}

const maxDefs = 4096

func (c *defCache) get(name string) (def, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.defs[name]
	return d, ok
}

func (c *defCache) put(name string, d def) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.defs == nil || len(c.defs) >= maxDefs {
		c.defs = map[string]def{}
	}
	c.defs[name] = d
}

func (c *defCache) drop(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.defs, name)
}

// CacheStats reports the series buckets a node keeps decoded and their
// approximate bytes (the metrics' cache gauges).
func (s *DB) CacheStats() (entries int, bytes int64) {
	bytes, entries = s.buckets.size()
	return entries, bytes
}

// BucketReads reports how many bucket reads the cache answered (the row
// unchanged since) and how many read the bucket's bytes.
func (s *DB) BucketReads() (cached, fetched uint64) {
	return s.buckets.hits.Load(), s.buckets.misses.Load()
}
