//go:build !amd64 || purego

package ingest

// widestIntKernel is the word loops where there is no vector kernel.
func widestIntKernel() intKernel { return kernelWords }

// intsVector takes nothing here: every id takes the word-at-a-time loops.
func intsVector(dst []uint64, _ []byte, i, _ int, _ *separators) ([]uint64, int) { return dst, i }

// textsVector takes nothing here: every string id takes the general path.
func textsVector(dst []uint64, _ []byte, i, _ int) ([]uint64, int) { return dst, i }

// textsAVX512OK: there is no string kernel here.
const textsAVX512OK = false
