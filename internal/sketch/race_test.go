//go:build race

package sketch

// raceEnabled: the race detector slows the overlap's lattice of unions
// about tenfold and finds nothing in it (it runs in one goroutine), so
// the largest cases of TestOverlapIdenticalUnions run only in a normal
// build (scripts/test runs the package in one).
const raceEnabled = true
