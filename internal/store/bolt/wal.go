package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sketchd/sketchd/internal/poison"
)

// The write-ahead log makes a write durable with one fdatasync shared by
// every writer that appended while the previous one ran (group commit),
// instead of a bbolt commit per request (two fsyncs, 1.5-2 ms here).
//
// It is a directory of segment files named by a sequence number
// (%020d.log) that orders them. A record is:
//
//	uint32 length of payload (big-endian) | uint32 CRC-32C of payload | payload
//
// and a payload starts with its uint64 LSN; LSNs are consecutive. A new
// segment starts at each checkpoint, and segments whose records the bbolt
// file already reflects are deleted. At open, records are read until the
// end or the first torn record (short, zero-length or bad CRC), which can
// only be the tail of the last segment: those bytes were never
// acknowledged.

var crcTable = crc32.MakeTable(crc32.Castagnoli)

const (
	walRecordHeader = 8
	maxWALRecord    = 1 << 30
)

// errWALFailed is returned for every write once an fdatasync has failed:
// the kernel may have dropped the dirty pages, so nothing later can be
// acknowledged as durable.
var errWALFailed = errors.New("write-ahead log failed")

type segment struct {
	path string
	seq  uint64 // orders segments
	f    *os.File
	size int64  // bytes durably written
	base uint64 // LSN of the record before its first
}

// batch is a group of records written and synced together.
type batch struct {
	seg     *segment
	buf     []byte
	last    uint64 // LSN of its last record
	records int
	done    chan struct{}
	err     error // set before done is closed
}

type wal struct {
	dir      string
	interval time.Duration // extra wait to gather a bigger group
	observe  func(records, bytes int, d time.Duration)
	sync     func(f *os.File, b []byte) error // w.writeSync; tests inject delays and failures
	fault    func(op string) error            // Options.logFault: fails "write" or "fdatasync"
	onFail   func()                           // called once when the log fails, before any waiter learns it

	mu       sync.Mutex
	nextSeq  uint64     // sequence number of the next segment
	seg      *segment   // where new records go
	queue    []*batch   // batches not yet written, oldest first
	inflight *batch     // being written now
	last     uint64     // LSN of the last appended record
	durable  uint64     // LSN of the last synced record
	segs     []*segment // every open segment, oldest first
	failed   error
	size     int64 // bytes in all segments
	lastSize int   // records in the last synced batch: > 1 means writers are concurrent
	kick     chan struct{}
	stop     chan struct{}
	stopped  chan struct{}
	free     [][]byte // recycled batch buffers
}

// segmentName is the file name of segment seq.
func segmentName(seq uint64) string { return fmt.Sprintf("%020d.log", seq) }

// listSegments returns the segment files in dir, oldest first.
func listSegments(dir string) ([]*segment, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []*segment
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".log") {
			continue
		}
		seq, err := strconv.ParseUint(strings.TrimSuffix(name, ".log"), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("wal: unexpected file %s", name)
		}
		segs = append(segs, &segment{path: filepath.Join(dir, name), seq: seq})
	}
	slices.SortFunc(segs, func(a, b *segment) int { return compareUint(a.seq, b.seq) })
	return segs, nil
}

func compareUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// openWAL starts a log whose next record has LSN last+1, in a new segment
// numbered seq. Older segments must already be gone (the store
// checkpoints after replay).
func openWAL(dir string, seq, last uint64, interval time.Duration, observe func(int, int, time.Duration), fault func(string) error, onFail func()) (*wal, error) {
	w := &wal{
		dir: dir, interval: interval, observe: observe, last: last, durable: last, nextSeq: seq,
		fault: fault, onFail: onFail,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{}),
	}
	w.sync = w.writeSync
	seg, err := w.createSegment()
	if err != nil {
		return nil, err
	}
	seg.base = last
	w.seg = seg
	w.segs = []*segment{seg}
	go w.flushLoop()
	return w, nil
}

// createSegment creates and syncs the next empty segment file (and its
// directory entry, so the file survives a crash). Only checkpoints (one at
// a time) and openWAL call it.
func (w *wal) createSegment() (*segment, error) {
	w.mu.Lock()
	seq := w.nextSeq
	w.nextSeq++
	w.mu.Unlock()
	path := filepath.Join(w.dir, segmentName(seq))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	if err := syncDir(w.dir); err != nil {
		f.Close()
		return nil, err
	}
	return &segment{path: path, seq: seq, f: f}, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("wal: sync %s: %w", dir, err)
	}
	return nil
}

