package migrations

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// v2MetricIndex adds bucket metric: name -> empty value for every sketch
// whose record has the metric flag (byte 2, bit 0 of a version-1 record),
// so the opted-in names are known without reading every record.
func v2MetricIndex(tx *bolt.Tx) error {
	idx, err := tx.CreateBucketIfNotExists([]byte(BucketMetric))
	if err != nil {
		return err
	}
	sketches := tx.Bucket([]byte(BucketSketches))
	if sketches == nil {
		return fmt.Errorf("bucket %s missing", BucketSketches)
	}
	return sketches.ForEach(func(name, rec []byte) error {
		if len(rec) < 3 {
			return fmt.Errorf("record %q has %d bytes", name, len(rec))
		}
		if rec[2]&1 == 0 {
			return nil
		}
		return idx.Put(name, nil)
	})
}
