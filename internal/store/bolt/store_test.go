package bolt

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/migrations"
)

var ctx = context.Background()

// openStore opens a store in a temporary directory; on cleanup it closes
// it and checks the bbolt file's consistency.
func openStore(tb testing.TB, opts Options) (*DB, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "sketchd.db")
	s := reopen(tb, path, opts)
	return s, path
}

func reopen(tb testing.TB, path string, opts Options) *DB {
	tb.Helper()
	s, err := Open(path, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, errCrashed) {
			tb.Errorf("Close: %v", err)
		}
		checkFile(tb, path)
	})
	return s
}

// checkFile runs bbolt's consistency check on a closed file.
func checkFile(tb testing.TB, path string) {
	tb.Helper()
	if err := Check(path); err != nil {
		tb.Errorf("bbolt check: %v", err)
	}
}

var errCrashed = errors.New("crashed")

// crash abandons s as a kill -9 would after its acknowledged writes: the
// log segments and bbolt are closed without a checkpoint.
func crash(tb testing.TB, s *DB) {
	tb.Helper()
	s.closeOnce.Do(func() {
		s.quiesce()
		close(s.wal.stop)
		<-s.wal.stopped
		for _, seg := range s.wal.segs {
			seg.f.Close()
		}
		s.bdb.Close()
		s.closeErr = errCrashed
	})
}

func hllSpec(log2m int) sketch.Spec {
	p := hll.DefaultParams()
	p.Log2m = log2m
	return sketch.Spec{Type: sketch.TypeHLL, HLL: p}
}

func cmsSpec() sketch.Spec {
	return sketch.Spec{Type: sketch.TypeCMS, CMS: cms.Params{Width: 272, Depth: 5, TopK: 5}}
}

func randomHashes(r *rand.Rand, n int) []uint64 {
	hs := make([]uint64, n)
	for i := range hs {
		hs[i] = r.Uint64()
	}
	return hs
}

// expectHLL returns the bytes of a sketch built from hs at p.
func expectHLL(tb testing.TB, p hll.Params, hss ...[]uint64) []byte {
	tb.Helper()
	h, err := hll.New(p)
	if err != nil {
		tb.Fatal(err)
	}
	for _, hs := range hss {
		h.AddHashes(hs, nil)
	}
	b, _ := h.MarshalBinary()
	return b
}

func rawOf(tb testing.TB, s *DB, name string) []byte {
	tb.Helper()
	_, b, err := s.Raw(ctx, name, nil)
	if err != nil {
		tb.Fatalf("Raw(%s): %v", name, err)
	}
	return b
}

func mustCreate(tb testing.TB, s *DB, name string, spec sketch.Spec) {
	tb.Helper()
	if _, _, err := s.Create(ctx, name, spec); err != nil {
		tb.Fatalf("Create(%s): %v", name, err)
	}
}

