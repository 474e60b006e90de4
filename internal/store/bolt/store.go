// Package bolt keeps sketchd's sketches: durable in a bbolt file, with a
// write-ahead log for group commit and a bounded cache of decoded
// sketches.
//
// # Durability
//
// A write is applied to the decoded sketch in memory, appended to the
// write-ahead log (only what changed the sketch: the HLL hashes that raised
// a register or joined an EXPLICIT set, the CMS items, or a whole new
// state), and acknowledged once the fdatasync that covers its record
// returns. Writers that append while a sync runs share the next one. A
// writer whose ids changed nothing still waits for the newest pending sync,
// which may hold the records that made its ids redundant.
//
// A checkpoint copies the sketches changed since the last one into bbolt,
// together with the log position C they reflect, in one transaction; then
// the log segments up to C are deleted. Writers are paused only while the
// checkpoint notes C and hands each changed sketch an empty copy; the
// first to lock the sketch afterwards fills it (a writer before changing
// it, else the checkpoint), so the copy is the exact state at C. The
// checkpoint commits only once the log is synced up to C. At open the log
// records after C are replayed onto that state, so replay is exact for HLL
// and CMS alike: no increment is counted twice, and a record torn by a
// crash was never acknowledged.
//
// # When the log fails
//
// Memory never runs ahead of the log for long. With group commit several
// writers' changes sit in memory on top of each other before their shared
// sync, so a failed append or fdatasync is not undone write by write:
//
//   - every writer waiting on the failed sync, and every later one, gets an
//     Unavailable error (503; the write was not applied, retrying is safe),
//     and Ready reports false;
//   - reads are refused too until memory is rebuilt: the checkpoint loop,
//     woken at once, waits for writers in flight, resets every changed
//     sketch to its bbolt state and replays the log up to its last synced
//     record;
//   - no checkpoint writes past the last synced record: one that was
//     waiting for the failed sync abandons its copy;
//   - then, every second, the store tries to start a new log segment and
//     probes it with a write and fdatasync; if that works, it checkpoints
//     the rebuilt state at the last position handed out (so the failed
//     records, which may have reached the old segment, are never
//     replayed), deletes the old segments and accepts writes again.
//
// If the process stops before the log works again, the next open replays
// the old segments: the failing batch is cut from its segment when the
// failure is seen (best effort: the disk is failing), so a write answered
// 503 is replayed only if that cut failed too.
//
// # Damage
//
// Damage is loud and nothing damaged is deleted. A log record that fails
// its check anywhere but the torn tail of the last segment stops Open with
// the file and offset (see walread.go); Options.RecoverPastDamage starts
// past it, keeping the damaged segments aside and logging what it dropped
// (bytes, intact records, the sketches they touch). The data file and the
// log share an identity and the last checkpoint position (see
// integrity.go), so a data file that went back in time, or lost its log,
// is refused. A damaged or truncated bbolt file is an error naming it,
// never a panic. Every stored record carries a checksum of its key and
// bytes (record.go), checked wherever one is decoded: a record that fails
// it, or cannot be decoded, fails reads of its entry with a Damaged error
// naming it, is skipped (and reported) by listings, and can be deleted
// (unreadable.go). CheckFiles checks a closed store offline
// (checkfiles.go).
//
// # Idempotency keys
//
// A write under an idempotency key logs the key, the request's fingerprint
// and its answer in its own record, so the key is exactly as durable as the
// write (keys.go).
//
// # Memory
//
// Decoded sketches are cached up to Options.CacheBytes. Sketches changed
// since the last checkpoint stay in memory until it runs (small ones as
// their encoded record while nobody uses them: pack.go); unchanged ones are
// evicted least recently used first, and small ones (smallEntryBytes) as
// soon as nobody uses them: their record in bbolt's mapped pages is their
// compact form, decoded on use. When changed sketches alone pass the
// limit, or their number passes Options.CheckpointSketches, a checkpoint
// starts early, and past twice either limit writes are refused with an
// Unavailable error until it completes: what a restart after a crash
// replays is bounded by the count.
//
// A cache entry's life: loaded by the first acquire of its name, it is
// pinned while any operation uses it (never evicted then). An unpinned
// clean entry (its state is bbolt's) waits on the LRU list and is evicted
// when the cache is over its bound. A write makes it dirty: off the LRU
// list, kept until a checkpoint commits a copy taken after its last change,
// which makes it clean again. A deleted sketch is a dirty entry without a
// state (a tombstone) until then.
//
// # Lock order
//
// gate (shared by writes, exclusive by Close) -> entry locks, in name
// order -> cp (shared by writers, exclusive while a checkpoint notes its
// position) -> the log's mutex. cacheMu, dirtyMu, statsMu and the
// idempotency keys' mutex are leaves, taken briefly under any of these. cpRun serialises checkpoints (and
// a backup while it takes its copies: backup.go) and is taken before cp
// and before any entry lock; a checkpoint holds no entry
// lock while it holds cp, so a reader holding entries never stalls it,
// and reads of several sketches work on copies, so writers wait for a
// read only while it copies.
package bolt

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/migrations"
)

