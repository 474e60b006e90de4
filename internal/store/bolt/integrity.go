package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/sketchd/sketchd/internal/sketch"
)

// The data file and its log each keep the store's identity and the last
// checkpoint position: bbolt in bucket meta (store_id, checkpoint_lsn),
// the log in a small file of its own, <data>.wal/checkpoint, rewritten
// (write, fsync, rename, directory fsync) after each checkpoint commits.
// At open:
//
//   - different identities: the two belong to different stores;
//   - bbolt's position below the log's: the data file went back in time
//     (restored from an old copy, or bbolt fell back to its older meta page
//     because the newer one was damaged), and the sketches changed in
//     between are gone from it;
//   - a store that has an identity but no log marker: the log was lost;
//   - a missing or zero-length data file while the log has a marker: the
//     data file was lost.
//
// Each refuses to open with a message saying so and what to do. bbolt's
// position may be above the log's: a crash between the commit and the
// marker's rewrite.

const markerName = "checkpoint"

var markerMagic = [8]byte{'s', 'k', 'd', 'l', 'o', 'g', 0, 1}

const markerLen = 8 + 16 + 8 + 4

// marker is the log's copy of the store identity and checkpoint position.
type marker struct {
	id  []byte
	lsn uint64
}

// readMarker reads dir's marker; ok is false if there is none.
func readMarker(dir string) (m marker, ok bool, err error) {
	path := filepath.Join(dir, markerName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return marker{}, false, nil
	}
	if err != nil {
		return marker{}, false, fmt.Errorf("store: %w", err)
	}
	if len(b) != markerLen || !bytes.Equal(b[:8], markerMagic[:]) || crc32.Checksum(b[:markerLen-4], crcTable) != binary.BigEndian.Uint32(b[markerLen-4:]) {
		return marker{}, false, fmt.Errorf("store: %s is damaged (%d bytes, not a checkpoint marker); if the data file is intact, start with -recover-past-damage to rewrite it", path, len(b))
	}
	return marker{id: b[8:24], lsn: binary.BigEndian.Uint64(b[24:])}, true, nil
}

// writeMarker replaces the log's marker with the store's identity and lsn.
func (s *DB) writeMarker(lsn uint64) error {
	b := append(markerMagic[:0:0], markerMagic[:]...)
	b = append(b, s.storeID...)
	b = binary.BigEndian.AppendUint64(b, lsn)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
	tmp := filepath.Join(s.walDir, markerName+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("store: checkpoint marker: %w", err)
	}
	_, err = f.Write(b)
	err = errors.Join(err, f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(tmp, filepath.Join(s.walDir, markerName))
	}
	if err == nil {
		err = syncDir(s.walDir)
	}
	if err != nil {
		return fmt.Errorf("store: checkpoint marker: %w", err)
	}
	return nil
}

// The data file's checkpoint position (meta checkpoint_lsn) says which
// log records it reflects: a wrong one would replay records twice or skip
// them. It is kept as the big-endian uint64 and the CRC-32C of those 8
// bytes (schema version 5; 8 bytes without a checksum before).

// appendCheckpoint appends the stored form of checkpoint position lsn.
func appendCheckpoint(b []byte, lsn uint64) []byte {
	b = binary.BigEndian.AppendUint64(b, lsn)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b[len(b)-8:], crcTable))
}

// decodeCheckpoint reads a stored checkpoint position; none (nil) is 0, a
// new file's.
func decodeCheckpoint(v []byte) (uint64, error) {
	switch {
	case v == nil:
		return 0, nil
	case len(v) != 12:
		return 0, fmt.Errorf("checkpoint position of %d bytes, want 12", len(v))
	case crc32.Checksum(v[:8], crcTable) != binary.BigEndian.Uint32(v[8:]):
		return 0, fmt.Errorf("checkpoint position fails its checksum")
	}
	return binary.BigEndian.Uint64(v), nil
}

