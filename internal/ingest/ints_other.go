//go:build !amd64 || purego

package ingest

// hasVectorInts is false where there is no vector kernel.
var hasVectorInts = false

// intsVector takes nothing here: every id takes the word-at-a-time loops.
func intsVector(dst []uint64, _ []byte, i, _ int, _ *separators) ([]uint64, int) { return dst, i }
