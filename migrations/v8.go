package migrations

import (
	bolt "go.etcd.io/bbolt"
)

// v8KeyRecordsCoverTheirKey marks files whose idempotency key records may
// be in format 2, whose checksum covers the key as well as the value
// (internal/store/bolt/keys.go). No stored record changes: format 1
// records read as before. The version exists so that an older binary,
// which would refuse a format 2 record as damaged, refuses the file as
// too new instead.
func v8KeyRecordsCoverTheirKey(*bolt.Tx) error { return nil }
