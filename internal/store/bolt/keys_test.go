package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"sync"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// keyed returns a context guarding a write with key, and the guard.
func keyed(key string) (context.Context, *idem.Guard) {
	g := &idem.Guard{ID: idem.ID{Scope: "s", Target: "c", Key: key}, Render: func(res idem.Result) ([]byte, error) {
		return []byte(fmt.Sprintf("accepted %d", res.Added.Accepted)), nil
	}}
	copy(g.Fingerprint[:], key)
	return idem.With(ctx, g), g
}

var oneItem = storetest.Input{IDs: []cms.ID{cms.IntID(7)}, Counts: []uint64{1}}

func cmsTotal(tb testing.TB, s *DB) uint64 {
	tb.Helper()
	var n uint64
	if err := viewCMS(s, "c", func(c *cms.Sketch) error { n = c.Total(); return nil }); err != nil {
		tb.Fatal(err)
	}
	return n
}

func bucketKeyCount(tb testing.TB, path string) int {
	tb.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	n := 0
	db.View(func(tx *bbolt.Tx) error {
		n = tx.Bucket(bucketKeys).Stats().KeyN
		return nil
	})
	return n
}

// TestKeysExpire: a key is remembered for the window and no longer; a
// checkpoint tick removes it from memory and from bbolt, and the key may
// then guard a new write.
func TestKeysExpire(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	opts := Options{Now: c.now, KeyWindow: time.Hour, CheckpointInterval: time.Hour}
	s, path := openStore(t, opts)
	mustCreate(t, s, "c", cmsSpec())
	kctx, g := keyed("k")
	if _, err := s.Add(kctx, "c", oneItem, false); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := s.IdempotencyKeys(); n != 1 {
		t.Fatalf("IdempotencyKeys = %d, want 1", n)
	}
	c.advance(59 * time.Minute)
	if _, ok, _ := s.Remembered(ctx, g.ID); !ok {
		t.Fatal("a key inside its window is forgotten")
	}
	kctx, _ = keyed("k")
	if _, err := s.Add(kctx, "c", oneItem, false); !errors.Is(err, idem.ErrTaken) {
		t.Fatalf("the key inside its window: %v, want ErrTaken", err)
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	c.advance(2 * time.Minute)
	if _, ok, _ := s.Remembered(ctx, g.ID); ok {
		t.Fatal("a key past its window is remembered")
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if n, b, _ := s.IdempotencyKeys(); n != 0 || b != 0 {
		t.Fatalf("IdempotencyKeys after the sweep = %d keys, %d bytes; want none", n, b)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := bucketKeyCount(t, path); n != 0 {
		t.Fatalf("bbolt keeps %d expired keys", n)
	}
	s = reopen(t, path, opts)
	kctx, _ = keyed("k")
	if _, err := s.Add(kctx, "c", oneItem, false); err != nil {
		t.Fatalf("the key past its window: %v, want it to guard a new write", err)
	}
	if got := cmsTotal(t, s); got != 2 {
		t.Fatalf("total %d, want 2", got)
	}
}

// TestKeysExpireAtOpen: keys whose window ran out while the store was
// closed are not loaded (from bbolt or the log) and leave bbolt at open.
func TestKeysExpireAtOpen(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	opts := Options{Now: c.now, KeyWindow: time.Hour, CheckpointInterval: time.Hour}
	s, path := openStore(t, opts)
	mustCreate(t, s, "c", cmsSpec())
	kctx, _ := keyed("checkpointed")
	s.Add(kctx, "c", oneItem, false)
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	kctx, _ = keyed("logged")
	s.Add(kctx, "c", oneItem, false)
	crash(t, s)
	c.advance(2 * time.Hour)
	s = reopen(t, path, opts)
	if n, _, _ := s.IdempotencyKeys(); n != 0 {
		t.Fatalf("%d expired keys loaded", n)
	}
	if got := cmsTotal(t, s); got != 2 {
		t.Fatalf("total %d, want 2: the writes stay", got)
	}
	s.Close()
	if n := bucketKeyCount(t, path); n != 0 {
		t.Fatalf("bbolt keeps %d expired keys", n)
	}
}

// TestKeysBound: past KeyBytes the oldest keys go first, counted; the
// table's bytes stay within the bound, across a restart too.
func TestKeysBound(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	const bound = 4000
	opts := Options{Now: c.now, KeyBytes: bound, CheckpointInterval: time.Hour}
	s, path := openStore(t, opts)
	mustCreate(t, s, "c", cmsSpec())
	var gs []*idem.Guard
	for i := range 100 {
		c.advance(time.Second)
		kctx, g := keyed(fmt.Sprintf("key-%03d", i))
		if _, err := s.Add(kctx, "c", oneItem, false); err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
		if _, b, _ := s.IdempotencyKeys(); b > bound {
			t.Fatalf("after %d keys the table holds %d bytes, over %d", i+1, b, bound)
		}
	}
	n, _, evicted := s.IdempotencyKeys()
	if n == 0 || n+int(evicted) != 100 || evicted == 0 {
		t.Fatalf("IdempotencyKeys = %d kept, %d evicted; want both and 100 in all", n, evicted)
	}
	// The newest are kept, the oldest gone.
	for i, g := range gs {
		_, ok, _ := s.Remembered(ctx, g.ID)
		if want := i >= 100-n; ok != want {
			t.Fatalf("key %d remembered = %v, want %v", i, ok, want)
		}
	}
	s.Close()
	if got := bucketKeyCount(t, path); got != n {
		t.Fatalf("bbolt keeps %d keys, memory %d", got, n)
	}
	s = reopen(t, path, Options{Now: c.now, KeyBytes: bound / 2})
	if _, b, _ := s.IdempotencyKeys(); b > bound/2 {
		t.Fatalf("reopened with a smaller bound, the table holds %d bytes", b)
	}
}

// TestKeysAfterLogFailure: a guarded write whose log sync fails keeps no
// key (it was not applied), and a retry after the log recovers applies
// once; keys acknowledged before the failure stay.
func TestKeysAfterLogFailure(t *testing.T) {
	f := &faults{}
	s, path := openStore(t, Options{CheckpointInterval: time.Hour, logFault: f.hook})
	mustCreate(t, s, "c", cmsSpec())
	kctx, before := keyed("before")
	if _, err := s.Add(kctx, "c", oneItem, false); err != nil {
		t.Fatal(err)
	}
	f.set(failing("fdatasync"))
	kctx, lost := keyed("lost")
	if _, err := s.Add(kctx, "c", oneItem, false); sketch.KindOf(err) != sketch.Unavailable {
		t.Fatalf("guarded add whose sync failed = %v, want Unavailable", err)
	}
	// Unavailable until memory is rebuilt, then not found: never found.
	if _, ok, err := s.Remembered(ctx, lost.ID); ok || err != nil && sketch.KindOf(err) != sketch.Unavailable {
		t.Fatalf("Remembered while the log is failed = %v, %v; want Unavailable or not found", ok, err)
	}
	f.set(nil)
	s.kickCheckpoint()
	waitReady(t, s)
	if _, ok, err := s.Remembered(ctx, lost.ID); ok || err != nil {
		t.Fatalf("the key of the failed write: remembered %v, %v", ok, err)
	}
	if _, ok, _ := s.Remembered(ctx, before.ID); !ok {
		t.Fatal("the key acknowledged before the failure is forgotten")
	}
	kctx, _ = keyed("lost")
	if _, err := s.Add(kctx, "c", oneItem, false); err != nil {
		t.Fatalf("retry after recovery: %v", err)
	}
	kctx, _ = keyed("lost")
	if _, err := s.Add(kctx, "c", oneItem, false); !errors.Is(err, idem.ErrTaken) {
		t.Fatalf("second retry: %v, want ErrTaken", err)
	}
	if got := cmsTotal(t, s); got != 2 {
		t.Fatalf("total %d, want 2", got)
	}
	s.Close()
	s = reopen(t, path, Options{})
	if got := cmsTotal(t, s); got != 2 {
		t.Fatalf("total after reopen %d, want 2", got)
	}
}

// TestKeysDamagedRecord: a key record in bbolt that fails its checksum
// stops the open, naming the file and the key; RecoverPastDamage skips
// it, and leaves it where it is: check still reports it, naming it, and
// the next start without RecoverPastDamage refuses again.
func TestKeysDamagedRecord(t *testing.T) {
	s, path := openStore(t, Options{})
	mustCreate(t, s, "c", cmsSpec())
	kctx, _ := keyed("k")
	s.Add(kctx, "c", oneItem, false)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketKeys)
		k, v := b.Cursor().First()
		v = bytes.Clone(v)
		v[10] ^= 1
		return b.Put(bytes.Clone(k), v)
	})
	db.Close()
	_, err = Open(path, Options{})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `idempotency key "k"`) {
		t.Fatalf("Open with a damaged key record = %v, want an error naming the file and the key", err)
	}
	s, err = Open(path, Options{RecoverPastDamage: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := s.IdempotencyKeys(); n != 0 {
		t.Fatalf("%d keys loaded past damage", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := CheckFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Problems) != 1 || r.Problems[0].What != `idempotency key "k" of a write to "c"` || !strings.Contains(r.Problems[0].Recovery, "refuses to start") {
		t.Errorf("check after a start past damage:\n%s", r)
	}
	if _, err := Open(path, Options{}); err == nil {
		t.Errorf("Open without RecoverPastDamage took the damaged key record it left")
	}
	// Remove the damage before the cleanup's check.
	db, err = bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bbolt.Tx) error {
		k, _ := tx.Bucket(bucketKeys).Cursor().First()
		return tx.Bucket(bucketKeys).Delete(bytes.Clone(k))
	})
	db.Close()
}

