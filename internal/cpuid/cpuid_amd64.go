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
