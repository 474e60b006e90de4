package storetest

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

// seriesSpec is a series of log2m-11 HLLs in New York (DST) keeping
// hours 14 days, days 400 and months 5 years.
func seriesSpec(tb testing.TB, params sketch.Params) *series.Spec {
	tb.Helper()
	spec := &series.Spec{Params: params, TZ: "America/New_York", Levels: []series.LevelSpec{
		{Level: series.Hour, Retention: series.Duration{Days: 14}},
		{Level: series.Day, Retention: series.Duration{Days: 400}},
		{Level: series.Month, Retention: series.Duration{Years: 5}},
	}}
	if err := spec.Validate(); err != nil {
		tb.Fatal(err)
	}
	return spec
}

func hllParams11() sketch.Params {
	p := hll.DefaultParams()
	p.Log2m = 11
	return sketch.HLLParams{Params: p}
}

// bucketBytes returns the encodings of the buckets keys of name (nil for
// an empty one), each read as a run of one bucket.
func bucketBytes(tb testing.TB, s SeriesStore, name string, keys ...series.Key) [][]byte {
	tb.Helper()
	out := make([][]byte, len(keys))
	runs := make([]series.Run, len(keys))
	for i, k := range keys {
		runs[i] = series.Run{Level: k.Level, First: k.Start, Last: k.Start, Count: 1}
	}
	err := s.ViewSeries(ctx, name, func(*series.Spec) ([]series.Run, error) { return runs, nil }, func(_ *series.Spec, bs []series.Bucket) error {
		for _, b := range bs {
			for i, k := range keys {
				if k.Level == b.Level && k.Start.Equal(b.Start) {
					out[i] = b.Sketch.AppendBinary(nil)
				}
			}
		}
		return nil
	})
	must(tb, err, "ViewSeries "+name)
	return out
}

// seriesOf is the store's series part (it changes with Reopen).
func seriesOf(in *Instance) SeriesStore { return in.Store.(SeriesStore) }

var seriesTests = []struct {
	name string
	fn   func(t *testing.T, in *Instance)
}{
	{"SeriesLifecycle", testSeriesLifecycle},
	{"SeriesAdd", testSeriesAdd},
	{"SeriesCMS", testSeriesCMS},
	{"SeriesDeleteRecreate", testSeriesDeleteRecreate},
	{"SeriesExpire", testSeriesExpire},
	{"SeriesRuns", testSeriesRuns},
	{"SeriesBackfill", testSeriesBackfill},
	{"SeriesChange", testSeriesChange},
	{"SeriesImport", testSeriesImport},
}