// damagedCheckpoint handles a data file whose checkpoint position cannot
// be read: a refusal, or with RecoverPastDamage the position the log's
// marker holds (the last checkpoint the log saw committed).
func (s *DB) damagedCheckpoint(cpErr error) (uint64, error) {
	if !s.opts.RecoverPastDamage {
		return 0, fmt.Errorf("store: refusing to open %s: its checkpoint position (which log records it reflects) is damaged: %v. Restore the data file and its log from the same backup, or start with -recover-past-damage to take the position from the log's checkpoint marker (Count-Min counts changed after it may then count twice)", s.path, cpErr)
	}
	m, ok, err := readMarker(s.walDir)
	if err != nil || !ok {
		s.opts.Logger.Warn("recovering past damage: the data file's checkpoint position is damaged and the log has no readable marker; replaying the whole log (Count-Min counts in it may count twice)", "data", s.path, "err", cpErr)
		return 0, nil
	}
	s.opts.Logger.Warn("recovering past damage: the data file's checkpoint position is damaged; taking the log marker's (Count-Min counts changed after it may count twice)", "data", s.path, "err", cpErr, "lsn", m.lsn)
	return m.lsn, nil
}

// checkDataFile refuses to let bbolt create a new file where the log says
// one existed: a missing or zero-length data file beside a log marker.
func checkDataFile(path, walDir string) error {
	fi, err := os.Stat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: %w", err)
	}
	if err == nil && fi.Size() > 0 {
		return nil
	}
	m, ok, merr := readMarker(walDir)
	if merr != nil || !ok {
		return merr
	}
	state := "is missing"
	if err == nil {
		state = "is empty (0 bytes)"
	}
	return fmt.Errorf("store: data file %s %s, but its write-ahead log %s says it held a store checkpointed at log position %d: refusing to start an empty store in its place. Restore the data file from a backup; to really start empty, move %s aside too", path, state, walDir, m.lsn, walDir)
}

// openBolt opens the bbolt file so that damage is an error, not a panic
// or a fault: bbolt panics on some damaged pages and a file shorter than
// its pages faults on access. It checks that the file holds every page
// bbolt expects and runs bbolt's consistency check.
func openBolt(path string, timeout time.Duration) (db *bbolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if db != nil {
				closeQuietly(db)
			}
			db, err = nil, damagedFile(path, fmt.Sprint(r))
		}
	}()
	if err := checkPages(path); err != nil {
		return nil, err
	}
	// A large first mapping: bbolt remaps as the file grows and, during a
	// write transaction, copies every node of it out of the old mapping; a
	// checkpoint of a million new sketches then remapped several times.
	// The mapping is address space, not memory.
	db, err = bbolt.Open(path, 0o600, &bbolt.Options{Timeout: timeout, InitialMmapSize: 1 << 30})
	if db != nil {
		// With a mapping that large bbolt would grow the file 16 MiB at a
		// time even for a small store; 1 MiB steps.
		db.AllocSize = 1 << 20
	}
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("store: %s is locked by another process (is another sketchd running on it?)", path)
	}
	if err := openError(path, err); err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	var problems []error
	db.View(func(tx *bbolt.Tx) error {
		if need := tx.Size(); fi.Size() < need {
			problems = append(problems, fmt.Errorf("the file has %d bytes, its pages need %d (truncated?)", fi.Size(), need))
			return nil
		}
		// First touch every key and value from this goroutine, where a
		// fault on a damaged page becomes a panic recovered above; bbolt's
		// check runs in a goroutine of its own, where a fault would kill
		// the process, so it runs only on pages known to be readable.
		if err := touchAll(tx); err != nil {
			problems = append(problems, err)
			return nil
		}
		for err := range tx.Check() {
			problems = append(problems, err)
			if len(problems) == 5 {
				break
			}
		}
		return nil
	})
	if len(problems) > 0 {
		closeQuietly(db)
		return nil, damagedFile(path, errors.Join(problems...).Error())
	}
	return db, nil
}

