//go:build race

package hll

// raceEnabled: the race detector slows adds tenfold, so the coverage
// sweep takes log2m 10 to 13 under it; .ci/run runs the whole of it (10
// to 16) again in a normal build.
const raceEnabled = true