func testSeriesLifecycle(t *testing.T, in *Instance) {
	spec := seriesSpec(t, hllParams11())
	info, created, err := seriesOf(in).CreateSeries(ctx, "s", spec)
	must(t, err, "create series")
	if !created || info.Name != "s" || !info.Spec.Same(spec) || len(info.Levels) != 3 || info.CreatedAt.IsZero() {
		t.Fatalf("CreateSeries = %+v, %v", info, created)
	}
	_, created, err = seriesOf(in).CreateSeries(ctx, "s", seriesSpec(t, hllParams11()))
	must(t, err, "create the same series again")
	if created {
		t.Error("the same series again reports created")
	}
	other := seriesSpec(t, hllParams11())
	other.TZ = "UTC"
	must(t, other.Validate(), "validate")
	_, _, err = seriesOf(in).CreateSeries(ctx, "s", other)
	mustKind(t, err, sketch.Conflict, "another zone")
	_, _, err = seriesOf(in).CreateSeries(ctx, "bad", &series.Spec{Params: hllParams11(), TZ: "Nowhere/Else"})
	mustKind(t, err, sketch.Invalid, "a bad spec")
	// Series and sketches have separate names.
	create(t, in, "s", hllSpec(11))
	_, err = seriesOf(in).DescribeSeries(ctx, "bad")
	mustKind(t, err, sketch.NotFound, "describe a refused series")
	for _, n := range []string{"s2", "s3", "t1"} {
		_, _, err := seriesOf(in).CreateSeries(ctx, n, seriesSpec(t, sketch.CMSParams{Params: cms.Params{Width: 64, Depth: 2}}))
		must(t, err, "create "+n)
	}
	in.Settle(t)
	list, more, err := seriesOf(in).ListSeries(ctx, "s", "", 2)
	must(t, err, "list")
	if len(list) != 2 || !more || list[0].Name != "s" || list[1].Name != "s2" {
		t.Errorf("ListSeries(s, 2) = %v, more %v", names(list), more)
	}
	list, more, err = seriesOf(in).ListSeries(ctx, "s", "s2", 10)
	must(t, err, "list after")
	if len(list) != 1 || more || list[0].Name != "s3" {
		t.Errorf("ListSeries(s after s2) = %v, more %v", names(list), more)
	}
	must(t, seriesOf(in).DeleteSeries(ctx, "s2"), "delete")
	mustKind(t, seriesOf(in).DeleteSeries(ctx, "s2"), sketch.NotFound, "delete twice")
	_, err = seriesOf(in).DescribeSeries(ctx, "s2")
	mustKind(t, err, sketch.NotFound, "describe deleted")
	if _, err := in.Describe(ctx, "s"); err != nil {
		t.Errorf("the sketch named like the series: %v", err)
	}
	list, _, err = seriesOf(in).ListSeries(ctx, "", "", 10)
	must(t, err, "list all")
	if got := names(list); len(got) != 3 || got[0] != "s" || got[1] != "s3" || got[2] != "t1" {
		t.Errorf("series after delete: %v", got)
	}
	sketches, _, err := in.List(ctx, "", "", 10)
	must(t, err, "list sketches")
	if len(sketches) != 1 {
		t.Errorf("series show among sketches: %d sketches listed", len(sketches))
	}
}

func names(infos []series.Info) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i] = in.Name
	}
	return out
}