// openError says why the data file at path could not be opened: what the
// system refused (permissions, a missing folder, a read-only file
// system) as what it is, anything else as damage. nil for nil.
func openError(path string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("store: cannot open data file %s: permission denied (%w). Nothing is damaged: give the user sketchd runs as (uid %d) read and write access to the file and its folder %s, or choose another -data", path, err, os.Geteuid(), filepath.Dir(path))
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("store: cannot create data file %s: its folder %s does not exist (%w). Create it, or choose another -data", path, filepath.Dir(path), err)
	case errors.Is(err, syscall.EROFS):
		return fmt.Errorf("store: cannot open data file %s for writing: the file system is read-only (%w). Nothing is damaged: mount it read-write, or choose another -data", path, err)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("store: cannot open data file %s: a part of its path is not a folder (%w). Choose another -data", path, err)
	}
	return damagedFile(path, err.Error())
}

// bbolt's meta page, as bbolt lays it out (page header, then meta):
// magic, version and page size at 16, 20 and 24 (uint32), the page
// high-water mark at 56 and the transaction id at 64 (uint64), and an
// FNV-64a checksum of bytes 16-71 at 72; all little-endian.
const (
	boltMagic   = 0xED0CDAED
	boltVersion = 2
)

// boltMeta is what checkPages reads of one meta page.
type boltMeta struct {
	pageSize  int64
	highWater int64 // pages in use
	txid      uint64
}

// readBoltMeta parses the meta page in b, if it is valid.
func readBoltMeta(b []byte) (boltMeta, bool) {
	if len(b) < 80 || binary.LittleEndian.Uint32(b[16:]) != boltMagic || binary.LittleEndian.Uint32(b[20:]) != boltVersion {
		return boltMeta{}, false
	}
	h := fnv.New64a()
	h.Write(b[16:72])
	if h.Sum64() != binary.LittleEndian.Uint64(b[72:]) {
		return boltMeta{}, false
	}
	return boltMeta{
		pageSize:  int64(binary.LittleEndian.Uint32(b[24:])),
		highWater: int64(binary.LittleEndian.Uint64(b[56:])),
		txid:      binary.LittleEndian.Uint64(b[64:]),
	}, true
}

// checkPages refuses a data file shorter than the pages its newest valid
// meta page (the one bbolt would use) says are in use: bbolt maps the
// file and would fault reading past its end. A missing or empty file, or
// one without a valid meta page, is left to bbolt (and checkDataFile).
func checkPages(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return openError(path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	size := fi.Size()
	if size == 0 {
		return nil
	}
	first := make([]byte, 80)
	n, _ := f.ReadAt(first, 0)
	pageSize := int64(os.Getpagesize())
	m0, ok0 := readBoltMeta(first[:n])
	if ok0 {
		pageSize = m0.pageSize
	}
	if size < 2*pageSize {
		return fmt.Errorf("store: data file %s is truncated: it has %d bytes, and a bbolt file holds at least its two %d-byte meta pages (%d bytes). Restore it from a backup (sketchd never repairs it in place)", path, size, pageSize, 2*pageSize)
	}
	second := make([]byte, 80)
	n, _ = f.ReadAt(second, pageSize)
	m1, ok1 := readBoltMeta(second[:n])
	m := m0
	switch {
	case ok0 && ok1 && m1.txid > m0.txid, !ok0 && ok1:
		m = m1
	case !ok0 && !ok1:
		return nil // bbolt says it is invalid
	}
	if need := m.highWater * m.pageSize; size < need {
		return fmt.Errorf("store: data file %s is truncated: it has %d bytes, its pages need %d (%d pages of %d bytes, says its newest valid meta page, transaction %d). Restore it from a backup (sketchd never repairs it in place)", path, size, need, m.highWater, m.pageSize, m.txid)
	}
	return nil
}

// touchAll reads the first and last byte of every key and value in the
// file, through bbolt's cursors, so that a page pointing outside the file
// faults (or trips one of bbolt's assertions) here.
func touchAll(tx *bbolt.Tx) error {
	var sum byte
	var walk func(b *bbolt.Bucket)
	walk = func(b *bbolt.Bucket) {
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			sum ^= k[0] ^ k[len(k)-1]
			if len(v) > 0 {
				sum ^= v[0] ^ v[len(v)-1]
			}
			if v == nil {
				if nb := b.Bucket(k); nb != nil {
					walk(nb)
				}
			}
		}
	}
	err := tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
		walk(b)
		return nil
	})
	runtime.KeepAlive(sum) // the reads are the point
	return err
}

