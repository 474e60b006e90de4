//go:build !race

package bolt

const raceEnabled = false
