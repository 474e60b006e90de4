package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/migrations"
)

// CheckFiles reads a stopped store offline, the data file at path and
// its log in path+".wal", and reports every damaged record, log record
// and structure it finds, each with what can be recovered. It never
// writes: bbolt is opened read-only and the log's files are only read.
// It returns an error only when it cannot check at all (no store there,
// the file locked by a running sketchd, or not readable); damage is in
// the report.
//
// What it checks: the bbolt file's size against its meta page, bbolt's
// consistency check, the meta values (schema version, store identity,
// checkpoint position and its checksum), every stored record (its
// checksum, then a full decode, as a read would), every idempotency key
// record (readKeys, as Open reads them) and the /metrics index against
// the sketches' flags, the log's marker against the data file, and every
// log record (length, checksum, LSN order, operations that parse), whose
// operations it replays in memory with the code Open replays them with
// (replayApplicable): whatever makes Open refuse a store, or warn about
// what it read, is a problem here too. It also says which damaged
// records the log would replace or change at the next start.
func CheckFiles(path string) (*Report, error) {
	r := &Report{Data: path, Log: path + ".wal"}
	c := &fileCheck{r: r, damaged: map[string]bool{}}
	defer c.close()
	if err := c.data(); err != nil {
		return nil, err
	}
	if err := c.log(); err != nil {
		return nil, err
	}
	c.recoveries()
	return r, nil
}

// close ends the replay and closes the data file, if they are open.
func (c *fileCheck) close() {
	if c.replayer != nil {
		c.replayer.replayTx.Rollback()
		closeQuietly(c.replayer.bdb)
		c.replayer = nil
	}
}

// Report is what CheckFiles found.
type Report struct {
	Data, Log     string
	SchemaVersion int
	// Records is how many stored records were read, Keys how many
	// idempotency key records; LogRecords how many intact log records the
	// next start would replay.
	Records, Keys, LogRecords int
	// Checkpoint is the log position the data file reflects.
	Checkpoint uint64
	// Notes are facts that are not damage (a store that was not shut down
	// cleanly, segments kept aside by an earlier recovery).
	Notes    []string
	Problems []Problem
}

// Problem is one damaged thing.
type Problem struct {
	File     string // the data file or a log file
	What     string // the damaged sketch, series entry, record or structure
	Damage   string // what is wrong with it
	Recovery string // what can be recovered, and how

	key string // the entry key of a damaged stored record
}

// Clean reports whether nothing is damaged.
func (r *Report) Clean() bool { return len(r.Problems) == 0 }

// String renders the report for people, one finding a paragraph.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "data file %s: schema version %d, %d stored records and %d idempotency keys read, checkpointed at log position %d\n", r.Data, r.SchemaVersion, r.Records, r.Keys, r.Checkpoint)
	fmt.Fprintf(&b, "log %s: %d intact records to replay at the next start\n", r.Log, r.LogRecords)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "DAMAGED: %s in %s: %s\n", p.What, p.File, p.Damage)
		if p.Recovery != "" {
			fmt.Fprintf(&b, "  can recover: %s\n", p.Recovery)
		}
	}
	if r.Clean() {
		b.WriteString("no damage found\n")
	} else {
		fmt.Fprintf(&b, "%d damaged: see above\n", len(r.Problems))
	}
	return b.String()
}

// fileCheck is one CheckFiles run.
type fileCheck struct {
	r       *Report
	id      []byte          // the data file's store identity, if read
	damaged map[string]bool // entry keys of damaged stored records
	// firstOp is, for a damaged record's key, the first logged operation
	// on it after the checkpoint, and its LSN.
	firstOp map[string]loggedOp
	noData  bool // the data file is missing or empty
	// replayer replays the log onto the data file's records in memory,
	// with the code Open replays it with; nil when the records could not
	// be read (the data file is damaged, missing or of an old schema).
	replayer *DB
}

type loggedOp struct {
	typ opType
	lsn uint64
}

func (c *fileCheck) problem(p Problem) { c.r.Problems = append(c.r.Problems, p) }