// Observer receives the store's timings; the metrics package implements it.
type Observer interface {
	ObserveCommit(requests, bytes int, d time.Duration)
	ObserveCheckpoint(sketches int, d time.Duration)
}

// Options configure a DB. Zero values choose the defaults.
type Options struct {
	// CommitInterval is how long a log sync waits for more writers to
	// join it when the previous sync was shared (writers are concurrent);
	// a lone writer never waits. 0 (the default) never waits.
	CommitInterval time.Duration
	// CheckpointInterval is the longest time between checkpoints (default 30s).
	CheckpointInterval time.Duration
	// CheckpointBytes starts a checkpoint once the log is this large
	// (default 64 MiB).
	CheckpointBytes int64
	// CheckpointSketches starts a checkpoint once this many sketches
	// (series buckets and definitions included) changed since the last
	// one (default 10,000), and writes are refused with an Unavailable
	// error while twice as many wait for a checkpoint. It bounds what a
	// restart after a crash replays, and the memory that takes; and the
	// memory a burst of new sketches holds until their checkpoint (the
	// changed sketches, and the checkpoint's copy of them and bbolt's
	// transaction while it runs): with 25,000, 100,000 new small sketches
	// written as fast as they were accepted peaked at 50-57 MiB of
	// anonymous memory, with 10,000 at 32-33, in the same time.
	CheckpointSketches int
	// CacheBytes bounds the decoded sketches kept in memory (default 512 MiB).
	CacheBytes int64
	// OpenTimeout is how long Open waits for another process's lock on the
	// file (default 1s).
	OpenTimeout time.Duration
	Logger      *slog.Logger
	Observer    Observer
	// Released, if set, is called after a checkpoint let go of sketches
	// it kept in memory only until they were in bbolt (small ones, which
	// leave the cache once clean), with about how many bytes of heap they
	// held. It runs on the checkpoint's goroutine and must return soon.
	// The garbage collector frees that memory at its own pace and the
	// runtime keeps it mapped for a while; a process that wants it back
	// sooner acts here (cmd/sketchd: trim.go).
	Released func(bytes int64)
	// Now returns the time stamped on writes (default time.Now).
	Now func() time.Time
	// KeyWindow is how long an idempotency key is remembered after its
	// write commits (default 24h).
	KeyWindow time.Duration
	// KeyBytes bounds the memory (and bbolt space) of the idempotency
	// keys kept, their answers included (default 256 MiB); past it the
	// oldest keys are dropped before their window runs out.
	KeyBytes int64
	// RecoverPastDamage lets Open start past a damaged write-ahead log (it
	// replays up to the damage, keeps the damaged segments aside and logs
	// what it dropped) or a log that does not match the data file (lost,
	// or ahead of it), instead of refusing. Acknowledged writes are lost.
	RecoverPastDamage bool

	// logFault, if set, runs before each write and fdatasync of a log
	// segment, with "write" or "fdatasync"; an error it returns is that
	// operation's failure. Tests inject faults with it.
	logFault func(op string) error
	// beforeCommit, if set, runs in a checkpoint after it copied the
	// changed entries and before it writes them to bbolt. Tests read the
	// store there, while the copies are in neither place for good.
	beforeCommit func()
}

