package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

const bucketKeysName = "idempotency"

// fullStore makes a closed store holding a record of everything a store
// writes to its data file: sketches of several kinds, one flagged for
// /metrics and one expiring, a series and a bucket of it, and nkeys
// idempotency keys (one for each of nkeys adds).
func fullStore(tb testing.TB, nkeys int) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "sketchd.db")
	s, err := Open(path, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	mustCreate(tb, s, "h", hllSpec(11))
	mustCreate(tb, s, "m", sketch.Spec{Params: hllSpec(11).Params, Metric: true})
	mustCreate(tb, s, "x", sketch.Spec{Params: hllSpec(11).Params, Expiry: sketch.Expiry{After: time.Hour}})
	mustCreate(tb, s, "c", cmsSpec())
	if err := addHashes(s, "h", []uint64{1, 2, 3}, false); err != nil {
		tb.Fatal(err)
	}
	if err := addHashes(s, "m", []uint64{4, 5}, false); err != nil {
		tb.Fatal(err)
	}
	for i := range nkeys {
		kctx, _ := keyed(fmt.Sprintf("key-%02d", i))
		if _, err := s.Add(kctx, "c", storetest.Input{IDs: []cms.ID{cms.IntID(int64(i))}, Counts: []uint64{1}}, false); err != nil {
			tb.Fatal(err)
		}
	}
	spec := &series.Spec{Params: hllSpec(10).Params, TZ: "UTC", Levels: []series.LevelSpec{{Level: series.Hour, Retention: series.Duration{Days: 2}}}}
	if _, _, err := s.CreateSeries(ctx, "ser", spec); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.AddSeries(ctx, "ser", time.Now().Truncate(time.Hour), storetest.Input{Hashed: []uint64{1 << 20}}); err != nil {
		tb.Fatal(err)
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// copyStore copies the store at path (data file and log) to a new place.
func copyStore(tb testing.TB, path string) string {
	tb.Helper()
	dst := filepath.Join(tb.TempDir(), "sketchd.db")
	cp := func(from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	cp(path, dst)
	if err := os.MkdirAll(dst+".wal", 0o700); err != nil {
		tb.Fatal(err)
	}
	entries, err := os.ReadDir(path + ".wal")
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		cp(filepath.Join(path+".wal", e.Name()), filepath.Join(dst+".wal", e.Name()))
	}
	return dst
}

// fileRecord names one value of the data file: its bucket and key.
type fileRecord struct {
	bucket, key string
	n           int // the value's length
}

// fileRecords walks every bucket of the data file at path and returns
// every value in it: whatever a store writes, found in the file, not
// from a list.
func fileRecords(tb testing.TB, path string) []fileRecord {
	tb.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var out []fileRecord
	db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				if v == nil {
					tb.Fatalf("a nested bucket %q in %s", k, name)
				}
				out = append(out, fileRecord{string(name), string(k), len(v)})
				return nil
			})
		})
	})
	return out
}

// rewrite changes one record of the closed data file at path: its value
// to v (same key), or its key to k (same value).
func rewrite(tb testing.TB, path string, r fileRecord, k, v []byte) {
	tb.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(r.bucket))
		old := bytes.Clone(b.Get([]byte(r.key)))
		if v != nil {
			return b.Put([]byte(r.key), v)
		}
		if err := b.Delete([]byte(r.key)); err != nil {
			return err
		}
		return b.Put(k, old)
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// openOutcome opens the store at path as a start does and says what the
// open noticed: its refusal, the warnings it logged, or "" when it
// noticed nothing.
func openOutcome(tb testing.TB, path string) string {
	tb.Helper()
	var log logBuffer
	s, err := Open(path, Options{Logger: log.logger()})
	if err != nil {
		return "refused: " + err.Error()
	}
	if err := s.Close(); err != nil {
		tb.Fatalf("close: %v", err)
	}
	if strings.Contains(log.String(), `"level":"WARN"`) || strings.Contains(log.String(), `"level":"ERROR"`) {
		return "warned: " + log.String()
	}
	return ""
}

// checkOutcome runs CheckFiles on the store at path: the report's
// problems, or its refusal to check; "" when it found nothing.
func checkOutcome(path string) string {
	r, err := CheckFiles(path)
	switch {
	case err != nil:
		return "could not check: " + err.Error()
	case r.Clean():
		return ""
	}
	return r.String()
}

