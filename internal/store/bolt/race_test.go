//go:build race

package bolt

// raceEnabled: the race detector changes allocation sizes (no tiny-object
// packing), so allocation bounds are checked in normal builds only.
const raceEnabled = true
