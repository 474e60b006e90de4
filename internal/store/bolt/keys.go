package bolt

import (
	"container/list"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/migrations"
)

// Idempotency keys live with the writes they guard. A guarded write claims
// its key under the write's locks, before it changes anything, and its log
// record carries the key, the request's fingerprint and the answer
// (opKey) next to its changes: one record, so a crash leaves both or
// neither. Replay restores the key table with the sketches; a checkpoint
// copies the keys added since the last one into bucket "idempotency"
// (and deletes those removed) in the transaction that records its log
// position, so the table at open is bbolt's plus the log after it.
//
// The table is in memory, bounded by Options.KeyBytes: past it the oldest
// keys are dropped (counted as evicted). Keys older than
// Options.KeyWindow are ignored by lookups and removed at each
// checkpoint tick; bbolt forgets them at the checkpoint after.
//
// In bbolt a key is
//
//	uvarint-length scope | uvarint-length target | key
//
// and its value
//
//	byte 2 (format) | int64 created (Unix ns, BE) | 32-byte fingerprint |
//	uvarint-length answer | CRC-32C of the bbolt key, then all before
//
// which decodeKeyRecord checks before the key is used. The checksum
// covers the bbolt key too: a key damaged into another valid key would
// otherwise be taken, and a retry with the original key would apply its
// write again. Format 1, written before, has the same layout with a
// CRC-32C of the value alone; it is still read.

var bucketKeys = []byte(migrations.BucketIdempotency)

// Key record formats: keyRecordFormat is written; keyRecordFormatV1,
// whose checksum leaves the bbolt key out, is read.
const (
	keyRecordFormatV1 = 1
	keyRecordFormat   = 2
)

// keyOverhead approximates the memory of a table entry besides its
// strings: the map slot, the entry, its list element.
const keyOverhead = 160

// keyEntry is one key of the table.
type keyEntry struct {
	id  idem.ID
	rec idem.Record
	el  *list.Element // in keyTable.order, once sealed
	// ready is closed once the write that claimed the key is durable or
	// has failed; failed says which (set before the close).
	ready  chan struct{}
	failed bool
	size   int64
}

// closedReady is the ready channel of keys loaded durable.
var closedReady = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// keyTable holds the keys in memory.
type keyTable struct {
	window time.Duration
	max    int64

	mu      sync.Mutex
	m       map[idem.ID]*keyEntry
	order   list.List // sealed keys, oldest first
	bytes   int64
	changes map[idem.ID]*idem.Record // since the last checkpoint; nil: removed
	evicted atomic.Int64
}

func newKeyTable(window time.Duration, max int64) *keyTable {
	return &keyTable{window: window, max: max, m: map[idem.ID]*keyEntry{}, changes: map[idem.ID]*idem.Record{}}
}

func (k *keyTable) expired(rec *idem.Record, now time.Time) bool {
	return !rec.Created.Add(k.window).After(now)
}

// claim reserves id for a write about to run at now: ErrInFlight while
// another write holding it is not yet durable, ErrTaken when a record of
// it is kept. A record past its window is dropped and the key reused.
func (k *keyTable) claim(id idem.ID, now time.Time) (*keyEntry, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if e := k.m[id]; e != nil {
		select {
		case <-e.ready:
		default:
			return nil, idem.ErrInFlight
		}
		if !e.failed && !k.expired(&e.rec, now) {
			return nil, idem.ErrTaken
		}
		k.removeLocked(e)
	}
	e := &keyEntry{id: id, ready: make(chan struct{})}
	k.m[id] = e
	return e, nil
}

// seal gives a claimed key the record its write logs, and drops the
// oldest keys while the table is over its bound.
func (k *keyTable) seal(e *keyEntry, rec idem.Record) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e.rec = rec
	e.size = int64(e.id.Size() + rec.Size() + keyOverhead)
	e.el = k.order.PushBack(e)
	k.bytes += e.size
	k.changes[e.id] = &e.rec
	for k.bytes > k.max {
		old := k.order.Front().Value.(*keyEntry)
		if old == e {
			break
		}
		k.removeLocked(old)
		k.evicted.Add(1)
	}
}

// settle marks a claimed key's write durable (err nil) or failed, or, for
// a write that never reached the log, forgets the key.
func (k *keyTable) settle(e *keyEntry, err error, logged bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		e.failed = true
		if !logged && k.m[e.id] == e {
			k.removeLocked(e)
		}
	}
	close(e.ready)
}

