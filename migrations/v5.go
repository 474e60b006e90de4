package migrations

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	bolt "go.etcd.io/bbolt"
)

// v5 checksums, spelled out here as this step wrote them (the store's
// record.go describes the same format for its own reads and writes).
var v5CRC = crc32.MakeTable(crc32.Castagnoli)

// v5Checksums gives every stored value a checksum.
//
// Records in buckets "sketches", "series" and "series_buckets" of format 1
// (byte 0 is 1, at least the 19-byte header: format, kind tag, flags,
// created, updated) become format 2: byte 0 set to 2 and, appended, the
// big-endian CRC-32C (Castagnoli) of the entry key followed by the record
// as rewritten (format byte 2, without the checksum). The entry key is the
// bbolt key in "sketches", and the bbolt key prefixed by 0x01 in "series"
// and by 0x02 in "series_buckets", so the checksum also says which bucket
// and key a value belongs to. A value that is not a format-1 record
// (already unreadable, or already format 2) is left as it is: nothing
// damaged is rewritten, and it stays reported as unreadable.
//
// meta's checkpoint_lsn (8 bytes, big-endian) gets the CRC-32C of those 8
// bytes appended (12 bytes). A value of another length is left as it is
// (the store then refuses the file as damaged).
//
// A checksum added here vouches for the bytes as they were at the
// upgrade, not before: damage from before it is found only if the record
// does not decode. Like every step it runs in the migrating transaction,
// which holds the rewritten values in memory until it commits (about the
// size of the stored values).
func v5Checksums(tx *bolt.Tx) error {
	for _, b := range []struct {
		name   string
		prefix []byte
	}{
		{"sketches", nil},
		{"series", []byte{0x01}},
		{"series_buckets", []byte{0x02}},
	} {
		bucket := tx.Bucket([]byte(b.name))
		if bucket == nil {
			return fmt.Errorf("bucket %s missing", b.name)
		}
		if err := v5SealBucket(bucket, b.prefix); err != nil {
			return fmt.Errorf("bucket %s: %w", b.name, err)
		}
	}
	meta := tx.Bucket([]byte(BucketMeta))
	if meta == nil {
		return fmt.Errorf("bucket %s missing", BucketMeta)
	}
	if v := meta.Get([]byte("checkpoint_lsn")); len(v) == 8 {
		sealed := binary.BigEndian.AppendUint32(bytes.Clone(v), crc32.Checksum(v, v5CRC))
		if err := meta.Put([]byte("checkpoint_lsn"), sealed); err != nil {
			return err
		}
	}
	return nil
}

// v5SealBucket rewrites the format-1 records of bucket, a chunk of keys
// at a time: a cursor must not run over keys being changed, and a chunk
// keeps the copies it makes bounded.
func v5SealBucket(bucket *bolt.Bucket, prefix []byte) error {
	const chunk = 1024
	type kv struct{ k, v []byte }
	var next []byte // the key to resume at; nil: the first
	for {
		var todo []kv
		c := bucket.Cursor()
		k, v := c.First()
		if next != nil {
			k, v = c.Seek(next)
		}
		next = nil
		for ; k != nil; k, v = c.Next() {
			if len(todo) == chunk {
				next = bytes.Clone(k)
				break
			}
			if v == nil || len(v) < 19 || v[0] != 1 {
				continue // a nested bucket, or not a format-1 record
			}
			rec := append([]byte{2}, v[1:]...)
			crc := crc32.Update(crc32.Update(0, v5CRC, prefix), v5CRC, k)
			crc = crc32.Update(crc, v5CRC, rec)
			todo = append(todo, kv{bytes.Clone(k), binary.BigEndian.AppendUint32(rec, crc)})
		}
		for _, e := range todo {
			if err := bucket.Put(e.k, e.v); err != nil {
				return err
			}
		}
		if next == nil {
			return nil
		}
	}
}
