package bolt

import (
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/bloom"
	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// TestPrefixUnionMemory: a prefix union of 24 Bloom filters of 2^24 bits
// (2 MiB each) holds its result and the filter being merged, plus the
// cache (1 MiB here), never the whole prefix: the heap's peak during the
// union (collected as often as the runtime can) stays under 8 filters
// above what it was before, whatever the number of filters (measured:
// 4 to 6, the rest being filters read and dropped that a collection has
// not reached yet). Reading a page of names at once held all 24, copied,
// and a batch of clones besides.
func TestPrefixUnionMemory(t *testing.T) {
	const filters, bits = 24, 1 << 24
	s, path := openStore(t, Options{CheckpointInterval: time.Hour})
	spec := sketch.Spec{Params: sketch.BloomParams{Params: bloom.Params{Bits: bits, Hashes: 3}}}
	for i := range filters {
		name := "b:" + strconv.Itoa(i)
		mustCreate(t, s, name, spec)
		if _, err := s.Add(ctx, name, storetest.Input{IDs: []cms.ID{cms.IntID(int64(i))}}, false); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s = reopen(t, path, Options{CheckpointInterval: time.Hour, CacheBytes: 1 << 20})
	// Collect often, so the heap's peak is what the union holds, not
	// garbage waiting for a collection (evicted filters).
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	}()
	u, n, err := s.UnionPrefix(ctx, "b:", "", 1000)
	close(stop)
	<-done
	if err != nil || n != filters {
		t.Fatalf("UnionPrefix: %d sketches, %v", n, err)
	}
	f, _ := sketch.BloomOf(u)
	if got := f.BitsSet(); got < 3*filters-3 {
		t.Errorf("the union has %d bits set, want about %d", got, 3*filters)
	}
	grew := int64(peak.Load()) - int64(before.HeapAlloc)
	if limit := int64(8*bits/8 + 1<<20); grew > limit {
		t.Errorf("the live heap grew by %d MiB during the union of %d filters of %d MiB, want at most %d MiB",
			grew>>20, filters, bits/8>>20, limit>>20)
	}
	t.Logf("peak heap growth %.1f MiB", float64(grew)/(1<<20))
}

// TestNamedReadBudget: a read of several named sketches that would hold
// more than the cache's bound at once is refused before any is read
// (TooLarge, naming the bound), cached or not; within the bound it is
// answered. Without the budget a union of 1,000 named filters of 16 MiB
// would hold 16 GB, twice.
func TestNamedReadBudget(t *testing.T) {
	const bits = 1 << 24 // 2 MiB
	s, path := openStore(t, Options{CheckpointInterval: time.Hour, CacheBytes: 16 << 20})
	spec := sketch.Spec{Params: sketch.BloomParams{Params: bloom.Params{Bits: bits, Hashes: 3}}}
	var names []string
	for i := range 6 {
		name := "b:" + strconv.Itoa(i)
		mustCreate(t, s, name, spec)
		names = append(names, name)
	}
	s.Close()
	s = reopen(t, path, Options{CheckpointInterval: time.Hour, CacheBytes: 7 << 20})
	for _, cached := range []bool{false, true} {
		if _, err := s.Union(ctx, names[:3], ""); err != nil {
			t.Fatalf("a union of 3 filters (6 MiB) within a 7 MiB cache: %v", err)
		}
		_, err := s.Union(ctx, names, "")
		if sketch.KindOf(err) != sketch.TooLarge || !strings.Contains(err.Error(), "-cache-bytes") {
			t.Errorf("cached %v: a union of 6 filters (12 MiB) with a 7 MiB cache: %v, want TooLarge naming -cache-bytes", cached, err)
		}
		if _, err := s.Union(ctx, names, "b:all"); sketch.KindOf(err) != sketch.TooLarge {
			t.Errorf("cached %v: the same union stored: %v, want TooLarge", cached, err)
		}
		if _, err := s.Describe(ctx, "b:all"); sketch.KindOf(err) != sketch.NotFound {
			t.Errorf("the refused union stored something: %v", err)
		}
	}
}

// TestExpiryIgnoresTheReadBudget: the expiry pass removes a page of
// expired sketches together, however much more than the cache's bound
// they hold; the budget is for requests.
func TestExpiryIgnoresTheReadBudget(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	s, path := openStore(t, Options{CheckpointInterval: time.Hour, Now: clock})
	spec := sketch.Spec{Params: sketch.BloomParams{Params: bloom.Params{Bits: 1 << 24, Hashes: 3}}, Expiry: sketch.Expiry{After: time.Minute}}
	for i := range 6 {
		mustCreate(t, s, "b:"+strconv.Itoa(i), spec)
	}
	s.Close()
	s = reopen(t, path, Options{CheckpointInterval: time.Hour, CacheBytes: 7 << 20, Now: clock})
	now = now.Add(time.Hour)
	n, err := s.ExpireSketches(ctx, now)
	if err != nil || n != 6 {
		t.Fatalf("ExpireSketches of 6 filters (12 MiB) with a 7 MiB cache: %d, %v; want 6, nil", n, err)
	}
}
