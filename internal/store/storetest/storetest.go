// Package storetest is the conformance suite of the store contract
// (server.Store, repeated here as Store): every backend runs Run over a Backend that opens it,
// and the server's tests run over every backend through the same
// Backend. The suite uses only the contract and the backend's exported
// test hooks (Close, and Checkpoint where a backend has one); it never
// reaches into a backend's private state.
//
// Adding a backend: implement server.Store, give it a Backend (Open
// returns a store whose data lives at a place the suite names, and its
// Close), and call Run from the backend's tests.
package storetest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/series"
	"github.com/sketchd/sketchd/internal/sketch"
)

// Store is the contract under test: the method set of server.Store,
// whose documentation states it method by method. It is repeated here
// because the server's own tests run over this package; a test of this
// package fails to compile if the two drift apart.
type Store interface {
	Create(ctx context.Context, name string, spec sketch.Spec) (info sketch.Info, created bool, err error)
	Describe(ctx context.Context, name string) (sketch.Info, error)
	List(ctx context.Context, prefix, after string, limit int) ([]sketch.Info, bool, error)
	Delete(ctx context.Context, name string) error
	Add(ctx context.Context, name string, in sketch.Input, create bool) (sketch.Added, error)
	AddEvents(ctx context.Context, events []sketch.Event, create bool) (map[sketch.Type]int, error)
	Put(ctx context.Context, name string, sk sketch.Sketch) (info sketch.Info, created bool, err error)
	Merge(ctx context.Context, name string, sk sketch.Sketch) (sketch.Info, error)
	Transform(ctx context.Context, src, dst string, fn func(sketch.Sketch) (sketch.Sketch, error)) (sketch.Info, error)
	Union(ctx context.Context, names []string, into string) (sketch.Sketch, error)
	UnionPrefix(ctx context.Context, prefix, exclude string, limit int) (sketch.Sketch, int, error)
	EachPrefix(ctx context.Context, prefix, exclude string, limit int, fn func(name string, sk sketch.Sketch) error) (int, error)
	View(ctx context.Context, names []string, fn func([]sketch.Sketch) error) error
	Ready() bool
}

// SeriesStore is the method set of server.SeriesStore, which a backend
// implements once it keeps series; the series tests skip a backend
// without it.
type SeriesStore interface {
	CreateSeries(ctx context.Context, name string, spec *series.Spec) (info series.Info, created bool, err error)
	DescribeSeries(ctx context.Context, name string) (series.Info, error)
	ListSeries(ctx context.Context, prefix, after string, limit int) ([]series.Info, bool, error)
	DeleteSeries(ctx context.Context, name string) error
	AddSeries(ctx context.Context, name string, ts time.Time, in sketch.Input) (series.Added, error)
	ChangeSeries(ctx context.Context, name string, c series.Change) (series.Info, error)
	ViewSeries(ctx context.Context, name string, plan func(*series.Spec) ([]series.Run, error), fn func(*series.Spec, []series.Bucket) error) error
	ImportSeries(ctx context.Context, name string, replace bool, prepare func(*series.Spec) ([]series.Import, error)) ([]series.Write, error)
	ExpireSeries(ctx context.Context, now time.Time) (series.Expired, error)
}

// Backend opens stores of one backend.
type Backend struct {
	// Name names the backend in subtests ("bolt").
	Name string
	// Open opens the store whose data lives at place, a directory made
	// for the test (a backend that keeps data elsewhere derives its own
	// location from it): a new place gives an empty store, the same place
	// again the data a clean Close left. close closes the store; it is
	// called once, and then the data may be checked.
	Open func(tb testing.TB, place string) (s Store, close func() error)
	// WithClock returns the backend with its clock set to now (nil: the
	// backend's clock cannot be set; tests that need it skip).
	WithClock func(now func() time.Time) Backend
}

// Instance is an open store of a Backend, closed when the test ends.
type Instance struct {
	Store
	b     Backend
	place string
	close func() error
}

// Open opens an empty store of b for tb.
func Open(tb testing.TB, b Backend) *Instance {
	tb.Helper()
	in := &Instance{b: b, place: tb.TempDir()}
	in.Store, in.close = b.Open(tb, in.place)
	tb.Cleanup(func() {
		if in.close != nil {
			if err := in.close(); err != nil {
				tb.Errorf("%s: close: %v", b.Name, err)
			}
		}
	})
	return in
}

// Place is where the instance's data lives: the place its backend's Open
// was given.
func (in *Instance) Place() string { return in.place }

// Reopen closes the store as a clean shutdown does and opens its data
// again: what a restart gives.
func (in *Instance) Reopen(tb testing.TB) {
	tb.Helper()
	if err := in.close(); err != nil {
		tb.Fatalf("%s: close: %v", in.b.Name, err)
	}
	in.close = nil
	in.Store, in.close = in.b.Open(tb, in.place)
}

// Crash abandons the store as kill -9 would once its acknowledged writes
// returned (a backend with a Crash hook: the embedded one) and opens its
// data again; a backend without one (its data is elsewhere, committed)
// is reopened.
func (in *Instance) Crash(tb testing.TB) {
	tb.Helper()
	c, ok := in.Store.(interface{ Crash() })
	if !ok {
		in.Reopen(tb)
		return
	}
	c.Crash()
	in.close = nil
	in.Store, in.close = in.b.Open(tb, in.place)
}

// Settle asks a backend with deferred work (the embedded one's
// checkpoint of its log into bbolt) to do it now, so tests cover data on
// both sides of it. Backends without such work ignore it.
func (in *Instance) Settle(tb testing.TB) {
	tb.Helper()
	if c, ok := in.Store.(interface{ Checkpoint(context.Context) error }); ok {
		if err := c.Checkpoint(context.Background()); err != nil {
			tb.Fatalf("%s: checkpoint: %v", in.b.Name, err)
		}
	}
}

