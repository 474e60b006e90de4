package postgres

import (
	"bytes"
	"crypto/md5"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sketchd/sketchd/internal/sketch"
)

// Every value sketchd decodes from a row and serves carries a checksum of
// sketchd's own in the row's checksum column (migrations/postgres
// 0005_checksums.sql), so that damage made above the storage layer (an
// UPDATE, a restored dump, a bad disk under a cluster without data
// checksums) is loud instead of served:
//
//	checksum = MD5( MD5(key) ‖ body )
//
// key is text naming the row (fields separated by one space; only the last
// field may hold spaces), body the bytes sketchd decodes:
//
//	sketchd_sketches        "sketch <name> <kind>"                        hll_send(hll), or data
//	sketchd_series_buckets  "bucket <series> <level> <start, µs since 1970>"  hll_send(hll), or data
//	sketchd_series          "series <name> <kind> <tz> <late_limit> <levels::text>"  proto
//	sketchd_idempotency     "key <target> <scope> <idempotency_key>"     fingerprint ‖ answer
//
// The key makes a value read under another name, level or start fail too.
// Hashing it first as text lets SQL build the whole input from immutable
// functions (md5(text), decode, ||), which Citus accepts in the UPDATEs
// that write it; names, kinds, levels, zones and keys are ASCII, so the
// text's bytes are the same in Go and in any database encoding. MD5 rather
// than CRC-32C: HLL adds merge in the database (hll_union), so the
// checksum of a merged value is computed there, and PostgreSQL 15 has
// md5() built in but no CRC-32C. It detects damage, not forgery.
//
// A checksum is written where the value is encoded: in Go for a value Go
// encodes, in the same statement for a value the database computes
// (hll_union), which checks the old value's checksum first so that a
// merge never launders damage. It is checked wherever a value is decoded,
// before decoding, and for HLL unions computed in the database by that
// statement (prefixUnionSQL).

// digest is MD5 of a row's key text.
type digest [md5.Size]byte

func sketchKey(name, kind string) digest { return md5.Sum([]byte("sketch " + name + " " + kind)) }

func bucketKeyDigest(series, level string, start time.Time) digest {
	return md5.Sum([]byte("bucket " + series + " " + level + " " + strconv.FormatInt(start.UnixMicro(), 10)))
}

func defKey(name, kind, tz, late, levels string) digest {
	return md5.Sum([]byte("series " + name + " " + kind + " " + tz + " " + late + " " + levels))
}

func idemKey(target, scope, key string) digest {
	return md5.Sum([]byte("key " + target + " " + scope + " " + key))
}

// checksum returns MD5(k ‖ body ‖ more...).
func checksum(k digest, body []byte, more ...[]byte) []byte {
	h := md5.New()
	h.Write(k[:])
	h.Write(body)
	for _, b := range more {
		h.Write(b)
	}
	return h.Sum(nil)
}

// The same in SQL. sumSQL is the checksum of the key digest k (a bytea
// expression) and the body b; the key SQL builds a row's key digest from
// its columns (with table alias t, "" for none).
func sumSQL(k, b string) string { return "decode(md5(" + k + " || " + b + "), 'hex')" }

func sketchKeySQL(t string) string {
	return "decode(md5('sketch ' || " + t + "name || ' ' || " + t + "kind), 'hex')"
}

// bucketKeySQL turns start into µs through an interval: extract(epoch
// FROM timestamptz) is STABLE, and Citus refuses STABLE functions of
// columns in a modification (the migration's UPDATE).
func bucketKeySQL(t string) string {
	return "decode(md5('bucket ' || " + t + "series || ' ' || " + t + "level || ' ' || (extract(epoch FROM " + t +
		"start - 'epoch'::timestamptz) * 1000000)::bigint::text), 'hex')"
}

// errChecksum is the cause of a row whose checksum does not match its
// bytes (or that has none).
var errChecksum = errors.New("checksum mismatch")

// verify checks sum against the checksum of k and the body parts.
func verify(sum []byte, k digest, body []byte, more ...[]byte) error {
	if len(sum) == 0 {
		return fmt.Errorf("the row has no checksum: %w", errChecksum)
	}
	if want := checksum(k, body, more...); !bytes.Equal(sum, want) {
		n := len(body)
		for _, b := range more {
			n += len(b)
		}
		return fmt.Errorf("stored %x, computed %x over %d bytes: %w", sum, want, n, errChecksum)
	}
	return nil
}

// damageError is the cause of a Damaged error: which stored value, in
// which table, and why it cannot be read.
type damageError struct {
	entry, table string
	err          error
}

func (e *damageError) Error() string {
	return fmt.Sprintf("postgres: stored %s in %s is unreadable: %v", e.entry, e.table, e.err)
}

func (e *damageError) Unwrap() error { return e.err }

// damaged returns the Damaged error (500) of the stored value entry
// (sketchLabel, seriesLabel, bucketLabel) in table, which failed its
// checksum or, err not being errChecksum, does not decode. Its detail,
// shown to clients, names the value, never its bytes, and says what to
// do (hint: how to remove it).
func damaged(entry, table, hint string, err error) error {
	what := "cannot be decoded"
	if errors.Is(err, errChecksum) {
		what = "failed its checksum"
	}
	return sketch.Wrap(sketch.Damaged, &damageError{entry: entry, table: table, err: err},
		fmt.Sprintf("stored %s is damaged: its row in %s %s; %s, or restore the row from a backup", entry, table, what, hint))
}

func quote(name string) string { return strconv.QuoteToASCII(name) }

func sketchLabel(name string) string { return "sketch " + quote(name) }

func seriesLabel(name string) string { return "series " + quote(name) }

func bucketLabel(series, level string, start time.Time) string {
	return fmt.Sprintf("bucket %s %s of series %s", level, start.UTC().Format(time.RFC3339), quote(series))
}

const (
	deleteSketchHint = "DELETE the sketch to remove it"
	deleteSeriesHint = "DELETE the series to remove it"
)

// damagedSketch is damaged for the sketch name.
func damagedSketch(name string, err error) error {
	return damaged(sketchLabel(name), "sketchd_sketches", deleteSketchHint, err)
}

// damagedBucket is damaged for a bucket of series.
func damagedBucket(series, level string, start time.Time, err error) error {
	return damaged(bucketLabel(series, level, start), "sketchd_series_buckets", deleteSeriesHint, err)
}

// report logs err, found during what, if it is a stored value's damage,
// and counts it if the value failed its checksum; it returns err. Every
// detection is reported, each time, as on the embedded backend.
func (s *DB) report(err error, during string) error {
	var de *damageError
	if errors.As(err, &de) {
		if errors.Is(de.err, errChecksum) {
			s.checksumFailures.Add(1)
		}
		s.log.Warn("stored record is unreadable", "entry", de.entry, "table", de.table, "during", during, "err", de.err)
	}
	return err
}

// skipped reports err as report does and counts a value a listing or
// the statistics skipped.
func (s *DB) skipped(err error, during string) {
	s.unreadable.Add(1)
	s.report(err, during)
}

// ChecksumFailures returns how many times a stored value failed its
// checksum when read (sketchd_store_checksum_failures_total).
func (s *DB) ChecksumFailures() int64 { return s.checksumFailures.Load() }

// UnreadableRecords returns how many times a listing or /metrics skipped
// a stored value that failed its checksum or does not decode
// (sketchd_store_unreadable_records_total).
func (s *DB) UnreadableRecords() int64 { return s.unreadable.Load() }