// testSeriesAdd adds ids at several times and checks every bucket holds
// exactly the sketch of the ids stamped inside it, at every level, before
// and after a reopen.
func testSeriesAdd(t *testing.T, in *Instance) {
	spec := seriesSpec(t, hllParams11())
	_, _, err := seriesOf(in).CreateSeries(ctx, "s", spec)
	must(t, err, "create")
	loc := spec.Location()
	now := time.Now()
	stamps := []time.Time{now.Add(-30 * time.Hour), now.Add(-29*time.Hour - 30*time.Minute), now.Add(-3 * time.Hour), now.Add(-2 * time.Minute), now.Add(4 * time.Minute)}
	want := map[series.Key][]cms.ID{}
	for i, ts := range stamps {
		ids := Ints(int64(i*100), int64(i*100+150))
		a, err := seriesOf(in).AddSeries(ctx, "s", ts, ids)
		must(t, err, "add")
		if a.Type != sketch.TypeHLL || a.Accepted != 150 {
			t.Errorf("AddSeries = %+v", a)
		}
		for _, l := range []series.Level{series.Hour, series.Day, series.Month} {
			k := series.Key{Level: l, Start: l.Start(ts, loc)}
			want[k] = append(want[k], ids.IDs...)
		}
		if i == 2 {
			in.Settle(t)
		}
	}
	check := func(when string) {
		t.Helper()
		for k, ids := range want {
			got := bucketBytes(t, seriesOf(in), "s", k)[0]
			if w := hllOf(t, 11, ids...); !bytes.Equal(got, w) {
				t.Errorf("%s: %s bucket %v differs from the sketch of its %d ids", when, k.Level, k.Start, len(ids))
			}
		}
		empty := series.Key{Level: series.Day, Start: series.Day.Start(now.AddDate(0, 0, -5), loc)}
		if b := bucketBytes(t, seriesOf(in), "s", empty)[0]; b != nil {
			t.Errorf("%s: a day with no adds holds %x", when, clip(b))
		}
	}
	check("before reopen")
	info, err := seriesOf(in).DescribeSeries(ctx, "s")
	must(t, err, "describe")
	var buckets int
	for _, l := range info.Levels {
		buckets += l.Buckets
		if l.Buckets > 0 && (l.Oldest.IsZero() || l.Newest.Before(l.Oldest) || l.Bytes <= 0) {
			t.Errorf("level %+v", l)
		}
	}
	if buckets != len(want) {
		t.Errorf("describe counts %d buckets, want %d", buckets, len(want))
	}
	in.Reopen(t)
	check("after reopen")

	// Refused adds change nothing.
	before := bucketBytes(t, seriesOf(in), "s", series.Key{Level: series.Month, Start: series.Month.Start(now, loc)})[0]
	_, err = seriesOf(in).AddSeries(ctx, "s", now.Add(10*time.Minute), Ints(5000, 5100))
	mustKind(t, err, sketch.Unprocessable, "an add from the future")
	_, err = seriesOf(in).AddSeries(ctx, "s", now.AddDate(0, 0, -8), Ints(5000, 5100))
	mustKind(t, err, sketch.Unprocessable, "an add older than the late limit")
	_, err = seriesOf(in).AddSeries(ctx, "s", now, Input{IDs: []cms.ID{cms.IntID(1)}, Counts: []uint64{2}})
	mustKind(t, err, sketch.Invalid, "counted items into an hll series")
	_, err = seriesOf(in).AddSeries(ctx, "none", now, Ints(0, 1))
	mustKind(t, err, sketch.NotFound, "an add to a missing series")
	if after := bucketBytes(t, seriesOf(in), "s", series.Key{Level: series.Month, Start: series.Month.Start(now, loc)})[0]; !bytes.Equal(after, before) {
		t.Error("a refused add changed a bucket")
	}
	// A plan's error comes back as is; a missing series is NotFound.
	sentinel := sketch.Errorf(sketch.Invalid, "plan")
	if err := seriesOf(in).ViewSeries(ctx, "s", func(*series.Spec) ([]series.Run, error) { return nil, sentinel }, nil); err != sentinel {
		t.Errorf("plan's error came back as %v", err)
	}
	err = seriesOf(in).ViewSeries(ctx, "none", func(*series.Spec) ([]series.Run, error) { return nil, nil }, func(*series.Spec, []series.Bucket) error { return nil })
	mustKind(t, err, sketch.NotFound, "view a missing series")
}

// testSeriesCMS: Count-Min series count every add once per level.
func testSeriesCMS(t *testing.T, in *Instance) {
	spec := seriesSpec(t, sketch.CMSParams{Params: cms.Params{Width: 128, Depth: 3}})
	_, _, err := seriesOf(in).CreateSeries(ctx, "c", spec)
	must(t, err, "create")
	now := time.Now()
	_, err = seriesOf(in).AddSeries(ctx, "c", now.Add(-time.Minute), Input{IDs: []cms.ID{cms.TextID("a"), cms.IntID(2)}, Counts: []uint64{3, 4}})
	must(t, err, "add items")
	_, err = seriesOf(in).AddSeries(ctx, "c", now.Add(-time.Minute), Ints(0, 5))
	must(t, err, "add ids")
	k := series.Key{Level: series.Day, Start: series.Day.Start(now.Add(-time.Minute), spec.Location())}
	run := []series.Run{{Level: k.Level, First: k.Start, Last: k.Start, Count: 1}}
	err = seriesOf(in).ViewSeries(ctx, "c", func(*series.Spec) ([]series.Run, error) { return run, nil }, func(_ *series.Spec, bs []series.Bucket) error {
		if len(bs) != 1 {
			t.Fatalf("day bucket: %d buckets, want 1", len(bs))
		}
		c, ok := sketch.CMSOf(bs[0].Sketch)
		if !ok || c.Total() != 12 {
			t.Errorf("day bucket: %v, want a cms with total 12", bs[0].Sketch)
		}
		return nil
	})
	must(t, err, "view")
}