// Run runs the conformance suite against b.
func Run(t *testing.T, b Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, in *Instance)
	}{
		{"Create", testCreate},
		{"AddHLL", testAddHLL},
		{"AddCMS", testAddCMS},
		{"AddCreates", testAddCreates},
		{"AddWrongInput", testAddWrongInput},
		{"Events", testEvents},
		{"Put", testPut},
		{"Merge", testMerge},
		{"Transform", testTransform},
		{"Union", testUnion},
		{"UnionPrefix", testUnionPrefix},
		{"UnionPrefixMany", testUnionPrefixMany},
		{"EachPrefix", testEachPrefix},
		{"View", testView},
		{"Delete", testDelete},
		{"List", testList},
		{"Concurrent", testConcurrent},
		{"Reopen", testReopen},
		{"Canceled", testCanceled},
		{"EveryKind", testEveryKind},
		{"RangedCMS", testRangedCMS},
		{"KLL", testKLL},
		{"BloomFresh", testBloomFresh},
		{"BloomFreshConcurrent", testBloomFreshConcurrent},
		{"KeepsUploaded", testKeepsUploaded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, Open(t, b))
		})
	}
	for _, tc := range keyTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := Open(t, b)
			if _, ok := in.Store.(KeyStore); !ok {
				t.Skipf("the %s backend does not keep idempotency keys", b.Name)
			}
			tc.fn(t, in)
		})
	}
	for _, tc := range expiryTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if b.WithClock == nil {
				t.Skipf("the %s backend's clock cannot be set", b.Name)
			}
			clk := NewClock(time.Now().UTC().Truncate(time.Second))
			in := Open(t, b.WithClock(clk.Now))
			if _, ok := in.Store.(ExpiryStore); !ok {
				t.Skipf("the %s backend does not expire sketches yet", b.Name)
			}
			tc.fn(t, in, clk)
		})
	}
	for _, tc := range seriesTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := Open(t, b)
			if _, ok := in.Store.(SeriesStore); !ok {
				t.Skipf("the %s backend does not keep series yet", b.Name)
			}
			tc.fn(t, in)
		})
	}
}

var ctx = context.Background()

// Input is a sketch.Input of ints, texts or counted items, as a parsed
// body would give.
type Input struct {
	IDs    []cms.ID
	Counts []uint64 // nil: each id counted once
	Hashed []uint64 // pre-hashed values (an HLL-only body)
	// Fresh asks which ids were new (add?report=new: sketch.FreshInput).
	Fresh bool
}

// WantsFresh implements sketch.FreshInput.
func (in Input) WantsFresh() bool { return in.Fresh }

// Floats implements sketch.ValueInput: integer ids are values.
func (in Input) Floats() ([]float64, error) {
	if in.Counts != nil || in.Hashed != nil {
		return nil, sketch.Errorf(sketch.Invalid, "counted items and hashes are not values")
	}
	return sketch.IDs(in.IDs).(sketch.ValueInput).Floats()
}

// Longs implements sketch.ValueInput.
func (in Input) Longs() ([]int64, error) {
	if in.Counts != nil || in.Hashed != nil {
		return nil, sketch.Errorf(sketch.Invalid, "counted items and hashes are not values")
	}
	return sketch.IDs(in.IDs).(sketch.ValueInput).Longs()
}

// Hashes implements sketch.Input.
func (in Input) Hashes() ([]uint64, error) {
	if in.Counts != nil {
		return nil, sketch.Errorf(sketch.Invalid, "counted items go into a Count-Min sketch")
	}
	if in.Hashed != nil {
		return in.Hashed, nil
	}
	return sketch.IDs(in.IDs).Hashes()
}

// Items implements sketch.Input.
func (in Input) Items() ([]cms.Item, error) {
	if in.Hashed != nil {
		return nil, sketch.Errorf(sketch.Invalid, "hashes go into an HLL sketch")
	}
	its, _ := sketch.IDs(in.IDs).Items()
	for i := range its {
		if in.Counts != nil {
			its[i].Count = in.Counts[i]
		}
	}
	return its, nil
}

// Type implements sketch.Input.
func (in Input) Type() sketch.Type {
	if in.Fresh {
		return sketch.TypeBloom
	}
	if in.Counts != nil {
		return sketch.TypeCMS
	}
	return sketch.TypeHLL
}

// Ints returns an Input of the int ids lo..hi-1.
func Ints(lo, hi int64) Input {
	in := Input{}
	for v := lo; v < hi; v++ {
		in.IDs = append(in.IDs, cms.IntID(v))
	}
	return in
}

func hllSpec(log2m int) sketch.Spec {
	p := hll.DefaultParams()
	p.Log2m = log2m
	return sketch.Spec{Params: sketch.HLLParams{Params: p}}
}

func cmsSpec(width, depth int) sketch.Spec {
	return sketch.Spec{Params: sketch.CMSParams{Params: cms.Params{Width: width, Depth: depth}}}
}

// hllOf builds locally the sketch the store must hold for ids.
func hllOf(tb testing.TB, log2m int, ids ...cms.ID) []byte {
	tb.Helper()
	p := hll.DefaultParams()
	p.Log2m = log2m
	h, err := hll.New(p)
	if err != nil {
		tb.Fatal(err)
	}
	hs, _ := sketch.IDs(ids).Hashes()
	h.AddHashes(hs, nil)
	b, _ := h.MarshalBinary()
	return b
}

// raw returns name's encoding.
func raw(tb testing.TB, s Store, name string) []byte {
	tb.Helper()
	var b []byte
	err := s.View(ctx, []string{name}, func(sks []sketch.Sketch) error {
		b = sks[0].AppendBinary(nil)
		return nil
	})
	if err != nil {
		tb.Fatalf("View(%q): %v", name, err)
	}
	return b
}

func mustKind(tb testing.TB, err error, want sketch.ErrorKind, what string) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("%s: no error, want %v", what, want)
	}
	if got := sketch.KindOf(err); got != want {
		tb.Fatalf("%s: error %v is %v, want %v", what, err, got, want)
	}
}

func must(tb testing.TB, err error, what string) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
}

