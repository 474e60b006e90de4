package series

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/sketch"
)

// TestDurationCapUnits: the cap in every unit: a duration is within it
// exactly when its days (a year 365, a month 30, a week 7) and its hours,
// minutes and seconds add up to at most P36500D, checked against time
// arithmetic.
func TestDurationCapUnits(t *testing.T) {
	limit := time.Duration(sketch.MaxDurationDays) * 24 * time.Hour
	for _, c := range []struct {
		s       string
		nominal time.Duration
	}{
		{"P36500D", 36500 * 24 * time.Hour},
		{"P36501D", 36501 * 24 * time.Hour},
		{"P100Y", 100 * 365 * 24 * time.Hour},
		{"P100Y1D", (100*365 + 1) * 24 * time.Hour},
		{"P1216M", 1216 * 30 * 24 * time.Hour},
		{"P1217M", 1217 * 30 * 24 * time.Hour},
		{"P5214W2D", (5214*7 + 2) * 24 * time.Hour},
		{"P5214W3D", (5214*7 + 3) * 24 * time.Hour},
		{"PT876000H", 876000 * time.Hour},
		{"PT876000H1S", 876000*time.Hour + time.Second},
		{"PT52560000M", 52560000 * time.Minute},
		{"PT3153600000S", 3153600000 * time.Second},
		{"PT3153600001S", 3153600001 * time.Second},
		{"P36499DT23H59M59S", 36500*24*time.Hour - time.Second},
		{"P36499DT24H", 36500 * 24 * time.Hour},
		{"P36499DT24H1S", 36500*24*time.Hour + time.Second},
		{"P99Y12M", (99*365 + 360) * 24 * time.Hour},
	} {
		_, err := ParseField("f", c.s)
		if want := c.nominal <= limit; (err == nil) != want {
			t.Errorf("ParseField(%s) = %v; within the cap: %v", c.s, err, want)
		}
		if err != nil && (!strings.Contains(err.Error(), "f: ") || !strings.Contains(err.Error(), "P36500D")) {
			t.Errorf("ParseField(%s) = %v, want the field and the cap named", c.s, err)
		}
	}
}

// FuzzParseField: whatever the text, ParseField does not panic; what it
// takes ParseDuration takes too, within the cap, and it prints as text
// that parses to the same duration; what it refuses is a sketch.Invalid
// naming the field.
func FuzzParseField(f *testing.F) {
	for _, s := range []string{"P36500D", "P36501D", "P100Y", "P100Y1D", "P99999999D", "P99999999999999999999D", "PT876000H1S", "P1DT12H", "P", "PT", "P1Y2M3W4DT5H6M7S", "P0D", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseField("levels.hour", s)
		if err != nil {
			var se *sketch.Error
			if !errors.As(err, &se) || se.Kind != sketch.Invalid || !strings.HasPrefix(se.Detail, "levels.hour: ") {
				t.Fatalf("ParseField(%q) = %v, want an Invalid error naming the field", s, err)
			}
			return
		}
		if !d.WithinCap() {
			t.Fatalf("ParseField(%q) = %v, past the cap", s, d)
		}
		if p, err := ParseDuration(s); err != nil || p != d {
			t.Fatalf("ParseField(%q) = %v, ParseDuration = %v, %v", s, d, p, err)
		}
		if again, err := ParseField("levels.hour", d.String()); err != nil || again != d {
			t.Fatalf("%v prints as %q, which parses as %v, %v", d, d.String(), again, err)
		}
	})
}
