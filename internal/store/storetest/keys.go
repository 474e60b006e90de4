package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

// KeyStore is server.KeyStore: a backend that keeps idempotency keys
// with the writes they guard.
type KeyStore interface {
	Remembered(ctx context.Context, id idem.ID) (idem.Record, bool, error)
}

var keyTests = []struct {
	name string
	fn   func(t *testing.T, in *Instance)
}{
	{"KeysOnce", testKeysOnce},
	{"KeysEveryWrite", testKeysEveryWrite},
	{"KeysFailedWrite", testKeysFailedWrite},
	{"KeysScoped", testKeysScoped},
	{"KeysDurable", testKeysDurable},
	{"KeysConcurrent", testKeysConcurrent},
}

func keysOf(in *Instance) KeyStore { return in.Store.(KeyStore) }

// render is a guard's renderer for the tests: the answer names the
// fields of the result a write filled, so a test sees what the store
// handed it.
func render(res idem.Result) ([]byte, error) {
	var parts []string
	if res.Info.Name != "" {
		parts = append(parts, fmt.Sprintf("info=%s", res.Info.Name))
	}
	if res.Created {
		parts = append(parts, "created")
	}
	if res.Added.Type != "" {
		parts = append(parts, fmt.Sprintf("added=%s:%d", res.Added.Type, res.Added.Accepted))
	}
	if res.Counts != nil {
		var cs []string
		for typ, n := range res.Counts {
			cs = append(cs, fmt.Sprintf("%s:%d", typ, n))
		}
		sort.Strings(cs)
		parts = append(parts, "counts="+strings.Join(cs, ","))
	}
	if res.Sketch != nil {
		parts = append(parts, "sketch="+string(res.Sketch.Kind().Type))
	}
	if res.Series.Name != "" {
		parts = append(parts, "series="+res.Series.Name)
	}
	for _, l := range res.SeriesAdded.Levels {
		parts = append(parts, "level="+l.String())
	}
	if res.Writes != nil {
		parts = append(parts, fmt.Sprintf("writes=%d", len(res.Writes)))
	}
	return []byte(strings.Join(parts, " ")), nil
}

// guarded returns ctx carrying a guard for key (scope "s", target
// target) with a fingerprint derived from fp, and the guard.
func guarded(target, key, fp string) (context.Context, *idem.Guard) {
	g := &idem.Guard{ID: idem.ID{Scope: "s", Target: target, Key: key}, Render: render}
	copy(g.Fingerprint[:], fp)
	return idem.With(ctx, g), g
}

// remembered returns the record kept for g's ID, failing if there is none.
func remembered(tb testing.TB, in *Instance, g *idem.Guard) idem.Record {
	tb.Helper()
	rec, ok, err := keysOf(in).Remembered(ctx, g.ID)
	must(tb, err, "Remembered")
	if !ok {
		tb.Fatalf("no record kept for %+v", g.ID)
	}
	if rec.Fingerprint != g.Fingerprint || !bytes.Equal(rec.Answer, g.Answer()) || rec.Created.IsZero() {
		tb.Fatalf("record for %+v = %x %q %v; want %x %q and a time", g.ID, rec.Fingerprint[:4], rec.Answer, rec.Created, g.Fingerprint[:4], g.Answer())
	}
	return rec
}

func notRemembered(tb testing.TB, in *Instance, id idem.ID) {
	tb.Helper()
	rec, ok, err := keysOf(in).Remembered(ctx, id)
	must(tb, err, "Remembered")
	if ok {
		tb.Fatalf("a record is kept for %+v: %q", id, rec.Answer)
	}
}

func mustTaken(tb testing.TB, err error, what string) {
	tb.Helper()
	if !errors.Is(err, idem.ErrTaken) {
		tb.Fatalf("%s: %v, want idem.ErrTaken", what, err)
	}
}

