package series

import (
	"testing"
	"time"
)

// FuzzCalendar: for any instant, zone and duration, bucket edges and
// calendar steps return (no panic, no endless walk over zone periods),
// and between years 1 and 9999 an instant lies in the bucket Start gives
// it, which Next ends after it, and a calendar step forward from a day's
// start moves forward.
func FuzzCalendar(f *testing.F) {
	zones := []string{"UTC", "America/Santiago", "America/Havana", "America/Goose_Bay", "Pacific/Apia", "Australia/Lord_Howe", "Europe/Berlin", "America/St_Johns"}
	for _, seed := range []struct {
		unix int64
		zone uint8
		d    string
	}{
		{time.Date(2026, 9, 6, 4, 0, 0, 0, time.UTC).Unix(), 1, "P1D"},
		{time.Date(2025, 11, 2, 4, 30, 0, 0, time.UTC).Unix(), 2, "P1M"},
		{time.Date(2009, 11, 1, 3, 0, 30, 0, time.UTC).Unix(), 3, "P1W"},
		{time.Date(2011, 12, 30, 10, 0, 0, 0, time.UTC).Unix(), 4, "P1Y"},
		{time.Date(2026, 4, 5, 15, 0, 0, 0, time.UTC).Unix(), 5, "PT1H"},
		{time.Date(2040, 12, 31, 12, 0, 0, 0, time.UTC).Unix(), 6, "P400D"},
		{time.Date(2051, 12, 31, 23, 45, 0, 0, time.UTC).Unix(), 7, "P1DT12H"},
		{-62135596800 - 86400*366, 6, "P10000Y"},
		{1 << 40, 1, "P316224000000Y"},
	} {
		f.Add(seed.unix, seed.zone, seed.d)
	}
	locs := make([]*time.Location, len(zones))
	for i, z := range zones {
		locs[i] = mustLoc(f, z)
	}
	f.Fuzz(func(t *testing.T, unix int64, zone uint8, ds string) {
		loc := locs[int(zone)%len(locs)]
		tm := time.Unix(unix, 0).In(loc)
		sane := tm.Year() >= 1 && tm.Year() <= 9999
		for _, l := range Levels {
			s := l.Start(tm, loc)
			n := l.Next(s, loc)
			if sane && (s.After(tm) || !n.After(tm)) {
				t.Fatalf("%s %s: %v not in [%v, %v)", loc, l, tm, s, n)
			}
		}
		d, err := ParseDuration(ds)
		if err != nil {
			return
		}
		day := Day.Start(tm, loc)
		fwd, back := d.AddTo(day, 1), d.AddTo(day, -1)
		if sane && d.calendar() && fwd.Year() <= 9999 && back.Year() >= 1 && (!fwd.After(day) || !back.Before(day)) {
			t.Fatalf("%s: %v ± %s = %v, %v", loc, day, d, fwd, back)
		}
	})
}
