//go:build !purego

package ingest

import (
	"unsafe"

	"github.com/sketchd/sketchd/internal/cpuid"
)

// widestIntKernel is the widest kernel for integer ids the processor
// runs: AVX-512 (F, DQ, BW, VBMI and VBMI2, with BMI1, BMI2 and POPCNT),
// which intsAVX2 runs with wide set; AVX2 (with BMI1 and BMI2 for TZCNT
// and SHRX); or the word loops.
func widestIntKernel() intKernel {
	switch {
	case cpuid.AVX512VBMI():
		return kernelAVX512
	case cpuid.AVX2() && cpuid.BMI():
		return kernelAVX2
	}
	return kernelWords
}

// intsAVX2 stores into buf[n:end] the values of the ids it takes from b[i]
// on, each -?(0|[1-9][0-9]*) in int64 followed by seps.sep (then, where
// seps allows it, any JSON whitespace), while i <= lim (so b[i:i+64] is in
// the body) and n < end, and returns the new n and i. It stops at anything
// else, leaving it where it starts. With wide it first tries each
// window's first ids with AVX-512 (kernelAVX512). i must be at least 31,
// so that every separator is at least 32 bytes into b (each id's 32 bytes
// before it are loaded).
//
//go:noescape
func intsAVX2(buf *uint64, n, end int, b *byte, i, lim int, seps *separators, wide bool) (taken, next int)

// intsVector appends to dst the ids the vector kernel takes from b[i] on,
// at most room of them (room < 0: no limit) and never beyond cap(dst), and
// returns dst and the index after the last separator taken (whitespace
// after it may be left). Without the kernel it takes nothing.
func intsVector(dst []uint64, b []byte, i, room int, seps *separators) ([]uint64, int) {
	n := len(dst)
	end := cap(dst)
	if room >= 0 && n+room < end {
		end = n + room
	}
	lim := len(b) - 64
	if intsKernel < kernelAVX2 || n >= end || i > lim || i < 31 {
		return dst, i
	}
	buf := dst[:cap(dst)]
	n, i = intsAVX2(unsafe.SliceData(buf), n, end, unsafe.SliceData(b), i, lim, seps, intsKernel >= kernelAVX512)
	return buf[:n], i
}

// textsAVX512 stores into buf[n:end] the spans (start << 32 | length)
// of the JSON strings it takes from b[i] on, each a '"', at most
// maxRunText bytes none of which is a '"', a '\', a control character or
// a byte from 0x80 up, a '"' and a ',' (then any JSON whitespace), while
// i <= lim (so b[i:i+64] is in the body) and n < end. It returns the new
// n and i: the start of the element after the last string taken (or
// whitespace before it), or the string it stopped at. One 64-byte window
// a string: its quotes, bad bytes and comma are masks of one compare
// each.
//
//go:noescape
func textsAVX512(buf *uint64, n, end int, b *byte, i, lim int) (taken, next int)

// textsAVX512OK says whether the processor runs textsAVX512: AVX-512 F
// and BW (cpuid.AVX512), BMI1 and BMI2. It needs no VBMI, as the integer
// kernel's wide paths do.
var textsAVX512OK = cpuid.AVX512() && cpuid.BMI()

// textsVector appends to dst the spans of the strings the vector kernel
// takes from b[i] on (textRun), at most room of them (room < 0: no limit)
// and never beyond cap(dst), and returns dst and where it stopped.
// Without AVX-512, or with the integer kernels lowered to the word loops
// (as tests do), it takes nothing.
func textsVector(dst []uint64, b []byte, i, room int) ([]uint64, int) {
	n := len(dst)
	end := cap(dst)
	if room >= 0 && n+room < end {
		end = n + room
	}
	lim := len(b) - 64
	if intsKernel < kernelAVX2 || !textsAVX512OK || n >= end || i > lim || len(b) > maxSpanBody {
		return dst, i
	}
	buf := dst[:cap(dst)]
	n, i = textsAVX512(unsafe.SliceData(buf), n, end, unsafe.SliceData(b), i, lim)
	return buf[:n], i
}
