package backup

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/archive"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

func hllBytes(t testing.TB, ids ...int64) []byte {
	t.Helper()
	h, err := hll.New(hll.Params{Log2m: 11, Regwidth: 5, Expthresh: -1, Sparse: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range ids {
		h.AddInt64(v)
	}
	b, err := h.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func seriesRec(t testing.TB, name string) *archive.Series {
	t.Helper()
	spec := &series.Spec{Params: sketch.HLLParams{Params: hll.Params{Log2m: 11, Regwidth: 5, Expthresh: -1, Sparse: true}}, TZ: "Europe/Berlin",
		Levels: []series.LevelSpec{{Level: series.Day, Retention: series.Duration{Days: 30}}}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	rec, err := SeriesRecord(name, spec, time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// build writes recs (each a *archive.Sketch, *archive.Series,
// *archive.Bucket or *archive.Key) as an archive.
func build(t testing.TB, recs ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := archive.NewWriter(&buf, archive.Header{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		switch r := r.(type) {
		case *archive.Sketch:
			err = w.Sketch(r)
		case *archive.Series:
			err = w.Series(r)
		case *archive.Bucket:
			err = w.Bucket(r)
		case *archive.Key:
			err = w.Key(r)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func verify(t *testing.T, b []byte) error {
	t.Helper()
	r, err := archive.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Verify(r, nil)
	return err
}

func TestCheckerRefuses(t *testing.T) {
	berlinDay := time.Date(2026, 3, 1, 0, 0, 0, 0, time.FixedZone("CET", 3600)).UTC()
	sk := func(name string, b []byte) *archive.Sketch {
		return &archive.Sketch{Name: name, Kind: "hll", Created: time.Unix(1, 0), Updated: time.Unix(1, 0), Bytes: b}
	}
	good := hllBytes(t, 1, 2, 3)
	cases := []struct {
		name    string
		recs    []any
		record  int
		mention string
	}{
		{"duplicate sketch", []any{sk("a", good), sk("a", good)}, 2, "strictly increasing"},
		{"sketches out of order", []any{sk("b", good), sk("a", good)}, 2, "strictly increasing"},
		{"sketch after series", []any{seriesRec(t, "s"), sk("a", good)}, 2, "sketches, series, buckets, then keys"},
		{"bytes the kind refuses", []any{sk("a", []byte{0x99, 1})}, 1, `sketch "a"`},
		{"bad name", []any{sk("", good)}, 1, "name"},
		{"unknown kind", []any{&archive.Sketch{Name: "a", Kind: "nope", Bytes: good}}, 1, `sketch "a"`},
		{"bucket of no series", []any{&archive.Bucket{Series: "s", Level: "day", Start: berlinDay, Bytes: good}}, 1, `no series "s"`},
		{"bucket not at a day's start", []any{seriesRec(t, "s"), &archive.Bucket{Series: "s", Level: "day", Start: berlinDay.Add(time.Hour), Bytes: good}}, 2, "not the start"},
		{"bucket of a level the series lacks", []any{seriesRec(t, "s"), &archive.Bucket{Series: "s", Level: "hour", Start: berlinDay, Bytes: good}}, 2, "no hour level"},
		{"empty key", []any{&archive.Key{Target: "a"}}, 1, "idempotency key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := verify(t, build(t, c.recs...))
			var ae *archive.Error
			if !errors.As(err, &ae) || ae.Record != c.record || !errors.Is(err, archive.ErrCorrupt) || !strings.Contains(err.Error(), c.mention) {
				t.Fatalf("err = %v, want record %d named, mentioning %q", err, c.record, c.mention)
			}
		})
	}
	// And the same records in order pass.
	ok := build(t, sk("a", good), sk("b", good), seriesRec(t, "s"),
		&archive.Bucket{Series: "s", Level: "day", Start: berlinDay, Bytes: good},
		&archive.Key{Target: "a", Key: "k"})
	if err := verify(t, ok); err != nil {
		t.Fatal(err)
	}
}

// TestSummaryIgnoresWhatBackendsRound: a copy's summary is the same when
// times differ below a microsecond and expiries below a second (what
// PostgreSQL keeps), and differs when a value's bytes do.
func TestSummary(t *testing.T) {
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	mk := func(ns time.Duration, b []byte) []byte {
		return build(t, &archive.Sketch{Name: "a", Kind: "hll", Created: at.Add(ns), Updated: at.Add(ns), ExpireAfter: time.Hour + ns, Bytes: b})
	}
	sum := func(b []byte) Summary {
		r, _ := archive.NewReader(bytes.NewReader(b))
		s, err := Summarize(r)
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		return s
	}
	a, b2, c := sum(mk(0, hllBytes(t, 1))), sum(mk(999, hllBytes(t, 1))), sum(mk(0, hllBytes(t, 2)))
	if a != b2 {
		t.Errorf("summaries differ over sub-microsecond times")
	}
	if a == c || a.Counts.Sketches != 1 {
		t.Errorf("summaries %x and %x of different bytes agree", a.Digest, c.Digest)
	}
}
