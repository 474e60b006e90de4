package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// logBuffer collects a store's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(l, nil)) }

// damageRecords overwrites stored records of the closed file at path (nil:
// deletes one).
func damageRecords(tb testing.TB, path string, recs map[string][]byte) {
	tb.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		for k, v := range recs {
			put := tx.Bucket(bucketSketches).Put
			if v == nil {
				put = func(k, _ []byte) error { return tx.Bucket(bucketSketches).Delete(k) }
			}
			if err := put([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// sealed appends the checksum of rec (a record without one) kept under key.
func sealed(key string, rec []byte) []byte {
	return binary.BigEndian.AppendUint32(rec, recordCRC(key, rec))
}

// TestUnreadableRecordIsIsolated: a record that cannot be decoded (a bad
// header, a bad payload, a key of raw bytes) does not stop the store from
// opening, is skipped by List and reported in the log by a quoted name
// and the file, fails reads of it with an error naming both, and can be
// deleted, for good.
func TestUnreadableRecordIsIsolated(t *testing.T) {
	s, path := openStore(t, Options{})
	for _, n := range []string{"a", "bad-header", "bad-payload", "c"} {
		mustCreate(t, s, n, hllSpec(10))
	}
	s.Close()
	good := []byte{recordFormat, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2}
	damageRecords(t, path, map[string][]byte{
		"bad-header":   {7, 7},
		"bad-payload":  sealed("bad-payload", append(good, 0x99, 0x99)),
		"\xff\x00raw":  {1, 9, 0},
		"zz-untouched": sealed("zz-untouched", append(good, 0x11, 0x8e, 0x7f)),
	})
	var logs logBuffer
	s = reopen(t, path, Options{Logger: logs.logger()})
	for _, want := range []string{`"sketch":"\"bad-header\""`, `"sketch":"\"\\xff\\x00raw\""`, path} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log at open lacks %s:\n%s", want, logs.String())
		}
	}
	if strings.ContainsRune(logs.String(), 0xff) || strings.Contains(logs.String(), "\x00") {
		t.Error("the log holds raw key bytes")
	}
	infos, more, skipped, err := s.ListSkipping(ctx, "", "", 100)
	if err != nil || more {
		t.Fatalf("List = %v, %v", more, err)
	}
	if got, want := strings.Join(skipped, " "), `"bad-header" "bad-payload" "\xff\x00raw"`; got != want {
		t.Errorf("skipped %s, want %s", got, want)
	}
	var names []string
	for _, in := range infos {
		names = append(names, in.Name)
	}
	if got := strings.Join(names, ","); got != "a,c,zz-untouched" {
		t.Errorf("List = %s, want the readable sketches a,c,zz-untouched", got)
	}
	if n := s.UnreadableRecords(); n < 4 {
		t.Errorf("UnreadableRecords() = %d, want at least 4 (2 at open, 3 listed, bad-payload passes the header check)", n)
	}
	_, err = s.Describe(ctx, "bad-payload")
	if sketch.KindOf(err) != sketch.Damaged || !strings.Contains(err.Error(), `"bad-payload"`) || !strings.Contains(err.Error(), path) {
		t.Errorf("Describe(unreadable) = %v, want a Damaged error naming it and the file", err)
	}
	for _, n := range []string{"bad-header", "bad-payload"} {
		if err := s.Delete(ctx, n); err != nil {
			t.Fatalf("Delete(%s) = %v", n, err)
		}
		if _, err := s.Describe(ctx, n); sketch.KindOf(err) != sketch.NotFound {
			t.Errorf("Describe(%s) after delete = %v, want NotFound", n, err)
		}
	}
	// Deleted for good: after a crash (replayed delete) and after a checkpoint.
	crash(t, s)
	s = reopen(t, path, Options{})
	for _, n := range []string{"bad-header", "bad-payload"} {
		if _, err := s.Describe(ctx, n); sketch.KindOf(err) != sketch.NotFound {
			t.Errorf("Describe(%s) after reopen = %v, want NotFound", n, err)
		}
	}
	if err := s.Delete(ctx, "bad-header"); sketch.KindOf(err) != sketch.NotFound {
		t.Errorf("second Delete = %v, want NotFound", err)
	}
	s.Close()
	db, _ := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSketches)
		if b.Get([]byte("bad-header")) != nil || b.Get([]byte("bad-payload")) != nil {
			t.Error("deleted unreadable records are still in the file")
		}
		if b.Get([]byte("\xff\x00raw")) == nil {
			t.Error("an unreadable record nobody deleted is gone")
		}
		return nil
	})
	db.Close()
	damageRecords(t, path, map[string][]byte{"\xff\x00raw": nil}) // for the file check at cleanup
}

