package postgres_test

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/postgres"
	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
)

func testSeriesSpec(t *testing.T, params sketch.Params) *series.Spec {
	t.Helper()
	spec := &series.Spec{Params: params, TZ: "Europe/Berlin", Levels: []series.LevelSpec{
		{Level: series.Hour, Retention: series.Duration{Days: 2}},
		{Level: series.Day, Retention: series.Duration{Days: 30}},
		{Level: series.Month, Retention: series.Duration{Years: 1}},
	}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	return spec
}

// buckets returns the buckets keys of name as ViewSeries gives them.
func buckets(t *testing.T, db *postgres.DB, name string, keys []series.Key) []sketch.Sketch {
	t.Helper()
	sks, _ := view(t, db, name, keys)
	return sks
}

// TestSeriesConcurrentNodes: three nodes add to an HLL series, a CMS
// series and a sketch at once, directly and through events naming all
// three; nothing deadlocks or fails, every HLL bucket is byte for byte
// the sketch of the ids stamped in it and every CMS bucket counts every
// id once.
func TestSeriesConcurrentNodes(t *testing.T) {
	dbs := open(t, 3)
	hp := hll.DefaultParams()
	hp.Log2m = 11
	hs := testSeriesSpec(t, sketch.HLLParams{Params: hp})
	cs := testSeriesSpec(t, sketch.CMSParams{Params: cms.Params{Width: 256, Depth: 3}})
	for name, spec := range map[string]*series.Spec{"s": hs, "c": cs} {
		if _, created, err := dbs[0].CreateSeries(ctx, name, spec); err != nil || !created {
			t.Fatalf("create %s: %v %v", name, created, err)
		}
	}
	if _, _, err := dbs[0].Create(ctx, "h", hllSpec(11)); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var mu sync.Mutex
	stamped := map[series.Key][]cms.ID{} // HLL and CMS buckets receive the same ids
	var events []cms.ID
	record := func(ts time.Time, ids []cms.ID) {
		keys, err := hs.Buckets(ts, now)
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			k.Start = k.Start.UTC()
			stamped[k] = append(stamped[k], ids...)
		}
	}
	var wg sync.WaitGroup
	for w := range 6 {
		db := dbs[w%3]
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range 15 {
				ts := now.Add(-time.Duration(r.IntN(180)) * time.Minute)
				ids := make([]cms.ID, 40)
				for j := range ids {
					ids[j] = cms.IntID(r.Int64N(5000))
				}
				if i%3 == 0 {
					evs := make([]sketch.Event, len(ids))
					for j, id := range ids {
						evs[j] = sketch.Event{ID: id, Sketches: []string{"h"}, Series: &sketch.EventSeries{Names: []string{"c", "s"}, TS: ts}}
					}
					counts, err := db.AddEvents(ctx, evs, false)
					if err != nil || counts[sketch.TypeHLL] != 2*len(ids) || counts[sketch.TypeCMS] != len(ids) {
						t.Errorf("events: %v %v", counts, err)
						return
					}
					mu.Lock()
					events = append(events, ids...)
					mu.Unlock()
				} else {
					for _, n := range []string{"s", "c"} {
						if a, err := db.AddSeries(ctx, n, ts, sketch.IDs(ids)); err != nil || a.Accepted != len(ids) {
							t.Errorf("add %s: %+v %v", n, a, err)
							return
						}
					}
				}
				record(ts, ids)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var keys []series.Key
	for k := range stamped {
		keys = append(keys, k)
	}
	hb, cb := buckets(t, dbs[1], "s", keys), buckets(t, dbs[2], "c", keys)
	for i, k := range keys {
		want, err := hs.Params.New()
		if err != nil {
			t.Fatal(err)
		}
		b, err := want.Kind().Prepare(sketch.IDs(stamped[k]))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := want.Apply(b, nil); err != nil {
			t.Fatal(err)
		}
		if hb[i] == nil || !bytes.Equal(hb[i].AppendBinary(nil), want.AppendBinary(nil)) {
			t.Errorf("hll bucket %s %v differs from the sketch of its %d ids", k.Level, k.Start, len(stamped[k]))
		}
		if cb[i] == nil || cb[i].Estimate() != float64(len(stamped[k])) {
			t.Errorf("cms bucket %s %v counts %v, want %d", k.Level, k.Start, cb[i], len(stamped[k]))
		}
	}
	var got []byte
	if err := dbs[0].View(ctx, []string{"h"}, func(sks []sketch.Sketch) error { got = sks[0].AppendBinary(nil); return nil }); err != nil {
		t.Fatal(err)
	}
	want, _ := hllSpec(11).New()
	b, _ := want.Kind().Prepare(sketch.IDs(events))
	if _, err := want.Apply(b, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.AppendBinary(nil)) {
		t.Error("the sketch the events named differs from the sketch of their ids")
	}
}

// TestSeriesEventsAllOrNothing: events that name series and sketches
// change nothing when any of their adds is refused.
func TestSeriesEventsAllOrNothing(t *testing.T) {
	db := open(t, 1)[0]
	spec := testSeriesSpec(t, sketch.HLLParams{Params: hll.DefaultParams()})
	if _, _, err := db.CreateSeries(ctx, "s", spec); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Create(ctx, "h", hllSpec(11)); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	keys, err := spec.Buckets(now, now)
	if err != nil {
		t.Fatal(err)
	}
	ok := sketch.Event{ID: cms.IntID(1), Sketches: []string{"h"}, Series: &sketch.EventSeries{Names: []string{"s"}, TS: now}}
	cases := []struct {
		name string
		ev   sketch.Event
		kind sketch.ErrorKind
	}{
		{"missing sketch", sketch.Event{ID: cms.IntID(2), Sketches: []string{"nope"}}, sketch.NotFound},
		{"missing series", sketch.Event{ID: cms.IntID(2), Series: &sketch.EventSeries{Names: []string{"nope"}, TS: now}}, sketch.NotFound},
		{"too late", sketch.Event{ID: cms.IntID(2), Series: &sketch.EventSeries{Names: []string{"s"}, TS: now.AddDate(0, 0, -9)}}, sketch.Unprocessable},
		{"future", sketch.Event{ID: cms.IntID(2), Series: &sketch.EventSeries{Names: []string{"s"}, TS: now.Add(time.Hour)}}, sketch.Unprocessable},
	}
	for _, c := range cases {
		_, err := db.AddEvents(ctx, []sketch.Event{ok, c.ev}, false)
		if sketch.KindOf(err) != c.kind {
			t.Errorf("%s: %v, want %v", c.name, err, c.kind)
		}
		for i, sk := range buckets(t, db, "s", keys) {
			if sk != nil {
				t.Errorf("%s: bucket %s written", c.name, keys[i].Level)
			}
		}
		info, err := db.Describe(ctx, "h")
		if err != nil || info.UpdatedAt != info.CreatedAt {
			t.Errorf("%s: the sketch changed: %+v %v", c.name, info, err)
		}
	}
	if _, err := db.AddEvents(ctx, []sketch.Event{ok}, false); err != nil {
		t.Fatal(err)
	}
	for i, sk := range buckets(t, db, "s", keys) {
		if sk == nil || sk.Estimate() != 1 {
			t.Errorf("bucket %s after the accepted event: %v", keys[i].Level, sk)
		}
	}
}

// TestSeriesAddsWhileRecreated: adds grouped into one transaction while
// their series is deleted and created anew each succeed or find it
// missing, never fail otherwise or hang; the last add counts.
func TestSeriesAddsWhileRecreated(t *testing.T) {
	db := open(t, 1)[0]
	spec := testSeriesSpec(t, sketch.HLLParams{Params: hll.DefaultParams()})
	if _, _, err := db.CreateSeries(ctx, "r", spec); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		defer close(stop)
		for range 15 {
			if err := db.DeleteSeries(ctx, "r"); err != nil {
				t.Error(err)
			}
			if _, _, err := db.CreateSeries(ctx, "r", spec); err != nil {
				t.Error(err)
			}
		}
	})
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, err := db.AddSeries(ctx, "r", time.Now(), sketch.IDs([]cms.ID{cms.IntID(int64(w*1000 + i))}))
				if err != nil && sketch.KindOf(err) != sketch.NotFound {
					t.Errorf("add: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := db.DeleteSeries(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.CreateSeries(ctx, "r", spec); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := db.AddSeries(ctx, "r", now, sketch.IDs([]cms.ID{cms.IntID(-1)})); err != nil {
		t.Fatal(err)
	}
	keys, _ := spec.Buckets(now, now)
	for i, sk := range buckets(t, db, "r", keys) {
		if sk == nil || sk.Estimate() != 1 {
			t.Errorf("bucket %s after the recreate and one add: %v", keys[i].Level, sk)
		}
	}
}

// TestSeriesRecreatedOnAnotherNode: a node that has read a series sees
// it deleted, or created anew with other levels, by another node on its
// next read and add.
func TestSeriesRecreatedOnAnotherNode(t *testing.T) {
	dbs := open(t, 2)
	first := testSeriesSpec(t, sketch.HLLParams{Params: hll.DefaultParams()})
	if _, _, err := dbs[0].CreateSeries(ctx, "x", first); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := dbs[0].AddSeries(ctx, "x", now, sketch.IDs([]cms.ID{cms.IntID(1)})); err != nil {
		t.Fatal(err)
	}
	if err := dbs[1].DeleteSeries(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	keys, _ := first.Buckets(now, now)
	err := dbs[0].ViewSeries(ctx, "x", func(*series.Spec) ([]series.Run, error) { return runsOf(keys), nil }, func(*series.Spec, []series.Bucket) error { return nil })
	if sketch.KindOf(err) != sketch.NotFound {
		t.Fatalf("a read after another node's delete: %v", err)
	}
	if _, err := dbs[0].AddSeries(ctx, "x", now, sketch.IDs([]cms.ID{cms.IntID(1)})); sketch.KindOf(err) != sketch.NotFound {
		t.Fatalf("an add after another node's delete: %v", err)
	}
	// Created again (through node 0, which reads it) and then anew with
	// days only through node 1.
	if _, _, err := dbs[0].CreateSeries(ctx, "x", first); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[0].AddSeries(ctx, "x", now, sketch.IDs([]cms.ID{cms.IntID(1)})); err != nil {
		t.Fatal(err)
	}
	second := &series.Spec{Params: first.Params, TZ: "UTC", Levels: []series.LevelSpec{{Level: series.Day, Retention: series.Duration{Days: 30}}}}
	if err := dbs[1].DeleteSeries(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := dbs[1].CreateSeries(ctx, "x", second); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[0].AddSeries(ctx, "x", now, sketch.IDs([]cms.ID{cms.IntID(2), cms.IntID(3)})); err != nil {
		t.Fatal(err)
	}
	var got *series.Spec
	day := series.Key{Level: series.Day, Start: series.Day.Start(now, time.UTC)}
	err = dbs[0].ViewSeries(ctx, "x", func(sp *series.Spec) ([]series.Run, error) { got = sp; return runsOf([]series.Key{day}), nil }, func(_ *series.Spec, bs []series.Bucket) error {
		if len(bs) != 1 || bs[0].Sketch.Estimate() != 2 {
			t.Errorf("the new series' day bucket: %v", bs)
		}
		return nil
	})
	if err != nil || !got.Same(second) {
		t.Fatalf("node 0 reads %v (%v), want %v", got, err, second)
	}
	info, err := dbs[1].DescribeSeries(ctx, "x")
	if err != nil || len(info.Levels) != 1 || info.Levels[0].Buckets != 1 {
		t.Errorf("describe: %+v %v", info, err)
	}
}

// view returns the buckets keys of name through db, with the spec plan
// saw last.
func view(t *testing.T, db *postgres.DB, name string, keys []series.Key) ([]sketch.Sketch, *series.Spec) {
	t.Helper()
	var spec *series.Spec
	var out []sketch.Sketch
	err := db.ViewSeries(ctx, name, func(sp *series.Spec) ([]series.Run, error) {
		spec = sp
		for _, k := range keys {
			if _, ok := sp.Kept(k.Level); !ok {
				return nil, sketch.Errorf(sketch.Invalid, "series %q keeps no %s buckets", name, k.Level)
			}
		}
		return runsOf(keys), nil
	}, func(_ *series.Spec, bs []series.Bucket) error {
		out = make([]sketch.Sketch, len(keys))
		for _, b := range bs {
			for i, k := range keys {
				if k.Level == b.Level && k.Start.Equal(b.Start) {
					out[i] = b.Sketch.Clone()
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, spec
}

// runsOf reads each key as a run of one bucket.
func runsOf(keys []series.Key) []series.Run {
	runs := make([]series.Run, len(keys))
	for i, k := range keys {
		runs[i] = series.Run{Level: k.Level, First: k.Start, Last: k.Start, Count: 1}
	}
	return runs
}

// TestSeriesBucketCache: a node reads each bucket's bytes once while its
// row is unchanged, and reads them again as soon as any node writes the
// bucket, deletes it or creates the series anew, so that every read
// still sees every committed write; the cache keeps to its bound.
func TestSeriesBucketCache(t *testing.T) {
	dbs := open(t, 2)
	spec := &series.Spec{Params: sketch.HLLParams{Params: hll.DefaultParams()}, TZ: "Europe/Berlin", Levels: []series.LevelSpec{
		{Level: series.Day, Retention: series.Duration{Days: 30}},
		{Level: series.Month, Retention: series.Duration{Years: 1}},
	}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := dbs[1].CreateSeries(ctx, "x", spec); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	yesterday := now.AddDate(0, 0, -1)
	add := func(db *postgres.DB, ts time.Time, ids ...int64) {
		t.Helper()
		in := make([]cms.ID, len(ids))
		for i, v := range ids {
			in[i] = cms.IntID(v)
		}
		if _, err := db.AddSeries(ctx, "x", ts, sketch.IDs(in)); err != nil {
			t.Fatal(err)
		}
	}
	add(dbs[1], yesterday, 1, 2, 3)
	add(dbs[1], now, 4)
	loc := spec.Location()
	days := []series.Key{
		{Level: series.Day, Start: series.Day.Start(yesterday, loc)},
		{Level: series.Day, Start: series.Day.Start(now, loc)},
		{Level: series.Day, Start: series.Day.Start(yesterday, loc)}, // twice: one read
	}
	estimates := func(sks []sketch.Sketch) []float64 {
		out := make([]float64, len(sks))
		for i, sk := range sks {
			out[i] = -1
			if sk != nil {
				out[i] = sk.Estimate()
			}
		}
		return out
	}
	reads := func(want string, wantCached, wantFetched uint64) {
		t.Helper()
		c, f := dbs[0].BucketReads()
		if c != wantCached || f != wantFetched {
			t.Fatalf("%s: %d reads from the cache and %d of bytes, want %d and %d", want, c, f, wantCached, wantFetched)
		}
	}
	check := func(what string, want ...float64) {
		t.Helper()
		sks, _ := view(t, dbs[0], "x", days)
		if got := estimates(sks); !slices.Equal(got, want) {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}

	check("first read", 3, 1, 3)
	reads("first read", 0, 2)
	check("again", 3, 1, 3)
	reads("again", 2, 2)

	add(dbs[1], now, 5, 6) // another node writes today's bucket
	check("after another node's add", 3, 3, 3)
	reads("after another node's add", 3, 3)

	// Another node expires yesterday's day bucket (days are kept 30).
	if _, err := dbs[1].ExpireSeries(ctx, now.AddDate(0, 0, 30)); err != nil {
		t.Fatal(err)
	}
	check("after expiry", -1, 3, -1)
	if n, _ := dbs[0].CacheStats(); n != 1 {
		t.Errorf("%d buckets cached after one of the two rows went", n)
	}

	// Created anew with hours kept, by the other node: a plan that needs
	// hours, which the definition node 0 read lacks, works at once.
	hours := &series.Spec{Params: spec.Params, TZ: spec.TZ, Levels: []series.LevelSpec{
		{Level: series.Hour, Retention: series.Duration{Days: 3}},
		{Level: series.Day, Retention: series.Duration{Days: 30}},
	}}
	if err := dbs[1].DeleteSeries(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := dbs[1].CreateSeries(ctx, "x", hours); err != nil {
		t.Fatal(err)
	}
	add(dbs[1], now, 7)
	hour := series.Key{Level: series.Hour, Start: series.Hour.Start(now, loc)}
	sks, got := view(t, dbs[0], "x", []series.Key{hour, days[1]})
	if !got.Same(hours) || estimates(sks)[0] != 1 || estimates(sks)[1] != 1 {
		t.Fatalf("the series created anew: %v under %v", estimates(sks), got)
	}
}

// TestSeriesBucketCacheBound: a node whose cache holds fewer buckets than
// a read needs answers it right and keeps to its bound.
func TestSeriesBucketCacheBound(t *testing.T) {
	const bound = 64 << 10
	db := openWith(t, 1, postgres.Options{MaxConns: 3, CacheBytes: bound})[0]
	spec := &series.Spec{Params: sketch.HLLParams{Params: hll.DefaultParams()}, TZ: "UTC",
		Levels: []series.LevelSpec{{Level: series.Day, Retention: series.Duration{Days: 40}}}, LateLimit: series.Duration{Days: 30}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.CreateSeries(ctx, "x", spec); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var keys []series.Key
	var want []float64
	for d := range 20 {
		ts := now.AddDate(0, 0, -d)
		ids := make([]cms.ID, 3000)
		h, _ := hll.New(hll.DefaultParams())
		for i := range ids {
			v := int64(d*100000 + i)
			ids[i] = cms.IntID(v)
			h.AddInt64(v)
		}
		if _, err := db.AddSeries(ctx, "x", ts, sketch.IDs(ids)); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, series.Key{Level: series.Day, Start: series.Day.Start(ts, time.UTC)})
		want = append(want, h.Estimate())
	}
	for pass := range 2 {
		sks, _ := view(t, db, "x", keys)
		for i, sk := range sks {
			if sk == nil || sk.Estimate() != want[i] {
				t.Fatalf("pass %d, day %d: %v, want %v", pass, i, sk, want[i])
			}
		}
		if n, bytes := db.CacheStats(); bytes > bound || n >= len(keys) || n == 0 {
			t.Fatalf("pass %d: %d buckets in %d bytes cached; bound %d", pass, n, bytes, bound)
		}
	}
}

// TestSeriesAddAfterRedefinition: a node that read a series' definition
// takes an add only its replacement (created by another node) accepts.
func TestSeriesAddAfterRedefinition(t *testing.T) {
	dbs := open(t, 2)
	spec := func(late int) *series.Spec {
		s := &series.Spec{Params: sketch.HLLParams{Params: hll.DefaultParams()}, TZ: "UTC",
			Levels: []series.LevelSpec{{Level: series.Day, Retention: series.Duration{Days: 60}}}, LateLimit: series.Duration{Days: late}}
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, _, err := dbs[0].CreateSeries(ctx, "x", spec(1)); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := dbs[0].AddSeries(ctx, "x", now, sketch.IDs([]cms.ID{cms.IntID(1)})); err != nil {
		t.Fatal(err)
	}
	old := now.AddDate(0, 0, -20)
	if _, err := dbs[0].AddSeries(ctx, "x", old, sketch.IDs([]cms.ID{cms.IntID(2)})); sketch.KindOf(err) != sketch.Unprocessable {
		t.Fatalf("an add 20 days late with a 1-day late limit: %v", err)
	}
	if err := dbs[1].DeleteSeries(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := dbs[1].CreateSeries(ctx, "x", spec(30)); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[0].AddSeries(ctx, "x", old, sketch.IDs([]cms.ID{cms.IntID(2)})); err != nil {
		t.Fatalf("the same add once another node allows 30 days: %v", err)
	}
}

// TestSeriesChangeOnAnotherNode: a node that cached a series' definition
// obeys a change another node made: a shorter late limit refuses an add
// its cached one allowed, and the adds it then takes use the new one.
func TestSeriesChangeOnAnotherNode(t *testing.T) {
	dbs := open(t, 2)
	spec := &series.Spec{Params: sketch.HLLParams{Params: hll.DefaultParams()}, TZ: "UTC",
		Levels: []series.LevelSpec{{Level: series.Hour, Retention: series.Duration{Days: 14}}, {Level: series.Day, Retention: series.Duration{Days: 60}}}, LateLimit: series.Duration{Days: 30}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := dbs[0].CreateSeries(ctx, "x", spec); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := dbs[0].AddSeries(ctx, "x", now.AddDate(0, 0, -20), sketch.IDs([]cms.ID{cms.IntID(1)})); err != nil {
		t.Fatal(err)
	}
	late := series.Duration{Days: 2}
	if _, err := dbs[1].ChangeSeries(ctx, "x", series.Change{LateLimit: &late, Retentions: map[series.Level]series.Duration{series.Hour: {Days: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[0].AddSeries(ctx, "x", now.AddDate(0, 0, -10), sketch.IDs([]cms.ID{cms.IntID(2)})); sketch.KindOf(err) != sketch.Unprocessable {
		t.Fatalf("an add 10 days late after another node set late_limit P2D: %v, want Unprocessable", err)
	}
	a, err := dbs[0].AddSeries(ctx, "x", now.Add(-36*time.Hour), sketch.IDs([]cms.ID{cms.IntID(3)}))
	if err != nil || len(a.Levels) != 1 || a.Levels[0] != series.Day {
		t.Fatalf("an add 36 hours late with hours kept P1D: %+v, %v; want the day only", a, err)
	}
}

// TestSeriesReadPlan: the statement of a series read scans each run by
// the primary key, in the generic plan a prepared statement comes to
// after a few runs too, which cannot see that a read asks for one or two
// runs of one series: a join over every bucket row otherwise (the rolling
// line of the benchmark took 150 ms instead of 30).
func TestSeriesReadPlan(t *testing.T) {
	dsn := pgstoretest.Schema(t, t.TempDir())
	db, err := postgres.Open(ctx, dsn, postgres.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	var citus bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')`).Scan(&citus); err != nil {
		t.Fatal(err)
	}
	if citus {
		// Citus refuses a forced generic plan of a distributed statement
		// (this one or any other); it routes each execution to the shard
		// with its values, where the plan is a custom one.
		t.Skip("on Citus each execution is routed with its values: there is no generic plan to check")
	}
	for _, stmt := range []string{
		// Rows for the planner only (their checksums are never read).
		`INSERT INTO sketchd_series (name, kind, params, proto, tz, levels, late_limit, created_at, checksum)
			SELECT n, 'hll', '{}', '\x118b7f'::bytea, 'UTC', '[]', 'P7D', now(), '\x'::bytea FROM unnest(ARRAY['a', 'b', 'c']) n`,
		`INSERT INTO sketchd_series_buckets (series, level, start, hll, updated_at, checksum)
			SELECT n, 'day', timestamptz '2024-01-01' + d * interval '1 day', hll_empty(), now(), '\x'::bytea
			FROM unnest(ARRAY['a', 'b', 'c']) n, generate_series(0, 999) d`,
		`ANALYZE sketchd_series_buckets`,
		`SET plan_cache_mode = force_generic_plan`,
		`PREPARE read_runs(text, text[], timestamptz[], timestamptz[], text[], timestamptz[], bigint[]) AS ` + postgres.ReadRunsSQL,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	rows, err := conn.Query(ctx, `EXPLAIN EXECUTE read_runs('b', ARRAY['day'], ARRAY[timestamptz '2024-03-01'], ARRAY[timestamptz '2024-04-01'],
		ARRAY['day'], ARRAY[timestamptz '2024-03-02'], ARRAY[1]::bigint[])`)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if !strings.Contains(plan, "Index Scan using sketchd_series_buckets_pkey") || strings.Contains(plan, "Seq Scan on sketchd_series_buckets") {
		t.Errorf("the generic plan of a series read does not scan runs by the primary key:\n%s", plan)
	}
}
