package poison

// Byte is what Release writes into a released buffer in a poisoning
// build: 0xdb is no valid preamble byte of any format sketchd reads, and
// an HLL register of 0xdb is out of every range.
const Byte = 0xdb

// Release poisons b up to its capacity when Enabled; otherwise it does
// nothing. Call it where a buffer is given back for reuse, after its
// last read.
func Release(b []byte) {
	if !Enabled {
		return
	}
	b = b[:cap(b)]
	for i := range b {
		b[i] = Byte
	}
}

// ReleaseUint64 is Release for a reused slice of hashes.
func ReleaseUint64(b []uint64) {
	if !Enabled {
		return
	}
	b = b[:cap(b)]
	for i := range b {
		b[i] = 0xdbdbdbdbdbdbdbdb
	}
}
