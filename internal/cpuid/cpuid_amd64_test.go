//go:build !purego

package cpuid

import (
	"os"
	"strings"
	"testing"
)

// TestAgreesWithCPUInfo checks the processor's own answers against what
// the kernel tells /proc/cpuinfo, where it can be read.
func TestAgreesWithCPUInfo(t *testing.T) {
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skipf("no /proc/cpuinfo to compare with: %v", err)
	}
	var flags string
	for _, line := range strings.Split(string(info), "\n") {
		if strings.HasPrefix(line, "flags") {
			flags = " " + line[strings.IndexByte(line, ':')+1:] + " "
			break
		}
	}
	if flags == "" {
		t.Skip("/proc/cpuinfo lists no flags")
	}
	has := func(f string) bool { return strings.Contains(flags, " "+f+" ") }
	if got, want := AVX2(), has("avx2"); got != want {
		t.Errorf("AVX2() = %v, /proc/cpuinfo says avx2 %v", got, want)
	}
	if got, want := AVX512(), has("avx2") && has("avx512f") && has("avx512dq") && has("avx512bw"); got != want {
		t.Errorf("AVX512() = %v, /proc/cpuinfo says avx2, avx512f, avx512dq and avx512bw %v", got, want)
	}
	if got, want := AVX512CD(), AVX512() && has("avx512cd"); got != want {
		t.Errorf("AVX512CD() = %v, /proc/cpuinfo says avx512cd (with AVX512) %v", got, want)
	}
	if got, want := AVX512VBMI(), AVX512() && has("bmi1") && has("bmi2") && has("avx512vbmi") && has("avx512_vbmi2") && has("popcnt"); got != want {
		t.Errorf("AVX512VBMI() = %v, /proc/cpuinfo says avx512vbmi, avx512_vbmi2, bmi1, bmi2 and popcnt (with AVX512) %v", got, want)
	}
	if got, want := BMI(), has("bmi1") && has("bmi2"); got != want {
		t.Errorf("BMI() = %v, /proc/cpuinfo says bmi1 and bmi2 %v", got, want)
	}
}
