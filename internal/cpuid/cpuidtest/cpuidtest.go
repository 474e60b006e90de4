// Package cpuidtest holds what the tests of the packages with vector
// kernels (murmur, ingest) share: which settings of a kernel a machine can
// run.
package cpuidtest

import (
	"os"
	"runtime"
	"testing"
)

// Settings lists the settings of a vector kernel this machine can run,
// given whether it runs it (has): the portable code always, the kernel
// where it runs. SKETCHD_REQUIRE_AVX2=1 makes a machine without it a
// failure, not a portable-only run; kernel and needs name it and what it
// needs in that message.
func Settings(tb testing.TB, has bool, kernel, needs string) []bool {
	tb.Helper()
	if has {
		return []bool{false, true}
	}
	if os.Getenv("SKETCHD_REQUIRE_AVX2") == "1" {
		tb.Fatalf("SKETCHD_REQUIRE_AVX2=1 but %s does not run here (GOARCH=%s, purego tag, or no %s)", kernel, runtime.GOARCH, needs)
	}
	return []bool{false}
}
