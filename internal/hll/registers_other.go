//go:build !amd64 || purego

package hll

// widestRegisters is the portable loop where there is no vector kernel.
func widestRegisters() registerKernel { return registersPortable }

// quietVector skips nothing here: every hash takes the portable loop.
func quietVector([]uint8, []uint64, uint8, uint8) int { return 0 }