func TestCreateDescribeDelete(t *testing.T) {
	s, _ := openStore(t, Options{})
	info, created, err := s.Create(ctx, "a", hllSpec(12))
	if err != nil || !created || info.Representation != "EMPTY" || info.Spec.HLL.Log2m != 12 {
		t.Fatalf("Create = %+v, %v, %v", info, created, err)
	}
	// Same parameters again: not created, no error; the metric flag may change.
	spec := hllSpec(12)
	spec.Metric = true
	info, created, err = s.Create(ctx, "a", spec)
	if err != nil || created || !info.Spec.Metric {
		t.Fatalf("Create(same params, metric) = %+v, %v, %v", info, created, err)
	}
	if _, _, err := s.Create(ctx, "a", hllSpec(13)); sketch.KindOf(err) != sketch.Conflict {
		t.Fatalf("Create(other params) = %v, want Conflict", err)
	}
	if _, _, err := s.Create(ctx, "a", cmsSpec()); sketch.KindOf(err) != sketch.Conflict {
		t.Fatalf("Create(other type) = %v, want Conflict", err)
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Describe(ctx, "a"); sketch.KindOf(err) != sketch.NotFound {
		t.Fatalf("Describe(deleted) = %v, want NotFound", err)
	}
	if err := s.Delete(ctx, "a"); sketch.KindOf(err) != sketch.NotFound {
		t.Fatalf("Delete(deleted) = %v, want NotFound", err)
	}
	if err := s.AddHashes(ctx, "missing", []uint64{1}, false); sketch.KindOf(err) != sketch.NotFound {
		t.Fatalf("AddHashes(missing) = %v, want NotFound", err)
	}
}

// TestPersistence: writes survive a clean close, a crash before any
// checkpoint, and a crash after one, byte for byte.
func TestPersistence(t *testing.T) {
	for _, mode := range []string{"close", "crash", "checkpoint then crash"} {
		t.Run(mode, func(t *testing.T) {
			s, path := openStore(t, Options{CheckpointInterval: time.Hour})
			r := rand.New(rand.NewPCG(1, 2))
			mustCreate(t, s, "h", hllSpec(11))
			mustCreate(t, s, "c", cmsSpec())
			h1, h2 := randomHashes(r, 3000), randomHashes(r, 200)
			if err := s.AddHashes(ctx, "h", h1, false); err != nil {
				t.Fatal(err)
			}
			if err := s.AddHashes(ctx, "auto", h2, true); err != nil {
				t.Fatal(err)
			}
			items := []cms.Item{{ID: cms.IntID(7), Count: 3}, {ID: cms.TextID("x"), Count: 2}}
			if err := s.AddItems(ctx, "c", items); err != nil {
				t.Fatal(err)
			}
			if mode == "checkpoint then crash" {
				if err := s.Checkpoint(ctx); err != nil {
					t.Fatal(err)
				}
				// More after the checkpoint: replay must add these exactly once.
				if err := s.AddItems(ctx, "c", items); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.AddItems(ctx, "c", items[:1]); err != nil {
				t.Fatal(err)
			}
			mustCreate(t, s, "gone", hllSpec(10))
			if err := s.Delete(ctx, "gone"); err != nil {
				t.Fatal(err)
			}
			want := map[string][]byte{"h": rawOf(t, s, "h"), "auto": rawOf(t, s, "auto"), "c": rawOf(t, s, "c")}
			if mode == "close" {
				s.Close()
			} else {
				crash(t, s)
			}
			s = reopen(t, path, Options{})
			for name, w := range want {
				if got := rawOf(t, s, name); !slices.Equal(got, w) {
					t.Errorf("%s after reopen differs", name)
				}
			}
			if got, want := rawOf(t, s, "h"), expectHLL(t, hllSpec(11).HLL, h1); !slices.Equal(got, want) {
				t.Error("h is not the sketch of its hashes")
			}
			var est uint64
			s.ViewCMS(ctx, "c", func(c *cms.Sketch) error { est = c.EstimateInt(7); return nil })
			wantCount := uint64(6)
			if mode == "checkpoint then crash" {
				wantCount = 9
			}
			if est != wantCount {
				t.Errorf("CMS estimate of 7 = %d, want %d (replayed exactly once)", est, wantCount)
			}
			if _, err := s.Describe(ctx, "gone"); sketch.KindOf(err) != sketch.NotFound {
				t.Errorf("deleted sketch is back: %v", err)
			}
		})
	}
}

// TestTornTail: bytes of a record cut short by a crash are ignored; a
// damaged record followed by intact ones is refused.
func TestTornTail(t *testing.T) {
	s, path := openStore(t, Options{CheckpointInterval: time.Hour})
	mustCreate(t, s, "h", hllSpec(10))
	if err := s.AddHashes(ctx, "h", []uint64{1 << 20, 2 << 20}, false); err != nil {
		t.Fatal(err)
	}
	want := rawOf(t, s, "h")
	segPath := s.wal.seg.path
	crash(t, s)
	f, err := os.OpenFile(segPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0, 0, 0, 40, 1, 2, 3, 4, 5}) // a header promising 40 bytes, then 1
	f.Close()
	s = reopen(t, path, Options{})
	if got := rawOf(t, s, "h"); !slices.Equal(got, want) {
		t.Fatalf("after a torn tail: %x, want %x", got, want)
	}
	s.Close()

	// Damage in a segment followed by intact records must not be skipped.
	dir := path + ".wal"
	bad := filepath.Join(dir, segmentName(1))
	good := filepath.Join(dir, segmentName(2))
	os.WriteFile(bad, []byte{0, 0, 0, 9, 9, 9, 9, 9, 1, 2}, 0o600)
	os.WriteFile(good, []byte{0, 0, 0, 9, 0, 0, 0, 0}, 0o600)
	if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("Open with a damaged middle segment = %v, want an error", err)
	}
}

