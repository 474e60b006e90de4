package migrations

import (
	bolt "go.etcd.io/bbolt"
)

// v7SketchExpiry marks files whose sketch records may carry an expiry
// (record flag bits 1 and 2 with their 8-byte values, see
// internal/store/bolt/record.go) and whose log may hold an add with an
// empty delta (an add that only moved the last write). No stored record
// changes: a record without those flags reads as before. The version
// exists so that an older binary, which would refuse such a record as
// damaged, refuses the file as too new instead.
func v7SketchExpiry(*bolt.Tx) error { return nil }