// keyRecordV1 is a format-1 key record as the stores before format 2
// wrote it (migrations/v6.go): the CRC-32C covers the value alone.
func keyRecordV1(rec idem.Record) []byte {
	b := []byte{1}
	b = binary.BigEndian.AppendUint64(b, uint64(rec.Created.UnixNano()))
	b = append(b, rec.Fingerprint[:]...)
	b = binary.AppendUvarint(b, uint64(len(rec.Answer)))
	b = append(b, rec.Answer...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

// TestKeyRecordCodec: a key record round-trips under its key; a bit
// flipped anywhere in the value or in the bbolt key, or a cut, is
// refused; a format-1 record (its checksum without the key) still reads.
func TestKeyRecordCodec(t *testing.T) {
	rec := idem.Record{Fingerprint: [32]byte{1, 2, 3}, Answer: []byte("answer"), Created: time.Unix(0, 123456789).UTC()}
	k := appendKeyID(nil, idem.ID{Scope: "scope", Target: "t", Key: "key"})
	same := func(got idem.Record) bool {
		return got.Fingerprint == rec.Fingerprint && bytes.Equal(got.Answer, rec.Answer) && got.Created.Equal(rec.Created)
	}
	b := appendKeyRecord(nil, k, rec)
	got, err := decodeKeyRecord(k, b)
	if err != nil || !same(got) {
		t.Fatalf("round trip = %+v, %v", got, err)
	}
	for i := range b {
		for bit := range 8 {
			bad := bytes.Clone(b)
			bad[i] ^= 1 << bit
			if _, err := decodeKeyRecord(k, bad); err == nil {
				t.Errorf("value byte %d bit %d flipped: accepted", i, bit)
			}
		}
	}
	for i := range k {
		for bit := range 8 {
			bad := bytes.Clone(k)
			bad[i] ^= 1 << bit
			if _, err := decodeKeyRecord(bad, b); err == nil {
				t.Errorf("key byte %d bit %d flipped: accepted", i, bit)
			}
		}
	}
	for n := range len(b) {
		if _, err := decodeKeyRecord(k, b[:n]); err == nil {
			t.Errorf("cut to %d bytes: accepted", n)
		}
	}
	v1 := keyRecordV1(rec)
	if got, err := decodeKeyRecord(k, v1); err != nil || !same(got) {
		t.Fatalf("format 1 = %+v, %v", got, err)
	}
	for i := range v1 {
		bad := bytes.Clone(v1)
		bad[i] ^= 0x40
		if _, err := decodeKeyRecord(k, bad); err == nil {
			t.Errorf("format 1, byte %d flipped: accepted", i)
		}
	}
	id := idem.ID{Scope: "scope", Target: "t", Key: "key"}
	if got, err := decodeKeyID(appendKeyID(nil, id)); err != nil || got != id {
		t.Fatalf("key id round trip = %+v, %v", got, err)
	}
}

func FuzzDecodeKeyRecord(f *testing.F) {
	k := appendKeyID(nil, idem.ID{Scope: "s", Target: "t", Key: "k"})
	f.Add(k, appendKeyRecord(nil, k, idem.Record{Answer: []byte("x"), Created: time.Unix(1, 0)}))
	f.Add(k, keyRecordV1(idem.Record{Answer: []byte("x"), Created: time.Unix(1, 0)}))
	f.Add(k, []byte{1})
	f.Fuzz(func(t *testing.T, k, in []byte) {
		rec, err := decodeKeyRecord(k, in)
		if err != nil {
			return
		}
		// A record re-encodes in its format as it was.
		again := appendKeyRecord(nil, k, rec)
		if in[0] == keyRecordFormatV1 {
			again = keyRecordV1(rec)
		}
		if !bytes.Equal(again, in) {
			t.Fatalf("decoded record re-encodes as %x, was %x", again, in)
		}
		if again, err := decodeKeyRecord(k, appendKeyRecord(nil, k, rec)); err != nil || again.Fingerprint != rec.Fingerprint || !bytes.Equal(again.Answer, rec.Answer) || !again.Created.Equal(rec.Created) {
			t.Fatalf("re-encoded record decodes as %+v, %v", again, err)
		}
	})
}

func FuzzDecodeKeyID(f *testing.F) {
	f.Add(appendKeyID(nil, idem.ID{Scope: "s", Target: "t", Key: "k"}))
	f.Add([]byte{0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		id, err := decodeKeyID(in)
		if err != nil {
			return
		}
		if again := appendKeyID(nil, id); !bytes.Equal(again, in) {
			t.Fatalf("decoded id re-encodes as %x, was %x", again, in)
		}
	})
}

// TestKeysFormat1StillRead: a key record written in format 1 (before its
// checksum covered the key) is read at open, answers Remembered, and
// passes the check.
func TestKeysFormat1StillRead(t *testing.T) {
	s, path := openStore(t, Options{})
	mustCreate(t, s, "c", cmsSpec())
	kctx, g := keyed("old")
	if _, err := s.Add(kctx, "c", oneItem, false); err != nil {
		t.Fatal(err)
	}
	want, ok, err := s.Remembered(ctx, g.ID)
	if err != nil || !ok {
		t.Fatalf("Remembered = %v, %v", ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketKeys).Put(appendKeyID(nil, g.ID), keyRecordV1(want))
	})
	db.Close()
	if err := Check(path); err != nil {
		t.Errorf("check of a format-1 key record: %v", err)
	}
	s = reopen(t, path, Options{})
	got, ok, err := s.Remembered(ctx, g.ID)
	if err != nil || !ok || got.Fingerprint != want.Fingerprint || !bytes.Equal(got.Answer, want.Answer) || !got.Created.Equal(want.Created) {
		t.Errorf("after reopening a format-1 record: Remembered = %+v, %v, %v; want %+v", got, ok, err, want)
	}
}
