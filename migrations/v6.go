package migrations

import (
	bolt "go.etcd.io/bbolt"
)

// v6IdempotencyKeys adds bucket "idempotency": the idempotency keys a
// checkpoint copied from the write-ahead log, each under its scope, target
// and key (uvarint-length scope, uvarint-length target, key) with its
// record (format byte 1, Unix-ns creation time, the request's 32-byte
// fingerprint, the uvarint-length answer, a CRC-32C of all before). The
// bucket starts empty: no write before this version had a key.
func v6IdempotencyKeys(tx *bolt.Tx) error {
	_, err := tx.CreateBucketIfNotExists([]byte("idempotency"))
	return err
}