// append adds one record whose payload body encode appends (after the LSN)
// and returns the batch that will make it durable.
func (w *wal) append(encode func(b []byte) []byte) (*batch, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed != nil {
		return nil, w.failed
	}
	b := w.tail()
	start := len(b.buf)
	lsn := w.last + 1
	b.buf = append(b.buf, make([]byte, walRecordHeader)...)
	b.buf = binary.BigEndian.AppendUint64(b.buf, lsn)
	b.buf = encode(b.buf)
	payload := b.buf[start+walRecordHeader:]
	if len(payload) > maxWALRecord {
		// The caller has changed memory already: fail the log, so the
		// store rebuilds memory from what is durable.
		b.buf = b.buf[:start]
		w.failLocked(fmt.Errorf("record of %d bytes is too large", len(payload)))
		return nil, w.failed
	}
	binary.BigEndian.PutUint32(b.buf[start:], uint32(len(payload)))
	binary.BigEndian.PutUint32(b.buf[start+4:], crc32.Checksum(payload, crcTable))
	w.last = lsn
	b.last = lsn
	b.records++
	select {
	case w.kick <- struct{}{}:
	default:
	}
	return b, nil
}

// tail returns the batch new records join: the newest queued one if it
// targets the current segment, else a new one. Called with mu held.
func (w *wal) tail() *batch {
	if n := len(w.queue); n > 0 && w.queue[n-1].seg == w.seg {
		return w.queue[n-1]
	}
	b := &batch{seg: w.seg, done: make(chan struct{})}
	if n := len(w.free); n > 0 {
		b.buf, w.free = w.free[n-1][:0], w.free[:n-1]
	}
	w.queue = append(w.queue, b)
	return b
}

// barrier returns the newest batch not yet durable, or nil: a writer whose
// request changed nothing waits on it, because the records that made its
// ids redundant may still be in flight.
func (w *wal) barrier() *batch {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.queue); n > 0 {
		return w.queue[n-1]
	}
	return w.inflight
}

// wait blocks until b is durable and returns its error.
func (b *batch) wait() error {
	if b == nil {
		return nil
	}
	<-b.done
	return b.err
}

func (w *wal) flushLoop() {
	defer close(w.stopped)
	for {
		select {
		case <-w.kick:
		case <-w.stop:
			w.flushAll()
			return
		}
		// Like PostgreSQL's commit_delay: when writers are arriving
		// concurrently, wait a moment so more of them share the sync; a
		// lone writer never waits.
		w.mu.Lock()
		concurrent := w.lastSize > 1
		w.mu.Unlock()
		if w.interval > 0 && concurrent {
			time.Sleep(w.interval)
		}
		w.flushAll()
	}
}

// flushAll writes and syncs every queued batch, one fdatasync per batch.
func (w *wal) flushAll() {
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			w.mu.Unlock()
			return
		}
		b := w.queue[0]
		w.queue = w.queue[1:]
		w.inflight = b
		failed := w.failed
		w.mu.Unlock()

		start := time.Now()
		err := failed
		if err == nil {
			err = w.sync(b.seg.f, b.buf)
		}
		d := time.Since(start)

		w.mu.Lock()
		if err != nil {
			if w.failed == nil {
				w.failLocked(err)
				// Best effort: cut what may have reached the file, so a
				// restart before the log recovers does not replay it.
				if b.seg.f.Truncate(b.seg.size) == nil {
					unix.Fdatasync(int(b.seg.f.Fd()))
				}
			}
			b.err = w.failed
		} else {
			b.seg.size += int64(len(b.buf))
			w.size += int64(len(b.buf))
			w.durable = b.last
		}
		w.inflight = nil
		w.lastSize = b.records
		buf := b.buf
		b.buf = nil
		if cap(buf) <= 1<<20 {
			poison.Release(buf)
			w.free = append(w.free, buf)
		}
		w.mu.Unlock()
		if err == nil && w.observe != nil {
			w.observe(b.records, len(buf), d)
		}
		close(b.done)
	}
}