func TestSecondOpenFailsFast(t *testing.T) {
	_, path := openStore(t, Options{})
	start := time.Now()
	_, err := Open(path, Options{OpenTimeout: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("second Open = %v, want a lock error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("second Open took %v", d)
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "future.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bbolt.Tx) error {
		b, _ := tx.CreateBucketIfNotExists([]byte(migrations.BucketMeta))
		return b.Put([]byte(migrations.KeyVersion), []byte{0, 0, 0, 99})
	})
	db.Close()
	if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Fatalf("Open(newer file) = %v", err)
	}
}

func TestEventsAllOrNothing(t *testing.T) {
	s, _ := openStore(t, Options{})
	mustCreate(t, s, "h", hllSpec(10))
	mustCreate(t, s, "c", cmsSpec())
	before := map[string][]byte{"h": rawOf(t, s, "h"), "c": rawOf(t, s, "c")}
	bad := []sketch.Event{
		{ID: cms.IntID(1), Sketches: []string{"h", "c"}},
		{ID: cms.TextID("u"), Sketches: []string{"h", "nope"}},
	}
	if err := s.AddEvents(ctx, bad, false); sketch.KindOf(err) != sketch.NotFound || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("AddEvents with an unknown sketch = %v, want NotFound naming it", err)
	}
	invalid := []sketch.Event{{ID: cms.IntID(1), Sketches: []string{"h"}}, {ID: cms.TextID(string([]byte{0xff})), Sketches: []string{"c"}}}
	if err := s.AddEvents(ctx, invalid, false); sketch.KindOf(err) != sketch.Invalid {
		t.Fatalf("AddEvents with invalid UTF-8 for a CMS = %v, want Invalid", err)
	}
	for n, b := range before {
		if !slices.Equal(rawOf(t, s, n), b) {
			t.Errorf("%s changed by a refused batch", n)
		}
	}
	good := []sketch.Event{{ID: cms.IntID(1), Sketches: []string{"h", "c", "new"}}, {ID: cms.IntID(1), Sketches: []string{"c"}}}
	if err := s.AddEvents(ctx, good, true); err != nil {
		t.Fatal(err)
	}
	var est uint64
	s.ViewCMS(ctx, "c", func(c *cms.Sketch) error { est = c.EstimateInt(1); return nil })
	if est != 2 {
		t.Errorf("CMS count of 1 = %d, want 2", est)
	}
	if info, err := s.Describe(ctx, "new"); err != nil || info.Cardinality != 1 {
		t.Errorf("created sketch = %+v, %v", info, err)
	}
}

