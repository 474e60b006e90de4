package bolt

import (
	"bytes"
	"encoding/binary"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/internal/sketch"
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
