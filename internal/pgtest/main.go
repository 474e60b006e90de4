package pgtest

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// Main runs a package's tests and exits, as a TestMain does, for a
// package whose parallel tests mostly wait (on PostgreSQL, a Citus
// cluster, a sketchd process) rather than compute. Unless the command
// line sets -parallel, at least parallel of them run at once: go test's
// default, GOMAXPROCS, leaves a two-core machine idle while two of them
// wait.
func Main(m *testing.M, parallel int) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given && runtime.GOMAXPROCS(0) < parallel {
		if err := flag.Set("test.parallel", strconv.Itoa(parallel)); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
