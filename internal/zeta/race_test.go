//go:build race

package zeta

// raceEnabled: the race detector slows the register loops tenfold, so the
// slowest measurements take their smaller cases only.
const raceEnabled = true