// TestCheckReadsWhatOpenReads: every value of every bucket of a data file
// holding every kind of record gets single-bit flips in its bytes and in
// its key. Whenever Open then refuses the store or logs a warning about
// it, CheckFiles on the same files, run first, must report damage (or
// refuse to check): what a start notices, the offline check notices too.
// Check must notice every flip, and a start every flip of an
// idempotency key record, which it cannot skip as it skips a damaged
// sketch. The records are found by walking the file, so a record kind
// added later is covered without a change here.
func TestCheckReadsWhatOpenReads(t *testing.T) {
	base := fullStore(t, 12)
	if got := checkOutcome(base); got != "" {
		t.Fatalf("check of the undamaged store: %s", got)
	}
	if got := openOutcome(t, copyStore(t, base)); got != "" {
		t.Fatalf("open of the undamaged store: %s", got)
	}
	recs := fileRecords(t, base)
	type tally struct{ flips, noticed, checked int }
	tallies := map[string]*tally{}
	for _, r := range recs {
		if tallies[r.bucket] == nil {
			tallies[r.bucket] = &tally{}
		}
		tl := tallies[r.bucket]
		var flips []string // "v<byte>" or "k<byte>"
		for _, at := range spread(r.n, 6) {
			flips = append(flips, fmt.Sprintf("v%d", at))
		}
		for _, at := range spread(len(r.key), 2) {
			flips = append(flips, fmt.Sprintf("k%d", at))
		}
		for i, f := range flips {
			path := copyStore(t, base)
			var at int
			fmt.Sscanf(f[1:], "%d", &at)
			bit := byte(1) << (i % 8)
			if f[0] == 'v' {
				v := storedBytes(t, path, r)
				v[at] ^= bit
				rewrite(t, path, r, nil, v)
			} else {
				k := []byte(r.key)
				k[at] ^= bit
				rewrite(t, path, r, k, nil)
			}
			where := fmt.Sprintf("%s %q, %s byte %d bit %d", r.bucket, r.key, map[byte]string{'v': "value", 'k': "key"}[f[0]], at, i%8)
			checked := checkOutcome(path)
			noticed := openOutcome(t, path)
			tl.flips++
			if noticed != "" {
				tl.noticed++
			}
			if checked != "" {
				tl.checked++
			}
			switch {
			case noticed != "" && checked == "":
				t.Errorf("%s: the start noticed it, check found no damage:\n%.600s", where, noticed)
			case checked == "":
				t.Errorf("%s: check found no damage", where)
			case noticed == "" && r.bucket == bucketKeysName:
				// A key damaged into another valid key would be taken: a
				// retry with the original would apply its write again.
				t.Errorf("%s: the start took a damaged idempotency key record", where)
			}
		}
	}
	for b, tl := range tallies {
		t.Logf("bucket %-15s %3d flips: the start noticed %3d, check %3d", b, tl.flips, tl.noticed, tl.checked)
	}
	if tallies[bucketKeysName] == nil || tallies[bucketKeysName].noticed == 0 {
		t.Errorf("no flip of an idempotency key was noticed by the start: the sweep does not reach them")
	}
}

// storedBytes returns a copy of r's value in the data file at path.
func storedBytes(tb testing.TB, path string, r fileRecord) []byte {
	tb.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var v []byte
	db.View(func(tx *bbolt.Tx) error {
		v = bytes.Clone(tx.Bucket([]byte(r.bucket)).Get([]byte(r.key)))
		return nil
	})
	return v
}

// spread returns up to k offsets in [0, n), first and last included.
func spread(n, k int) []int {
	if n <= k {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, k)
	for i := range out {
		out[i] = i * (n - 1) / (k - 1)
	}
	return out
}

// TestCheckReplaysTheLog: log records whose checksums match but whose
// operations do not apply (an add to a sketch that does not exist, a
// delta of the wrong kind or that does not decode, a logged record that
// does not decode, a flag on no sketch) stop a start; check reports each,
// naming the record, because it replays the log as the start does.
func TestCheckReplaysTheLog(t *testing.T) {
	base := fullStore(t, 0)
	r, err := CheckFiles(base)
	if err != nil || !r.Clean() {
		t.Fatalf("check of the undamaged store: %v %v", r, err)
	}
	now := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		name string
		body []byte
		want string
	}{
		{"add to no sketch", appendAdd(nil, "ghost", tagHLL, now, binary.AppendUvarint(nil, 0)), "no sketch to add to"},
		{"add of another kind", appendAdd(nil, "h", tagCMS, now, binary.AppendUvarint(nil, 0)), "kind tag"},
		{"add that does not decode", appendAdd(nil, "h", tagHLL, now, []byte{0xff}), `sketch "h"`},
		{"put that does not decode", append(binary.AppendUvarint(appendName(nil, opPut, "h"), 3), 9, 9, 9), `sketch "h"`},
		{"flag on no sketch", appendMetric(nil, "ghost", true), "no sketch to flag"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := copyStore(t, base)
			seg := filepath.Join(path+".wal", segmentName(1000))
			rec := frame(r.Checkpoint+1, append(binary.AppendUvarint(nil, 1), c.body...))
			if err := os.WriteFile(seg, rec, 0o600); err != nil {
				t.Fatal(err)
			}
			checked := checkOutcome(path)
			noticed := openOutcome(t, path)
			if !strings.HasPrefix(noticed, "refused") {
				t.Fatalf("the start took a record that does not apply: %q", noticed)
			}
			for _, w := range []string{"the log record at offset 0 (LSN", "do not apply", c.want, "sketchd refuses to start"} {
				if !strings.Contains(checked, w) {
					t.Errorf("check report lacks %q:\n%s", w, checked)
				}
			}
		})
	}
}
