package bolt

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// TestDirtyIndexModel drives the index with random sets, removals and
// range reads and compares every answer with a sorted map.
func TestDirtyIndexModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var x dirtyIndex
	model := map[string]*entry{}
	key := func() string { return fmt.Sprintf("%c%04d", 'a'+r.IntN(3), r.IntN(3000)) }
	sorted := func() []string {
		keys := make([]string, 0, len(model))
		for k := range model {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return keys
	}
	for step := range 60_000 {
		switch k := key(); {
		case step < 20_000 || r.IntN(3) > 0:
			e := &entry{name: k}
			x.set(k, e)
			model[k] = e
		default:
			x.remove(k)
			delete(model, k)
		}
		if x.len() != len(model) {
			t.Fatalf("step %d: len %d, want %d", step, x.len(), len(model))
		}
		if step%500 != 0 {
			continue
		}
		keys := sorted()
		for _, c := range x.chunks {
			if len(c) == 0 || len(c) > dirtyChunk {
				t.Fatalf("step %d: chunk of %d items", step, len(c))
			}
		}
		from, prefix := key(), ""
		if r.IntN(2) == 0 {
			prefix = from[:1]
			from = from[:1+r.IntN(4)]
		}
		exclusive := r.IntN(2) == 0
		limit := 1 + r.IntN(700)
		var want []string
		for _, k := range keys {
			if (k > from || (!exclusive && k == from)) && strings.HasPrefix(k, prefix) {
				want = append(want, k)
			}
		}
		got, more := x.appendFrom(nil, from, prefix, exclusive, limit)
		var gotKeys []string
		for _, it := range got {
			gotKeys = append(gotKeys, it.key)
			if model[it.key] != it.e {
				t.Fatalf("step %d: %q maps to another entry", step, it.key)
			}
		}
		wantMore := len(want) > limit
		want = want[:min(limit, len(want))]
		if !slices.Equal(gotKeys, want) || more != wantMore {
			t.Fatalf("step %d: appendFrom(%q, %q, %v, %d) = %d keys (more %v), want %d (more %v)", step, from, prefix, exclusive, limit, len(gotKeys), more, len(want), wantMore)
		}
	}
	for k := range model {
		x.remove(k)
	}
	if x.len() != 0 || len(x.chunks) != 0 {
		t.Fatalf("emptied index has %d keys in %d chunks", x.len(), len(x.chunks))
	}
}