// removeLocked drops e from the table.
func (k *keyTable) removeLocked(e *keyEntry) {
	if k.m[e.id] == e {
		delete(k.m, e.id)
	}
	if e.el != nil {
		k.order.Remove(e.el)
		e.el = nil
		k.bytes -= e.size
		k.changes[e.id] = nil
	}
}

// lookup returns id's entry unless it is missing or past its window.
func (k *keyTable) lookup(id idem.ID, now time.Time) *keyEntry {
	k.mu.Lock()
	defer k.mu.Unlock()
	e := k.m[id]
	if e == nil || e.el != nil && k.expired(&e.rec, now) {
		return nil
	}
	return e
}

// sweep drops the keys past their window and returns how many.
func (k *keyTable) sweep(now time.Time) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for el := k.order.Front(); el != nil; {
		e := el.Value.(*keyEntry)
		el = el.Next()
		if !k.expired(&e.rec, now) {
			break // sealed in time order, so later ones are younger
		}
		select {
		case <-e.ready:
			k.removeLocked(e)
			n++
		default:
		}
	}
	return n
}

// restore adds a durable record (from bbolt or the log) unless it is past
// its window at now; logged records are changes a checkpoint must copy.
func (k *keyTable) restore(id idem.ID, rec idem.Record, now time.Time, logged bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if old := k.m[id]; old != nil {
		k.removeLocked(old)
	}
	if k.expired(&rec, now) {
		k.changes[id] = nil
		return
	}
	e := &keyEntry{id: id, rec: rec, ready: closedReady, size: int64(id.Size() + rec.Size() + keyOverhead)}
	k.m[id] = e
	// Keep the list in time order: records arrive in log order, or from
	// bbolt sorted by the caller.
	at := k.order.Back()
	for at != nil && at.Value.(*keyEntry).rec.Created.After(rec.Created) {
		at = at.Prev()
	}
	if at == nil {
		e.el = k.order.PushFront(e)
	} else {
		e.el = k.order.InsertAfter(e, at)
	}
	k.bytes += e.size
	if logged {
		k.changes[id] = &e.rec
	}
}

// trim drops the oldest keys while the table is over its bound.
func (k *keyTable) trim() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for k.bytes > k.max && k.order.Len() > 0 {
		k.removeLocked(k.order.Front().Value.(*keyEntry))
		k.evicted.Add(1)
	}
}

// reset empties the table (before it is rebuilt from what is durable).
func (k *keyTable) reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m = map[idem.ID]*keyEntry{}
	k.order.Init()
	k.bytes = 0
	k.changes = map[idem.ID]*idem.Record{}
}

// takeChanges returns the changes since the last call, for a checkpoint.
// Records are copied: the table may drop them meanwhile.
func (k *keyTable) takeChanges() map[idem.ID]*idem.Record {
	k.mu.Lock()
	defer k.mu.Unlock()
	ch := k.changes
	k.changes = map[idem.ID]*idem.Record{}
	for id, rec := range ch {
		if rec != nil {
			c := *rec
			ch[id] = &c
		}
	}
	return ch
}

// changesCopy returns a copy of the changes since the last checkpoint
// took them, leaving them for the next one: what a backup merges with
// bbolt's keys.
func (k *keyTable) changesCopy() map[idem.ID]*idem.Record {
	k.mu.Lock()
	defer k.mu.Unlock()
	ch := make(map[idem.ID]*idem.Record, len(k.changes))
	for id, rec := range k.changes {
		if rec != nil {
			c := *rec
			rec = &c
		}
		ch[id] = rec
	}
	return ch
}

// giveBack returns the changes of a checkpoint that failed, unless a
// later change replaced them.
func (k *keyTable) giveBack(ch map[idem.ID]*idem.Record) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for id, rec := range ch {
		if _, later := k.changes[id]; !later {
			k.changes[id] = rec
		}
	}
}

func (k *keyTable) pending() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.changes) > 0
}

// stats reports the keys held and their bytes.
func (k *keyTable) stats() (int, int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.order.Len(), k.bytes
}

