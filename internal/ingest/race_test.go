//go:build race

package ingest

// raceEnabled: the race detector turns off the allocator's tiny-object
// packing, so small strings cost more than in a real build.
const raceEnabled = true