// TestListMergesChangedAndStored pages through sketches some of which are
// only in bbolt, some changed or created since the checkpoint and some
// deleted since, with chunk-sized runs of each, and compares every page
// with the expected names.
func TestListMergesChangedAndStored(t *testing.T) {
	s, _ := openStore(t, Options{CheckpointInterval: time.Hour})
	want := map[string]bool{}
	names := func(lo, hi int, f string) []string {
		var out []string
		for i := lo; i < hi; i++ {
			out = append(out, fmt.Sprintf(f, i))
		}
		return out
	}
	create := func(ns []string) {
		t.Helper()
		evs := make([]sketch.Event, 0, len(ns))
		for _, n := range ns {
			evs = append(evs, sketch.Event{ID: cms.IntID(1), Sketches: []string{n}})
			want[n] = true
		}
		for len(evs) > 0 {
			k := min(len(evs), 500)
			if _, err := s.AddEvents(ctx, evs[:k], true); err != nil {
				t.Fatal(err)
			}
			evs = evs[k:]
		}
	}
	create(names(0, 3000, "a%05d"))
	create(names(0, 700, "b%05d"))
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	// Changed since: new names interleaved with stored ones, a run of
	// new ones past a chunk, deletions (some runs of them) and adds to
	// stored ones.
	create(names(0, 3000, "a%05d5"))
	create(names(0, 1200, "c%05d"))
	for i := 0; i < 3000; i++ {
		if i%7 == 0 || (i >= 1000 && i < 1800) {
			n := fmt.Sprintf("a%05d", i)
			if err := s.Delete(ctx, n); err != nil {
				t.Fatal(err)
			}
			delete(want, n)
		}
	}
	for i := 0; i < 700; i += 3 {
		if err := addHashes(s, fmt.Sprintf("b%05d", i), []uint64{uint64(i) + 99}, false); err != nil {
			t.Fatal(err)
		}
	}
	all := make([]string, 0, len(want))
	for n := range want {
		all = append(all, n)
	}
	slices.Sort(all)
	for _, tc := range []struct {
		prefix string
		limit  int
	}{{"", 1}, {"", 7}, {"", 1000}, {"a", 333}, {"a0", 1000}, {"b", 50}, {"c", 1000}, {"a01", 10}, {"d", 5}} {
		var wantAll []string
		for _, n := range all {
			if strings.HasPrefix(n, tc.prefix) {
				wantAll = append(wantAll, n)
			}
		}
		var got []string
		after, pages := "", 0
		for {
			page, more, err := s.List(ctx, tc.prefix, after, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > tc.limit || (more && len(page) < tc.limit) {
				t.Fatalf("prefix %q limit %d: page of %d, more %v", tc.prefix, tc.limit, len(page), more)
			}
			for _, in := range page {
				got = append(got, in.Name)
			}
			if pages++; !more {
				break
			}
			after = page[len(page)-1].Name
		}
		if !slices.Equal(got, wantAll) {
			t.Fatalf("prefix %q limit %d: listed %d names over %d pages, want %d", tc.prefix, tc.limit, len(got), pages, len(wantAll))
		}
	}
}

// TestListsDuringCheckpoint reads the store while a checkpoint has taken
// its copies of the changed entries but not yet written them: sketches
// created, changed and deleted since the last checkpoint, and a series
// whose definition and bucket are new, must list and read as they do
// before and after it. (A listing that looked only at the entries changed
// since the running checkpoint took its copies missed every one of them
// for that moment.)
func TestListsDuringCheckpoint(t *testing.T) {
	now := time.Date(2026, 11, 2, 10, 30, 0, 0, time.UTC)
	var during func()
	s, _ := openStore(t, Options{CheckpointInterval: time.Hour, Now: func() time.Time { return now },
		beforeCommit: func() {
			if during != nil {
				during()
			}
		}})
	for _, n := range []string{"kept", "gone", "older"} {
		if err := addHashes(s, n, []uint64{1, 2}, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"new1", "new2", "older"} {
		if err := addHashes(s, n, []uint64{3}, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	spec := &series.Spec{Params: hllSpec(10).Params, TZ: "UTC", Levels: []series.LevelSpec{{Level: series.Hour, Retention: series.Duration{Days: 2}}}}
	hour := now.Truncate(time.Hour)
	if _, _, err := s.CreateSeries(ctx, "ser", spec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddSeries(ctx, "ser", hour, storetest.Input{Hashed: []uint64{1 << 20}}); err != nil {
		t.Fatal(err)
	}
	look := func(when string) {
		t.Helper()
		page, more, err := s.List(ctx, "", "", 100)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, in := range page {
			names = append(names, in.Name)
		}
		if want := []string{"kept", "new1", "new2", "older"}; !slices.Equal(names, want) || more {
			t.Errorf("%s: List = %q (more %v), want %q", when, names, more, want)
		}
		page, _, err = s.List(ctx, "new", "new1", 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) != 1 || page[0].Name != "new2" {
			t.Errorf("%s: List(prefix new, after new1) = %v, want new2", when, page)
		}
		ser, _, err := s.ListSeries(ctx, "", "", 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(ser) != 1 || ser[0].Name != "ser" {
			t.Errorf("%s: ListSeries = %v, want ser", when, ser)
		}
		info, err := s.DescribeSeries(ctx, "ser")
		if err != nil {
			t.Fatalf("%s: DescribeSeries: %v", when, err)
		}
		if n := len(info.Levels); n != 1 || info.Levels[0].Buckets != 1 {
			t.Errorf("%s: DescribeSeries levels %+v, want one bucket", when, info.Levels)
		}
		if found, _ := viewRun(t, s, "ser", series.Run{Level: series.Hour, First: hour.Add(-24 * time.Hour), Last: hour, Count: 25}); found != 1 {
			t.Errorf("%s: a read of the last day found %d buckets, want 1", when, found)
		}
	}
	look("before the checkpoint")
	ran := false
	during = func() { ran = true; look("during the checkpoint") }
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if !ran {
		t.Fatal("the checkpoint never reached its commit")
	}
	during = nil
	look("after the checkpoint")
}
