package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/internal/archive"
	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// TestBackupRefusesDamagedValue: a stored record that fails its checksum
// fails the backup with a Damaged error naming it; it is never archived.
func TestBackupRefusesDamagedValue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sketchd.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, n := range []string{"a", "victim", "z"} {
		if _, _, err := s.Create(ctx, n, hllSpec(11)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rewriteStored(t, path, "victim", func(v []byte) []byte { v[len(v)-6] ^= 1; return v })
	// Not reopen: its cleanup checks the file, which is damaged on purpose.
	obs := &countingObserver{}
	if s, err = Open(path, Options{CheckpointInterval: time.Hour, Observer: obs}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w, _ := archive.NewWriter(io.Discard, archive.Header{})
	err = s.Backup(ctx, w)
	if !errors.Is(err, errChecksum) || sketch.KindOf(err) != sketch.Damaged || !strings.Contains(err.Error(), `"victim"`) {
		t.Fatalf("backup over a damaged record: %v, want a Damaged checksum error naming it", err)
	}
	if w.Counts().Sketches != 1 {
		t.Errorf("archived %d sketches before the damaged one, want 1 (a)", w.Counts().Sketches)
	}

	// Writes only in the log, on both sides of it, do not hide it.
	for _, n := range []string{"a", "z"} {
		if err := addHashes(s, n, []uint64{1 << 60, 1 << 61}, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := backupBytes(t, s); !errors.Is(err, errChecksum) || !strings.Contains(err.Error(), `"victim"`) {
		t.Fatalf("backup over a damaged record with changes in the log: %v, want a checksum error naming it", err)
	}

	// Deleted (in the log only), it is no longer read.
	if err := s.Delete(ctx, "victim"); err != nil {
		t.Fatal(err)
	}
	before := untouched(t, s, obs)
	b, err := backupBytes(t, s)
	if err != nil {
		t.Fatalf("backup once the damaged record was deleted: %v", err)
	}
	var names []string
	for _, rec := range archiveRecords(t, b) {
		names = append(names, rec.Sketch.Name)
	}
	if fmt.Sprint(names) != "[a z]" {
		t.Errorf("archived %v, want [a z]", names)
	}
	if after := untouched(t, s, obs); after != before {
		t.Errorf("the backup changed the files:\nbefore %s\nafter  %s", before, after)
	}
	if n := obs.checkpoints.Load(); n != 0 {
		t.Errorf("%d checkpoints ran since the open, want none", n)
	}
}

// TestBackupRefusesUndecodableValue: a stored FULL HLL whose record
// checksum matches but whose body is a byte short (a record written
// wrong, not damaged after) fails the backup with a Damaged error naming
// it: the backup checks that each value would decode, without unpacking
// it.
func TestBackupRefusesUndecodableValue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sketchd.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, n := range []string{"a", "victim"} {
		if _, _, err := s.Create(ctx, n, hllSpec(11)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Add(ctx, n, storetest.Ints(0, 20000), false); err != nil {
			t.Fatal(err)
		}
	}
	if in, err := s.Describe(ctx, "victim"); err != nil || in.Representation != "FULL" {
		t.Fatalf("victim: %+v, %v; want FULL", in, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rewriteStored(t, path, "victim", func(v []byte) []byte {
		short := v[:len(v)-recordCRCLen-1]
		return binary.BigEndian.AppendUint32(short, recordCRC("victim", short))
	})
	if s, err = Open(path, Options{CheckpointInterval: time.Hour}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w, _ := archive.NewWriter(io.Discard, archive.Header{})
	err = s.Backup(ctx, w)
	if errors.Is(err, errChecksum) || sketch.KindOf(err) != sketch.Damaged || !strings.Contains(err.Error(), `"victim"`) || !errors.Is(err, hll.ErrTooShort) {
		t.Fatalf("backup over an undecodable record: %v, want a Damaged error naming it, for a body too short", err)
	}
}

// checkpointsUntil runs checkpoints of s back to back until stop is
// closed, failing t on the first error.
func checkpointsUntil(t *testing.T, s *DB, stop <-chan struct{}) {
	ctx := context.Background()
	for {
		select {
		case <-stop:
			return
		default:
		}
		if err := s.Checkpoint(ctx); err != nil {
			t.Error(err)
			return
		}
	}
}

// rewriteStored replaces the stored record of the sketch name in the
// data file of a stopped store at path with what edit makes of a copy
// of it.
func rewriteStored(t *testing.T, path, name string, edit func([]byte) []byte) {
	t.Helper()
	bdb, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSketches)
		return b.Put([]byte(name), edit(bytes.Clone(b.Get([]byte(name)))))
	})
	if cerr := bdb.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestBackupRefusesDamagedCopy: a backup checks its copy of a changed
// sketch as it checks bbolt's records. The copy of a sketch last put is
// the record its log holds (kept so that it is not encoded again); one
// damaged in memory fails the backup, naming it.
func TestBackupRefusesDamagedCopy(t *testing.T) {
	s, _ := openStore(t, Options{CheckpointInterval: time.Hour})
	mustCreate(t, s, "a", hllSpec(11))
	mustCreate(t, s, "victim", hllSpec(11))
	e, err := s.acquire("victim")
	if err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	rec := appendRecord(nil, e.name, e.st)
	rec[len(rec)-6] ^= 1
	e.enc, e.encGen = rec, e.gen
	e.mu.Unlock()
	_, err = backupBytes(t, s)
	e.mu.Lock()
	e.enc = nil
	e.mu.Unlock()
	s.release(e)
	if !errors.Is(err, errChecksum) || sketch.KindOf(err) != sketch.Damaged || !strings.Contains(err.Error(), `"victim"`) {
		t.Fatalf("backup over a damaged copy: %v, want a Damaged checksum error naming it", err)
	}
}

// countingObserver counts checkpoints.
type countingObserver struct{ checkpoints atomic.Int64 }

func (o *countingObserver) ObserveCommit(int, int, time.Duration) {}
func (o *countingObserver) ObserveCheckpoint(int, time.Duration)  { o.checkpoints.Add(1) }

// untouched is what a backup must leave as it was: the data file's last
// transaction, its checkpoint position, the log's segments and their
// sizes, and the checkpoints run.
func untouched(tb testing.TB, s *DB, obs *countingObserver) string {
	tb.Helper()
	var txID int
	var cp []byte
	if err := s.bdb.View(func(tx *bbolt.Tx) error {
		txID, cp = tx.ID(), bytes.Clone(tx.Bucket(bucketMeta).Get(keyCheckpoint))
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		tb.Fatal(err)
	}
	out := fmt.Sprintf("data file tx %d, size %d, checkpoint %x, %d checkpoints; log:", txID, fi.Size(), cp, obs.checkpoints.Load())
	des, err := os.ReadDir(s.walDir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, de := range des {
		fi, err := de.Info()
		if err != nil {
			tb.Fatal(err)
		}
		out += fmt.Sprintf(" %s %d", de.Name(), fi.Size())
	}
	return out
}

// backupBytes takes a backup of s into memory.
func backupBytes(tb testing.TB, s *DB) ([]byte, error) {
	tb.Helper()
	var buf bytes.Buffer
	w, err := archive.NewWriter(&buf, archive.Header{Source: archive.SourceBolt})
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Backup(ctx, w); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes(), nil
}

// archiveRecords reads every record of the archive b.
func archiveRecords(tb testing.TB, b []byte) []*archive.Record {
	tb.Helper()
	r, err := archive.NewReader(bytes.NewReader(b))
	if err != nil {
		tb.Fatal(err)
	}
	var recs []*archive.Record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return recs
		}
		if err != nil {
			tb.Fatal(err)
		}
		recs = append(recs, rec)
	}
}

// TestBackupWritesNothing: a backup taken while the log holds writes no
// checkpoint has copied yet (ids added to a sketch, a sketch created and
// one deleted, a bucket of a series changed and one created, a second
// series deleted, an idempotency key) holds every one of them, and
// writes nothing: no checkpoint runs, the data file's last transaction
// and the log stay as they were. Checkpointed and backed up again, the
// store gives the same archive, byte for byte.
func TestBackupWritesNothing(t *testing.T) {
	obs := &countingObserver{}
	s, _ := openStore(t, Options{CheckpointInterval: time.Hour, Observer: obs})
	r := rand.New(rand.NewPCG(1, 2))
	p := hllParams(11)
	hsA, hsA2, hsD, hsC := randomHashes(r, 300), randomHashes(r, 300), randomHashes(r, 40), randomHashes(r, 20)
	for _, n := range []string{"a", "b", "c"} {
		mustCreate(t, s, n, hllSpec(11))
	}
	if err := addHashes(s, "a", hsA, false); err != nil {
		t.Fatal(err)
	}
	if err := addHashes(s, "c", hsC, false); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "k", cmsSpec())
	at := time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC)
	spec := &series.Spec{Params: sketch.HLLParams{Params: hllParams(11)}, TZ: "UTC", LateLimit: series.Duration{Years: 100},
		Levels: []series.LevelSpec{{Level: series.Hour, Retention: series.Duration{Years: 100}}, {Level: series.Day, Retention: series.Duration{Years: 100}}}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"century", "gone"} {
		if _, _, err := s.CreateSeries(ctx, n, spec); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddSeries(ctx, n, at, storetest.Ints(1, 10)); err != nil {
			t.Fatal(err)
		}
	}
	kctx, _ := keyed("before")
	if _, err := s.Add(kctx, "k", oneItem, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}

	// Acknowledged, only in the log.
	if err := addHashes(s, "a", hsA2, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := addHashes(s, "d", hsD, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddSeries(ctx, "century", at, storetest.Ints(4, 20)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddSeries(ctx, "century", at.Add(2*time.Hour), storetest.Ints(1, 5)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSeries(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateSeries(ctx, "later", spec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddSeries(ctx, "later", at, storetest.Ints(7, 9)); err != nil {
		t.Fatal(err)
	}
	kctx, _ = keyed("after")
	if _, err := s.Add(kctx, "k", oneItem, false); err != nil {
		t.Fatal(err)
	}
	if s.unsettled.Load() == 0 {
		t.Fatal("nothing waits for a checkpoint: the test needs writes only in the log")
	}

	before := untouched(t, s, obs)
	b, err := backupBytes(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if after := untouched(t, s, obs); after != before {
		t.Errorf("the backup changed the files:\nbefore %s\nafter  %s", before, after)
	}

	var sketches, defs, buckets, keys []string
	for _, rec := range archiveRecords(t, b) {
		switch rec.Type {
		case archive.TypeSketch:
			sketches = append(sketches, rec.Sketch.Name)
			want := map[string][]byte{"a": expectHLL(t, p, hsA, hsA2), "c": expectHLL(t, p, hsC), "d": expectHLL(t, hll.DefaultParams(), hsD)}[rec.Sketch.Name]
			if want != nil && !bytes.Equal(rec.Sketch.Bytes, want) {
				t.Errorf("sketch %q archived as %x, want %x", rec.Sketch.Name, rec.Sketch.Bytes, want)
			}
		case archive.TypeSeries:
			defs = append(defs, rec.Series.Name)
		case archive.TypeBucket:
			buckets = append(buckets, fmt.Sprintf("%s/%s/%s", rec.Bucket.Series, rec.Bucket.Level, rec.Bucket.Start.Format(time.DateTime)))
			var live []byte
			level, _ := series.ParseLevel(rec.Bucket.Level)
			viewRunBytes(t, s, rec.Bucket.Series, level, rec.Bucket.Start, &live)
			if !bytes.Equal(rec.Bucket.Bytes, live) {
				t.Errorf("bucket %s of %q archived as %x, the store reads %x", rec.Bucket.Start, rec.Bucket.Series, rec.Bucket.Bytes, live)
			}
		case archive.TypeKey:
			keys = append(keys, rec.Key.Key)
		}
	}
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"sketches", sketches, []string{"a", "c", "d", "k"}},
		{"series", defs, []string{"century", "later"}},
		{"buckets", buckets, []string{"century/day/2026-03-01 00:00:00", "century/hour/2026-03-01 10:00:00", "century/hour/2026-03-01 12:00:00",
			"later/day/2026-03-01 00:00:00", "later/hour/2026-03-01 10:00:00"}},
		{"keys", keys, []string{"after", "before"}},
	} {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("archived %s %v, want %v", c.what, c.got, c.want)
		}
	}

	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	b2, err := backupBytes(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, b2) {
		t.Errorf("the backup from the log differs from the one after a checkpoint: %d and %d bytes", len(b), len(b2))
	}
}

// viewRunBytes reads the bucket of level l of the series name starting
// at start.
func viewRunBytes(tb testing.TB, s *DB, name string, l series.Level, start time.Time, out *[]byte) {
	tb.Helper()
	run := series.Run{Level: l, First: start, Last: start, Count: 1}
	err := s.ViewSeries(ctx, name, func(*series.Spec) ([]series.Run, error) { return []series.Run{run}, nil }, func(_ *series.Spec, bs []series.Bucket) error {
		if len(bs) != 1 {
			return fmt.Errorf("%d buckets at %s", len(bs), start)
		}
		*out = bs[0].Sketch.AppendBinary(nil)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// TestBackupDuringCheckpoints: writers add one id to two sketches in one
// write while checkpoints run back to back and backups are taken. Each
// archive holds the two alike (one moment, whichever checkpoint committed
// around its start) and every id acknowledged before the backup began
// (EXPLICIT HLLs: exact counts).
func TestBackupDuringCheckpoints(t *testing.T) {
	s, _ := openStore(t, Options{CheckpointInterval: time.Hour})
	mustCreate(t, s, "x", hllSpec(16))
	mustCreate(t, s, "y", hllSpec(16))
	var acked atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		close(stop)
		wg.Wait()
		t.Logf("%d writes acknowledged", acked.Load())
	}()
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 4000; i += 4 {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.AddEvents(ctx, []sketch.Event{{ID: cms.IntID(int64(i)), Sketches: []string{"x", "y"}}}, false); err != nil {
					t.Error(err)
					return
				}
				acked.Add(1)
			}
		}()
	}
	wg.Go(func() { checkpointsUntil(t, s, stop) })
	kind, err := sketch.Lookup(sketch.TypeHLL)
	if err != nil {
		t.Fatal(err)
	}
	for acked.Load() < 200 {
		time.Sleep(time.Millisecond)
	}
	for range 30 {
		least := acked.Load()
		b, err := backupBytes(t, s)
		if err != nil {
			t.Fatal(err)
		}
		est := map[string]float64{}
		for _, rec := range archiveRecords(t, b) {
			sk, err := kind.Decode(rec.Sketch.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if sk.Representation() != "EXPLICIT" {
				t.Fatalf("%s is %s; the test needs exact counts", rec.Sketch.Name, sk.Representation())
			}
			est[rec.Sketch.Name] = sk.Estimate()
		}
		if est["x"] != est["y"] || est["x"] < float64(least) {
			t.Fatalf("archived x counts %v, y %v, with %d acknowledged before the backup", est["x"], est["y"], least)
		}
	}
}

// TestBackupLeavesOutDroppedKeys: an idempotency key the table dropped
// since the last checkpoint (here past Options.KeyBytes) is still in
// bbolt until the next one; a backup leaves it out as that checkpoint
// would, and keeps the key that replaced it, which is only in the log.
func TestBackupLeavesOutDroppedKeys(t *testing.T) {
	s, _ := openStore(t, Options{CheckpointInterval: time.Hour, KeyBytes: 1})
	mustCreate(t, s, "k", cmsSpec())
	kctx, _ := keyed("one")
	if _, err := s.Add(kctx, "k", oneItem, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	kctx, _ = keyed("two")
	if _, err := s.Add(kctx, "k", oneItem, false); err != nil {
		t.Fatal(err)
	}
	if n := storedKeyCount(t, s); n != 1 {
		t.Fatalf("bbolt holds %d keys, want 1 (one): the test needs the dropped key still there", n)
	}
	b, err := backupBytes(t, s)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, rec := range archiveRecords(t, b) {
		if rec.Type == archive.TypeKey {
			keys = append(keys, rec.Key.Key)
		}
	}
	if fmt.Sprint(keys) != "[two]" {
		t.Errorf("archived keys %v, want [two]", keys)
	}
}

// storedKeyCount counts the idempotency keys in s's bbolt file.
func storedKeyCount(tb testing.TB, s *DB) int {
	tb.Helper()
	n := 0
	if err := s.bdb.View(func(tx *bbolt.Tx) error {
		n = tx.Bucket(bucketKeys).Stats().KeyN
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return n
}