// data checks the bbolt file.
func (c *fileCheck) data() error {
	path := c.r.Data
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist), err == nil && fi.Size() == 0:
		c.noData = true
		m, ok, merr := readMarker(c.r.Log)
		if merr != nil || !ok {
			if _, lerr := os.Stat(c.r.Log); lerr != nil {
				return fmt.Errorf("check: no store at %s: no data file (or an empty one) and no log %s", path, c.r.Log)
			}
			c.r.Notes = append(c.r.Notes, "the data file is missing or empty and its log has no marker: a store that was never started, or was emptied on purpose")
			return nil
		}
		c.problem(Problem{File: path, What: "the data file", Damage: fmt.Sprintf("missing or empty, while its log says it held a store checkpointed at log position %d", m.lsn),
			Recovery: "nothing from the data file; restore it from a backup taken with its log"})
		return nil
	case err != nil:
		return fmt.Errorf("check: %w", err)
	}
	if err := checkPages(path); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("check: %w", err)
		}
		c.problem(Problem{File: path, What: "the data file", Damage: strings.TrimPrefix(err.Error(), "store: "), Recovery: "nothing can be read from it safely; restore it from a backup"})
		return nil
	}
	return c.readData(path)
}

// readData opens the bbolt file read-only and checks its structure, meta
// values and records, turning a panic or fault on a damaged page into a
// problem.
func (c *fileCheck) readData(path string) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var db *bbolt.DB
	defer func() {
		if v := recover(); v != nil {
			if db != nil {
				closeQuietly(db)
			}
			c.problem(Problem{File: path, What: "the data file", Damage: fmt.Sprintf("reading it failed: %v", v), Recovery: "restore it from a backup"})
			err = nil
		}
	}()
	db, err = bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("check: %s is locked by another process (a running sketchd?): stop it first, check reads a stopped store", path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("check: %w", err)
	case err != nil:
		c.problem(Problem{File: path, What: "the data file", Damage: fmt.Sprintf("bbolt cannot open it: %v", err), Recovery: "restore it from a backup"})
		return nil
	}
	read := false
	defer func() {
		if !read {
			db.Close()
		}
	}()
	err = db.View(func(tx *bbolt.Tx) error {
		if err := touchAll(tx); err != nil {
			c.problem(Problem{File: path, What: "the data file's pages", Damage: err.Error(), Recovery: "restore it from a backup"})
			return nil
		}
		var structure []string
		for err := range tx.Check() {
			structure = append(structure, err.Error())
			if len(structure) == 20 {
				structure = append(structure, "...")
				break
			}
		}
		if len(structure) > 0 {
			c.problem(Problem{File: path, What: "the data file's structure", Damage: "bbolt's consistency check: " + strings.Join(structure, "; "),
				Recovery: "records were not read; restore the file from a backup"})
			return nil
		}
		err := c.readRecords(tx)
		read = err == nil && c.r.SchemaVersion >= migrations.VersionChecksums
		return err
	})
	if err != nil || !read {
		return err
	}
	// What the log does to these records is checked by replaying it as
	// Open does, in memory, on a read transaction.
	opts := Options{}
	opts.setDefaults()
	c.replayer = newDB(path, opts, db)
	if c.replayer.replayTx, err = db.Begin(false); err != nil {
		c.replayer = nil
		read = false
		return fmt.Errorf("check: %w", err)
	}
	return nil
}

// readRecords checks the meta values and every stored record.
func (c *fileCheck) readRecords(tx *bbolt.Tx) error {
	path := c.r.Data
	v, err := migrations.Version(tx)
	if err != nil {
		c.problem(Problem{File: path, What: "the schema version", Damage: err.Error(), Recovery: "restore the file from a backup"})
		return nil
	}
	c.r.SchemaVersion = v
	if v > migrations.Latest() {
		return fmt.Errorf("check: %s has schema version %d, newer than this binary's %d: check it with a newer sketchd", path, v, migrations.Latest())
	}
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		c.problem(Problem{File: path, What: "the data file", Damage: "bucket meta is missing", Recovery: "restore it from a backup"})
		return nil
	}
	if v >= migrations.VersionStoreID {
		if c.id = bytes.Clone(meta.Get(keyStoreID)); len(c.id) != 16 {
			c.problem(Problem{File: path, What: "the store identity", Damage: fmt.Sprintf("%d bytes, want 16", len(c.id)), Recovery: "restore the file from a backup"})
		}
	}
	cp := meta.Get(keyCheckpoint)
	if v < migrations.VersionChecksums {
		c.r.Notes = append(c.r.Notes, fmt.Sprintf("schema version %d: stored records carry no checksums yet (the next start adds them); they were checked by decoding only", v))
		if len(cp) == 8 {
			cp = appendCheckpoint(nil, binary.BigEndian.Uint64(cp))
		}
	}
	if c.r.Checkpoint, err = decodeCheckpoint(cp); err != nil {
		c.problem(Problem{File: path, What: "the checkpoint position", Damage: err.Error(),
			Recovery: "sketchd refuses to start; -recover-past-damage takes the position from the log's marker (Count-Min counts changed after it may count twice)"})
	}
	decode := decodeEntry
	if v < migrations.VersionChecksums {
		decode = decodeLegacy
	}
	metric := map[string]bool{} // the readable sketches flagged for /metrics
	for _, b := range []struct {
		name   []byte
		prefix string
		since  int // the schema version that created the bucket
	}{{bucketSketches, "", 1}, {bucketSeries, string(prefixSeries), 3}, {bucketBuckets, string(prefixBucket), 3}} {
		bucket := tx.Bucket(b.name)
		if bucket == nil {
			if v >= b.since {
				c.problem(Problem{File: path, What: "bucket " + string(b.name), Damage: "missing", Recovery: "restore the file from a backup"})
			}
			continue
		}
		bucket.ForEach(func(k, val []byte) error {
			key := b.prefix + string(k)
			c.r.Records++
			if val == nil {
				c.problem(Problem{File: path, What: entryLabel(key), Damage: "a nested bucket where a record belongs", key: key})
				c.damaged[key] = true
				return nil
			}
			st, err := decode(key, val)
			if err != nil {
				c.problem(Problem{File: path, What: entryLabel(key), Damage: c.describe(key, val, err), key: key})
				c.damaged[key] = true
			} else if st.metric && isSketchName(key) {
				metric[key] = true
			}
			return nil
		})
	}
	if v >= migrations.VersionMetricIndex {
		c.metricIndex(tx, metric)
	}
	if v >= migrations.VersionKeys {
		c.keys(tx)
	}
	return nil
}