func create(tb testing.TB, s Store, name string, spec sketch.Spec) {
	tb.Helper()
	if _, _, err := s.Create(ctx, name, spec); err != nil {
		tb.Fatalf("Create(%q): %v", name, err)
	}
}

func add(tb testing.TB, s Store, name string, in sketch.Input) sketch.Added {
	tb.Helper()
	a, err := s.Add(ctx, name, in, false)
	if err != nil {
		tb.Fatalf("Add(%q): %v", name, err)
	}
	return a
}

func total(tb testing.TB, s Store, name string) int64 {
	tb.Helper()
	info, err := s.Describe(ctx, name)
	must(tb, err, "Describe "+name)
	return info.Total
}

func testCreate(t *testing.T, in *Instance) {
	info, created, err := in.Create(ctx, "a", hllSpec(11))
	must(t, err, "create")
	if !created || info.Name != "a" || info.Spec != hllSpec(11) || info.Representation != "EMPTY" || info.Cardinality != 0 {
		t.Fatalf("Create = %+v, %v; want a new empty log2m=11 hll", info, created)
	}
	if info.CreatedAt.IsZero() || !info.CreatedAt.Equal(info.UpdatedAt) {
		t.Errorf("timestamps %v, %v: want set and equal", info.CreatedAt, info.UpdatedAt)
	}
	// The same parameters again: no change but the metric flag.
	on := hllSpec(11)
	on.Metric = true
	info, created, err = in.Create(ctx, "a", on)
	must(t, err, "create again")
	if created || !info.Spec.Metric {
		t.Errorf("Create again = created %v metric %v; want false, true", created, info.Spec.Metric)
	}
	got, err := in.Describe(ctx, "a")
	must(t, err, "describe")
	if !got.Spec.Metric {
		t.Error("the metric flag did not stick")
	}
	_, _, err = in.Create(ctx, "a", hllSpec(12))
	mustKind(t, err, sketch.Conflict, "other log2m")
	_, _, err = in.Create(ctx, "a", cmsSpec(64, 2))
	mustKind(t, err, sketch.Conflict, "other kind")
	_, _, err = in.Create(ctx, "b", sketch.Spec{})
	mustKind(t, err, sketch.Invalid, "no parameters")
	_, _, err = in.Create(ctx, "b", hllSpec(31))
	mustKind(t, err, sketch.Invalid, "log2m out of range")
	_, err = in.Describe(ctx, "b")
	mustKind(t, err, sketch.NotFound, "a refused create left nothing")
	_, err = in.Describe(ctx, "nope")
	mustKind(t, err, sketch.NotFound, "describe missing")
}

func testAddHLL(t *testing.T, in *Instance) {
	create(t, in, "h", hllSpec(11))
	ids := Ints(-50, 3000)
	ids.IDs = append(ids.IDs, cms.TextID("alice"), cms.TextID(""), cms.TextID("1"))
	a := add(t, in, "h", ids)
	if a.Type != sketch.TypeHLL || a.Accepted != len(ids.IDs) {
		t.Errorf("Add = %+v, want hll and %d", a, len(ids.IDs))
	}
	// Again: idempotent.
	add(t, in, "h", ids)
	if got, want := raw(t, in, "h"), hllOf(t, 11, ids.IDs...); !bytes.Equal(got, want) {
		t.Fatalf("stored sketch differs from the sketch of the ids sent:\n got %x\nwant %x", clip(got), clip(want))
	}
	// Pre-hashed values add as given.
	create(t, in, "p", hllSpec(11))
	hs, _ := ids.Hashes()
	add(t, in, "p", Input{Hashed: hs})
	if !bytes.Equal(raw(t, in, "p"), raw(t, in, "h")) {
		t.Error("pre-hashed values did not give the same sketch as the ids")
	}
	info, err := in.Describe(ctx, "h")
	must(t, err, "describe")
	if info.Cardinality < 2900 || info.Cardinality > 3200 || info.StdError <= 0 {
		t.Errorf("describe after 3053 ids: cardinality %v, std error %v", info.Cardinality, info.StdError)
	}
	if info.UpdatedAt.Before(info.CreatedAt) {
		t.Errorf("updated %v before created %v", info.UpdatedAt, info.CreatedAt)
	}
	_, err = in.Add(ctx, "missing", ids, false)
	mustKind(t, err, sketch.NotFound, "add to a missing sketch")
}

func testAddCMS(t *testing.T, in *Instance) {
	create(t, in, "c", cmsSpec(256, 4))
	a := add(t, in, "c", Input{IDs: []cms.ID{cms.IntID(7), cms.TextID("x")}, Counts: []uint64{5, 2}})
	if a.Type != sketch.TypeCMS || a.Accepted != 2 {
		t.Errorf("Add = %+v, want cms and 2", a)
	}
	add(t, in, "c", Ints(7, 8)) // plain ids count once each
	if got := total(t, in, "c"); got != 8 {
		t.Errorf("total = %d, want 8", got)
	}
	err := in.View(ctx, []string{"c"}, func(sks []sketch.Sketch) error {
		c, ok := sketch.CMSOf(sks[0])
		if !ok {
			return fmt.Errorf("a cms viewed as %s", sks[0].Kind().Type)
		}
		if got := c.Estimate(cms.IntID(7)); got < 6 {
			return fmt.Errorf("estimate of 7 = %d, want at least 6", got)
		}
		return nil
	})
	must(t, err, "view")
	// Counts that would pass 2^63-1 are refused, all of them.
	_, err = in.Add(ctx, "c", Input{IDs: []cms.ID{cms.IntID(1), cms.IntID(2)}, Counts: []uint64{1, 1 << 63}}, false)
	mustKind(t, err, sketch.Conflict, "overflowing counts")
	_, err = in.Add(ctx, "c", Input{IDs: []cms.ID{cms.IntID(1)}, Counts: []uint64{0}}, false)
	mustKind(t, err, sketch.Invalid, "a zero count")
	if got := total(t, in, "c"); got != 8 {
		t.Errorf("total after refused adds = %d, want 8", got)
	}
}

