//go:build race

package main

// raceEnabled: the race detector slows the simulations about tenfold and
// finds nothing in them (each runs in one goroutine), so under it the
// kinds' coverage runs for hll alone, containment without its sets of a
// million and the skewed overlaps not at all; scripts/test runs the three
// whole in a normal build.
const raceEnabled = true
