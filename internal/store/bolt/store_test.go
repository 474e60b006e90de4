package bolt

import (
	"context"
	"errors"
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
	"github.com/sketchd/sketchd/internal/store/storetest"
	"github.com/sketchd/sketchd/migrations"
)

var ctx = context.Background()

// openStore opens a store in a temporary directory; on cleanup it closes
// it and checks the store's files (Check): a test that leaves damage on
// purpose removes it before it ends.
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
		if err := s.Close(); err != nil && !errors.Is(err, ErrCrashed) {
			tb.Errorf("Close: %v", err)
		}
		checkFile(tb, path)
	})
	return s
}

// checkFile runs Check on a closed store: bbolt's consistency check, every
// record's checksum and decoding, and the log.
func checkFile(tb testing.TB, path string) {
	tb.Helper()
	if err := Check(path); err != nil {
		tb.Errorf("store check: %v", err)
	}
}

// crash abandons s as a kill -9 would after its acknowledged writes.
func crash(tb testing.TB, s *DB) { s.Crash() }

func hllParams(log2m int) hll.Params {
	p := hll.DefaultParams()
	p.Log2m = log2m
	return p
}

func hllSpec(log2m int) sketch.Spec {
	return sketch.Spec{Params: sketch.HLLParams{Params: hllParams(log2m)}}
}

func cmsSpec() sketch.Spec {
	return sketch.Spec{Params: sketch.CMSParams{Params: cms.Params{Width: 272, Depth: 5, TopK: 5}}}
}

// addHashes adds pre-hashed values to name.
func addHashes(s *DB, name string, hs []uint64, create bool) error {
	_, err := s.Add(ctx, name, storetest.Input{Hashed: hs}, create)
	return err
}

// addItems adds counted ids to the Count-Min name.
func addItems(s *DB, name string, items []cms.Item) error {
	in := storetest.Input{Counts: []uint64{}}
	for _, it := range items {
		in.IDs = append(in.IDs, it.ID)
		in.Counts = append(in.Counts, it.Count)
	}
	_, err := s.Add(ctx, name, in, false)
	return err
}

// viewCMS runs fn with the Count-Min name.
func viewCMS(s *DB, name string, fn func(*cms.Sketch) error) error {
	return s.View(ctx, []string{name}, func(sks []sketch.Sketch) error {
		c, _ := sketch.CMSOf(sks[0])
		return fn(c)
	})
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
	var b []byte
	err := s.View(ctx, []string{name}, func(sks []sketch.Sketch) error {
		b = sks[0].AppendBinary(nil)
		return nil
	})
	if err != nil {
		tb.Fatalf("View(%s): %v", name, err)
	}
	return b
}

func mustCreate(tb testing.TB, s *DB, name string, spec sketch.Spec) {
	tb.Helper()
	if _, _, err := s.Create(ctx, name, spec); err != nil {
		tb.Fatalf("Create(%s): %v", name, err)
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
			if err := addHashes(s, "h", h1, false); err != nil {
				t.Fatal(err)
			}
			if err := addHashes(s, "auto", h2, true); err != nil {
				t.Fatal(err)
			}
			items := []cms.Item{{ID: cms.IntID(7), Count: 3}, {ID: cms.TextID("x"), Count: 2}}
			if err := addItems(s, "c", items); err != nil {
				t.Fatal(err)
			}
			if mode == "checkpoint then crash" {
				if err := s.Checkpoint(ctx); err != nil {
					t.Fatal(err)
				}
				// More after the checkpoint: replay must add these exactly once.
				if err := addItems(s, "c", items); err != nil {
					t.Fatal(err)
				}
			}
			if err := addItems(s, "c", items[:1]); err != nil {
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
			if got, want := rawOf(t, s, "h"), expectHLL(t, hllParams(11), h1); !slices.Equal(got, want) {
				t.Error("h is not the sketch of its hashes")
			}
			var est uint64
			viewCMS(s, "c", func(c *cms.Sketch) error { est = c.EstimateInt(7); return nil })
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
	if err := addHashes(s, "h", []uint64{1 << 20, 2 << 20}, false); err != nil {
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
	os.Remove(bad)
	os.Remove(good)
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

func TestStats(t *testing.T) {
	s, path := openStore(t, Options{})
	spec := hllSpec(10)
	spec.Metric = true
	mustCreate(t, s, "m", spec)
	mustCreate(t, s, "plain", hllSpec(10))
	mustCreate(t, s, "c", cmsSpec())
	addHashes(s, "m", []uint64{1 << 30, 2 << 30, 3 << 30}, false)
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
	if err := addHashes(s, "cold", randomHashes(rand.New(rand.NewPCG(1, 1)), 50000), false); err != nil {
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
		if _, err := s.Describe(ctx, "broken"); err == nil || sketch.KindOf(err) != sketch.Damaged {
			t.Fatalf("Describe(unreadable) = %v, want a Damaged error", err)
		}
	}
	s.cacheMu.Lock()
	_, cached := s.entries["broken"]
	s.cacheMu.Unlock()
	if cached {
		t.Error("a failed load left an entry in the cache")
	}
	good := appendRecord(nil, "broken", &state{sk: sketch.NewHLL(mustHLL(t, hllParams(10))), created: time.Now(), updated: time.Now()})
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