func (o *Options) setDefaults() {
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = 30 * time.Second
	}
	if o.CheckpointBytes <= 0 {
		o.CheckpointBytes = 64 << 20
	}
	if o.CheckpointSketches <= 0 {
		o.CheckpointSketches = 10_000
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = 512 << 20
	}
	if o.OpenTimeout <= 0 {
		o.OpenTimeout = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.KeyWindow <= 0 {
		o.KeyWindow = 24 * time.Hour
	}
	if o.KeyBytes <= 0 {
		o.KeyBytes = 256 << 20
	}
}

var (
	bucketMeta     = []byte(migrations.BucketMeta)
	bucketSketches = []byte(migrations.BucketSketches)
	bucketMetric   = []byte(migrations.BucketMetric)
	keyCheckpoint  = []byte("checkpoint_lsn")
	keyStoreID     = []byte(migrations.KeyStoreID)
)

// ErrClosed is returned by operations on a closed or closing DB.
var ErrClosed = sketch.Errorf(sketch.Unavailable, "the store is shutting down")

// DB is an open store. Its methods are safe for concurrent use.
type DB struct {
	opts   Options
	path   string
	walDir string
	bdb    *bbolt.DB
	wal    *wal
	// storeID is the identity the data file and the log share.
	storeID []byte
	// tainted is set from a log failure until memory is rebuilt from what
	// is durable; meanwhile reads are refused too.
	tainted atomic.Bool
	// unreadable counts records skipped because they could not be decoded;
	// checksumFailures, records read whose checksum did not match.
	unreadable       atomic.Int64
	checksumFailures atomic.Int64

	// cp orders writers against checkpoints: writers hold it shared while
	// they change sketches and append to the log, a checkpoint (or a
	// backup) holds it exclusively while it hands out its copies.
	cp sync.RWMutex
	// cpRun serialises checkpoints, and keeps them out while a backup
	// takes its copies; checkpointed is the log position the
	// bbolt file reflects, guarded by it.
	cpRun        sync.Mutex
	checkpointed uint64

	cacheMu    sync.Mutex
	entries    map[string]*entry
	lru        *list.List // unpinned, clean entries; front = most recent
	cacheBytes int64
	// loadDone (on cacheMu) is broadcast whenever an entry's load ends:
	// its other acquirers wait on it for their entry's loading to clear.
	loadDone sync.Cond

	dirtyMu    sync.Mutex
	dirty      []*entry   // changed since the running checkpoint took its copies (entry.inDirty), each once
	dirtyIdx   dirtyIndex // every entry whose dirty flag is set, by key
	dirtyBytes atomic.Int64
	dirtyN     atomic.Int64 // len(dirty)
	unsettled  atomic.Int64 // dirtyIdx.len()
	// replayTx, set only while Open replays the log (single-threaded),
	// is the read transaction loads use then, instead of one each.
	replayTx *bbolt.Tx

	// keys are the idempotency keys (keys.go).
	keys *keyTable

	statsMu   sync.Mutex
	counts    map[countKey]int
	estimates map[string]metricValue // opted-in sketches

	// gate is held shared by every write until it is durable, and
	// exclusively by Close to wait for them; closing turns new writes away.
	gate      sync.RWMutex
	closing   atomic.Bool
	closeOnce sync.Once
	closeErr  error
	stop      chan struct{}
	done      chan struct{}
	cpKick    chan struct{}
}

type countKey struct{ typ, rep string }

