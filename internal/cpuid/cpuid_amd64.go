//go:build !purego

package cpuid

// AVX2 says whether the processor has AVX2 and the operating system saves
// the YMM registers.
func AVX2() bool {
	ebx7, ok := leaf7()
	if !ok {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const osxsave, avx = 1 << 27, 1 << 28
	if ecx1&osxsave == 0 || ecx1&avx == 0 {
		return false
	}
	const xmmYmm = 1<<1 | 1<<2
	if xgetbv0()&xmmYmm != xmmYmm {
		return false
	}
	return ebx7&(1<<5) != 0
}

// AVX512 says whether the processor has AVX-512's foundation (F), its
// doubleword and quadword instructions (DQ: VPMULLQ) and its byte and
// word instructions (BW: VPSHUFB on 64 bytes), and the operating system
// saves the ZMM registers and the opmasks as well as the YMM ones.
func AVX512() bool {
	if !AVX2() {
		return false
	}
	ebx7, _ := leaf7()
	const xmmYmmZmm = 1<<1 | 1<<2 | 1<<5 | 1<<6 | 1<<7
	if xgetbv0()&xmmYmmZmm != xmmYmmZmm {
		return false
	}
	const f, dq, bw = 1 << 16, 1 << 17, 1 << 30
	return ebx7&(f|dq|bw) == f|dq|bw
}

// AVX512CD says whether AVX512 holds and the processor also has AVX-512's
// conflict detection instructions (CD: VPLZCNTQ).
func AVX512CD() bool {
	if !AVX512() {
		return false
	}
	ebx7, _ := leaf7()
	const cd = 1 << 28
	return ebx7&cd != 0
}

// AVX512VBMI says whether AVX512 holds and the processor also has
// AVX-512's byte permutes (VBMI: VPERMB) and byte compression (VBMI2:
// VPCOMPRESSB), and POPCNT.
func AVX512VBMI() bool {
	if !AVX512() || !BMI() {
		return false
	}
	_, _, ecx7, _ := cpuid(7, 0)
	_, _, ecx1, _ := cpuid(1, 0)
	const vbmi, vbmi2, popcnt = 1 << 1, 1 << 6, 1 << 23
	return ecx7&(vbmi|vbmi2) == vbmi|vbmi2 && ecx1&popcnt != 0
}

// BMI says whether the processor has BMI1 and BMI2 (TZCNT, BLSR, BZHI,
// SHRX, SHLX).
func BMI() bool {
	ebx7, ok := leaf7()
	const bmi1, bmi2 = 1 << 3, 1 << 8
	return ok && ebx7&bmi1 != 0 && ebx7&bmi2 != 0
}

// leaf7 returns EBX of CPUID leaf 7 (the extended features), and false
// where the processor has no such leaf.
func leaf7() (uint32, bool) {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return 0, false
	}
	_, ebx, _, _ := cpuid(7, 0)
	return ebx, true
}

// cpuid runs CPUID with EAX=leaf, ECX=sub.
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// xgetbv0 returns the low half of XCR0 (XGETBV with ECX=0); call it only
// where CPUID says OSXSAVE.
func xgetbv0() uint32