func testAddCreates(t *testing.T, in *Instance) {
	a, err := in.Add(ctx, "h", Ints(0, 10), true)
	must(t, err, "add ids with create")
	if a.Type != sketch.TypeHLL {
		t.Errorf("ids created a %s sketch, want hll", a.Type)
	}
	info, err := in.Describe(ctx, "h")
	must(t, err, "describe")
	if info.Spec != sketch.DefaultHLL() {
		t.Errorf("created with %v, want the defaults", info.Spec.Params)
	}
	a, err = in.Add(ctx, "c", Input{IDs: []cms.ID{cms.IntID(3)}, Counts: []uint64{4}}, true)
	must(t, err, "add items with create")
	if a.Type != sketch.TypeCMS {
		t.Errorf("items created a %s sketch, want cms", a.Type)
	}
	if got := total(t, in, "c"); got != 4 {
		t.Errorf("total = %d, want 4", got)
	}
	// A refused add with create creates nothing.
	_, err = in.Add(ctx, "z", Input{IDs: []cms.ID{cms.IntID(3)}, Counts: []uint64{0}}, true)
	mustKind(t, err, sketch.Invalid, "zero count with create")
	_, err = in.Describe(ctx, "z")
	mustKind(t, err, sketch.NotFound, "refused create")
}

func testAddWrongInput(t *testing.T, in *Instance) {
	create(t, in, "h", hllSpec(11))
	create(t, in, "c", cmsSpec(64, 2))
	_, err := in.Add(ctx, "h", Input{IDs: []cms.ID{cms.IntID(1)}, Counts: []uint64{2}}, false)
	mustKind(t, err, sketch.Invalid, "counted items into an hll")
	_, err = in.Add(ctx, "c", Input{Hashed: []uint64{1}}, false)
	mustKind(t, err, sketch.Invalid, "hashes into a cms")
	if got := total(t, in, "c"); got != 0 {
		t.Errorf("total = %d, want 0", got)
	}
	if got, want := raw(t, in, "h"), hllOf(t, 11); !bytes.Equal(got, want) {
		t.Error("a refused add changed the hll")
	}
}

func testEvents(t *testing.T, in *Instance) {
	create(t, in, "h", hllSpec(11))
	create(t, in, "c", cmsSpec(64, 2))
	ev := func(id int64, names ...string) sketch.Event { return sketch.Event{ID: cms.IntID(id), Sketches: names} }
	counts, err := in.AddEvents(ctx, []sketch.Event{ev(1, "h", "c"), ev(2, "c"), ev(3, "h")}, false)
	must(t, err, "events")
	if counts[sketch.TypeHLL] != 2 || counts[sketch.TypeCMS] != 2 {
		t.Errorf("counts = %v, want hll 2, cms 2", counts)
	}
	if got, want := raw(t, in, "h"), hllOf(t, 11, cms.IntID(1), cms.IntID(3)); !bytes.Equal(got, want) {
		t.Error("events gave another hll than the ids sent")
	}
	before := [][]byte{raw(t, in, "h"), raw(t, in, "c")}
	unchanged := func(what string) {
		t.Helper()
		if !bytes.Equal(raw(t, in, "h"), before[0]) || !bytes.Equal(raw(t, in, "c"), before[1]) {
			t.Errorf("%s changed a sketch", what)
		}
	}
	_, err = in.AddEvents(ctx, []sketch.Event{ev(10, "h", "c"), ev(11, "ghost")}, false)
	mustKind(t, err, sketch.NotFound, "events naming a missing sketch")
	unchanged("a refused events write")
	long := cms.TextID(string(make([]byte, cms.MaxTextLen+1)))
	_, err = in.AddEvents(ctx, []sketch.Event{ev(10, "h", "c"), {ID: long, Sketches: []string{"h", "c"}}}, false)
	mustKind(t, err, sketch.Invalid, "a text id too long for a cms")
	unchanged("a refused events write")
	_, err = in.Describe(ctx, "ghost")
	mustKind(t, err, sketch.NotFound, "ghost")
	counts, err = in.AddEvents(ctx, []sketch.Event{ev(5, "new", "c")}, true)
	must(t, err, "events with create")
	if counts[sketch.TypeHLL] != 1 || counts[sketch.TypeCMS] != 1 {
		t.Errorf("counts = %v, want hll 1, cms 1", counts)
	}
	if got, want := raw(t, in, "new"), hllOf(t, 14, cms.IntID(5)); !bytes.Equal(got, want) {
		t.Error("events did not create a default hll")
	}
}

func testPut(t *testing.T, in *Instance) {
	hb := hllOf(t, 12, Ints(0, 500).IDs...)
	h, err := sketch.DetectUpload(hb)
	must(t, err, "decode")
	info, created, err := in.Put(ctx, "h", h)
	must(t, err, "put")
	if !created || info.Spec != hllSpec(12) {
		t.Errorf("Put = %+v, %v", info.Spec, created)
	}
	if !bytes.Equal(raw(t, in, "h"), hb) {
		t.Error("put bytes differ")
	}
	on := hllSpec(12)
	on.Metric = true
	create(t, in, "h", on)
	first, _ := in.Describe(ctx, "h")
	h2, _ := sketch.DetectUpload(hllOf(t, 10, cms.IntID(1)))
	info, created, err = in.Put(ctx, "h", h2)
	must(t, err, "replace")
	if created || !info.Spec.Metric || !info.CreatedAt.Equal(first.CreatedAt) || info.Spec != (sketch.Spec{Params: h2.Params(), Metric: true}) {
		t.Errorf("replace = %+v, created %v: want the new parameters, the old creation time and metric flag", info, created)
	}
	create(t, in, "c", cmsSpec(64, 2))
	_, _, err = in.Put(ctx, "c", h2)
	mustKind(t, err, sketch.Conflict, "an hll over a cms")
}