// testSeriesDeleteRecreate: a deleted series leaves nothing behind for a
// new one of the same name.
func testSeriesDeleteRecreate(t *testing.T, in *Instance) {
	spec := seriesSpec(t, hllParams11())
	_, _, err := seriesOf(in).CreateSeries(ctx, "s", spec)
	must(t, err, "create")
	now := time.Now().Add(-time.Minute)
	_, err = seriesOf(in).AddSeries(ctx, "s", now, Ints(0, 100))
	must(t, err, "add")
	in.Settle(t)
	_, err = seriesOf(in).AddSeries(ctx, "s", now, Ints(100, 200))
	must(t, err, "add")
	must(t, seriesOf(in).DeleteSeries(ctx, "s"), "delete")
	_, _, err = seriesOf(in).CreateSeries(ctx, "s", spec)
	must(t, err, "create again")
	k := series.Key{Level: series.Day, Start: series.Day.Start(now, spec.Location())}
	if b := bucketBytes(t, seriesOf(in), "s", k)[0]; b != nil {
		t.Errorf("a recreated series holds %x", clip(b))
	}
	in.Reopen(t)
	if b := bucketBytes(t, seriesOf(in), "s", k)[0]; b != nil {
		t.Errorf("after reopen a recreated series holds %x", clip(b))
	}
	info, err := seriesOf(in).DescribeSeries(ctx, "s")
	must(t, err, "describe")
	for _, l := range info.Levels {
		if l.Buckets != 0 {
			t.Errorf("recreated series level %s has %d buckets", l.Level, l.Buckets)
		}
	}
}

// testSeriesExpire: a retention pass at a later now drops the buckets
// whose level's retention ran out, and only those.
func testSeriesExpire(t *testing.T, in *Instance) {
	spec := seriesSpec(t, hllParams11())
	_, _, err := seriesOf(in).CreateSeries(ctx, "s", spec)
	must(t, err, "create")
	ts := time.Now().Add(-time.Minute)
	_, err = seriesOf(in).AddSeries(ctx, "s", ts, Ints(0, 100))
	must(t, err, "add")
	x, err := seriesOf(in).ExpireSeries(ctx, time.Now())
	must(t, err, "expire now")
	if x.Buckets != 0 {
		t.Errorf("expired %d buckets at once", x.Buckets)
	}
	// 20 days on: the hour bucket (kept 14 days) goes, day and month stay.
	x, err = seriesOf(in).ExpireSeries(ctx, ts.AddDate(0, 0, 20))
	must(t, err, "expire in 20 days")
	if x.Buckets != 1 || x.Bytes <= 0 {
		t.Errorf("20 days on: expired %+v, want the hour bucket", x)
	}
	loc := spec.Location()
	got := bucketBytes(t, seriesOf(in), "s", series.Key{Level: series.Hour, Start: series.Hour.Start(ts, loc)}, series.Key{Level: series.Day, Start: series.Day.Start(ts, loc)})
	if got[0] != nil || got[1] == nil {
		t.Errorf("after expiry: hour bucket %v, day bucket %v; want gone and kept", got[0] != nil, got[1] != nil)
	}
	in.Reopen(t)
	info, err := seriesOf(in).DescribeSeries(ctx, "s")
	must(t, err, "describe")
	for _, l := range info.Levels {
		if want := map[series.Level]int{series.Hour: 0, series.Day: 1, series.Month: 1}[l.Level]; l.Buckets != want {
			t.Errorf("after expiry and reopen, level %s has %d buckets, want %d", l.Level, l.Buckets, want)
		}
	}
}

