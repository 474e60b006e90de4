package migrations

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

var update = flag.Bool("update", false, "rewrite the fixture files in testdata")

// v1Records are the records of testdata/v1.db: the metric flag is byte 2.
var v1Records = map[string][]byte{
	"campaign:1":   {1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0x11, 0x8e, 0x7f},
	"campaign:2":   {1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0x11, 0x8e, 0x7f},
	"daily.visits": {1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 4, 0x11, 0x8b, 0x7f},
}

// writeV1Fixture builds a version-1 file the way a version-1 binary left it.
func writeV1Fixture(t *testing.T, path string) {
	db := openDB(t, path)
	err := db.Update(func(tx *bolt.Tx) error {
		if err := v1Layout(tx); err != nil {
			return err
		}
		if err := setVersion(tx, 1); err != nil {
			return err
		}
		b := tx.Bucket([]byte(BucketSketches))
		for name, rec := range v1Records {
			if err := b.Put([]byte(name), rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
}

func openDB(tb testing.TB, path string) *bolt.DB {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// copyFixture copies a testdata file into a temporary directory.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("testdata", name)
	if *update && name == "v1.db" {
		os.Remove(src)
		writeV1Fixture(t, src)
	}
	if *update && name == "v3.db" {
		os.Remove(src)
		writeV3Fixture(t, src)
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatalf("%v (regenerate with go test ./migrations -update)", err)
	}
	defer in.Close()
	dst := filepath.Join(t.TempDir(), name)
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

func run(t *testing.T, db *bolt.DB) (int, int, error) {
	t.Helper()
	var from, to int
	err := db.Update(func(tx *bolt.Tx) error {
		var err error
		from, to, err = Run(tx)
		return err
	})
	return from, to, err
}

// runUpTo runs the steps up to version last.
func runUpTo(t *testing.T, db *bolt.DB, last int) (int, int, error) {
	t.Helper()
	var from, to int
	err := db.Update(func(tx *bolt.Tx) error {
		var err error
		from, to, err = runTo(tx, last)
		return err
	})
	return from, to, err
}

func TestStepsAreConsecutive(t *testing.T) {
	for i, s := range Steps() {
		if s.Version != i+1 || s.Name == "" || s.Up == nil {
			t.Errorf("step %d = {%d %q}, want version %d with a name and a function", i, s.Version, s.Name, i+1)
		}
	}
}

func TestNewFile(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "new.db"))
	from, to, err := run(t, db)
	if err != nil || from != 0 || to != Latest() {
		t.Fatalf("Run on a new file = %d, %d, %v; want 0, %d, nil", from, to, err, Latest())
	}
	db.View(func(tx *bolt.Tx) error {
		for _, b := range []string{BucketMeta, BucketSketches, BucketMetric, BucketSeries, BucketBuckets, BucketIdempotency} {
			if tx.Bucket([]byte(b)) == nil {
				t.Errorf("bucket %s missing", b)
			}
		}
		return nil
	})
	// Running again is a no-op.
	if from, to, err := run(t, db); err != nil || from != Latest() || to != Latest() {
		t.Errorf("second Run = %d, %d, %v", from, to, err)
	}
}

func TestV2IndexesMetricSketches(t *testing.T) {
	db := openDB(t, copyFixture(t, "v1.db"))
	from, to, err := runUpTo(t, db, 4)
	if err != nil || from != 1 || to != 4 {
		t.Fatalf("Run on v1.db = %d, %d, %v; want 1, 4, nil", from, to, err)
	}
	err = db.View(func(tx *bolt.Tx) error {
		var indexed []string
		tx.Bucket([]byte(BucketMetric)).ForEach(func(k, _ []byte) error {
			indexed = append(indexed, string(k))
			return nil
		})
		if got, want := strings.Join(indexed, ","), "campaign:1,daily.visits"; got != want {
			t.Errorf("metric index = %s, want %s", got, want)
		}
		b := tx.Bucket([]byte(BucketSketches))
		for name, rec := range v1Records {
			if got := b.Get([]byte(name)); !bytes.Equal(got, rec) {
				t.Errorf("record %s changed to %x", name, got)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRefusesNewerFile(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "future.db"))
	db.Update(func(tx *bolt.Tx) error { return setVersion(tx, Latest()+1) })
	_, _, err := run(t, db)
	if err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Fatalf("Run on a newer file = %v, want a refusal", err)
	}
}

func TestRejectsCorruptVersion(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "bad.db"))
	db.Update(func(tx *bolt.Tx) error {
		b, _ := tx.CreateBucketIfNotExists([]byte(BucketMeta))
		return b.Put([]byte(KeyVersion), []byte{1})
	})
	if _, _, err := run(t, db); err == nil {
		t.Fatal("Run accepted a 1-byte schema version")
	}
}

// TestV3AddsSeriesBuckets upgrades a version-2 file (the v1 fixture after
// step 2): both series buckets appear and nothing else changes.
func TestV3AddsSeriesBuckets(t *testing.T) {
	db := openDB(t, copyFixture(t, "v1.db"))
	err := db.Update(func(tx *bolt.Tx) error {
		if err := v2MetricIndex(tx); err != nil {
			return err
		}
		return setVersion(tx, 2)
	})
	if err != nil {
		t.Fatal(err)
	}
	from, to, err := runUpTo(t, db, 4)
	if err != nil || from != 2 || to != 4 {
		t.Fatalf("Run on a version-2 file = %d, %d, %v; want 2, 4, nil", from, to, err)
	}
	db.View(func(tx *bolt.Tx) error {
		for _, b := range []string{BucketSeries, BucketBuckets} {
			if tx.Bucket([]byte(b)) == nil {
				t.Errorf("bucket %s missing", b)
			}
		}
		b := tx.Bucket([]byte(BucketSketches))
		for name, rec := range v1Records {
			if got := b.Get([]byte(name)); !bytes.Equal(got, rec) {
				t.Errorf("record %s changed to %x", name, got)
			}
		}
		return nil
	})
}

// writeV3Fixture builds a version-3 file the way a version-3 binary left
// it: the version-1 records, their metric index and the series buckets.
func writeV3Fixture(t *testing.T, path string) {
	writeV1Fixture(t, path)
	db := openDB(t, path)
	err := db.Update(func(tx *bolt.Tx) error {
		if err := v2MetricIndex(tx); err != nil {
			return err
		}
		if err := v3Series(tx); err != nil {
			return err
		}
		return setVersion(tx, 3)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
}

func storeID(t *testing.T, db *bolt.DB) []byte {
	t.Helper()
	var id []byte
	db.View(func(tx *bolt.Tx) error {
		id = bytes.Clone(tx.Bucket([]byte(BucketMeta)).Get([]byte(KeyStoreID)))
		return nil
	})
	return id
}

func TestV4GivesTheStoreAnIdentity(t *testing.T) {
	db := openDB(t, copyFixture(t, "v3.db"))
	if id := storeID(t, db); id != nil {
		t.Fatalf("v3.db already has a store id %x", id)
	}
	from, to, err := runUpTo(t, db, VersionStoreID)
	if err != nil || from != 3 || to != VersionStoreID {
		t.Fatalf("Run on v3.db = %d, %d, %v; want 3, %d, nil", from, to, err, VersionStoreID)
	}
	id := storeID(t, db)
	if len(id) != 16 || bytes.Equal(id, make([]byte, 16)) {
		t.Fatalf("store id = %x, want 16 random bytes", id)
	}
	db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(BucketSketches))
		for name, rec := range v1Records {
			if got := b.Get([]byte(name)); !bytes.Equal(got, rec) {
				t.Errorf("record %s changed to %x", name, got)
			}
		}
		if tx.Bucket([]byte(BucketMetric)).Get([]byte("campaign:1")) == nil {
			t.Error("metric index lost")
		}
		return nil
	})
	// Another file upgraded from the same fixture is another store.
	other := openDB(t, copyFixture(t, "v3.db"))
	runUpTo(t, other, VersionStoreID)
	if bytes.Equal(storeID(t, other), id) {
		t.Error("two files got the same store id")
	}
	// The step keeps an identity it finds.
	db.Update(func(tx *bolt.Tx) error { return v4StoreIdentity(tx) })
	if got := storeID(t, db); !bytes.Equal(got, id) {
		t.Errorf("running the step again changed the id to %x", got)
	}
}

// v5Want is what step 5 must make of a format-1 record kept under the
// entry key key: format byte 2 and the CRC-32C of key and record.
func v5Want(key, rec []byte) []byte {
	out := append([]byte{2}, rec[1:]...)
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	h.Write(key)
	h.Write(out)
	return h.Sum(out)
}

// TestV5ChecksumsEveryRecord upgrades testdata/v4.db, the data file a
// version-4 sketchd left (cmd/sketchd/testdata/v4/make.sh), with more
// records than one chunk of the step, one that is unreadable already and
// one nested bucket: every format-1 record in sketches, series and
// series_buckets gains its checksum, anything else is left as it was, and
// running the step again changes nothing.
func TestV5ChecksumsEveryRecord(t *testing.T) {
	db := openDB(t, copyFixture(t, "v4.db"))
	prefixes := map[string]string{BucketSketches: "", BucketSeries: "\x01", BucketBuckets: "\x02"}
	before := map[string]map[string][]byte{}
	var lsn []byte
	err := db.Update(func(tx *bolt.Tx) error {
		if v, _ := Version(tx); v != 4 {
			t.Fatalf("v4.db has version %d", v)
		}
		sk := tx.Bucket([]byte(BucketSketches))
		rec := bytes.Clone(sk.Get([]byte("hll-explicit")))
		for i := range 3000 {
			if err := sk.Put([]byte(fmt.Sprintf("many:%04d", i)), rec); err != nil {
				return err
			}
		}
		if err := sk.Put([]byte("unreadable"), []byte{7, 7}); err != nil {
			return err
		}
		if _, err := sk.CreateBucket([]byte("nested")); err != nil {
			return err
		}
		for b := range prefixes {
			before[b] = map[string][]byte{}
			tx.Bucket([]byte(b)).ForEach(func(k, v []byte) error {
				before[b][string(k)] = bytes.Clone(v)
				return nil
			})
		}
		lsn = bytes.Clone(tx.Bucket([]byte(BucketMeta)).Get([]byte("checkpoint_lsn")))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(before[BucketSeries]) == 0 || len(before[BucketBuckets]) == 0 || len(lsn) != 8 {
		t.Fatalf("the fixture lacks series (%d), buckets (%d) or a checkpoint position (%x)", len(before[BucketSeries]), len(before[BucketBuckets]), lsn)
	}
	if from, to, err := runUpTo(t, db, 5); err != nil || from != 4 || to != 5 {
		t.Fatalf("Run on v4.db = %d, %d, %v; want 4, 5, nil", from, to, err)
	}
	check := func() {
		t.Helper()
		db.View(func(tx *bolt.Tx) error {
			for b, prefix := range prefixes {
				n := 0
				tx.Bucket([]byte(b)).ForEach(func(k, v []byte) error {
					n++
					old := before[b][string(k)]
					want := old
					if len(old) >= 19 && old[0] == 1 {
						want = v5Want(append([]byte(prefix), k...), old)
					}
					if !bytes.Equal(v, want) {
						t.Errorf("%s %q = %x, want %x", b, k, v, want)
					}
					return nil
				})
				if n != len(before[b]) {
					t.Errorf("bucket %s holds %d keys, had %d", b, n, len(before[b]))
				}
			}
			got := tx.Bucket([]byte(BucketMeta)).Get([]byte("checkpoint_lsn"))
			if want := binary.BigEndian.AppendUint32(bytes.Clone(lsn), crc32.Checksum(lsn, crc32.MakeTable(crc32.Castagnoli))); !bytes.Equal(got, want) {
				t.Errorf("checkpoint_lsn = %x, want %x", got, want)
			}
			if tx.Bucket([]byte(BucketMetric)).Get([]byte("hll-sparse")) == nil {
				t.Error("the metric index lost hll-sparse")
			}
			return nil
		})
	}
	check()
	db.Update(func(tx *bolt.Tx) error { return v5Checksums(tx) })
	check()
}

// TestV6AddsIdempotencyBucket upgrades testdata/v4.db: step 6 adds the
// empty idempotency bucket, and the store identity stays.
func TestV6AddsIdempotencyBucket(t *testing.T) {
	db := openDB(t, copyFixture(t, "v4.db"))
	id := storeID(t, db)
	if len(id) != 16 {
		t.Fatalf("v4.db has a store id of %d bytes", len(id))
	}
	if from, to, err := runUpTo(t, db, 5); err != nil || from != 4 || to != 5 {
		t.Fatalf("Run on v4.db = %d, %d, %v; want 4, 5, nil", from, to, err)
	}
	db.View(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte(BucketIdempotency)) != nil {
			t.Fatal("a version-5 file already has the idempotency bucket")
		}
		return nil
	})
	from, to, err := runUpTo(t, db, 6)
	if err != nil || from != 5 || to != 6 {
		t.Fatalf("Run on a version-5 file = %d, %d, %v; want 5, 6, nil", from, to, err)
	}
	db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(BucketIdempotency))
		if b == nil {
			t.Fatal("bucket idempotency missing")
		}
		if k, _ := b.Cursor().First(); k != nil {
			t.Errorf("bucket idempotency holds %q, want nothing", k)
		}
		return nil
	})
	if got := storeID(t, db); !bytes.Equal(got, id) {
		t.Errorf("store id changed from %x to %x", id, got)
	}
}

