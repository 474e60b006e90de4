//go:build !amd64 || purego

package murmur

// widest is the portable loop where there is no vector kernel.
func widest() kernel { return portable }

// int64HashesVector hashes nothing here: every value takes the portable
// loop.
func int64HashesVector([]uint64) int { return 0 }

// int64HashesBigEndianVector hashes nothing here either.
func int64HashesBigEndianVector([]uint64, []byte) int { return 0 }

// spanHashesVector hashes nothing here: every key takes Bytes.
func spanHashesVector([]uint64, []byte) int { return 0 }