// testKeysOnce: a Count-Min add under a key applies once; the same key
// again changes nothing and says so; the record holds the answer.
func testKeysOnce(t *testing.T, in *Instance) {
	create(t, in, "c", cmsSpec(64, 2))
	items := Input{IDs: Ints(0, 10).IDs, Counts: []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}
	gctx, g := guarded("c", "k1", "request one")
	a, err := in.Add(gctx, "c", items, false)
	must(t, err, "guarded add")
	if a.Accepted != 10 || total(t, in, "c") != 55 {
		t.Fatalf("guarded add = %+v, total %d; want 10 accepted, 55", a, total(t, in, "c"))
	}
	if got := string(g.Answer()); got != "added=cms:10" {
		t.Errorf("sealed answer %q, want added=cms:10", got)
	}
	remembered(t, in, g)
	gctx2, g2 := guarded("c", "k1", "request one")
	_, err = in.Add(gctx2, "c", items, false)
	mustTaken(t, err, "the same key again")
	if total(t, in, "c") != 55 {
		t.Fatalf("total %d after a repeated key, want 55", total(t, in, "c"))
	}
	if g2.Answer() != nil {
		t.Errorf("a refused write sealed %q", g2.Answer())
	}
	// Another request under the same key is refused the same way (the
	// server tells replays from reuse by the fingerprint).
	gctx3, _ := guarded("c", "k1", "another request")
	_, err = in.Add(gctx3, "c", items, false)
	mustTaken(t, err, "the same key, another request")
	// Unguarded and other keys still apply.
	add(t, in, "c", items)
	gctx4, _ := guarded("c", "k2", "request one")
	_, err = in.Add(gctx4, "c", items, false)
	must(t, err, "another key")
	if total(t, in, "c") != 165 {
		t.Fatalf("total %d, want 165", total(t, in, "c"))
	}
}

// testKeysEveryWrite runs every write of the contract under a key: each
// seals the result it returns, keeps the record, and refuses the key
// again without changing anything.
func testKeysEveryWrite(t *testing.T, in *Instance) {
	create(t, in, "src", hllSpec(12))
	add(t, in, "src", Ints(0, 100))
	create(t, in, "cm", cmsSpec(64, 2))
	hb := hllOf(t, 12, Ints(0, 50).IDs...)
	up, err := sketch.DetectUpload(hb)
	must(t, err, "upload")
	type write struct {
		name   string
		target string
		run    func(ctx context.Context) error
		answer string
	}
	writes := []write{
		{"Create", "new", func(ctx context.Context) error { _, _, err := in.Create(ctx, "new", hllSpec(11)); return err }, "info=new created"},
		{"Create again", "new", func(ctx context.Context) error { _, _, err := in.Create(ctx, "new", hllSpec(11)); return err }, "info=new"},
		{"Add", "src", func(ctx context.Context) error { _, err := in.Add(ctx, "src", Ints(100, 110), false); return err }, "added=hll:10"},
		{"Add create", "fresh", func(ctx context.Context) error { _, err := in.Add(ctx, "fresh", Ints(0, 3), true); return err }, "added=hll:3"},
		{"AddEvents", "", func(ctx context.Context) error {
			_, err := in.AddEvents(ctx, []sketch.Event{{ID: cms.IntID(1), Sketches: []string{"src", "cm"}}, {ID: cms.IntID(2), Sketches: []string{"cm"}}}, false)
			return err
		}, "counts=cms:2,hll:1"},
		{"Put", "put", func(ctx context.Context) error { _, _, err := in.Put(ctx, "put", up.Clone()); return err }, "info=put created"},
		{"Merge", "src", func(ctx context.Context) error { _, err := in.Merge(ctx, "src", up.Clone()); return err }, "info=src"},
		{"Transform", "src", func(ctx context.Context) error {
			_, err := in.Transform(ctx, "src", "copy", func(sk sketch.Sketch) (sketch.Sketch, error) { return sk.Clone(), nil })
			return err
		}, "info=copy"},
		{"Union into", "", func(ctx context.Context) error { _, err := in.Union(ctx, []string{"src", "put"}, "u"); return err }, "sketch=hll"},
		{"Delete", "copy", func(ctx context.Context) error { return in.Delete(ctx, "copy") }, ""},
	}
	if ss, ok := in.Store.(SeriesStore); ok {
		spec := seriesSpec(t, hllParams11())
		ts := time.Now().Add(-time.Hour)
		writes = append(writes,
			write{"CreateSeries", "s", func(ctx context.Context) error { _, _, err := ss.CreateSeries(ctx, "s", spec); return err }, "created series=s"},
			write{"AddSeries", "s", func(ctx context.Context) error { _, err := ss.AddSeries(ctx, "s", ts, Ints(0, 7)); return err }, "added=hll:7 level=hour level=day level=month"},
			write{"CreateSeries again", "s", func(ctx context.Context) error { _, _, err := ss.CreateSeries(ctx, "s", spec); return err }, "series=s"},
			write{"ChangeSeries", "s", func(ctx context.Context) error {
				late := series.Duration{Days: 30}
				_, err := ss.ChangeSeries(ctx, "s", series.Change{LateLimit: &late, Retentions: map[series.Level]series.Duration{series.Hour: {Days: 20}}})
				return err
			}, "series=s"},
			write{"AddSeries past the hours", "s", func(ctx context.Context) error {
				_, err := ss.AddSeries(ctx, "s", time.Now().AddDate(0, 0, -25), Ints(0, 7))
				return err
			}, "added=hll:7 level=day level=month"},
			write{"ImportSeries", "s", func(ctx context.Context) error {
				day := series.Day.Start(time.Now().AddDate(0, 0, -30), spec.Location())
				_, err := ss.ImportSeries(ctx, "s", false, importOf(t, []series.Key{{Level: series.Day, Start: day}}, [][]cms.ID{Ints(500, 600).IDs}))
				return err
			}, "writes=2"},
			write{"DeleteSeries", "s", func(ctx context.Context) error { return ss.DeleteSeries(ctx, "s") }, ""},
		)
	}
	for i, w := range writes {
		gctx, g := guarded(w.target, fmt.Sprintf("key-%d", i), w.name)
		if err := w.run(gctx); err != nil {
			t.Fatalf("%s under a key: %v", w.name, err)
		}
		if got := string(g.Answer()); got != w.answer {
			t.Errorf("%s sealed %q, want %q", w.name, got, w.answer)
		}
		remembered(t, in, g)
		before := snapshotAll(t, in)
		gctx2, _ := guarded(w.target, fmt.Sprintf("key-%d", i), w.name)
		mustTaken(t, w.run(gctx2), w.name+" with its key again")
		if after := snapshotAll(t, in); after != before {
			t.Errorf("%s with its key again changed the store:\n%s\nwas\n%s", w.name, after, before)
		}
	}
}