// fail fails the log with err (a writer changed memory and cannot log it).
func (w *wal) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed == nil {
		w.failLocked(err)
	}
}

// failLocked records the log's failure and tells the store. Called with
// mu held, once.
func (w *wal) failLocked(err error) {
	w.failed = fmt.Errorf("%w: %v", errWALFailed, err)
	if w.onFail != nil {
		w.onFail()
	}
}

// writeSync appends buf to f and fdatasyncs it.
func (w *wal) writeSync(f *os.File, buf []byte) error {
	if err := w.injected("write"); err != nil {
		return err
	}
	if _, err := f.Write(buf); err != nil {
		return err
	}
	return w.fdatasync(f)
}

func (w *wal) fdatasync(f *os.File) error {
	if err := w.injected("fdatasync"); err != nil {
		return err
	}
	return unix.Fdatasync(int(f.Fd()))
}

func (w *wal) injected(op string) error {
	if w.fault == nil {
		return nil
	}
	return w.fault(op)
}

// rotate makes next the segment for new records and returns the segment
// the checkpoint keeps: next, or the current one if it holds no record
// (then next stays unused). Called with writers paused.
func (w *wal) rotate(next *segment) *segment {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == w.seg.base {
		return w.seg
	}
	next.base = w.last
	w.seg = next
	w.segs = append(w.segs, next)
	return next
}

// discard closes and removes a segment that never became part of the log.
func (w *wal) discard(seg *segment) error {
	return errors.Join(seg.f.Close(), os.Remove(seg.path))
}

// waitDurable waits until every record up to lsn is synced, and returns
// the log's failure if one of them could not be.
func (w *wal) waitDurable(lsn uint64) error {
	w.mu.Lock()
	if w.durable >= lsn {
		w.mu.Unlock()
		return nil
	}
	var target *batch
	if w.inflight != nil && w.inflight.last >= lsn {
		target = w.inflight
	}
	for _, b := range w.queue {
		if target == nil && b.last >= lsn {
			target = b
		}
	}
	failed := w.failed
	w.mu.Unlock()
	if target == nil {
		if failed != nil {
			return failed
		}
		return fmt.Errorf("wal: record %d is neither synced nor queued", lsn)
	}
	return target.wait()
}

// durableLSN returns the LSN of the last synced record.
func (w *wal) durableLSN() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.durable
}

// reset makes seg the only segment after a failure, once the store has
// checkpointed everything durable at the last LSN handed out (so records
// that failed are never replayed), and accepts records again. It closes
// and removes the old segments.
func (w *wal) reset(seg *segment) error {
	w.mu.Lock()
	if len(w.queue) > 0 || w.inflight != nil {
		w.mu.Unlock()
		return errors.New("wal: failed batches still draining")
	}
	old := w.segs
	seg.base = w.last
	w.seg, w.segs = seg, []*segment{seg}
	w.failed, w.durable, w.size = nil, w.last, 0
	w.mu.Unlock()
	var errs []error
	for _, s := range old {
		errs = append(errs, s.f.Close(), os.Remove(s.path))
	}
	return errors.Join(errs...)
}

// lastLSN returns the LSN of the last appended record.
func (w *wal) lastLSN() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// dropBefore closes and deletes every segment older than keep.
func (w *wal) dropBefore(keep *segment) error {
	w.mu.Lock()
	var old []*segment
	for len(w.segs) > 0 && w.segs[0] != keep {
		old = append(old, w.segs[0])
		w.size -= w.segs[0].size
		w.segs = w.segs[1:]
	}
	w.mu.Unlock()
	var errs []error
	for _, s := range old {
		errs = append(errs, s.f.Close(), os.Remove(s.path))
	}
	return errors.Join(errs...)
}

// bytes returns the size of the log on disk.
func (w *wal) bytes() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.size
}

// err returns the log's failure, if any.
func (w *wal) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// close flushes what is queued and closes every segment.
func (w *wal) close() error {
	close(w.stop)
	<-w.stopped
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for _, s := range w.segs {
		errs = append(errs, s.f.Close())
	}
	return errors.Join(errs...)
}

// abandon stops the log as a crash would: whatever is queued after the
// last sync stays unwritten, and the segments are closed.
func (w *wal) abandon() {
	close(w.stop)
	<-w.stopped
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.segs {
		s.f.Close()
	}
}
