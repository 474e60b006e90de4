//go:build !race

package zeta

const raceEnabled = false
