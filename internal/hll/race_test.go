//go:build race

package hll

// raceEnabled: the race detector slows adds tenfold, so the coverage
// sweep takes log2m 10 to 13 under it; scripts/test runs the whole of it (10
// to 16) in a normal build.
const raceEnabled = true