// snapshotAll describes every sketch and series, for comparisons.
func snapshotAll(tb testing.TB, in *Instance) string {
	tb.Helper()
	var b strings.Builder
	infos, _, err := in.List(ctx, "", "", 1000)
	must(tb, err, "List")
	for _, info := range infos {
		fmt.Fprintf(&b, "%s %x\n", info.Name, raw(tb, in, info.Name))
	}
	if ss, ok := in.Store.(SeriesStore); ok {
		list, _, err := ss.ListSeries(ctx, "", "", 1000)
		must(tb, err, "ListSeries")
		for _, si := range list {
			fmt.Fprintf(&b, "series %s:", si.Name)
			for _, l := range si.Levels {
				fmt.Fprintf(&b, " %s=%d/%d", l.Level, l.Buckets, l.Bytes)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// testKeysFailedWrite: a write that fails keeps no key, so the retry, once
// it can succeed, applies.
func testKeysFailedWrite(t *testing.T, in *Instance) {
	gctx, g := guarded("c", "k", "add")
	items := Input{IDs: Ints(0, 3).IDs, Counts: []uint64{1, 1, 1}}
	_, err := in.Add(gctx, "c", items, false)
	mustKind(t, err, sketch.NotFound, "a guarded add to a missing sketch")
	notRemembered(t, in, g.ID)
	create(t, in, "c", cmsSpec(64, 2))
	gctx, g = guarded("c", "k", "add")
	_, err = in.Add(gctx, "c", items, false)
	must(t, err, "the retry")
	remembered(t, in, g)
	if total(t, in, "c") != 3 {
		t.Fatalf("total %d, want 3", total(t, in, "c"))
	}
	// A conflict (another kind) keeps none either.
	gctx, g = guarded("c", "k2", "put")
	_, _, err = in.Put(gctx, "c", mustUpload(t, hllOf(t, 11, cms.IntID(1))))
	mustKind(t, err, sketch.Conflict, "a guarded put of another kind")
	notRemembered(t, in, g.ID)
	if _, ok := in.Store.(SeriesStore); ok {
		gctx, g = guarded("nos", "k3", "series add")
		_, err = seriesOf(in).AddSeries(gctx, "nos", time.Now(), Ints(0, 1))
		mustKind(t, err, sketch.NotFound, "a guarded add to a missing series")
		notRemembered(t, in, g.ID)
	}
}

func mustUpload(tb testing.TB, b []byte) sketch.Sketch {
	tb.Helper()
	sk, err := sketch.DetectUpload(b)
	must(tb, err, "upload")
	return sk
}

// testKeysScoped: the same key under another scope or target is another
// key.
func testKeysScoped(t *testing.T, in *Instance) {
	create(t, in, "a", cmsSpec(64, 2))
	create(t, in, "b", cmsSpec(64, 2))
	one := Input{IDs: Ints(0, 1).IDs, Counts: []uint64{1}}
	run := func(scope, target, name string) error {
		g := &idem.Guard{ID: idem.ID{Scope: scope, Target: target, Key: "same"}, Render: render}
		_, err := in.Add(idem.With(ctx, g), name, one, false)
		return err
	}
	must(t, run("tenant-1", "a", "a"), "tenant 1")
	must(t, run("tenant-2", "a", "a"), "tenant 2, same key")
	must(t, run("", "a", "a"), "the open scope, same key")
	must(t, run("tenant-1", "b", "b"), "tenant 1, same key, other target")
	mustTaken(t, run("tenant-2", "a", "a"), "tenant 2 again")
	if total(t, in, "a") != 3 || total(t, in, "b") != 1 {
		t.Fatalf("totals a=%d b=%d, want 3 and 1", total(t, in, "a"), total(t, in, "b"))
	}
}

// testKeysDurable: keys survive a clean restart, a checkpoint and a
// crash, and still refuse their writes.
func testKeysDurable(t *testing.T, in *Instance) {
	create(t, in, "c", cmsSpec(64, 2))
	one := Input{IDs: Ints(0, 1).IDs, Counts: []uint64{1}}
	var gs []*idem.Guard
	step := func(what string) {
		t.Helper()
		gctx, g := guarded("c", fmt.Sprintf("k%d", len(gs)), what)
		_, err := in.Add(gctx, "c", one, false)
		must(t, err, what)
		gs = append(gs, g)
	}
	check := func(what string) {
		t.Helper()
		for _, g := range gs {
			remembered(t, in, g)
			gctx, _ := guarded(g.Target, g.Key, "again")
			_, err := in.Add(gctx, "c", one, false)
			mustTaken(t, err, what+": "+g.Key+" again")
		}
		if got := total(t, in, "c"); got != int64(len(gs)) {
			t.Fatalf("%s: total %d, want %d", what, got, len(gs))
		}
	}
	step("before a checkpoint")
	in.Settle(t)
	step("after a checkpoint")
	in.Reopen(t)
	check("after a clean restart")
	step("before a crash")
	in.Crash(t)
	check("after a crash")
}

// testKeysConcurrent: writers racing with one key apply it once.
func testKeysConcurrent(t *testing.T, in *Instance) {
	create(t, in, "c", cmsSpec(64, 2))
	one := Input{IDs: Ints(0, 1).IDs, Counts: []uint64{1}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	applied := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gctx, _ := guarded("c", "race", "same")
			_, err := in.Add(gctx, "c", one, false)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				applied++
			case errors.Is(err, idem.ErrTaken), errors.Is(err, idem.ErrInFlight):
			default:
				t.Errorf("racing add: %v", err)
			}
		}()
	}
	wg.Wait()
	if applied != 1 || total(t, in, "c") != 1 {
		t.Fatalf("%d racing adds applied, total %d; want 1 and 1", applied, total(t, in, "c"))
	}
}
