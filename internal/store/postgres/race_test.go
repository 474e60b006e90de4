//go:build race

package postgres_test

// raceEnabled: the race detector slows the damage tests' sweeps of
// flipped bytes several times over (each flip reads and writes values of
// up to 1.2 MB a dozen times, in one goroutine per backend), so under it
// each value is flipped at its first and last byte only; scripts/test
// flips every offset in a normal build.
const raceEnabled = true
