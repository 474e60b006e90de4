//go:build !purego

package murmur

import (
	"os"
	"strings"
	"testing"
)

// TestDetectAVX2 checks the processor's own answer against what the
// kernel tells /proc/cpuinfo, where it can be read.
func TestDetectAVX2(t *testing.T) {
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
	want := strings.Contains(flags, " avx2 ")
	if got := detectAVX2(); got != want {
		t.Errorf("detectAVX2() = %v, /proc/cpuinfo says avx2 %v", got, want)
	}
}
