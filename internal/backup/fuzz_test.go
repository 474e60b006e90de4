package backup

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/archive"
)

// FuzzVerify: no archive panics the checker; every refusal is an
// *archive.Error.
func FuzzVerify(f *testing.F) {
	t := f
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.FixedZone("CET", 3600)).UTC()
	good := hllBytes(t, 1, 2, 3)
	f.Add(build(t, &archive.Sketch{Name: "a", Kind: "hll", Bytes: good}, seriesRec(t, "s"),
		&archive.Bucket{Series: "s", Level: "day", Start: day, Bytes: good}, &archive.Key{Target: "a", Key: "k"}))
	f.Add(build(t, &archive.Sketch{Name: "a", Kind: "cms", Bytes: []byte{1, 2, 3}}))
	f.Add(build(t, seriesRec(t, "s"), &archive.Bucket{Series: "s", Level: "hour", Start: day, Bytes: good}))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := archive.NewReader(bytes.NewReader(in))
		if err != nil {
			return
		}
		if _, err := Verify(r, nil); err != nil {
			var ae *archive.Error
			if !errors.As(err, &ae) {
				t.Fatalf("error %v is not an *archive.Error", err)
			}
		}
	})
}

// FuzzCheckFields writes records whose fields are the fuzzer's (behind
// valid framing, so the checker itself is what runs): nothing panics,
// every refusal is an *archive.Error naming a record.
func FuzzCheckFields(f *testing.F) {
	good := hllBytes(f, 1, 2, 3)
	f.Add("hll", good, "day", "Europe/Berlin", "P2D", "P30D", int64(1772319600), "a")
	f.Add("cms", []byte{1, 2, 3}, "hour", "UTC", "PT1H", "P1D", int64(0), "")
	f.Add("kll", []byte{}, "month", "Local", "", "P1Y", int64(-1), "\x00")
	f.Fuzz(func(t *testing.T, kind string, b []byte, level, tz, late, retention string, start int64, name string) {
		s := &archive.Series{Name: "s", Kind: kind, TZ: tz, LateLimit: late, Levels: []archive.Level{{Name: level, Retention: retention}}, Proto: b}
		in := build(t, &archive.Sketch{Name: name, Kind: kind, Bytes: b}, s,
			&archive.Bucket{Series: "s", Level: level, Start: time.Unix(start, 0), Bytes: b})
		r, err := archive.NewReader(bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Verify(r, nil); err != nil {
			var ae *archive.Error
			if !errors.As(err, &ae) || ae.Record < 1 || ae.Record > 3 {
				t.Fatalf("error %v does not name a record", err)
			}
		}
	})
}
