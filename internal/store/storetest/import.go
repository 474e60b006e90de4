package storetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

// importOf is a prepare function importing, for each key, the HLL of its
// ids at the series' parameters.
func importOf(tb testing.TB, keys []series.Key, ids [][]cms.ID) func(*series.Spec) ([]series.Import, error) {
	return func(spec *series.Spec) ([]series.Import, error) {
		out := make([]series.Import, len(keys))
		for i, k := range keys {
			sk, err := spec.Params.New()
			if err != nil {
				return nil, err
			}
			b, err := sk.Kind().Prepare(sketch.IDs(ids[i]))
			if err != nil {
				return nil, err
			}
			if _, err := sk.Apply(b, nil); err != nil {
				return nil, err
			}
			out[i] = series.Import{Key: k, Sketch: sk}
		}
		return out, nil
	}
}

// sameKey reports whether a and b name the same bucket (their starts may
// be in different *time.Location values of one zone).
func sameKey(a, b series.Key) bool { return a.Level == b.Level && a.Start.Equal(b.Start) }

// testSeriesImport: imported buckets are replaced or merged into, roll up
// into the coarser buckets holding them (unless the import names those
// too), persist, and a refused import changes nothing.
func testSeriesImport(t *testing.T, in *Instance) {
	spec := seriesSpec(t, hllParams11())
	_, _, err := seriesOf(in).CreateSeries(ctx, "s", spec)
	must(t, err, "create")
	loc := spec.Location()
	now := time.Now()
	d0 := series.Day.Start(now.AddDate(0, 0, -40), loc)
	d1 := series.Day.Next(d0, loc)
	days := []series.Key{{Level: series.Day, Start: d0}, {Level: series.Day, Start: d1}}
	a, b, c := Ints(0, 300).IDs, Ints(200, 700).IDs, Ints(1000, 1100).IDs
	// What each bucket must hold, as ids.
	want := map[series.Key][]cms.ID{}
	monthOf := func(k series.Key) series.Key {
		return series.Key{Level: series.Month, Start: series.Month.Start(k.Start, loc)}
	}
	check := func(when string) {
		t.Helper()
		for k, ids := range want {
			got := bucketBytes(t, seriesOf(in), "s", k)[0]
			if !bytes.Equal(got, hllOf(t, 11, ids...)) {
				t.Errorf("%s: %s bucket %v does not hold its %d ids", when, k.Level, k.Start, len(ids))
			}
		}
		hour := series.Key{Level: series.Hour, Start: d0}
		if got := bucketBytes(t, seriesOf(in), "s", hour)[0]; got != nil {
			t.Errorf("%s: an imported day made an hour bucket", when)
		}
	}

	ws, err := seriesOf(in).ImportSeries(ctx, "s", true, importOf(t, days, [][]cms.ID{a, b}))
	must(t, err, "import two days")
	want[days[0]], want[days[1]] = a, b
	want[monthOf(days[0])] = append(want[monthOf(days[0])], a...)
	want[monthOf(days[1])] = append(want[monthOf(days[1])], b...)
	months := 1
	if monthOf(days[0]) != monthOf(days[1]) {
		months = 2
	}
	if len(ws) != 2+months || !sameKey(ws[0].Key, days[0]) || ws[0].Action != series.Replaced || !sameKey(ws[1].Key, days[1]) || ws[len(ws)-1].Level != series.Month || ws[len(ws)-1].Action != series.RolledUp {
		t.Errorf("ImportSeries = %+v, want two days replaced, then %d month(s) rolled up", ws, months)
	}
	check("imported")
	in.Settle(t)

	// Merge c into day 0: the day and its month take it.
	ws, err = seriesOf(in).ImportSeries(ctx, "s", false, importOf(t, days[:1], [][]cms.ID{c}))
	must(t, err, "merge into day 0")
	if len(ws) != 2 || ws[0].Action != series.Merged || ws[1].Action != series.RolledUp {
		t.Errorf("a merge = %+v, want the day merged, its month rolled up", ws)
	}
	want[days[0]] = append(append([]cms.ID{}, a...), c...)
	want[monthOf(days[0])] = append(want[monthOf(days[0])], c...)
	check("merged")

	// Replace day 1 with c: the day holds c only; its month keeps b (a
	// union cannot take ids out) and takes c.
	_, err = seriesOf(in).ImportSeries(ctx, "s", true, importOf(t, days[1:], [][]cms.ID{c}))
	must(t, err, "replace day 1")
	want[days[1]] = c
	want[monthOf(days[1])] = append(want[monthOf(days[1])], c...)
	check("replaced")

	// A month named with its day is taken as it is: no roll-up into it.
	m := monthOf(days[0])
	ws, err = seriesOf(in).ImportSeries(ctx, "s", true, importOf(t, []series.Key{days[0], m}, [][]cms.ID{b, a}))
	must(t, err, "a day and its month")
	if len(ws) != 2 || !sameKey(ws[1].Key, m) || ws[1].Action != series.Replaced {
		t.Errorf("a day and its month = %+v, want both replaced and nothing rolled up", ws)
	}
	want[days[0]], want[m] = b, a
	check("with its month")

	// Refusals change nothing.
	before := bucketBytes(t, seriesOf(in), "s", days[0], days[1], m)
	refuse := func(what string, kind sketch.ErrorKind, keys ...series.Key) {
		t.Helper()
		ids := make([][]cms.ID, len(keys))
		for i := range ids {
			ids[i] = Ints(5000, 5010).IDs
		}
		_, err := seriesOf(in).ImportSeries(ctx, "s", true, importOf(t, keys, ids))
		mustKind(t, err, kind, what)
	}
	refuse("a start inside a day", sketch.Invalid, days[0], series.Key{Level: series.Day, Start: d1.Add(time.Hour)})
	refuse("a level the series does not keep", sketch.Conflict, days[0], series.Key{Level: series.Week, Start: series.Week.Start(d0, loc)})
	refuse("an expired hour", sketch.Unprocessable, days[0], series.Key{Level: series.Hour, Start: series.Hour.Start(now.AddDate(0, 0, -20), loc)})
	refuse("a future day", sketch.Unprocessable, days[0], series.Key{Level: series.Day, Start: series.Day.Start(now.AddDate(0, 0, 2), loc)})
	refuse("a day named twice", sketch.Invalid, days[0], days[1], days[0])
	sentinel := sketch.Errorf(sketch.Invalid, "prepare")
	if _, err := seriesOf(in).ImportSeries(ctx, "s", true, func(*series.Spec) ([]series.Import, error) { return nil, sentinel }); err != sentinel {
		t.Errorf("prepare's error came back as %v", err)
	}
	_, err = seriesOf(in).ImportSeries(ctx, "none", true, importOf(t, days, [][]cms.ID{a, b}))
	mustKind(t, err, sketch.NotFound, "an import into a missing series")
	if after := bucketBytes(t, seriesOf(in), "s", days[0], days[1], m); !bytes.Equal(after[0], before[0]) || !bytes.Equal(after[1], before[1]) || !bytes.Equal(after[2], before[2]) {
		t.Error("a refused import changed a bucket")
	}
	in.Reopen(t)
	check("reopened")

	// Count-Min: a merge adds counts, a replace sets them.
	cspec := seriesSpec(t, sketch.CMSParams{Params: cms.Params{Width: 64, Depth: 3}})
	_, _, err = seriesOf(in).CreateSeries(ctx, "c", cspec)
	must(t, err, "create cms")
	totalOf := func(k series.Key) uint64 {
		t.Helper()
		var out uint64
		err := seriesOf(in).ViewSeries(ctx, "c", func(*series.Spec) ([]series.Run, error) {
			return []series.Run{{Level: k.Level, First: k.Start, Last: k.Start, Count: 1}}, nil
		}, func(_ *series.Spec, bs []series.Bucket) error {
			for _, b := range bs {
				cm, _ := sketch.CMSOf(b.Sketch)
				out = cm.Total()
			}
			return nil
		})
		must(t, err, "view cms")
		return out
	}
	for i, replace := range []bool{false, false, true} {
		_, err := seriesOf(in).ImportSeries(ctx, "c", replace, importOf(t, days[:1], [][]cms.ID{Ints(0, 10).IDs}))
		must(t, err, "import cms")
		if want := []uint64{10, 20, 10}[i]; totalOf(days[0]) != want {
			t.Errorf("cms import %d (replace %v): day total %d, want %d", i, replace, totalOf(days[0]), want)
		}
	}
	if got := totalOf(monthOf(days[0])); got != 30 {
		t.Errorf("cms month after three imports of 10: total %d, want 30 (each rolled up)", got)
	}
}