// testSeriesRuns: a read by runs returns exactly the stored buckets
// inside them, in run order and by start within each, across 1970 (whose
// earlier starts are negative Unix times), whether the buckets are fresh
// or settled, and whatever the runs span: a century of hours holding four
// buckets gives those four.
func testSeriesRuns(t *testing.T, in *Instance) {
	spec := &series.Spec{Params: hllParams11(), TZ: "Europe/Berlin", Levels: []series.LevelSpec{
		{Level: series.Hour, Retention: series.Duration{Years: 100}},
		{Level: series.Month, Retention: series.Duration{Years: 100}},
	}, LateLimit: series.Duration{Years: 100}}
	must(t, spec.Validate(), "validate")
	_, _, err := seriesOf(in).CreateSeries(ctx, "century", spec)
	must(t, err, "create")
	loc := spec.Location()
	now := time.Now()
	stamps := []time.Time{
		time.Date(1931, 3, 1, 10, 20, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 22, 30, 0, 0, time.UTC),
		time.Date(1970, 1, 1, 0, 30, 0, 0, time.UTC), // the hour starting at Unix 0
		now.Add(-2 * time.Hour),
	}
	hours := make([]series.Key, len(stamps))
	for i, ts := range stamps {
		_, err := seriesOf(in).AddSeries(ctx, "century", ts, Ints(int64(i*10), int64(i*10+3)))
		must(t, err, "add")
		hours[i] = series.Key{Level: series.Hour, Start: series.Hour.Start(ts, loc)}
	}
	if hours[2].Start.Unix() != 0 {
		t.Fatalf("the 1970 hour starts at Unix %d", hours[2].Start.Unix())
	}
	run := func(l series.Level, first, last time.Time) series.Run {
		return series.Run{Level: l, First: l.Start(first, loc), Last: l.Start(last, loc), Count: 1}
	}
	read := func(runs ...series.Run) []series.Bucket {
		t.Helper()
		var got []series.Bucket
		err := seriesOf(in).ViewSeries(ctx, "century", func(*series.Spec) ([]series.Run, error) { return runs, nil }, func(_ *series.Spec, bs []series.Bucket) error {
			for _, b := range bs {
				got = append(got, series.Bucket{Key: b.Key, Sketch: b.Sketch.Clone()})
			}
			return nil
		})
		must(t, err, "view")
		return got
	}
	check := func(when, what string, got []series.Bucket, want ...int) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %s: %d buckets, want %d", when, what, len(got), len(want))
			return
		}
		for i, w := range want {
			b := got[i]
			if b.Level != series.Hour || !b.Start.Equal(hours[w].Start) || b.Start.Location().String() != loc.String() {
				t.Errorf("%s: %s: bucket %d is %s %v, want hour %v in %v", when, what, i, b.Level, b.Start, hours[w].Start, loc)
				continue
			}
			if !bytes.Equal(b.Sketch.AppendBinary(nil), hllOf(t, 11, Ints(int64(w*10), int64(w*10+3)).IDs...)) {
				t.Errorf("%s: %s: the bucket of %v holds other ids", when, what, b.Start)
			}
		}
	}
	century := run(series.Hour, now.AddDate(-99, 0, 0), now)
	for _, when := range []string{"fresh", "settled", "reopened"} {
		switch when {
		case "settled":
			in.Settle(t)
		case "reopened":
			in.Reopen(t)
		}
		check(when, "a century of hours", read(century), 0, 1, 2, 3)
		check(when, "1969 to Unix 0", read(run(series.Hour, time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC), hours[2].Start)), 1, 2)
		check(when, "up to before Unix 0", read(run(series.Hour, hours[0].Start, hours[2].Start.Add(-time.Hour))), 0, 1)
		check(when, "runs in their order", read(run(series.Hour, hours[3].Start, now), run(series.Hour, hours[0].Start, hours[1].Start)), 3, 0, 1)
		check(when, "an empty run", read(run(series.Hour, hours[0].Start.Add(time.Hour), hours[1].Start.Add(-time.Hour))))
		check(when, "no runs", read())
		months := read(run(series.Month, now.AddDate(-99, 0, 0), now))
		if len(months) != 4 || months[0].Level != series.Month || !months[0].Start.Equal(series.Month.Start(stamps[0], loc)) {
			t.Errorf("%s: a century of months: %d buckets, first %+v", when, len(months), months[0].Key)
		}
		if got := read(run(series.Day, now.AddDate(-99, 0, 0), now)); len(got) != 0 {
			t.Errorf("%s: a level the series does not keep gave %d buckets", when, len(got))
		}
	}
	// A bucket gone by retention is not read.
	x, err := seriesOf(in).ExpireSeries(ctx, stamps[0].AddDate(100, 1, 0))
	must(t, err, "expire")
	if x.Buckets < 2 {
		t.Fatalf("expired %+v, want the 1931 hour and month", x)
	}
	check("expired", "a century of hours", read(century), 1, 2, 3)
}

