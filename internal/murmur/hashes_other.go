//go:build !amd64 || purego

package murmur

// hasAVX2 is false where there is no vector kernel.
var hasAVX2 = false

// int64HashesVector hashes nothing here: every value takes the portable
// loop.
func int64HashesVector([]uint64) int { return 0 }

// int64HashesBigEndianVector hashes nothing here either.
func int64HashesBigEndianVector([]uint64, []byte) int { return 0 }
