package series

import (
	"testing"
	"time"
)

// BenchmarkDayStart: the start of the day holding an instant, which every
// series add asks once per day, week and month level, against time.Date
// at local midnight (which picks an instant it does not guarantee where
// midnight is skipped or shown twice), in the same run. In 2040 Go
// computes offsets from the zone's TZ rule, not from its table.
func BenchmarkDayStart(b *testing.B) {
	for _, c := range []struct {
		name string
		zone string
		year int
	}{{"NewYork2026", "America/New_York", 2026}, {"Berlin2040", "Europe/Berlin", 2040}} {
		loc := mustLoc(b, c.zone)
		ts := make([]time.Time, 1024)
		for i := range ts {
			ts[i] = time.Date(c.year, 1, 1, 0, 0, 0, 0, loc).Add(time.Duration(i) * 8 * time.Hour)
		}
		b.Run(c.name+"/series", func(b *testing.B) {
			i := 0
			for b.Loop() {
				Day.Start(ts[i%len(ts)], loc)
				i++
			}
		})
		b.Run(c.name+"/time.Date", func(b *testing.B) {
			i := 0
			for b.Loop() {
				y, m, d := ts[i%len(ts)].Date()
				time.Date(y, m, d, 0, 0, 0, 0, loc)
				i++
			}
		})
	}
}
