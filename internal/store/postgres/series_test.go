package postgres_test

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/postgres"
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
	var out []sketch.Sketch
	err := db.ViewSeries(ctx, name, func(*series.Spec) ([]series.Key, error) { return keys, nil }, func(_ *series.Spec, sks []sketch.Sketch) error {
		for _, sk := range sks {
			if sk != nil {
				sk = sk.Clone()
			}
			out = append(out, sk)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
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
						evs[j] = sketch.Event{ID: id, Sketches: []string{"h"}, Series: []string{"c", "s"}, TS: ts}
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
	ok := sketch.Event{ID: cms.IntID(1), Sketches: []string{"h"}, Series: []string{"s"}, TS: now}
	cases := []struct {
		name string
		ev   sketch.Event
		kind sketch.ErrorKind
	}{
		{"missing sketch", sketch.Event{ID: cms.IntID(2), Sketches: []string{"nope"}, TS: now}, sketch.NotFound},
		{"missing series", sketch.Event{ID: cms.IntID(2), Series: []string{"nope"}, TS: now}, sketch.NotFound},
		{"too late", sketch.Event{ID: cms.IntID(2), Series: []string{"s"}, TS: now.AddDate(0, 0, -9)}, sketch.Invalid},
		{"future", sketch.Event{ID: cms.IntID(2), Series: []string{"s"}, TS: now.Add(time.Hour)}, sketch.Invalid},
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
	err := dbs[0].ViewSeries(ctx, "x", func(*series.Spec) ([]series.Key, error) { return keys, nil }, func(*series.Spec, []sketch.Sketch) error { return nil })
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
	err = dbs[0].ViewSeries(ctx, "x", func(sp *series.Spec) ([]series.Key, error) { got = sp; return []series.Key{day}, nil }, func(_ *series.Spec, sks []sketch.Sketch) error {
		if sks[0] == nil || sks[0].Estimate() != 2 {
			t.Errorf("the new series' day bucket: %v", sks[0])
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