// TestDamagedSeriesEntries: a series whose bucket or definition fails its
// checksum is a Damaged error naming it on every read, is skipped (and
// named) by the listing, and DeleteSeries removes it for good.
func TestDamagedSeriesEntries(t *testing.T) {
	now := time.Date(2026, 11, 2, 10, 30, 0, 0, time.UTC)
	opts := Options{Now: func() time.Time { return now }}
	s, path := openStore(t, opts)
	spec := &series.Spec{Params: hllSpec(10).Params, TZ: "UTC", Levels: []series.LevelSpec{{Level: series.Hour, Retention: series.Duration{Days: 2}}}}
	hour := now.Truncate(time.Hour)
	for _, n := range []string{"bucket", "def", "fine"} {
		if _, _, err := s.CreateSeries(ctx, n, spec); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddSeries(ctx, n, hour, storetest.Input{Hashed: []uint64{1 << 20}}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	flip := func(bucket []byte, key string) {
		db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		db.Update(func(tx *bbolt.Tx) error {
			b := tx.Bucket(bucket)
			v := bytes.Clone(b.Get([]byte(key)))
			v[len(v)/2] ^= 4
			return b.Put([]byte(key), v)
		})
	}
	flip(bucketBuckets, bucketKey("bucket", series.Key{Level: series.Hour, Start: hour})[1:])
	flip(bucketSeries, "def")
	var logs logBuffer
	opts.Logger = logs.logger()
	s = reopen(t, path, opts)
	plan := func(*series.Spec) ([]series.Run, error) {
		return []series.Run{{Level: series.Hour, First: hour, Last: hour, Count: 1}}, nil
	}
	view := func(name string) error {
		return s.ViewSeries(ctx, name, plan, func(*series.Spec, []series.Bucket) error { return nil })
	}
	for name, label := range map[string]string{"bucket": `bucket hour ` + hour.Format(time.RFC3339) + ` of series "bucket"`, "def": `series "def"`} {
		for what, err := range map[string]error{"ViewSeries": view(name), "DescribeSeries": func() error { _, err := s.DescribeSeries(ctx, name); return err }()} {
			var se *sketch.Error
			if !errors.As(err, &se) || se.Kind != sketch.Damaged || !strings.Contains(se.Detail, label) || !strings.Contains(se.Detail, "DELETE the series") {
				t.Errorf("%s(%s) = %v, want a Damaged error naming %s", what, name, err, label)
			}
		}
	}
	if err := view("fine"); err != nil {
		t.Errorf("a healthy series beside damaged ones: %v", err)
	}
	infos, _, skipped, err := s.ListSeriesSkipping(ctx, "", "", 10)
	if err != nil || len(infos) != 1 || infos[0].Name != "fine" || strings.Join(skipped, " ") != `"bucket" "def"` {
		t.Errorf("ListSeriesSkipping = %v, skipped %v, %v; want fine listed, bucket and def skipped", infos, skipped, err)
	}
	if s.ChecksumFailures() == 0 || !strings.Contains(logs.String(), `"entry":"series \"def\""`) {
		t.Errorf("%d checksum failures counted, log:\n%s", s.ChecksumFailures(), logs.String())
	}
	for _, n := range []string{"bucket", "def"} {
		if err := s.DeleteSeries(ctx, n); err != nil {
			t.Fatalf("DeleteSeries(%s) = %v", n, err)
		}
	}
	crash(t, s)
	s = reopen(t, path, opts)
	for _, n := range []string{"bucket", "def"} {
		if err := view(n); sketch.KindOf(err) != sketch.NotFound {
			t.Errorf("ViewSeries(%s) after delete and reopen = %v, want NotFound", n, err)
		}
		if _, _, err := s.CreateSeries(ctx, n, spec); err != nil {
			t.Errorf("CreateSeries(%s) after deleting its damage = %v", n, err)
		}
	}
}
