package migrations

import (
	"crypto/rand"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// v4StoreIdentity gives the file a random 16-byte identity in bucket meta
// under key "store_id". The write-ahead log directory keeps the same
// identity (and the last checkpoint position) in a file of its own, so a
// store can tell at open that its data file and its log belong together
// and that neither went back in time.
func v4StoreIdentity(tx *bolt.Tx) error {
	meta := tx.Bucket([]byte(BucketMeta))
	if meta == nil {
		return fmt.Errorf("bucket %s missing", BucketMeta)
	}
	if v := meta.Get([]byte("store_id")); len(v) == 16 {
		return nil
	}
	id := make([]byte, 16)
	rand.Read(id)
	return meta.Put([]byte("store_id"), id)
}
