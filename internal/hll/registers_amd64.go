//go:build !purego

package hll

import "github.com/sketchd/sketchd/internal/cpuid"

// widestRegisters is the widest register kernel the processor runs.
func widestRegisters() registerKernel {
	if cpuid.AVX512CD() {
		return registersAVX512
	}
	return registersPortable
}

// quietAVX512 returns how many hashes of hs, from the first, raise no
// register of regs (len a power of two, at least 16) for a sketch of
// log2m shift whose registers hold at most top: a multiple of 8, at
// most len(hs), short of it where the eight hashes after it raise one
// (or fewer than eight are left).
//
//go:noescape
func quietAVX512(regs []uint8, hs []uint64, shift, top uint8) int

// quietVector is quietAVX512, for callers that checked quietKernel; 0
// for registers too few for its quadword reads.
func quietVector(regs []uint8, hs []uint64, shift, top uint8) int {
	if len(regs) < 16 {
		return 0
	}
	return quietAVX512(regs, hs, shift, top)
}