// entry is one cached sketch. st is nil for a sketch that does not exist,
// including one deleted since the last checkpoint (a tombstone, dirty).
type entry struct {
	name string

	// Guarded by DB.cacheMu.
	lru       *list.Element
	accounted int64
	loadErr   error

	mu   sync.Mutex
	st   *state
	snap *snapshot // a running checkpoint's copy, still to take before any change
	gen  uint64    // counts changes; a checkpoint clears dirty only if none followed its copy
	// enc, if set, is st's record as a checkpoint writes it, valid while
	// gen is encGen: a state replayed from a log put is not encoded again.
	enc    []byte
	encGen uint64
	mem    atomic.Int64 // st.memory(), refreshed after each change

	// The small fields last, together: an entry is 144 bytes, and with
	// many small sketches entries are much of the memory.

	pins int32 // guarded by DB.cacheMu
	// loading (guarded by DB.cacheMu) is set until st (or loadErr) is
	// set by the acquire that reads the sketch from bbolt, outside the
	// cache lock: other acquirers wait for DB.loadDone until it clears.
	// (A channel each, as before, cost 96 bytes an entry.)
	loading bool
	// unreadable marks an entry without a state whose stored record cannot
	// be decoded (acquireTolerant): a checkpoint never deletes its record
	// unless a delete cleared the mark.
	unreadable bool
	inDirty    bool // in DB.dirty; guarded by DB.dirtyMu
	// packed marks a changed small sketch nobody uses kept as its record
	// until its checkpoint: st is nil and enc (valid for gen) holds it
	// (pack.go). Set by its last user with mu and DB.cacheMu held,
	// cleared with mu held.
	packed atomic.Bool
	dirty  atomic.Bool // changed since the last committed checkpoint: not evictable; set and cleared under DB.dirtyMu, with dirtyIdx
}

// Open opens (creating if needed) the store at path and its log in
// path+".wal", runs pending migrations, checks that the two belong
// together, replays the log and checkpoints. A file held by another
// process fails after Options.OpenTimeout with an error saying so; a
// damaged file, a damaged log or a mismatch between them fails with an
// error naming the file and what to do.
func Open(path string, opts Options) (*DB, error) {
	opts.setDefaults()
	walDir := path + ".wal"
	if err := checkDataFile(path, walDir); err != nil {
		return nil, err
	}
	bdb, err := openBolt(path, opts.OpenTimeout)
	if err != nil {
		return nil, err
	}
	s := newDB(path, opts, bdb)
	if err := s.openSafely(); err != nil {
		closeQuietly(bdb)
		return nil, err
	}
	go s.checkpointLoop()
	return s, nil
}

// newDB returns a DB over the open bbolt file bdb, with nothing loaded.
// opts has its defaults set.
func newDB(path string, opts Options, bdb *bbolt.DB) *DB {
	s := &DB{
		opts: opts, path: path, walDir: path + ".wal", bdb: bdb,
		entries: map[string]*entry{}, lru: list.New(),
		counts: map[countKey]int{}, estimates: map[string]metricValue{},
		stop: make(chan struct{}), done: make(chan struct{}), cpKick: make(chan struct{}, 1),
		keys: newKeyTable(opts.KeyWindow, opts.KeyBytes),
	}
	s.loadDone.L = &s.cacheMu
	return s
}

// openSafely runs open, turning a panic or fault on a damaged page into an
// error naming the file.
func (s *DB) openSafely() (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = damagedFile(s.path, fmt.Sprint(r))
		}
	}()
	return s.open()
}