// testSeriesBackfill: with a late limit past the hour level's retention,
// an add older than hours are kept goes to days and months only, says
// so, and leaves no hour bucket; one past the late limit is refused.
func testSeriesBackfill(t *testing.T, in *Instance) {
	spec := seriesSpec(t, hllParams11())
	spec.LateLimit = series.Duration{Days: 90}
	must(t, spec.Validate(), "validate")
	_, _, err := seriesOf(in).CreateSeries(ctx, "s", spec)
	must(t, err, "create")
	loc := spec.Location()
	ts := time.Now().AddDate(0, 0, -30)
	a, err := seriesOf(in).AddSeries(ctx, "s", ts, Ints(0, 200))
	must(t, err, "add 30 days late")
	if a.Accepted != 200 || !slices.Equal(a.Levels, []series.Level{series.Day, series.Month}) || len(a.Skipped) != 1 || a.Skipped[0].Level != series.Hour {
		t.Errorf("AddSeries 30 days late = %+v, want day and month, hour skipped", a)
	}
	keys := []series.Key{{Level: series.Hour, Start: series.Hour.Start(ts, loc)}, {Level: series.Day, Start: series.Day.Start(ts, loc)}, {Level: series.Month, Start: series.Month.Start(ts, loc)}}
	want := hllOf(t, 11, Ints(0, 200).IDs...)
	for _, when := range []string{"fresh", "reopened"} {
		if when == "reopened" {
			in.Reopen(t)
		}
		got := bucketBytes(t, seriesOf(in), "s", keys...)
		if got[0] != nil || !bytes.Equal(got[1], want) || !bytes.Equal(got[2], want) {
			t.Errorf("%s: hour %v, day %v, month %v; want no hour bucket and the ids in day and month", when, got[0] != nil, bytes.Equal(got[1], want), bytes.Equal(got[2], want))
		}
	}
	a, err = seriesOf(in).AddSeries(ctx, "s", time.Now().Add(-time.Hour), Ints(0, 1))
	must(t, err, "add now")
	if len(a.Levels) != 3 || len(a.Skipped) != 0 {
		t.Errorf("an add of now = %+v, want all three levels", a)
	}
	_, err = seriesOf(in).AddSeries(ctx, "s", time.Now().AddDate(0, 0, -91), Ints(0, 1))
	mustKind(t, err, sketch.Unprocessable, "an add past the late limit")
}