// appendKeyID appends id's bbolt key (and log operation name).
func appendKeyID(b []byte, id idem.ID) []byte {
	b = binary.AppendUvarint(b, uint64(len(id.Scope)))
	b = append(b, id.Scope...)
	b = binary.AppendUvarint(b, uint64(len(id.Target)))
	b = append(b, id.Target...)
	return append(b, id.Key...)
}

// decodeKeyID reads what appendKeyID wrote; the key takes the rest and is
// not empty. Lengths must be minimal, so one ID has one encoding.
func decodeKeyID(b []byte) (idem.ID, error) {
	r := &opReader{b: b}
	var f [2][]byte
	for i := range f {
		n, err := r.uvarint()
		if err != nil {
			return idem.ID{}, err
		}
		if f[i], err = r.bytes(n); err != nil {
			return idem.ID{}, err
		}
	}
	key := b[r.off:]
	if len(key) == 0 || len(key) > idem.MaxKeyLen {
		return idem.ID{}, fmt.Errorf("idempotency key of %d bytes", len(key))
	}
	id := idem.ID{Scope: string(f[0]), Target: string(f[1]), Key: string(key)}
	if r.off != uvarintLen(len(f[0]))+len(f[0])+uvarintLen(len(f[1]))+len(f[1]) {
		return idem.ID{}, errors.New("idempotency key id with a non-minimal length")
	}
	return id, nil
}

// uvarintLen is the length of n's minimal uvarint.
func uvarintLen(n int) int {
	return len(binary.AppendUvarint(nil, uint64(n)))
}

// appendKeyRecord appends rec's bbolt value under the bbolt key k
// (appendKeyID).
func appendKeyRecord(b, k []byte, rec idem.Record) []byte {
	start := len(b)
	b = append(b, keyRecordFormat)
	b = binary.BigEndian.AppendUint64(b, uint64(rec.Created.UnixNano()))
	b = append(b, rec.Fingerprint[:]...)
	b = binary.AppendUvarint(b, uint64(len(rec.Answer)))
	b = append(b, rec.Answer...)
	return binary.BigEndian.AppendUint32(b, keyRecordCRC(keyRecordFormat, k, b[start:]))
}

// keyRecordCRC is the checksum of a key record of format f whose value,
// without its checksum, is body, under the bbolt key k.
func keyRecordCRC(f byte, k, body []byte) uint32 {
	crc := uint32(0)
	if f != keyRecordFormatV1 {
		crc = crc32.Update(crc, crcTable, k)
	}
	return crc32.Update(crc, crcTable, body)
}

// decodeKeyRecord reads what appendKeyRecord wrote under the bbolt key k
// (or a format-1 record): a checksum mismatch, another format, a length
// past the end or bytes after the answer are errors. The record shares
// no memory with b.
func decodeKeyRecord(k, b []byte) (idem.Record, error) {
	if len(b) < 1+8+32+1+4 {
		return idem.Record{}, fmt.Errorf("idempotency record of %d bytes", len(b))
	}
	body := b[:len(b)-4]
	if body[0] != keyRecordFormat && body[0] != keyRecordFormatV1 {
		return idem.Record{}, fmt.Errorf("idempotency record format %d", body[0])
	}
	if keyRecordCRC(body[0], k, body) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return idem.Record{}, errors.New("idempotency record fails its checksum (of its key and value)")
	}
	rec := idem.Record{Created: time.Unix(0, int64(binary.BigEndian.Uint64(body[1:]))).UTC()}
	copy(rec.Fingerprint[:], body[9:41])
	r := &opReader{b: body, off: 41}
	n, err := r.uvarint()
	if err != nil {
		return idem.Record{}, err
	}
	if r.off != 41+uvarintLen(int(min(n, 1<<40))) {
		return idem.Record{}, errors.New("idempotency record with a non-minimal length")
	}
	ans, err := r.bytes(n)
	if err != nil {
		return idem.Record{}, err
	}
	if r.off != len(body) {
		return idem.Record{}, fmt.Errorf("%d bytes after the idempotency record", len(body)-r.off)
	}
	rec.Answer = slices.Clone(ans)
	return rec, nil
}