func damagedFile(path, what string) error {
	return fmt.Errorf("store: data file %s is damaged: %s. Restore it from a backup (sketchd never repairs it in place)", path, what)
}

// closeQuietly closes a damaged file, whose close may panic too.
func closeQuietly(db *bbolt.DB) {
	defer func() { recover() }()
	db.Close()
}

// checkIdentity compares the data file's identity and checkpoint position
// with the log's marker; fresh is set when the data file had no identity
// before this open (new, or older than migrations.VersionStoreID).
func (s *DB) checkIdentity(checkpoint uint64, fresh bool) error {
	m, ok, err := readMarker(s.walDir)
	if err != nil {
		if !s.opts.RecoverPastDamage {
			return err
		}
		s.opts.Logger.Warn("recovering past damage: ignoring an unreadable checkpoint marker", "err", err)
		return nil
	}
	var problem string
	switch {
	case !ok && fresh:
		return nil
	case !ok:
		problem = fmt.Sprintf("its write-ahead log %s has no checkpoint marker: the log was deleted or lost, with any acknowledged writes not yet checkpointed", s.walDir)
	case !bytes.Equal(m.id, s.storeID):
		problem = fmt.Sprintf("its write-ahead log %s belongs to another store (identity %s, the data file's is %s)", s.walDir, hex.EncodeToString(m.id), hex.EncodeToString(s.storeID))
	case checkpoint < m.lsn:
		problem = fmt.Sprintf("the data file is older than its write-ahead log: it reflects the log up to position %d, the log was checkpointed up to %d (the file was restored from an old copy, or bbolt fell back to its older meta page because the newer one is damaged); sketches changed in between are missing from it", checkpoint, m.lsn)
	default:
		return nil
	}
	if s.opts.RecoverPastDamage {
		s.opts.Logger.Warn("recovering past damage: starting although "+problem, "data", s.path)
		return nil
	}
	return fmt.Errorf("store: refusing to open %s: %s. Restore the data file and its log from the same backup, or start with -recover-past-damage to accept the loss", s.path, problem)
}

// quoteName renders a stored key for a log line or error: quoted, with
// anything that is not printable ASCII escaped, never raw bytes.
func quoteName(b []byte) string { return strconv.QuoteToASCII(string(b)) }

// errLogFailed is what writes and reads answer while the store recovers
// from a log failure.
func errLogFailed(err error) error {
	return sketch.Wrap(sketch.Unavailable, err, "the write-ahead log failed; the store refuses writes until it works again (retry later)")
}

// readable refuses reads while memory may hold changes that a log failure
// kept from becoming durable.
func (s *DB) readable() error {
	if s.tainted.Load() {
		return errLogFailed(errWALFailed)
	}
	return nil
}

// lockedReadable is readable for a reader that holds the locks of the
// entries it reads. Checked after they are taken, it is exact: a rebuild
// changes an entry only under its lock, after memory is marked tainted,
// and clears the mark once every entry is rebuilt; so an entry held while
// the mark is clear is in a state the log made durable, never one a
// rebuild is midway through.
func (s *DB) lockedReadable() error { return s.readable() }