// testSeriesChange: a change of the late limit and of retentions is
// stored, used by adds and reads at once, refused whole when the spec
// refuses it, and a shorter retention's buckets go at the next retention
// pass.
func testSeriesChange(t *testing.T, in *Instance) {
	spec := seriesSpec(t, hllParams11())
	_, _, err := seriesOf(in).CreateSeries(ctx, "s", spec)
	must(t, err, "create")
	loc := spec.Location()
	now := time.Now()
	five := now.AddDate(0, 0, -5)
	_, err = seriesOf(in).AddSeries(ctx, "s", five, Ints(0, 50))
	must(t, err, "add 5 days late")
	_, err = seriesOf(in).AddSeries(ctx, "s", now.AddDate(0, 0, -30), Ints(0, 1))
	mustKind(t, err, sketch.Unprocessable, "30 days late under P7D")

	late := series.Duration{Days: 90}
	info, err := seriesOf(in).ChangeSeries(ctx, "s", series.Change{LateLimit: &late, Retentions: map[series.Level]series.Duration{series.Hour: {Days: 2}}})
	must(t, err, "change")
	if info.Spec.LateLimit != late || info.Spec.Levels[0].Retention != (series.Duration{Days: 2}) || info.Spec.Levels[1].Retention != (series.Duration{Days: 400}) {
		t.Errorf("ChangeSeries = %s", info.Spec)
	}
	a, err := seriesOf(in).AddSeries(ctx, "s", now.AddDate(0, 0, -30), Ints(100, 150))
	must(t, err, "30 days late under P90D")
	if !slices.Equal(a.Levels, []series.Level{series.Day, series.Month}) {
		t.Errorf("30 days late: levels %v, want day and month", a.Levels)
	}
	a, err = seriesOf(in).AddSeries(ctx, "s", five, Ints(50, 60))
	must(t, err, "5 days late with hours kept P2D")
	if !slices.Equal(a.Levels, []series.Level{series.Day, series.Month}) {
		t.Errorf("5 days late with hours kept P2D: levels %v, want day and month", a.Levels)
	}
	// Refused whole: nothing changes.
	_, err = seriesOf(in).ChangeSeries(ctx, "s", series.Change{LateLimit: &late, Retentions: map[series.Level]series.Duration{series.Week: {Days: 30}}})
	mustKind(t, err, sketch.Invalid, "a level the series does not keep")
	_, err = seriesOf(in).ChangeSeries(ctx, "s", series.Change{Retentions: map[series.Level]series.Duration{series.Month: {Days: 60}}})
	mustKind(t, err, sketch.Invalid, "the coarsest level under the late limit")
	_, err = seriesOf(in).ChangeSeries(ctx, "none", series.Change{LateLimit: &late})
	mustKind(t, err, sketch.NotFound, "a missing series")
	in.Reopen(t)
	info, err = seriesOf(in).DescribeSeries(ctx, "s")
	must(t, err, "describe")
	if info.Spec.LateLimit != late || info.Spec.Levels[0].Retention != (series.Duration{Days: 2}) || info.Spec.Levels[2].Retention != (series.Duration{Years: 5}) {
		t.Errorf("after reopen: %s", info.Spec)
	}
	hour := series.Key{Level: series.Hour, Start: series.Hour.Start(five, loc)}
	// Shorter: the pass removes the hour bucket now past P2D.
	x, err := seriesOf(in).ExpireSeries(ctx, time.Now())
	must(t, err, "expire")
	if x.Buckets != 1 {
		t.Errorf("the pass after shortening hours to P2D expired %d buckets, want the 5-day-old hour", x.Buckets)
	}
	if b := bucketBytes(t, seriesOf(in), "s", hour)[0]; b != nil {
		t.Error("the hour bucket past the shorter retention is still there")
	}
	// Longer: at once.
	info, err = seriesOf(in).ChangeSeries(ctx, "s", series.Change{Retentions: map[series.Level]series.Duration{series.Hour: {Days: 14}}})
	must(t, err, "lengthen")
	a, err = seriesOf(in).AddSeries(ctx, "s", five, Ints(60, 70))
	must(t, err, "5 days late with hours kept P14D again")
	if len(a.Levels) != 3 {
		t.Errorf("after lengthening: levels %v, want all three", a.Levels)
	}
	if got := bucketBytes(t, seriesOf(in), "s", hour)[0]; !bytes.Equal(got, hllOf(t, 11, Ints(60, 70).IDs...)) {
		t.Error("the hour bucket of an add after lengthening holds other ids")
	}
	// The same change again writes nothing and answers the same.
	again, err := seriesOf(in).ChangeSeries(ctx, "s", series.Change{Retentions: map[series.Level]series.Duration{series.Hour: {Days: 14}}})
	must(t, err, "the same change")
	if !again.Spec.Same(info.Spec) {
		t.Errorf("the same change gave %s, want %s", again.Spec, info.Spec)
	}
}
