// Package cpuidtest holds what the tests of the packages with vector
// kernels (murmur, ingest) share: which settings of a kernel a machine can
// run.
package cpuidtest

import (
	"os"
	"runtime"
	"testing"
)

// Kernels lists the kernels a machine runs, given the widest (kernels
// are numbered from the portable code, 0, up to the widest vector kernel,
// each running where the wider ones do): every one from 0 to widest.
// SKETCHD_REQUIRE_AVX2=1 makes a machine with no vector kernel a failure,
// not a portable-only run; kernel and needs name the narrowest vector
// kernel and what it needs in that message.
func Kernels[K ~int](tb testing.TB, widest K, kernel, needs string) []K {
	tb.Helper()
	if widest == 0 && os.Getenv("SKETCHD_REQUIRE_AVX2") == "1" {
		tb.Fatalf("SKETCHD_REQUIRE_AVX2=1 but %s does not run here (GOARCH=%s, purego tag, or no %s)", kernel, runtime.GOARCH, needs)
	}
	ks := make([]K, 0, widest+1)
	for k := K(0); k <= widest; k++ {
		ks = append(ks, k)
	}
	return ks
}
