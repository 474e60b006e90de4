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
	fill(b[:cap(b)], Byte)
}

// ReleaseUint64 is Release for a reused slice of hashes.
func ReleaseUint64(b []uint64) {
	if !Enabled {
		return
	}
	fill(b[:cap(b)], 0xdbdbdbdbdbdbdbdb)
}

// fill sets every element of b to v by copies that double what is set:
// under the race detector a copy is checked as one range, where a loop
// is checked element by element (a released 1 MiB body took a million
// checks, and the server's tests spent a tenth of their CPU there).
func fill[T any](b []T, v T) {
	if len(b) == 0 {
		return
	}
	b[0] = v
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}
