//go:build !amd64 || purego

package cpuid

// AVX2 is false where there is no vector kernel.
func AVX2() bool { return false }

// AVX512 is false where there is no vector kernel.
func AVX512() bool { return false }

// AVX512CD is false where there is no vector kernel.
func AVX512CD() bool { return false }

// AVX512VBMI is false where there is no vector kernel.
func AVX512VBMI() bool { return false }

// BMI is false where there is no vector kernel.
func BMI() bool { return false }
