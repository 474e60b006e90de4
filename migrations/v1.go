package migrations

import bolt "go.etcd.io/bbolt"

// v1Layout creates the buckets of schema version 1:
//
//   - meta: schema_version (uint32), checkpoint_lsn (uint64, big-endian):
//     the write-ahead-log position the sketches bucket reflects.
//   - sketches: name -> record. A version-1 record is: byte 0 record
//     format 1; byte 1 type (1 HLL, 2 CMS); byte 2 flags (bit 0: estimate
//     exported on /metrics); 8 bytes created_at and 8 bytes updated_at
//     (big-endian Unix nanoseconds); then the sketch in its own encoding.
func v1Layout(tx *bolt.Tx) error {
	for _, b := range []string{BucketMeta, BucketSketches} {
		if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
			return err
		}
	}
	return nil
}