func (s *DB) open() error {
	var from, to int
	err := s.bdb.Update(func(tx *bbolt.Tx) error {
		var err error
		from, to, err = migrations.Run(tx)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: %s: %w", s.path, err)
	}
	if from != to {
		s.opts.Logger.Info("migrated store", "path", s.path, "from_version", from, "to_version", to)
	}
	var checkpoint uint64
	var cpErr error
	if err := s.bdb.View(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		checkpoint, cpErr = decodeCheckpoint(meta.Get(keyCheckpoint))
		s.storeID = bytes.Clone(meta.Get(keyStoreID))
		if err := s.loadKeys(tx, s.opts.Now()); err != nil {
			return err
		}
		return s.loadStats(tx)
	}); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if len(s.storeID) != 16 {
		return damagedFile(s.path, fmt.Sprintf("store identity of %d bytes", len(s.storeID)))
	}
	if cpErr != nil {
		var err error
		if checkpoint, err = s.damagedCheckpoint(cpErr); err != nil {
			return err
		}
	}
	// A store that had its identity before this open must have its log.
	fresh := from < migrations.VersionStoreID
	if _, err := os.Stat(s.walDir); errors.Is(err, fs.ErrNotExist) && !fresh && !s.opts.RecoverPastDamage {
		return fmt.Errorf("store: refusing to open %s: its write-ahead log directory %s is missing, with any acknowledged writes not yet checkpointed. Restore it, or start with -recover-past-damage to accept the loss", s.path, s.walDir)
	}
	if err := os.MkdirAll(s.walDir, 0o700); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := s.checkIdentity(checkpoint, fresh); err != nil {
		return err
	}
	segs, err := listSegments(s.walDir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if s.replayTx, err = s.bdb.Begin(false); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	sc, err := s.replayLog(segs, checkpoint)
	s.replayTx.Rollback()
	s.replayTx = nil
	if err != nil {
		return err
	}
	// Make bbolt reflect everything replayed, then start a clean log.
	snaps := s.takeDirty()
	fill(snaps)
	if err := s.commitCheckpoint(snaps, s.keys.takeChanges(), sc.last); err != nil {
		return err
	}
	s.checkpointed = sc.last
	if err := s.writeMarker(sc.last); err != nil {
		return err
	}
	next := uint64(1)
	for _, seg := range segs {
		if err := os.Remove(seg.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("store: %w", err)
		}
		next = seg.seq + 1
	}
	s.releaseClean(snaps)
	var observe func(int, int, time.Duration)
	if s.opts.Observer != nil {
		observe = s.opts.Observer.ObserveCommit
	}
	s.wal, err = openWAL(s.walDir, next, sc.last, s.opts.CommitInterval, observe, s.opts.logFault, s.onLogFailure)
	return err
}

// replayLog replays segs after checkpoint. Damage stops it with an error
// naming the file and offset, unless RecoverPastDamage is set: then it
// replays up to the damage, renames the damaged segment and every later
// one to <name>.damaged (kept, never deleted) and logs what was dropped:
// bytes, the intact (acknowledged) records among them and the sketches
// they touch.
func (s *DB) replayLog(segs []*segment, checkpoint uint64) (walScan, error) {
	apply := s.replayRecord
	if s.opts.RecoverPastDamage {
		apply = s.replayRecordRecovering
	}
	sc, err := scanWAL(segs, checkpoint, math.MaxUint64, apply)
	var damage *walDamage
	switch {
	case errors.As(err, &damage) && s.opts.RecoverPastDamage:
		loss, lerr := damage.lost(sc.last)
		if lerr != nil {
			return sc, fmt.Errorf("store: reading the damaged log: %w", lerr)
		}
		dropped := []any{"file", damage.seg.path, "offset", damage.offset, "reason", damage.reason, "replayed_to_lsn", sc.last,
			"dropped_bytes", loss.bytes, "dropped_intact_records", loss.records}
		if loss.records > 0 {
			dropped = append(dropped, "dropped_lsns", fmt.Sprintf("%d-%d", loss.firstLSN, loss.lastLSN), "touched", loss.touched)
		}
		var keptAs []string
		for _, seg := range append([]*segment{damage.seg}, damage.later...) {
			if err := os.Rename(seg.path, seg.path+".damaged"); err != nil {
				return sc, fmt.Errorf("store: keeping the damaged log segment: %w", err)
			}
			keptAs = append(keptAs, seg.path+".damaged")
		}
		dropped = append(dropped, "kept_as", keptAs)
		s.opts.Logger.Warn("recovering past damage: dropped the write-ahead log from the damage on; the dropped intact records were acknowledged writes, now lost", dropped...)
		kept := segs[:0:0]
		for _, seg := range segs {
			if seg != damage.seg && !slices.Contains(damage.later, seg) {
				kept = append(kept, seg)
			}
		}
		copy(segs, kept)
		segs = segs[:len(kept)]
	case errors.As(err, &damage):
		lost := "acknowledged writes after it would be lost"
		if loss, lerr := damage.lost(sc.last); lerr == nil {
			lost = fmt.Sprintf("%d intact records (acknowledged writes, in %d bytes from the damage on) would be lost", loss.records, loss.bytes)
		}
		return sc, fmt.Errorf("store: %w: %s, so the store does not start. Every log file is kept as it is; restore the log from a backup, or start with -recover-past-damage to replay up to the damage and keep the damaged segments aside", err, lost)
	case err != nil && s.opts.RecoverPastDamage:
		s.opts.Logger.Warn("recovering past damage: stopped replaying the write-ahead log", "err", err, "replayed_to_lsn", sc.last)
	case err != nil:
		return sc, fmt.Errorf("store: replay %s: %w. The store does not start: acknowledged writes in the log cannot be applied. Restore the data file and its log from the same backup, or start with -recover-past-damage to apply what applies and log what is dropped", s.walDir, err)
	}
	if sc.tornBytes > 0 {
		s.opts.Logger.Warn("write-ahead log ends in a torn record: dropped. A crash during a write leaves one, never acknowledged; a truncated or zeroed tail looks the same, so the dropped bytes may include acknowledged writes", "file", sc.tornPath, "offset", sc.tornAt, "bytes", sc.tornBytes)
	}
	if sc.records > 0 {
		s.opts.Logger.Info("replayed write-ahead log", "records", sc.records, "from_lsn", checkpoint+1, "to_lsn", sc.last)
	}
	return sc, nil
}

// replayRecord applies one logged record (its payload after the LSN).
func (s *DB) replayRecord(_ uint64, payload []byte) error {
	// Check the whole record first: its operations apply together or not
	// at all.
	if err := decodeOps(payload, nil); err != nil {
		return err
	}
	return decodeOps(payload, func(o *op) error {
		if err := s.replay(*o); err != nil {
			return fmt.Errorf("%s %s: %w", o.typ, strconv.Quote(o.name), err)
		}
		return nil
	})
}

// replayRecordRecovering is replayRecord for RecoverPastDamage: the
// operations of a record that apply are applied, those that do not
// (their sketch is damaged, or missing) are dropped, and the record's
// every sketch and each dropped operation are logged. A record that does
// not parse is dropped whole, naming the sketches it could read.
func (s *DB) replayRecordRecovering(lsn uint64, payload []byte) error {
	names := map[string]bool{}
	opNames(payload, names)
	if err := decodeOps(payload, nil); err != nil {
		s.opts.Logger.Warn("recovering past damage: dropped a log record that does not parse", "lsn", lsn, "touched", sortedLabels(names), "err", err)
		return nil
	}
	var dropped []string
	for _, d := range s.replayApplicable(payload) {
		dropped = append(dropped, d.String())
	}
	if len(dropped) > 0 {
		s.opts.Logger.Warn("recovering past damage: dropped operations of a log record that do not apply; its other operations applied", "lsn", lsn, "touched", sortedLabels(names), "dropped", dropped)
	}
	return nil
}

// droppedOp is a logged operation that does not apply.
type droppedOp struct {
	what  string // the operation and the entry it changes
	label string
	err   error
}

func (d droppedOp) String() string { return fmt.Sprintf("%s to %s: %v", d.what, d.label, d.err) }

// replayApplicable applies, one by one, the operations of a record that
// parses (its payload after the LSN) that apply, and returns those that do
// not, each with why: what RecoverPastDamage drops and logs, and what
// CheckFiles reports, so that the two read the log alike.
func (s *DB) replayApplicable(payload []byte) []droppedOp {
	var dropped []droppedOp
	decodeOps(payload, func(o *op) error {
		if err := s.replay(*o); err != nil {
			what := o.typ.String()
			if o.typ == opAdd {
				what = fmt.Sprintf("add of %d bytes of changes", len(o.delta))
			}
			dropped = append(dropped, droppedOp{what: what, label: opLabel(o), err: err})
		}
		return nil
	})
	return dropped
}

func (t opType) String() string {
	switch t {
	case opPut:
		return "put"
	case opDelete:
		return "delete"
	case opAdd, opAddHashes, opAddItems:
		return "add"
	case opMetric:
		return "metric"
	case opKey:
		return "idempotency key"
	}
	return fmt.Sprintf("op %d", byte(t))
}

// replay applies one logged operation, at open or while memory is rebuilt
// after a log failure (writers excluded).
func (s *DB) replay(o op) error {
	if o.typ == opKey {
		id, err := decodeKeyID([]byte(o.name))
		if err != nil {
			return err
		}
		rec := o.key
		rec.Answer = bytes.Clone(rec.Answer)
		s.keys.restore(id, rec, s.opts.Now(), true)
		return nil
	}
	acquire := s.acquire
	if o.typ == opDelete || o.typ == opPut {
		// A delete of an unreadable record, or a put that replaces it.
		acquire = s.acquireTolerant
	}
	e, err := acquire(o.name)
	if err != nil {
		return err
	}
	defer s.release(e)
	e.mu.Lock()
	defer e.mu.Unlock()
	before := e.summary()
	switch o.typ {
	case opPut:
		st, err := decodeLogged(o.name, o.rec)
		if err != nil {
			return err
		}
		e.st, e.unreadable = st, false
		if o.rec[0] == recordFormat {
			// The record a checkpoint would write for this state, unless a
			// later operation changes it: kept so that it is not encoded
			// again (o.rec dies with the payload: a copy).
			defer func() { e.enc, e.encGen = bytes.Clone(o.rec), e.gen }()
		}
	case opDelete:
		e.st, e.unreadable = nil, false
	case opAdd:
		if e.st == nil {
			return errors.New("no sketch to add to")
		}
		if tag := e.st.sk.Kind().Tag; tag != o.tag {
			return fmt.Errorf("the sketch has kind tag %d, the delta %d", tag, o.tag)
		}
		// An empty delta (schema version 7 on) moves only the last write
		// of a sketch that expires after it.
		if len(o.delta) > 0 {
			if err := e.st.sk.ApplyDelta(o.delta); err != nil {
				return err
			}
		}
		e.st.updated = o.updated
	case opMetric:
		if e.st == nil {
			return errors.New("no sketch to flag")
		}
		e.st.metric = o.metric
	}
	s.changed(e, before)
	return nil
}

// Close stops accepting writes, waits for those in flight, checkpoints
// and closes the files. It is safe to call more than once.
func (s *DB) Close() error {
	s.closeOnce.Do(func() {
		s.quiesce()
		err := s.Checkpoint(context.Background())
		s.closeErr = errors.Join(err, s.wal.close(), s.bdb.Close())
	})
	return s.closeErr
}

// ErrCrashed is what Close returns after Crash.
var ErrCrashed = errors.New("store: abandoned by Crash")

// Crash abandons the store as kill -9 would once its acknowledged writes
// returned: the log and the bbolt file are closed with no checkpoint, so
// the next Open must replay. It is the hook recovery tests use; a
// process never calls it.
func (s *DB) Crash() {
	s.closeOnce.Do(func() {
		s.quiesce()
		s.wal.abandon()
		s.bdb.Close()
		s.closeErr = ErrCrashed
	})
}

// quiesce refuses new writes, waits for those in flight and stops the
// checkpoint loop. Once the gate is held no write is in flight; writers
// waiting for it see closing and refuse.
func (s *DB) quiesce() {
	s.gate.Lock()
	s.closing.Store(true)
	s.gate.Unlock()
	close(s.stop)
	<-s.done
}

// Ready reports whether the store accepts writes: open, not closing, and
// its log healthy.
func (s *DB) Ready() bool {
	return !s.closing.Load() && s.wal.err() == nil && !s.tainted.Load()
}

// Path returns the bbolt file's path.
func (s *DB) Path() string { return s.path }

// Check runs CheckFiles on the closed store at path and returns its
// problems as an error (nil when it found none).
func Check(path string) error {
	r, err := CheckFiles(path)
	if err != nil {
		return err
	}
	if r.Clean() {
		return nil
	}
	return errors.New(r.String())
}