func TestMergeAndUnionInto(t *testing.T) {
	s, _ := openStore(t, Options{})
	r := rand.New(rand.NewPCG(3, 4))
	mustCreate(t, s, "a", hllSpec(12))
	mustCreate(t, s, "b", hllSpec(10))
	ha, hb := randomHashes(r, 5000), randomHashes(r, 5000)
	s.AddHashes(ctx, "a", ha, false)
	s.AddHashes(ctx, "b", hb, false)
	u, _, err := s.Union(ctx, []string{"a", "b"}, "a+b")
	if err != nil {
		t.Fatal(err)
	}
	if u.Params().Log2m != 10 {
		t.Errorf("union log2m = %d, want 10", u.Params().Log2m)
	}
	if got, want := rawOf(t, s, "a+b"), expectHLL(t, hllSpec(10).HLL, ha, hb); !slices.Equal(got, want) {
		t.Error("stored union differs from the sketch of both sets at log2m 10")
	}
	// Merging a smaller-log2m upload into a larger one is a conflict, and
	// changes nothing.
	small, _ := hll.New(hllSpec(10).HLL)
	small.AddHash(42)
	before := rawOf(t, s, "a")
	if err := s.MergeHLL(ctx, "a", small); sketch.KindOf(err) != sketch.Conflict {
		t.Fatalf("MergeHLL(smaller log2m) = %v, want Conflict", err)
	}
	if !slices.Equal(rawOf(t, s, "a"), before) {
		t.Error("refused merge changed the sketch")
	}
	big, _ := hll.New(hllSpec(14).HLL)
	big.AddHashes(hb, nil)
	if err := s.MergeHLL(ctx, "a", big); err != nil {
		t.Fatal(err)
	}
	if got, want := rawOf(t, s, "a"), expectHLL(t, hllSpec(12).HLL, ha, hb); !slices.Equal(got, want) {
		t.Error("merge of a folded upload differs from adding its ids")
	}
	mustCreate(t, s, "c", cmsSpec())
	if _, _, err := s.Union(ctx, []string{"a", "c"}, ""); sketch.KindOf(err) != sketch.Invalid {
		t.Errorf("Union(hll, cms) = %v, want Invalid", err)
	}
	f, err := s.FoldInto(ctx, "a", 8, 5, "a")
	if err != nil || f.Params().Log2m != 8 {
		t.Fatalf("FoldInto in place = %v, %v", f, err)
	}
	if info, _ := s.Describe(ctx, "a"); info.Spec.HLL.Log2m != 8 {
		t.Errorf("folded in place: log2m %d", info.Spec.HLL.Log2m)
	}
}

// TestConcurrentWriters: many goroutines add to shared and own sketches
// while others read and checkpoints run; nothing acknowledged is lost,
// in memory or after a crash.
func TestConcurrentWriters(t *testing.T) {
	s, path := openStore(t, Options{CheckpointInterval: 5 * time.Millisecond, CacheBytes: 64 << 10})
	const writers, rounds = 8, 40
	for i := range writers {
		mustCreate(t, s, fmt.Sprintf("own-%d", i), hllSpec(8+i%4))
	}
	mustCreate(t, s, "shared", hllSpec(12))
	mustCreate(t, s, "counts", cmsSpec())
	sent := make([][]uint64, writers)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 9))
			for range rounds {
				hs := randomHashes(r, 1+r.IntN(300))
				if err := s.AddHashes(ctx, "shared", hs, false); err != nil {
					t.Error(err)
					return
				}
				if err := s.AddHashes(ctx, fmt.Sprintf("own-%d", i), hs, false); err != nil {
					t.Error(err)
					return
				}
				if err := s.AddItems(ctx, "counts", []cms.Item{{ID: cms.IntID(int64(i)), Count: 1}}); err != nil {
					t.Error(err)
					return
				}
				sent[i] = append(sent[i], hs...)
			}
		}()
	}
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s.ViewHLL(ctx, []string{"shared", "own-1"}, func(hs []*hll.Sketch) error {
					_, err := hll.Union(hs...)
					return err
				})
				s.Raw(ctx, "own-2", nil)
				s.List(ctx, "own", "", 3)
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	check := func(s *DB) {
		t.Helper()
		for i := range writers {
			p := hllSpec(8 + i%4).HLL
			if got, want := rawOf(t, s, fmt.Sprintf("own-%d", i)), expectHLL(t, p, sent[i]); !slices.Equal(got, want) {
				t.Errorf("own-%d lost writes", i)
			}
		}
		if got, want := rawOf(t, s, "shared"), expectHLL(t, hllSpec(12).HLL, sent...); !slices.Equal(got, want) {
			t.Error("shared lost writes")
		}
		s.ViewCMS(ctx, "counts", func(c *cms.Sketch) error {
			if c.Total() != writers*rounds {
				t.Errorf("CMS total = %d, want %d", c.Total(), writers*rounds)
			}
			return nil
		})
	}
	check(s)
	crash(t, s)
	check(reopen(t, path, Options{CacheBytes: 64 << 10}))
}