// TestV7KeepsRecords upgrades testdata/v4.db to version 6, then to 7:
// step 7 only raises the version, every stored byte stays.
func TestV7AndV8KeepRecords(t *testing.T) {
	db := openDB(t, copyFixture(t, "v4.db"))
	if _, to, err := runUpTo(t, db, 6); err != nil || to != 6 {
		t.Fatalf("Run on v4.db up to 6 = %d, %v", to, err)
	}
	dump := func() map[string]string {
		m := map[string]string{}
		db.View(func(tx *bolt.Tx) error {
			return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
				return b.ForEach(func(k, v []byte) error {
					if string(name) != "meta" || string(k) != KeyVersion {
						m[string(name)+"/"+string(k)] = string(v)
					}
					return nil
				})
			})
		})
		return m
	}
	before := dump()
	if len(before) == 0 {
		t.Fatal("v4.db holds nothing to compare")
	}
	from, to, err := run(t, db)
	if err != nil || from != 6 || to != Latest() || Latest() != 8 {
		t.Fatalf("Run on a version-6 file = %d, %d, %v; want 6, 8, nil", from, to, err)
	}
	after := dump()
	if len(after) != len(before) {
		t.Fatalf("%d entries after steps 7 and 8, %d before", len(after), len(before))
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("entry %q changed in steps 7 and 8", k)
		}
	}
}