// readKeys calls fn with every record of bucket "idempotency" as Open
// reads it: its ID and record, or err saying why it cannot be used (the
// key or the value fails its check). Open (loadKeys) and CheckFiles read
// the keys through it alone, so they cannot disagree about which records
// are damaged. k dies with the transaction.
func readKeys(tx *bbolt.Tx, fn func(k []byte, id idem.ID, rec idem.Record, err error) error) error {
	b := tx.Bucket(bucketKeys)
	if b == nil {
		return errors.New("bucket idempotency is missing")
	}
	return b.ForEach(func(k, v []byte) error {
		id, err := decodeKeyID(k)
		var rec idem.Record
		if err == nil {
			rec, err = decodeKeyRecord(k, v)
		}
		return fn(k, id, rec, err)
	})
}

// keyLabel names a stored idempotency key for a message: the key and the
// sketch or series whose write it guards, quoted (never the scope, a
// digest of a token); the stored bytes in hex when they do not decode.
func keyLabel(k []byte) string {
	id, err := decodeKeyID(k)
	if err != nil {
		return fmt.Sprintf("idempotency key record %x", k)
	}
	l := "idempotency key " + quoteName([]byte(id.Key))
	if id.Target != "" {
		l += " of a write to " + quoteName([]byte(id.Target))
	}
	return l
}

// loadKeys fills the table from bucket "idempotency" (keys past their
// window are left for the next checkpoint to delete). A record that fails
// its check stops the open, naming the key, unless RecoverPastDamage is
// set: then it is skipped and logged.
func (s *DB) loadKeys(tx *bbolt.Tx, now time.Time) error {
	type loaded struct {
		id  idem.ID
		rec idem.Record
	}
	var all []loaded
	if tx.Bucket(bucketKeys) == nil {
		return damagedFile(s.path, "bucket idempotency is missing")
	}
	err := readKeys(tx, func(k []byte, id idem.ID, rec idem.Record, err error) error {
		switch {
		case err == nil:
			all = append(all, loaded{id, rec})
			return nil
		case s.opts.RecoverPastDamage:
			s.opts.Logger.Warn("recovering past damage: skipped an idempotency key record that does not decode", "file", s.path, "key", keyLabel(k), "err", err)
			return nil
		}
		return damagedFile(s.path, fmt.Sprintf("%s: %v", keyLabel(k), err))
	})
	if err != nil {
		return err
	}
	slices.SortFunc(all, func(a, b loaded) int { return a.rec.Created.Compare(b.rec.Created) })
	for _, l := range all {
		s.keys.restore(l.id, l.rec, now, false)
	}
	s.keys.trim()
	return nil
}

// writeKeys applies a checkpoint's key changes to bucket "idempotency".
func writeKeys(tx *bbolt.Tx, changes map[idem.ID]*idem.Record) error {
	b := tx.Bucket(bucketKeys)
	// Sorted keys: bbolt inserts them in O(log n) each.
	ids := make([][]byte, 0, len(changes))
	recs := make(map[string]*idem.Record, len(changes))
	for id, rec := range changes {
		k := appendKeyID(nil, id)
		ids = append(ids, k)
		recs[string(k)] = rec
	}
	slices.SortFunc(ids, func(a, b []byte) int { return compareBytes(a, b) })
	for _, k := range ids {
		var err error
		if rec := recs[string(k)]; rec == nil {
			err = b.Delete(k)
		} else {
			err = b.Put(k, appendKeyRecord(nil, k, *rec))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func compareBytes(a, b []byte) int {
	switch {
	case string(a) < string(b):
		return -1
	case string(a) > string(b):
		return 1
	}
	return 0
}

// Remembered returns the record kept for id, if its window has not run
// out; a record whose write is still being made durable is waited for.
func (s *DB) Remembered(ctx context.Context, id idem.ID) (idem.Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return idem.Record{}, false, err
	}
	if err := s.readable(); err != nil {
		return idem.Record{}, false, err
	}
	e := s.keys.lookup(id, s.opts.Now())
	if e == nil {
		return idem.Record{}, false, nil
	}
	select {
	case <-e.ready:
	case <-ctx.Done():
		return idem.Record{}, false, ctx.Err()
	}
	if e.failed {
		if err := s.wal.err(); err != nil {
			return idem.Record{}, false, errLogFailed(err)
		}
		return idem.Record{}, false, nil
	}
	return e.rec, true, nil
}

// IdempotencyKeys reports the keys kept, their approximate bytes and how
// many the bound dropped early.
func (s *DB) IdempotencyKeys() (keys int, bytes int64, evicted int64) {
	n, b := s.keys.stats()
	return n, b, s.keys.evicted.Load()
}
