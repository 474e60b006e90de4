// Package migrations upgrades sketchd's bbolt file from one schema version
// to the next. Steps are append-only: once a version is released its step
// is never edited, only followed by new ones, and each is tested on a
// fixture file of the version before it (testdata/).
//
// The schema version lives in bucket "meta" under key "schema_version" as
// a big-endian uint32; a file without it is version 0 (new). The store runs
// all pending steps in one transaction at open and refuses a file newer
// than the binary.
package migrations

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Bucket and key names shared with the store. A step must spell out any
// name it relies on itself rather than use one that a later version might
// rename.
const (
	BucketMeta     = "meta"
	BucketSketches = "sketches"
	BucketMetric   = "metric"
	BucketSeries   = "series"
	BucketBuckets  = "series_buckets"
	// BucketIdempotency holds the idempotency keys (schema version
	// VersionKeys on).
	BucketIdempotency = "idempotency"
	KeyVersion        = "schema_version"
	KeyStoreID        = "store_id"
)

// VersionStoreID is the schema version that gave the store its identity
// (KeyStoreID): a file older than it has no identity yet.
const VersionStoreID = 4

// VersionChecksums is the schema version from which every stored record
// and the checkpoint position carry a checksum (see v5.go).
const VersionChecksums = 5

// VersionKeys is the schema version that made bucket BucketIdempotency.
const VersionKeys = 6

// VersionMetricIndex is the schema version that made bucket BucketMetric.
const VersionMetricIndex = 2

// Step upgrades a file from Version-1 to Version.
type Step struct {
	Version int
	Name    string
	Up      func(tx *bolt.Tx) error
}

// Steps returns every step in version order.
func Steps() []Step {
	return []Step{
		{Version: 1, Name: "create meta and sketches buckets", Up: v1Layout},
		{Version: 2, Name: "index sketches exported on /metrics", Up: v2MetricIndex},
		{Version: 3, Name: "create series and series_buckets buckets", Up: v3Series},
		{Version: 4, Name: "give the store an identity its log shares", Up: v4StoreIdentity},
		{Version: 5, Name: "checksum every stored record and the checkpoint position", Up: v5Checksums},
		{Version: 6, Name: "create the idempotency bucket", Up: v6IdempotencyKeys},
		{Version: 7, Name: "let sketch records carry an expiry", Up: v7SketchExpiry},
		{Version: 8, Name: "let idempotency key records cover their key", Up: v8KeyRecordsCoverTheirKey},
	}
}

// Latest returns the schema version this binary writes.
func Latest() int {
	s := Steps()
	return s[len(s)-1].Version
}

// Version reads the schema version of the file in tx (0 if none).
func Version(tx *bolt.Tx) (int, error) {
	meta := tx.Bucket([]byte(BucketMeta))
	if meta == nil {
		return 0, nil
	}
	v := meta.Get([]byte(KeyVersion))
	if v == nil {
		return 0, nil
	}
	if len(v) != 4 {
		return 0, fmt.Errorf("migrations: schema version has %d bytes, want 4", len(v))
	}
	return int(binary.BigEndian.Uint32(v)), nil
}

// Run applies every step above the file's version in tx and records the
// new version. It refuses a file whose version is above Latest.
func Run(tx *bolt.Tx) (from, to int, err error) {
	return runTo(tx, Latest())
}

// runTo is Run stopping at version last (tests run the steps up to the
// one they test).
func runTo(tx *bolt.Tx, last int) (from, to int, err error) {
	from, err = Version(tx)
	if err != nil {
		return 0, 0, err
	}
	if from > Latest() {
		return from, from, fmt.Errorf("migrations: file has schema version %d, newer than this binary's %d; run a newer sketchd", from, Latest())
	}
	to = from
	for _, s := range Steps() {
		if s.Version <= from || s.Version > last {
			continue
		}
		if err := s.Up(tx); err != nil {
			return from, to, fmt.Errorf("migrations: step %d (%s): %w", s.Version, s.Name, err)
		}
		if err := setVersion(tx, s.Version); err != nil {
			return from, to, err
		}
		to = s.Version
	}
	return from, to, nil
}

func setVersion(tx *bolt.Tx, v int) error {
	meta, err := tx.CreateBucketIfNotExists([]byte(BucketMeta))
	if err != nil {
		return err
	}
	return meta.Put([]byte(KeyVersion), binary.BigEndian.AppendUint32(nil, uint32(v)))
}
