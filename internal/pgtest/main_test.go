package pgtest

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m, 6) }

// TestMainRaisesParallel: under Main, a test binary given no -parallel
// runs six tests at once (go test's default is GOMAXPROCS), and one given
// -parallel keeps it.
func TestMainRaisesParallel(t *testing.T) {
	want := max(6, runtime.GOMAXPROCS(0))
	for _, a := range os.Args[1:] {
		if v, ok := strings.CutPrefix(strings.TrimLeft(a, "-"), "test.parallel="); ok {
			want, _ = strconv.Atoi(v)
		}
	}
	if got := flag.Lookup("test.parallel").Value.String(); got != strconv.Itoa(want) {
		t.Errorf("-parallel is %s, want %d (arguments %q)", got, want, os.Args[1:])
	}
}