func testMerge(t *testing.T, in *Instance) {
	create(t, in, "h", hllSpec(11))
	add(t, in, "h", Ints(0, 100))
	up, _ := sketch.DetectUpload(hllOf(t, 13, Ints(50, 200).IDs...))
	info, err := in.Merge(ctx, "h", up)
	must(t, err, "merge more registers")
	if info.Spec != hllSpec(11) {
		t.Errorf("merge changed the parameters to %v", info.Spec.Params)
	}
	if got, want := raw(t, in, "h"), hllOf(t, 11, Ints(0, 200).IDs...); !bytes.Equal(got, want) {
		t.Error("merge of a finer sketch differs from the sketch of the union of ids")
	}
	small, _ := sketch.DetectUpload(hllOf(t, 10, cms.IntID(1)))
	before := raw(t, in, "h")
	_, err = in.Merge(ctx, "h", small)
	mustKind(t, err, sketch.Conflict, "merge fewer registers")
	if !bytes.Equal(raw(t, in, "h"), before) {
		t.Error("a refused merge changed the sketch")
	}
	c := sketch.NewCMS(mustCMS(t, 64, 2))
	_, err = in.Merge(ctx, "h", c)
	mustKind(t, err, sketch.Conflict, "merge a cms into an hll")
	_, err = in.Merge(ctx, "none", up)
	mustKind(t, err, sketch.NotFound, "merge into a missing sketch")
	create(t, in, "c", cmsSpec(64, 2))
	add(t, in, "c", Ints(0, 3))
	cc := mustCMS(t, 64, 2)
	must(t, cc.AddInt(9, 4), "cms add")
	_, err = in.Merge(ctx, "c", sketch.NewCMS(cc))
	must(t, err, "merge cms")
	if got := total(t, in, "c"); got != 7 {
		t.Errorf("total after merge = %d, want 7", got)
	}
	_, err = in.Merge(ctx, "c", sketch.NewCMS(mustCMS(t, 32, 2)))
	mustKind(t, err, sketch.Conflict, "merge another cms shape")
}