// metricIndex checks bucket metric, the names of the sketches exported on
// /metrics, which Open reads to find them (loadStats), against the
// sketches' own flags (metric: the readable sketches flagged).
func (c *fileCheck) metricIndex(tx *bbolt.Tx, metric map[string]bool) {
	path := c.r.Data
	b := tx.Bucket(bucketMetric)
	if b == nil {
		c.problem(Problem{File: path, What: "bucket metric", Damage: "missing", Recovery: "restore the file from a backup"})
		return
	}
	indexed := map[string]bool{}
	b.ForEach(func(k, _ []byte) error {
		name := string(k)
		indexed[name] = true
		switch {
		case c.damaged[name]:
			// Reported with its record.
		case !metric[name]:
			c.problem(Problem{File: path, What: "the /metrics entry of " + entryLabel(name), Damage: "no sketch of that name is stored with the metric flag (a damaged name, or a stale entry); sketchd logs it as unreadable at every start",
				Recovery: "nothing is lost: no sketch's estimate depends on it"})
		}
		return nil
	})
	for _, name := range slices.Sorted(maps.Keys(metric)) {
		if !indexed[name] {
			c.problem(Problem{File: path, What: entryLabel(name), Damage: "it is flagged for /metrics, but bucket metric lacks its entry: its estimate is missing from /metrics after a start",
				Recovery: "all of it: its next write (or PUT with \"metric\": true) restores the entry"})
		}
	}
}

// keys checks every idempotency key record as Open reads it (readKeys):
// one that fails its check stops the start.
func (c *fileCheck) keys(tx *bbolt.Tx) {
	err := readKeys(tx, func(k []byte, _ idem.ID, _ idem.Record, err error) error {
		c.r.Keys++
		if err != nil {
			c.problem(Problem{File: c.r.Data, What: keyLabel(k), Damage: fmt.Sprintf("its record cannot be used: %v", err),
				Recovery: "the write it guards, which is not part of it; sketchd refuses to start, -recover-past-damage starts without the key (at every start while the record is there): a retry of that write with that key would then apply it again"})
		}
		return nil
	})
	if err != nil {
		c.problem(Problem{File: c.r.Data, What: "bucket idempotency", Damage: err.Error(), Recovery: "sketchd refuses to start; restore the file from a backup"})
	}
}

// decodeLegacy decodes a stored record of a file older than schema
// version 5: format 1, without a checksum.
func decodeLegacy(key string, rec []byte) (*state, error) {
	if len(rec) > 0 && rec[0] != recordFormatV1 {
		return nil, fmt.Errorf("record format %d, want %d", rec[0], recordFormatV1)
	}
	return decodeLogged(key, rec)
}

// describe says what is wrong with a stored record, and whether its bytes
// still decode when its checksum fails.
func (c *fileCheck) describe(key string, rec []byte, err error) string {
	if !errors.Is(err, errChecksum) {
		return fmt.Sprintf("its record cannot be decoded: %v", err)
	}
	if _, derr := decodeBody(key, rec, rec[recordHeaderLen:len(rec)-recordCRCLen]); derr == nil {
		return fmt.Sprintf("its record failed its checksum (%v); its bytes still decode, but may be wrong", err)
	}
	return fmt.Sprintf("its record failed its checksum (%v), and its bytes do not decode either", err)
}

