package archive

import (
	"errors"
	"fmt"
	"hash/crc32"
	"time"
)

// Version is the archive version this package writes and reads.
const Version = 1

// Magic opens every archive. Like PNG's signature, its first byte is not
// ASCII and it holds a CR LF and a LF, so a transfer that treats the file
// as text damages the magic and the archive is refused at once.
const Magic = "\x89SKDARC\n"

// HeaderLen is the length of the header in bytes.
const HeaderLen = 32

// MaxRecordBody bounds a record's body in bytes (256 MiB): larger than
// any sketch sketchd keeps (the largest upload is -max-body, 32 MiB by
// default, and no kind grows past a few MiB at its largest parameters).
// A Writer refuses a larger record, a Reader a length above it.
const MaxRecordBody = 256 << 20

// Record types, the first byte of a record.
const (
	TypeSketch  byte = 1
	TypeSeries  byte = 2
	TypeBucket  byte = 3
	TypeKey     byte = 4
	TypeTrailer byte = 0xFF
)

// Sources, the header's source byte: which backend wrote the archive
// (informational; any backend restores any archive).
const (
	SourceUnknown  byte = 0
	SourceBolt     byte = 1
	SourcePostgres byte = 2
)

// Sketch flags.
const (
	flagMetric      = 1
	flagExpireAfter = 2
	flagExpireAt    = 4
	knownFlags      = flagMetric | flagExpireAfter | flagExpireAt
)

// trailerBody is the length of the trailer's body: four counts.
const trailerBody = 4 * 8

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Header is what an archive says about itself.
type Header struct {
	// Taken is the moment the archive holds.
	Taken time.Time
	// Source is the backend that wrote it (SourceBolt, SourcePostgres).
	Source byte
}

// Sketch is one sketch as stored.
type Sketch struct {
	Name string
	// Kind is the kind's name (sketch.Type: "hll", "cms", ...).
	Kind string
	// Params is the kind's parameters as JSON, for readers; the bytes
	// carry them.
	Params []byte
	Metric bool
	// ExpireAfter is the time after the last write at which the sketch
	// expires (0: none); ExpireAt the instant (zero: none). At most one is
	// set.
	ExpireAfter time.Duration
	ExpireAt    time.Time
	Created     time.Time
	Updated     time.Time
	// Bytes is the sketch in its kind's encoding, as stored.
	Bytes []byte
}

// Level is one level of a series definition.
type Level struct {
	// Name is the level ("hour", "day", "week", "month").
	Name string
	// Retention is how long its buckets are kept, as the API writes it
	// (an ISO 8601 duration).
	Retention string
}

// Series is one series definition. Its buckets are Bucket records that
// follow it.
type Series struct {
	Name   string
	Kind   string
	Params []byte
	// Created is when the series was created.
	Created time.Time
	// TZ is the IANA zone its buckets' edges are in.
	TZ string
	// LateLimit is how late an add may be, as the API writes it.
	LateLimit string
	Levels    []Level
	// Proto is the empty sketch at the series' parameters, in its kind's
	// encoding: it carries the parameters exactly.
	Proto []byte
}

// Bucket is one bucket of a series.
type Bucket struct {
	Series string
	Level  string
	// Start is the bucket's first instant (whole seconds).
	Start   time.Time
	Updated time.Time
	// Bytes is the bucket's sketch in the series' kind's encoding.
	Bytes []byte
}

// Key is one idempotency key still inside its window.
type Key struct {
	Scope, Target, Key string
	// Created is when the write it guards committed.
	Created     time.Time
	Fingerprint [32]byte
	// Answer is the answer sent, in the server's encoding.
	Answer []byte
}

// Counts are the records of each type an archive holds.
type Counts struct {
	Sketches, Series, Buckets, Keys uint64
}

// Total is the number of records.
func (c Counts) Total() uint64 { return c.Sketches + c.Series + c.Buckets + c.Keys }

// Record is one record read: exactly one of its pointers is set, by Type.
type Record struct {
	Type byte
	// Index numbers the record from 1 (the header is 0); Offset is the
	// byte offset where it starts.
	Index  int
	Offset int64
	Sketch *Sketch
	Series *Series
	Bucket *Bucket
	Key    *Key
}

// ErrCorrupt is the cause of an archive whose bytes are not what the
// format allows: a bad magic, version, checksum, digest, count, type,
// length or field.
var ErrCorrupt = errors.New("archive: damaged")

// ErrTruncated is the cause of an archive that ends early: inside a
// record, or before its trailer.
var ErrTruncated = errors.New("archive: truncated")

// ErrTooLarge is the cause of a record a Writer refuses: its body would
// pass MaxRecordBody.
var ErrTooLarge = errors.New("archive: record too large")

// Error is a Reader's error: which record, where, and what is wrong.
type Error struct {
	// Record is the record's index (0: the header); Offset the byte
	// offset where the record starts.
	Record int
	Offset int64
	// What says what is wrong.
	What string
	// Err is ErrCorrupt, ErrTruncated or the reader's error.
	Err error
}

func (e *Error) Error() string {
	where := fmt.Sprintf("record %d", e.Record)
	if e.Record == 0 {
		where = "the header"
	}
	return fmt.Sprintf("archive: %s at byte offset %d: %s", where, e.Offset, e.What)
}

func (e *Error) Unwrap() error { return e.Err }

// TypeName names a record type for messages.
func TypeName(t byte) string {
	switch t {
	case TypeSketch:
		return "sketch"
	case TypeSeries:
		return "series"
	case TypeBucket:
		return "bucket"
	case TypeKey:
		return "idempotency key"
	case TypeTrailer:
		return "trailer"
	}
	return fmt.Sprintf("type %d", t)
}