func mustCMS(tb testing.TB, w, d int) *cms.Sketch {
	c, err := cms.New(cms.Params{Width: w, Depth: d})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func testTransform(t *testing.T, in *Instance) {
	create(t, in, "h", hllSpec(12))
	add(t, in, "h", Ints(0, 1000))
	fold := func(sk sketch.Sketch) (sketch.Sketch, error) {
		h, _ := sketch.HLLOf(sk)
		f, err := h.Fold(10, h.Params().Regwidth)
		return sketch.NewHLL(f), err
	}
	info, err := in.Transform(ctx, "h", "f", fold)
	must(t, err, "transform into a new sketch")
	if info.Name != "f" || info.Spec != hllSpec(10) {
		t.Errorf("Transform = %+v", info)
	}
	if got, want := raw(t, in, "f"), hllOf(t, 10, Ints(0, 1000).IDs...); !bytes.Equal(got, want) {
		t.Error("folded sketch differs from the one built at log2m=10")
	}
	_, err = in.Transform(ctx, "h", "h", fold)
	must(t, err, "transform in place")
	if !bytes.Equal(raw(t, in, "h"), raw(t, in, "f")) {
		t.Error("in-place transform differs")
	}
	sentinel := sketch.Errorf(sketch.Invalid, "no")
	_, err = in.Transform(ctx, "h", "g", func(sketch.Sketch) (sketch.Sketch, error) { return nil, sentinel })
	if err != sentinel {
		t.Errorf("fn's error came back as %v", err)
	}
	_, err = in.Describe(ctx, "g")
	mustKind(t, err, sketch.NotFound, "a failed transform created its target")
	_, err = in.Transform(ctx, "none", "g", fold)
	mustKind(t, err, sketch.NotFound, "transform of a missing sketch")
}

func testUnion(t *testing.T, in *Instance) {
	create(t, in, "a", hllSpec(12))
	create(t, in, "b", hllSpec(11))
	add(t, in, "a", Ints(0, 600))
	add(t, in, "b", Ints(400, 1000))
	u, err := in.Union(ctx, []string{"a", "b"}, "")
	must(t, err, "union")
	if got, want := u.AppendBinary(nil), hllOf(t, 11, Ints(0, 1000).IDs...); !bytes.Equal(got, want) {
		t.Error("union of mixed log2m differs from the sketch of all ids at the smaller log2m")
	}
	_, err = in.Union(ctx, []string{"a", "b"}, "ab")
	must(t, err, "union into")
	if !bytes.Equal(raw(t, in, "ab"), u.AppendBinary(nil)) {
		t.Error("stored union differs from the returned one")
	}
	// Into one of its own operands.
	_, err = in.Union(ctx, []string{"a", "b"}, "b")
	must(t, err, "union into an operand")
	if !bytes.Equal(raw(t, in, "b"), u.AppendBinary(nil)) {
		t.Error("union into an operand differs")
	}
	create(t, in, "c", cmsSpec(64, 2))
	create(t, in, "d", cmsSpec(64, 2))
	add(t, in, "c", Ints(0, 5))
	add(t, in, "d", Ints(0, 7))
	cu, err := in.Union(ctx, []string{"c", "d"}, "cd")
	must(t, err, "cms union")
	if c, _ := sketch.CMSOf(cu); c.Total() != 12 || total(t, in, "cd") != 12 {
		t.Errorf("cms union total = %d, stored %d; want 12", c.Total(), total(t, in, "cd"))
	}
	_, err = in.Union(ctx, []string{"a", "c"}, "")
	mustKind(t, err, sketch.Conflict, "union of an hll and a cms")
	_, err = in.Union(ctx, []string{"a", "c"}, "mixed")
	mustKind(t, err, sketch.Conflict, "union into of an hll and a cms")
	_, err = in.Union(ctx, []string{"a", "ghost"}, "")
	mustKind(t, err, sketch.NotFound, "union with a missing sketch")
	_, err = in.Union(ctx, []string{"a"}, "c")
	mustKind(t, err, sketch.Conflict, "an hll union into a cms")
	for _, n := range []string{"mixed", "ghost"} {
		_, err = in.Describe(ctx, n)
		mustKind(t, err, sketch.NotFound, "refused union created "+n)
	}
}

// testUnionPrefix checks a prefix union against the union of the same
// sketches listed by name, for every kind, with exclusions, limits,
// deletes and a reopen.
func testUnionPrefix(t *testing.T, in *Instance) {
	// Every kind, three sketches each, of mixed parameters where the
	// kind's union allows them; one sketch just outside the prefix.
	types := map[sketch.Type]int{}
	for _, k := range sketch.Kinds() {
		types[k.Type]++
	}
	for _, k := range sketch.Kinds() {
		// Kinds of one type (kll of doubles and of longs) are told
		// apart by their tag.
		kname := string(k.Type)
		if types[k.Type] > 1 {
			kname = fmt.Sprintf("%s%d", k.Type, k.Tag)
		}
		p := "u:" + kname + ":"
		var names []string
		for i := range 3 {
			spec := sketch.Spec{Params: k.Default()}
			if k.Type == sketch.TypeHLL {
				spec = hllSpec(11 + i%2)
			}
			n := fmt.Sprintf("%s%d", p, i)
			names = append(names, n)
			create(t, in, n, spec)
			add(t, in, n, Ints(int64(i)*500, int64(i)*500+800))
		}
		create(t, in, "u:"+kname, sketch.Spec{Params: k.Default()})
		add(t, in, "u:"+kname, Ints(100000, 100100))
		if k.Type == sketch.TypeHLL {
			in.Settle(t)
		}
		want, err := in.Union(ctx, names, "")
		must(t, err, "union of the names")
		got, n, err := in.UnionPrefix(ctx, p, "", 100)
		must(t, err, "union of "+p)
		if n != 3 || !bytes.Equal(got.AppendBinary(nil), want.AppendBinary(nil)) {
			t.Errorf("%s: the union of prefix %q (%d sketches) differs from the union of %v", k.Type, p, n, names)
		}
		// The name the union goes into is left out.
		want, err = in.Union(ctx, []string{names[0], names[2]}, "")
		must(t, err, "union of two")
		got, n, err = in.UnionPrefix(ctx, p, names[1], 100)
		must(t, err, "union of "+p+" but one")
		if n != 2 || !bytes.Equal(got.AppendBinary(nil), want.AppendBinary(nil)) {
			t.Errorf("%s: the union of prefix %q except %s (%d sketches) differs from the union of the others", k.Type, p, names[1], n)
		}
		_, _, err = in.UnionPrefix(ctx, p, "", 2)
		mustKind(t, err, sketch.TooLarge, "three sketches over a limit of two")
	}
	// kll sketches of doubles and of longs share a type, not a union.
	_, _, err := in.UnionPrefix(ctx, "u:"+string(sketch.TypeKLL), "", 100)
	mustKind(t, err, sketch.Conflict, "kll of doubles and of longs")
	// A sketch of another kind under the prefix.
	create(t, in, "u:hll:x", cmsSpec(64, 2))
	_, _, err = in.UnionPrefix(ctx, "u:hll:", "", 100)
	mustKind(t, err, sketch.Conflict, "mixed kinds")
	_, _, err = in.UnionPrefix(ctx, "u:hll:", "u:hll:x", 100)
	must(t, err, "mixed kinds, the odd one excluded")
	_, _, err = in.UnionPrefix(ctx, "nothing:", "", 100)
	mustKind(t, err, sketch.NotFound, "a prefix nothing starts with")
	_, _, err = in.UnionPrefix(ctx, "u:hll:x", "u:hll:x", 100)
	mustKind(t, err, sketch.NotFound, "a prefix whose one sketch is excluded")

	// Deleted sketches are out, also after a reopen; the empty prefix
	// is every sketch.
	must(t, in.Delete(ctx, "u:hll:x"), "delete")
	must(t, in.Delete(ctx, "u:hll:0"), "delete")
	in.Reopen(t)
	want, err := in.Union(ctx, []string{"u:hll:1", "u:hll:2"}, "")
	must(t, err, "union")
	got, n, err := in.UnionPrefix(ctx, "u:hll:", "", 100)
	must(t, err, "union after deletes")
	if n != 2 || !bytes.Equal(got.AppendBinary(nil), want.AppendBinary(nil)) {
		t.Errorf("after deletes and a reopen, the prefix union (%d sketches) differs", n)
	}
	_, _, err = in.UnionPrefix(ctx, "", "", 1000)
	mustKind(t, err, sketch.Conflict, "every sketch, of every kind")
}

// testUnionPrefixMany unions more sketches than a backend reads at once,
// some written since the last checkpoint, against the sketch of all ids.
func testUnionPrefixMany(t *testing.T, in *Instance) {
	const n = 300
	for i := range n {
		name := fmt.Sprintf("m:%03d", i)
		create(t, in, name, hllSpec(11))
		add(t, in, name, Ints(int64(i)*10, int64(i)*10+25))
		if i == n/2 {
			in.Settle(t)
		}
	}
	create(t, in, "other", hllSpec(11))
	add(t, in, "other", Ints(-100, -1))
	got, count, err := in.UnionPrefix(ctx, "m:", "", n)
	must(t, err, "union of many")
	if want := hllOf(t, 11, Ints(0, n*10+15).IDs...); count != n || !bytes.Equal(got.AppendBinary(nil), want) {
		t.Errorf("the union of %d sketches (%d counted) differs from the sketch of all their ids", n, count)
	}
	_, _, err = in.UnionPrefix(ctx, "m:", "", n-1)
	mustKind(t, err, sketch.TooLarge, "one sketch over the limit")
}

// testEachPrefix walks more sketches than a backend reads at once, of
// mixed kinds, some written since the last checkpoint: each comes once,
// in name order, with the state View gives it; the excluded name, those
// outside the prefix and deleted ones do not; more than the limit is
// refused before fn sees any; fn's error stops the walk.
func testEachPrefix(t *testing.T, in *Instance) {
	const n = 300
	var names []string
	for i := range n {
		name := fmt.Sprintf("e:%03d", i)
		spec := hllSpec(11)
		if i%7 == 3 {
			spec = cmsSpec(64, 2)
		}
		create(t, in, name, spec)
		add(t, in, name, Ints(int64(i)*10, int64(i)*10+25+int64(i)))
		names = append(names, name)
		if i == n/2 {
			in.Settle(t)
		}
	}
	create(t, in, "e", hllSpec(11))
	create(t, in, "f:0", hllSpec(11))
	must(t, in.Delete(ctx, names[17]), "delete")
	want := slices.Delete(slices.Clone(names), 17, 18)
	want = slices.DeleteFunc(want, func(n string) bool { return n == "e:100" })
	var got []string
	var bs [][]byte
	count, err := in.EachPrefix(ctx, "e:", "e:100", n, func(name string, sk sketch.Sketch) error {
		got = append(got, name)
		bs = append(bs, sk.AppendBinary(nil))
		return nil
	})
	must(t, err, "walk of a prefix")
	if count != len(want) || !slices.Equal(got, want) {
		t.Errorf("EachPrefix(e:) gave %d sketches (%d counted), want %d in name order: %v", len(got), count, len(want), got)
	}
	for i, name := range got {
		must(t, in.View(ctx, []string{name}, func(v []sketch.Sketch) error {
			if !bytes.Equal(bs[i], v[0].AppendBinary(nil)) {
				t.Errorf("EachPrefix gave %s other bytes than View", name)
			}
			return nil
		}), "view")
	}
	called := 0
	_, err = in.EachPrefix(ctx, "e:", "", len(want), func(string, sketch.Sketch) error { called++; return nil })
	mustKind(t, err, sketch.TooLarge, "one sketch over the limit")
	if called != 0 {
		t.Errorf("a walk over its limit gave fn %d sketches before refusing", called)
	}
	sentinel := fmt.Errorf("fn failed")
	called = 0
	_, err = in.EachPrefix(ctx, "e:", "", n, func(string, sketch.Sketch) error { called++; return sentinel })
	if err != sentinel || called != 1 {
		t.Errorf("fn's error came back as %v after %d calls, want it after 1", err, called)
	}
	count, err = in.EachPrefix(ctx, "nothing:", "", n, func(string, sketch.Sketch) error { return nil })
	if err != nil || count != 0 {
		t.Errorf("a walk of a prefix nothing starts with: %d, %v; want 0, nil", count, err)
	}
}

func testView(t *testing.T, in *Instance) {
	create(t, in, "a", hllSpec(11))
	create(t, in, "b", cmsSpec(64, 2))
	var kinds []sketch.Type
	err := in.View(ctx, []string{"b", "a", "b"}, func(sks []sketch.Sketch) error {
		for _, s := range sks {
			kinds = append(kinds, s.Kind().Type)
		}
		return nil
	})
	must(t, err, "view")
	if want := []sketch.Type{sketch.TypeCMS, sketch.TypeHLL, sketch.TypeCMS}; !slices.Equal(kinds, want) {
		t.Errorf("View gave %v, want %v", kinds, want)
	}
	err = in.View(ctx, []string{"a", "ghost"}, func([]sketch.Sketch) error { return nil })
	mustKind(t, err, sketch.NotFound, "view of a missing sketch")
	sentinel := fmt.Errorf("fn failed")
	if err := in.View(ctx, []string{"a"}, func([]sketch.Sketch) error { return sentinel }); err != sentinel {
		t.Errorf("fn's error came back as %v", err)
	}
}

func testDelete(t *testing.T, in *Instance) {
	create(t, in, "a", hllSpec(11))
	add(t, in, "a", Ints(0, 10))
	in.Settle(t)
	must(t, in.Delete(ctx, "a"), "delete")
	_, err := in.Describe(ctx, "a")
	mustKind(t, err, sketch.NotFound, "describe deleted")
	mustKind(t, in.Delete(ctx, "a"), sketch.NotFound, "delete twice")
	// A new sketch of the name starts empty, of any kind.
	create(t, in, "a", cmsSpec(64, 2))
	if got := total(t, in, "a"); got != 0 {
		t.Errorf("recreated total = %d", got)
	}
	in.Reopen(t)
	if got := total(t, in, "a"); got != 0 {
		t.Errorf("recreated total after reopen = %d", got)
	}
}

func testList(t *testing.T, in *Instance) {
	var want []string
	for i := range 25 {
		name := fmt.Sprintf("p%02d", i)
		if i%2 == 0 {
			create(t, in, name, hllSpec(4))
		} else {
			create(t, in, name, cmsSpec(4, 1))
		}
		want = append(want, name)
		if i == 10 {
			in.Settle(t)
		}
	}
	create(t, in, "q", hllSpec(4))
	create(t, in, "o", hllSpec(4))
	must(t, in.Delete(ctx, "p03"), "delete")
	want = slices.DeleteFunc(want, func(s string) bool { return s == "p03" })
	var got []string
	after := ""
	for range 10 {
		page, more, err := in.List(ctx, "p", after, 7)
		must(t, err, "list")
		for _, info := range page {
			got = append(got, info.Name)
		}
		if !more {
			break
		}
		after = page[len(page)-1].Name
	}
	if !slices.Equal(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
	page, more, err := in.List(ctx, "", "", 1000)
	must(t, err, "list all")
	if len(page) != len(want)+2 || more {
		t.Errorf("list all: %d sketches, more %v; want %d", len(page), more, len(want)+2)
	}
	for _, info := range page {
		if info.Spec.Params == nil || info.CreatedAt.IsZero() {
			t.Errorf("listed %+v without its spec or times", info)
		}
	}
}

// testConcurrent has writers add disjoint and overlapping ids to a few
// sketches at once while readers union them: every sketch must end equal
// to the sketch of exactly the ids sent, and every Count-Min total exact.
func testConcurrent(t *testing.T, in *Instance) {
	names := []string{"c0", "c1", "c2"}
	for _, n := range names {
		create(t, in, n, hllSpec(10))
	}
	create(t, in, "m", cmsSpec(128, 3))
	const writers, rounds, per = 8, 20, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds*2+8)
	for w := range writers {
		wg.Go(func() {
			for r := range rounds {
				lo := int64((w*rounds + r) * per)
				n := names[(w+r)%len(names)]
				if _, err := in.Add(ctx, n, Ints(lo, lo+per), false); err != nil {
					errs <- err
				}
				if _, err := in.AddEvents(ctx, []sketch.Event{{ID: cms.IntID(lo), Sketches: []string{"m", n}}}, false); err != nil {
					errs <- err
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range rounds {
				if _, err := in.Union(ctx, names, ""); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Go(func() { in.Settle(t) })
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, n := range names {
		var ids []cms.ID
		for w := range writers {
			for r := range rounds {
				if (w+r)%len(names) == i {
					ids = append(ids, Ints(int64((w*rounds+r)*per), int64((w*rounds+r)*per+per)).IDs...)
				}
			}
		}
		if got, want := raw(t, in, n), hllOf(t, 10, ids...); !bytes.Equal(got, want) {
			t.Errorf("%s differs from the sketch of the %d ids sent to it", n, len(ids))
		}
	}
	if got := total(t, in, "m"); got != writers*rounds {
		t.Errorf("cms total = %d, want %d", got, writers*rounds)
	}
}

func testReopen(t *testing.T, in *Instance) {
	create(t, in, "h", hllSpec(11))
	create(t, in, "c", cmsSpec(64, 2))
	on := hllSpec(12)
	on.Metric = true
	create(t, in, "m", on)
	add(t, in, "h", Ints(0, 300))
	add(t, in, "c", Ints(0, 3))
	in.Settle(t)
	add(t, in, "h", Ints(300, 400))
	add(t, in, "c", Input{IDs: []cms.ID{cms.TextID("t")}, Counts: []uint64{5}})
	_, err := in.Union(ctx, []string{"h"}, "u")
	must(t, err, "union into")
	must(t, in.Delete(ctx, "m"), "delete")
	create(t, in, "m", on)
	wantH := raw(t, in, "h")
	info, _ := in.Describe(ctx, "m")
	in.Reopen(t)
	if !bytes.Equal(raw(t, in, "h"), wantH) || !bytes.Equal(raw(t, in, "u"), wantH) {
		t.Error("an hll changed across reopen")
	}
	if got := total(t, in, "c"); got != 8 {
		t.Errorf("cms total after reopen = %d, want 8", got)
	}
	got, err := in.Describe(ctx, "m")
	must(t, err, "describe m")
	if !got.Spec.Metric || !got.CreatedAt.Equal(info.CreatedAt) {
		t.Errorf("after reopen m = %+v, want %+v", got, info)
	}
	// And once more with nothing in between.
	in.Reopen(t)
	if got := total(t, in, "c"); got != 8 {
		t.Errorf("cms total after a second reopen = %d, want 8", got)
	}
}

func testCanceled(t *testing.T, in *Instance) {
	create(t, in, "h", hllSpec(11))
	c, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := in.Add(c, "h", Ints(0, 10), false); err == nil {
		t.Error("Add with a canceled context succeeded")
	}
	if _, _, err := in.Create(c, "x", hllSpec(11)); err == nil {
		t.Error("Create with a canceled context succeeded")
	}
	if got, want := raw(t, in, "h"), hllOf(t, 11); !bytes.Equal(got, want) {
		t.Error("a canceled add changed the sketch")
	}
	_, err := in.Describe(ctx, "x")
	mustKind(t, err, sketch.NotFound, "a canceled create")
}

func clip(b []byte) []byte { return b[:min(len(b), 48)] }

// testEveryKind runs every registered kind through the store with no
// knowledge of it: create with its defaults, add, union into, merge,
// and a reopen; each must end byte-equal to the same operations done on
// the kind in memory. A new kind passes this with no change to the store.
func testEveryKind(t *testing.T, in *Instance) {
	for _, k := range sketch.Kinds() {
		name := fmt.Sprintf("k-%s-%d", k.Type, k.Tag) // kinds may share a type
		spec := sketch.Spec{Params: k.Default()}
		create(t, in, name, spec)
		create(t, in, name+"-2", spec)
		ids1, ids2 := Ints(0, 3000), Ints(2000, 5000)
		add(t, in, name, ids1)
		add(t, in, name+"-2", ids2)
		want := func(inputs ...Input) []byte {
			t.Helper()
			sk, err := spec.New()
			must(t, err, "new")
			for _, input := range inputs {
				b, err := k.Prepare(input)
				must(t, err, "prepare")
				_, err = sk.Apply(b, nil)
				must(t, err, "apply")
			}
			return sk.AppendBinary(nil)
		}
		if got := raw(t, in, name); !bytes.Equal(got, want(ids1)) {
			t.Errorf("%s: stored bytes differ from the kind's own", k.Type)
		}
		in.Settle(t)
		_, err := in.Union(ctx, []string{name, name + "-2"}, name+"-u")
		must(t, err, "union into")
		other, err := k.Decode(raw(t, in, name+"-2"))
		must(t, err, "decode")
		_, err = in.Merge(ctx, name, other)
		must(t, err, "merge")
		in.Reopen(t)
		for _, n := range []string{name, name + "-u"} {
			info, err := in.Describe(ctx, n)
			must(t, err, "describe")
			if info.Spec.Type() != k.Type || info.SizeBytes <= 0 {
				t.Errorf("%s: describe %+v", n, info)
			}
		}
		if got := raw(t, in, name); !bytes.Equal(got, raw(t, in, name+"-u")) {
			t.Errorf("%s: a merge of the second sketch differs from the union of both", k.Type)
		}
		back, err := k.Decode(raw(t, in, name))
		must(t, err, "decode after reopen")
		if back.Kind() != k {
			t.Errorf("%s decodes as %s", k.Type, back.Kind().Type)
		}
	}
}