// log checks the marker and every segment.
func (c *fileCheck) log() error {
	dir := c.r.Log
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if c.r.SchemaVersion >= migrations.VersionStoreID && !c.noData {
			c.problem(Problem{File: dir, What: "the log directory", Damage: "missing, with any acknowledged writes not yet checkpointed",
				Recovery: "everything in the data file; sketchd refuses to start, -recover-past-damage starts without the log"})
		}
		return nil
	} else if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	m, ok, err := readMarker(dir)
	switch {
	case err != nil:
		c.problem(Problem{File: filepath.Join(dir, markerName), What: "the log's checkpoint marker", Damage: err.Error(),
			Recovery: "sketchd refuses to start; if the data file is intact, -recover-past-damage starts and rewrites the marker"})
	case !ok && c.r.SchemaVersion >= migrations.VersionStoreID && !c.noData:
		c.problem(Problem{File: dir, What: "the log's checkpoint marker", Damage: "missing: the log was deleted or replaced",
			Recovery: "everything in the data file; sketchd refuses to start, -recover-past-damage starts anyway"})
	case ok && c.id != nil && !bytes.Equal(m.id, c.id):
		c.problem(Problem{File: dir, What: "the log", Damage: "it belongs to another store (their identities differ)",
			Recovery: "the data file alone; restore the log that belongs to it"})
	case ok && !c.noData && c.r.Checkpoint < m.lsn:
		c.problem(Problem{File: c.r.Data, What: "the data file", Damage: fmt.Sprintf("older than its log: it reflects the log up to position %d, the log was checkpointed up to %d (restored from an old copy, or bbolt fell back to its older meta page)", c.r.Checkpoint, m.lsn),
			Recovery: "the sketches as of position " + fmt.Sprint(c.r.Checkpoint) + "; those changed in between are lost unless the data file is restored from a backup taken with the log"})
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	var aside []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".damaged") {
			aside = append(aside, e.Name())
		}
	}
	if len(aside) > 0 {
		c.r.Notes = append(c.r.Notes, fmt.Sprintf("%d log segments kept aside by an earlier -recover-past-damage, never replayed: %s", len(aside), strings.Join(aside, ", ")))
	}
	segs, err := listSegments(dir)
	if err != nil {
		c.problem(Problem{File: dir, What: "the log directory", Damage: err.Error(), Recovery: "sketchd refuses to start; move the unexpected file away"})
		return nil
	}
	return c.segments(segs)
}

