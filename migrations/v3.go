package migrations

import (
	bolt "go.etcd.io/bbolt"
)

// v3Series adds the buckets of series: "series" (name -> the series'
// definition) and "series_buckets" (name, 0x00, level byte, big-endian
// Unix seconds of the bucket start -> the bucket's sketch record, the
// same record as in "sketches"), so a range of one series at one level
// is a range scan.
func v3Series(tx *bolt.Tx) error {
	for _, name := range []string{"series", "series_buckets"} {
		if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
			return err
		}
	}
	return nil
}