// TestListPaging pages through sketches created before and after a
// checkpoint, with deletions not yet checkpointed.
func TestListPaging(t *testing.T) {
	s, _ := openStore(t, Options{CheckpointInterval: time.Hour})
	var want []string
	for i := range 25 {
		n := fmt.Sprintf("p:%03d", i)
		mustCreate(t, s, n, hllSpec(4))
		want = append(want, n)
		if i == 12 {
			s.Checkpoint(ctx)
		}
	}
	mustCreate(t, s, "q:other", hllSpec(4))
	for _, n := range []string{"p:003", "p:020"} {
		s.Delete(ctx, n)
		want = slices.DeleteFunc(want, func(w string) bool { return w == n })
	}
	var got []string
	after := ""
	for {
		page, more, err := s.List(ctx, "p:", after, 4)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range page {
			got = append(got, in.Name)
		}
		if !more {
			break
		}
		after = page[len(page)-1].Name
	}
	if !slices.Equal(got, want) {
		t.Fatalf("listed %v\nwant %v", got, want)
	}
}

func TestStats(t *testing.T) {
	s, path := openStore(t, Options{})
	spec := hllSpec(10)
	spec.Metric = true
	mustCreate(t, s, "m", spec)
	mustCreate(t, s, "plain", hllSpec(10))
	mustCreate(t, s, "c", cmsSpec())
	s.AddHashes(ctx, "m", []uint64{1 << 30, 2 << 30, 3 << 30}, false)
	check := func(s *DB) {
		t.Helper()
		counts := map[string]int{}
		s.SketchCounts(func(kind, rep string, n int) { counts[kind+"/"+rep] += n })
		if counts["hll/EXPLICIT"] != 1 || counts["hll/EMPTY"] != 1 || counts["cms/"] != 1 {
			t.Errorf("SketchCounts = %v", counts)
		}
		est := map[string]float64{}
		s.MetricEstimates(func(n string, v float64) { est[n] = v })
		if len(est) != 1 || est["m"] != 3 {
			t.Errorf("MetricEstimates = %v, want only m = 3", est)
		}
	}
	check(s)
	s.Close()
	check(reopen(t, path, Options{}))
}

// TestColdLoads: concurrent first reads of a sketch that is not cached
// share one load; an unreadable record fails every reader and leaves no
// entry behind, so a repaired record reads again.
func TestColdLoads(t *testing.T) {
	s, path := openStore(t, Options{})
	mustCreate(t, s, "cold", hllSpec(14))
	if err := s.AddHashes(ctx, "cold", randomHashes(rand.New(rand.NewPCG(1, 1)), 50000), false); err != nil {
		t.Fatal(err)
	}
	want := rawOf(t, s, "cold")
	s.Close()
	s = reopen(t, path, Options{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got := rawOf(t, s, "cold"); !slices.Equal(got, want) {
				t.Error("a concurrent cold read differs")
			}
		}()
	}
	wg.Wait()
	if entries, _ := s.CacheStats(); entries != 1 {
		t.Errorf("%d cache entries after reading one sketch", entries)
	}

	s.bdb.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketSketches).Put([]byte("broken"), []byte{1, 1, 0})
	})
	for range 3 {
		if _, err := s.Describe(ctx, "broken"); err == nil || sketch.KindOf(err) != sketch.Internal {
			t.Fatalf("Describe(unreadable) = %v, want an internal error", err)
		}
	}
	s.cacheMu.Lock()
	_, cached := s.entries["broken"]
	s.cacheMu.Unlock()
	if cached {
		t.Error("a failed load left an entry in the cache")
	}
	good := appendRecord(nil, &state{typ: sketch.TypeHLL, hll: mustHLL(t, hllSpec(10).HLL), created: time.Now(), updated: time.Now()})
	s.bdb.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketSketches).Put([]byte("broken"), good) })
	if _, err := s.Describe(ctx, "broken"); err != nil {
		t.Errorf("Describe after repair = %v", err)
	}
}

func mustHLL(tb testing.TB, p hll.Params) *hll.Sketch {
	tb.Helper()
	h, err := hll.New(p)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}