// onLogFailure runs when the log fails, before any writer learns it: reads
// are refused until memory is rebuilt from what is durable, and the
// checkpoint loop is woken to do it.
func (s *DB) onLogFailure() {
	s.tainted.Store(true)
	s.kickCheckpoint()
}

// rebuild makes memory what bbolt and the durable part of the log say,
// dropping every change whose record was not synced. Called with cpRun
// held, after the log failed.
func (s *DB) rebuild() error {
	// Barrier: every writer that got past the log check is done, and every
	// later one sees the failure and changes nothing.
	s.cp.Lock()
	s.cp.Unlock() //nolint:staticcheck // an empty critical section is the point
	durable := s.wal.durableLSN()
	s.cacheMu.Lock()
	var dirty []*entry
	for _, e := range s.entries {
		if e.dirty.Load() {
			dirty = append(dirty, e)
		}
	}
	s.cacheMu.Unlock()
	for _, e := range dirty {
		st, err := s.load(e.name)
		var ue *unreadableError
		if err != nil && !errors.As(err, &ue) {
			return err
		}
		e.mu.Lock()
		if err := s.unpack(e); err != nil {
			e.mu.Unlock()
			return err
		}
		before := e.summary()
		e.st, e.unreadable = st, err != nil
		s.changed(e, before)
		e.mu.Unlock()
	}
	// The idempotency keys: bbolt's, then the durable log's.
	s.keys.reset()
	if err := s.bdb.View(func(tx *bbolt.Tx) error { return s.loadKeys(tx, s.opts.Now()) }); err != nil {
		return err
	}
	s.wal.mu.Lock()
	segs := append([]*segment(nil), s.wal.segs...)
	s.wal.mu.Unlock()
	sc, err := scanWAL(segs, s.checkpointed, durable, s.replayRecord)
	if err != nil {
		return fmt.Errorf("store: rebuilding memory after a log failure: %w", err)
	}
	if sc.last != durable {
		return fmt.Errorf("store: rebuilding memory after a log failure: the log holds records up to %d, %d were synced", sc.last, durable)
	}
	s.tainted.Store(false)
	s.opts.Logger.Warn("write-ahead log failed: memory rebuilt from what is durable", "durable_lsn", durable, "replayed", sc.records)
	return nil
}

// recoverLog runs in place of a checkpoint while the log is failed: it
// rebuilds memory if that is still to do, then tries to start a new
// segment, checkpointing the durable state at the last LSN handed out, so
// records that failed are never replayed. Called with cpRun held.
func (s *DB) recoverLog() error {
	failure := s.wal.err()
	if s.tainted.Load() {
		if err := s.rebuild(); err != nil {
			return err
		}
	}
	seg, err := s.wal.createSegment()
	if err != nil {
		return errors.Join(failure, err)
	}
	// Probe the new segment as a batch would use it (an empty write).
	if err := s.wal.writeSync(seg.f, nil); err != nil {
		return errors.Join(failure, s.wal.discard(seg), fmt.Errorf("wal: new segment: %w", err))
	}
	s.cp.Lock()
	lsn := s.wal.lastLSN()
	snaps := s.takeDirty()
	keys := s.keys.takeChanges()
	s.cp.Unlock()
	fill(snaps)
	if err := s.commitCheckpoint(snaps, keys, lsn); err != nil {
		return errors.Join(failure, s.wal.discard(seg), err)
	}
	s.checkpointed = lsn
	if err := s.writeMarker(lsn); err != nil {
		return errors.Join(failure, s.wal.discard(seg), err)
	}
	if err := s.wal.reset(seg); err != nil {
		return fmt.Errorf("store: restarting the log: %w", err)
	}
	s.releaseClean(snaps)
	s.opts.Logger.Info("write-ahead log works again", "segment", seg.path, "lsn", lsn)
	return nil
}
