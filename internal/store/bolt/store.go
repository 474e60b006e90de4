// Package store keeps sketchd's sketches: durable in a bbolt file, with a
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
// checkpoint clones the changed sketches, so the copy is the exact state at
// C. At open the log records after C are replayed onto that state, so
// replay is exact for HLL and CMS alike: no increment is counted twice, and
// a record torn by a crash was never acknowledged.
//
// # Memory
//
// Decoded sketches are cached up to Options.CacheBytes. Sketches changed
// since the last checkpoint stay in memory until it runs; unchanged ones are
// evicted least recently used first. When changed sketches alone pass the
// limit a checkpoint starts early, and past twice the limit writes are
// refused with an Unavailable error until it completes.
package bolt

import (
	"container/list"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

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
	// CacheBytes bounds the decoded sketches kept in memory (default 512 MiB).
	CacheBytes int64
	// OpenTimeout is how long Open waits for another process's lock on the
	// file (default 1s).
	OpenTimeout time.Duration
	Logger      *slog.Logger
	Observer    Observer
	// Now returns the time stamped on writes (default time.Now).
	Now func() time.Time
}

func (o *Options) setDefaults() {
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = 30 * time.Second
	}
	if o.CheckpointBytes <= 0 {
		o.CheckpointBytes = 64 << 20
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
}

var (
	bucketMeta     = []byte(migrations.BucketMeta)
	bucketSketches = []byte(migrations.BucketSketches)
	bucketMetric   = []byte(migrations.BucketMetric)
	keyCheckpoint  = []byte("checkpoint_lsn")
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

	// cp orders writers against checkpoints: writers hold it shared while
	// they change sketches and append to the log, a checkpoint holds it
	// exclusively while it takes its copy.
	cp sync.RWMutex
	// cpRun serialises checkpoints; checkpointed is the log position the
	// bbolt file reflects, guarded by it.
	cpRun        sync.Mutex
	checkpointed uint64

	cacheMu    sync.Mutex
	entries    map[string]*entry
	lru        *list.List // unpinned, clean entries; front = most recent
	cacheBytes int64

	dirtyMu    sync.Mutex
	dirty      map[*entry]struct{}
	dirtyBytes atomic.Int64

	statsMu   sync.Mutex
	counts    map[countKey]int
	estimates map[string]float64 // opted-in sketches

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
	pins      int
	lru       *list.Element
	accounted int64

	// loaded is closed once st (or loadErr) is set by the acquire that
	// read the sketch from bbolt, outside the cache lock.
	loaded  chan struct{}
	loadErr error

	mu    sync.Mutex
	st    *state
	gen   uint64       // counts changes; a checkpoint clears dirty only if none followed its copy
	dirty atomic.Bool  // changed since the last committed checkpoint: not evictable
	mem   atomic.Int64 // st.memory(), refreshed after each change
}

// Open opens (creating if needed) the store at path and its log in
// path+".wal", runs pending migrations, replays the log and checkpoints.
// A file held by another process fails after Options.OpenTimeout with an
// error saying so.
func Open(path string, opts Options) (*DB, error) {
	opts.setDefaults()
	bdb, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: opts.OpenTimeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("store: %s is locked by another process (is another sketchd running on it?)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s := &DB{
		opts: opts, path: path, walDir: path + ".wal", bdb: bdb,
		entries: map[string]*entry{}, lru: list.New(), dirty: map[*entry]struct{}{},
		counts: map[countKey]int{}, estimates: map[string]float64{},
		stop: make(chan struct{}), done: make(chan struct{}), cpKick: make(chan struct{}, 1),
	}
	if err := s.open(); err != nil {
		bdb.Close()
		return nil, err
	}
	go s.checkpointLoop()
	return s, nil
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
	if err := os.MkdirAll(s.walDir, 0o700); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	var checkpoint uint64
	if err := s.bdb.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyCheckpoint); len(v) == 8 {
			checkpoint = binary.BigEndian.Uint64(v)
		}
		return s.loadStats(tx)
	}); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	replayed := 0
	last, err := replayWAL(s.walDir, checkpoint, func(lsn uint64, payload []byte) error {
		ops, err := decodeOps(payload)
		if err != nil {
			return err
		}
		for _, o := range ops {
			if err := s.replay(o); err != nil {
				return fmt.Errorf("%s %q: %w", o.typ, o.name, err)
			}
		}
		replayed++
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: replay %s: %w", s.walDir, err)
	}
	if replayed > 0 {
		s.opts.Logger.Info("replayed write-ahead log", "records", replayed, "from_lsn", checkpoint+1, "to_lsn", last)
	}
	// Make bbolt reflect everything replayed, then start a clean log.
	snaps := s.takeSnapshots()
	if err := s.commitCheckpoint(snaps, last); err != nil {
		return err
	}
	s.checkpointed = last
	segs, err := listSegments(s.walDir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	for _, seg := range segs {
		if err := os.Remove(seg.path); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}
	s.releaseClean(snaps)
	var observe func(int, int, time.Duration)
	if s.opts.Observer != nil {
		observe = s.opts.Observer.ObserveCommit
	}
	s.wal, err = openWAL(s.walDir, last, s.opts.CommitInterval, observe)
	return err
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
	}
	return fmt.Sprintf("op %d", byte(t))
}

// replay applies one logged operation during Open (single-threaded).
func (s *DB) replay(o op) error {
	e, err := s.acquire(o.name)
	if err != nil {
		return err
	}
	defer s.release(e)
	before := e.summary()
	switch o.typ {
	case opPut:
		st, err := decodeEntry(o.name, o.rec)
		if err != nil {
			return err
		}
		e.st = st
	case opDelete:
		e.st = nil
	case opAdd:
		if e.st == nil {
			return errors.New("no sketch to add to")
		}
		if tag := e.st.sk.Kind().Tag; tag != o.tag {
			return fmt.Errorf("the sketch has kind tag %d, the delta %d", tag, o.tag)
		}
		if err := e.st.sk.ApplyDelta(o.delta); err != nil {
			return err
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
	return !s.closing.Load() && s.wal.err() == nil
}

// Path returns the bbolt file's path.
func (s *DB) Path() string { return s.path }

// Check runs bbolt's consistency check on the closed file at path,
// read-only, and returns every problem it finds.
func Check(path string) error {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("store: check %s: %w", path, err)
	}
	defer db.Close()
	var errs []error
	db.View(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		return nil
	})
	return errors.Join(errs...)
}