// segments reads every record of segs as the next start would.
func (c *fileCheck) segments(segs []*segment) error {
	c.firstOp = map[string]loggedOp{}
	lastData := -1
	for i, seg := range segs {
		fi, err := os.Stat(seg.path)
		if err != nil {
			return fmt.Errorf("check: %w", err)
		}
		if fi.Size() > 0 {
			lastData = i
		}
	}
	last, seen := c.r.Checkpoint, c.r.Checkpoint
	before := 0 // records already in the data file
	for i, seg := range segs[:lastData+1] {
		data, err := os.ReadFile(seg.path)
		if err != nil {
			return fmt.Errorf("check: %w", err)
		}
		for off := 0; off < len(data); {
			payload, n, reason := checkRecord(data[off:])
			if reason != "" {
				if i == lastData && !intactAfter(data[off+1:], seen) {
					c.problem(Problem{File: seg.path, What: fmt.Sprintf("the log's last record, at offset %d", off),
						Damage:   fmt.Sprintf("the last %d bytes fail their check (%s): a torn write (a crash during a write, never acknowledged) or a truncated or zeroed tail, which may include acknowledged writes", len(data)-off, reason),
						Recovery: fmt.Sprintf("every record before offset %d; sketchd drops the %d bytes at start and logs it", off, len(data)-off)})
					break
				}
				d := &walDamage{seg: seg, offset: off, reason: reason, later: segs[i+1 : lastData+1]}
				loss, err := d.lost(seen)
				if err != nil {
					return fmt.Errorf("check: %w", err)
				}
				lost := fmt.Sprintf("%d intact records after it (acknowledged writes", loss.records)
				if loss.records > 0 {
					lost += fmt.Sprintf(", LSN %d-%d, touching %s", loss.firstLSN, loss.lastLSN, strings.Join(capList(loss.touched, 20), ", "))
				}
				c.problem(Problem{File: seg.path, What: fmt.Sprintf("the log record at offset %d", off),
					Damage:   fmt.Sprintf("it fails its check (%s) and intact records follow it", reason),
					Recovery: fmt.Sprintf("every record before it (up to LSN %d); sketchd refuses to start. Restore the log from a backup to keep the %s); -recover-past-damage drops them with the damaged bytes (%d bytes in all) and keeps the segments aside", last, lost, loss.bytes)})
				return nil
			}
			lsn := binary.BigEndian.Uint64(payload)
			seen = max(seen, lsn)
			switch {
			case lsn <= c.r.Checkpoint:
				before++
			case lsn != last+1:
				c.problem(Problem{File: seg.path, What: fmt.Sprintf("the log record at offset %d", off),
					Damage:   fmt.Sprintf("it holds LSN %d where %d was due: records are missing (a lost segment, or a data file older than its log)", lsn, last+1),
					Recovery: fmt.Sprintf("records up to LSN %d; sketchd refuses to start, -recover-past-damage stops replaying there", last)})
				return nil
			default:
				if err := decodeOps(payload[8:], nil); err != nil {
					c.problem(Problem{File: seg.path, What: fmt.Sprintf("the log record at offset %d (LSN %d)", off, lsn),
						Damage:   fmt.Sprintf("its checksum matches but its operations do not parse: %v", err),
						Recovery: "the records before it; sketchd refuses to start, -recover-past-damage drops this record"})
				} else if dropped := c.replay(payload[8:]); len(dropped) > 0 {
					c.problem(Problem{File: seg.path, What: fmt.Sprintf("the log record at offset %d (LSN %d)", off, lsn),
						Damage:   fmt.Sprintf("its checksum matches but operations in it do not apply: %s", strings.Join(capList(dropped, 5), "; ")),
						Recovery: "the records before it; sketchd refuses to start, -recover-past-damage drops the operations that do not apply (the rest of the record applies)"})
				}
				decodeOps(payload[8:], func(o *op) error {
					if _, ok := c.firstOp[o.name]; !ok {
						c.firstOp[o.name] = loggedOp{o.typ, lsn}
					}
					return nil
				})
				last = lsn
				c.r.LogRecords++
			}
			off += n
		}
	}
	if before > 0 {
		c.r.Notes = append(c.r.Notes, fmt.Sprintf("%d log records are already in the data file (a crash after a checkpoint, before its segments were deleted)", before))
	}
	if c.r.LogRecords > 0 {
		c.r.Notes = append(c.r.Notes, fmt.Sprintf("the store was not shut down cleanly: the next start replays %d log records (LSN %d-%d)", c.r.LogRecords, c.r.Checkpoint+1, last))
	}
	return nil
}

// replay applies a log record's operations (payload after the LSN) to
// the records in memory as Open does, and returns those that do not
// apply, but for operations on stored records already reported damaged
// (recoveries says what the log does to those). A fault on a damaged
// page is an operation that does not apply.
func (c *fileCheck) replay(payload []byte) (dropped []string) {
	if c.replayer == nil {
		return nil
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if v := recover(); v != nil {
			dropped = append(dropped, fmt.Sprintf("replaying it failed: %v", v))
		}
	}()
	for _, d := range c.replayer.replayApplicable(payload) {
		var ue *unreadableError
		if errors.As(d.err, &ue) && c.damaged[ue.name] {
			continue
		}
		dropped = append(dropped, d.String())
	}
	return dropped
}

// recoveries says, for each damaged stored record, what the log does to
// it at the next start and what is left to do.
func (c *fileCheck) recoveries() {
	for i := range c.r.Problems {
		p := &c.r.Problems[i]
		if p.key == "" {
			continue
		}
		remove := removeHint(p.key)
		o, logged := c.firstOp[p.key]
		switch {
		case logged && o.typ == opPut:
			p.Recovery = fmt.Sprintf("all of it: the log replaces it with a whole new state (LSN %d) at the next start", o.lsn)
		case logged && o.typ == opDelete:
			p.Recovery = fmt.Sprintf("nothing is lost: the log deletes it (LSN %d) at the next start", o.lsn)
		case logged:
			p.Recovery = fmt.Sprintf("not from these files: the log changes it (LSN %d), so sketchd refuses to start; -recover-past-damage starts, dropping the log's operations on it (the rest of each record applies). Then restore it from a backup, or %s", o.lsn, remove)
		default:
			p.Recovery = fmt.Sprintf("not from these files: sketchd starts and serves everything else, answering 500 for it; restore it from a backup, or %s", remove)
		}
	}
}

// capList returns at most n items of l, saying how many more there are.
func capList(l []string, n int) []string {
	if len(l) <= n {
		return l
	}
	return append(l[:n:n], fmt.Sprintf("and %d more", len(l)-n))
}
