package storetest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/sketch"
)

// ExpiryStore is the method set of server.ExpiryStore, which a backend
// implements once it expires sketches; the expiry tests skip a backend
// without it.
type ExpiryStore interface {
	SetExpiry(ctx context.Context, name string, x sketch.Expiry) (sketch.Info, error)
	ExpireSketches(ctx context.Context, now time.Time) (int, error)
}

// Clock is a test's clock: it stands still until advanced.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock d forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var expiryTests = []struct {
	name string
	fn   func(t *testing.T, in *Instance, clk *Clock)
}{
	{"ExpiryReads", testExpiryReads},
	{"ExpiryWritesPush", testExpiryWritesPush},
	{"ExpirySet", testExpirySet},
	{"ExpiryPass", testExpiryPass},
	{"ExpiryMetrics", testExpiryMetrics},
}

func expiryOf(in *Instance) ExpiryStore { return in.Store.(ExpiryStore) }

func withExpiry(spec sketch.Spec, x sketch.Expiry) sketch.Spec {
	spec.Expiry = x
	return spec
}

func listNames(tb testing.TB, s Store, prefix string) []string {
	tb.Helper()
	infos, _, err := s.List(ctx, prefix, "", 1000)
	must(tb, err, "List")
	var out []string
	for _, in := range infos {
		out = append(out, in.Name)
	}
	return out
}

// testExpiryReads: a sketch whose time has come is gone for every read
// and write, as if deleted, before any pass removes it; its expiry is
// kept across a restart and a crash; a sketch without one stays.
func testExpiryReads(t *testing.T, in *Instance, clk *Clock) {
	t0 := clk.Now()
	create(t, in, "p/after", withExpiry(hllSpec(11), sketch.Expiry{After: time.Hour}))
	create(t, in, "p/at", withExpiry(hllSpec(11), sketch.Expiry{At: t0.Add(2 * time.Hour)}))
	create(t, in, "p/keep", hllSpec(11))
	for _, n := range []string{"p/after", "p/at", "p/keep"} {
		add(t, in, n, Ints(0, 50))
	}
	info, err := in.Describe(ctx, "p/after")
	must(t, err, "describe")
	if info.Spec.Expiry != (sketch.Expiry{After: time.Hour}) {
		t.Errorf("Describe: expiry %+v, want after 1h", info.Spec.Expiry)
	}
	in.Crash(t)
	info, err = in.Describe(ctx, "p/at")
	must(t, err, "describe after a crash")
	if !info.Spec.Expiry.At.Equal(t0.Add(2 * time.Hour)) {
		t.Errorf("after a crash: expiry %+v, want at %v", info.Spec.Expiry, t0.Add(2*time.Hour))
	}
	if got := listNames(t, in, "p/"); !slices.Equal(got, []string{"p/after", "p/at", "p/keep"}) {
		t.Errorf("List before expiry = %v", got)
	}
	clk.Advance(61 * time.Minute)
	_, err = in.Describe(ctx, "p/after")
	mustKind(t, err, sketch.NotFound, "describe an expired sketch")
	err = in.View(ctx, []string{"p/after"}, func([]sketch.Sketch) error { return nil })
	mustKind(t, err, sketch.NotFound, "view an expired sketch")
	_, err = in.Union(ctx, []string{"p/after", "p/keep"}, "")
	mustKind(t, err, sketch.NotFound, "union with an expired sketch")
	_, err = in.Add(ctx, "p/after", Ints(0, 5), false)
	mustKind(t, err, sketch.NotFound, "add to an expired sketch")
	_, err = in.AddEvents(ctx, []sketch.Event{{ID: cms.IntID(1), Sketches: []string{"p/keep", "p/after"}}}, false)
	mustKind(t, err, sketch.NotFound, "events to an expired sketch")
	_, err = expiryOf(in).SetExpiry(ctx, "p/after", sketch.Expiry{})
	mustKind(t, err, sketch.NotFound, "set the expiry of an expired sketch")
	err = in.Delete(ctx, "p/after")
	mustKind(t, err, sketch.NotFound, "delete an expired sketch")
	if got := listNames(t, in, "p/"); !slices.Equal(got, []string{"p/at", "p/keep"}) {
		t.Errorf("List an hour on = %v, want p/at, p/keep", got)
	}
	in.Reopen(t)
	clk.Advance(time.Hour)
	if got := listNames(t, in, "p/"); !slices.Equal(got, []string{"p/keep"}) {
		t.Errorf("List two hours on, after a restart = %v, want p/keep", got)
	}
	u, n, err := in.UnionPrefix(ctx, "p/", "", 10)
	must(t, err, "union prefix")
	if n != 1 || u.Estimate() != info.Cardinality {
		t.Errorf("UnionPrefix two hours on: %d sketches, estimate %v; want 1, %v", n, u.Estimate(), info.Cardinality)
	}
	in.Settle(t)
	_, err = in.Describe(ctx, "p/at")
	mustKind(t, err, sketch.NotFound, "describe a sketch past its expire_at")
	// The name is free: a create makes a new, empty sketch.
	info, created, err := in.Create(ctx, "p/at", hllSpec(12))
	must(t, err, "create again")
	if !created || info.Cardinality != 0 || !info.Spec.Expiry.IsZero() {
		t.Errorf("create over an expired sketch: created %v, cardinality %v, expiry %+v; want a new empty sketch", created, info.Cardinality, info.Spec.Expiry)
	}
	a, err := in.Add(ctx, "p/after", Ints(0, 3), true)
	must(t, err, "add creating over an expired sketch")
	info, err = in.Describe(ctx, "p/after")
	must(t, err, "describe")
	if a.Accepted != 3 || info.Cardinality != 3 || !info.Spec.Expiry.IsZero() {
		t.Errorf("add?create over an expired sketch: %+v, cardinality %v, expiry %+v; want 3 new ids, no expiry", a, info.Cardinality, info.Spec.Expiry)
	}
}

// testExpiryWritesPush: every write to a sketch that expires after its
// last write moves the deadline, an add that changes nothing too (and
// across a crash); a write to one with an instant does not.
func testExpiryWritesPush(t *testing.T, in *Instance, clk *Clock) {
	t0 := clk.Now()
	bloom, err := sketch.Lookup(sketch.TypeBloom)
	must(t, err, "bloom kind")
	create(t, in, "a", withExpiry(hllSpec(11), sketch.Expiry{After: time.Hour}))
	create(t, in, "b", withExpiry(hllSpec(11), sketch.Expiry{At: t0.Add(90 * time.Minute)}))
	// A kind whose whole state a write reads (not an HLL's delta).
	create(t, in, "bl", withExpiry(sketch.Spec{Params: bloom.Default()}, sketch.Expiry{After: time.Hour}))
	clk.Advance(50 * time.Minute)
	add(t, in, "a", Ints(0, 10))
	add(t, in, "b", Ints(0, 10))
	add(t, in, "bl", Ints(0, 10))
	clk.Advance(50 * time.Minute)
	add(t, in, "a", Ints(0, 10))  // changes no register
	add(t, in, "bl", Ints(0, 10)) // changes nothing
	in.Crash(t)
	clk.Advance(50 * time.Minute) // 150 min: 50 after the last add
	for _, n := range []string{"a", "bl"} {
		info, err := in.Describe(ctx, n)
		must(t, err, "describe "+n+" 50 minutes after an add that changed nothing")
		if want := t0.Add(100 * time.Minute); !info.UpdatedAt.Equal(want) {
			t.Errorf("%s: updated_at %v, want %v", n, info.UpdatedAt, want)
		}
	}
	_, err = in.Describe(ctx, "b")
	mustKind(t, err, sketch.NotFound, "describe b past its instant")
	clk.Advance(11 * time.Minute)
	_, err = in.Describe(ctx, "a")
	mustKind(t, err, sketch.NotFound, "describe a 61 minutes after its last write")
}

// testExpirySet: SetExpiry sets, changes and clears an expiry and counts
// as a write; bad expiries are Invalid and change nothing.
func testExpirySet(t *testing.T, in *Instance, clk *Clock) {
	t0 := clk.Now()
	create(t, in, "s", hllSpec(11))
	add(t, in, "s", Ints(0, 20))
	clk.Advance(3 * time.Hour)
	info, err := expiryOf(in).SetExpiry(ctx, "s", sketch.Expiry{After: time.Hour})
	must(t, err, "set expire after")
	if info.Spec.Expiry.After != time.Hour || info.Cardinality == 0 {
		t.Errorf("SetExpiry = %+v", info)
	}
	// It counts from the change, not from the add three hours before.
	clk.Advance(59 * time.Minute)
	must(t, errOf(in.Describe(ctx, "s")), "describe 59 minutes after setting it")
	for _, bad := range []sketch.Expiry{
		{After: -time.Hour},
		{After: time.Hour, At: t0.Add(10 * time.Hour)},
		{At: t0},
		{After: sketch.MaxExpireAfter + time.Second},
	} {
		_, err := expiryOf(in).SetExpiry(ctx, "s", bad)
		mustKind(t, err, sketch.Invalid, "a bad expiry")
		_, _, err = in.Create(ctx, "bad", withExpiry(hllSpec(11), bad))
		mustKind(t, err, sketch.Invalid, "create with a bad expiry")
	}
	_, err = in.Describe(ctx, "bad")
	mustKind(t, err, sketch.NotFound, "a refused create left nothing")
	info, err = in.Describe(ctx, "s")
	must(t, err, "describe")
	if info.Spec.Expiry.After != time.Hour {
		t.Errorf("refused changes left expiry %+v", info.Spec.Expiry)
	}
	at := clk.Now().Add(24 * time.Hour)
	_, err = expiryOf(in).SetExpiry(ctx, "s", sketch.Expiry{At: at})
	must(t, err, "set expire at")
	clk.Advance(23 * time.Hour)
	info, err = in.Describe(ctx, "s")
	must(t, err, "describe before the instant")
	if !info.Spec.Expiry.At.Equal(at) || info.Spec.Expiry.After != 0 {
		t.Errorf("expiry %+v, want at %v only", info.Spec.Expiry, at)
	}
	_, err = expiryOf(in).SetExpiry(ctx, "s", sketch.Expiry{})
	must(t, err, "clear")
	in.Reopen(t)
	clk.Advance(1000 * time.Hour)
	info, err = in.Describe(ctx, "s")
	must(t, err, "describe long after a cleared expiry")
	if !info.Spec.Expiry.IsZero() {
		t.Errorf("cleared expiry reads %+v", info.Spec.Expiry)
	}
	// A create of an existing sketch sets its expiry as it sets the flag.
	info, created, err := in.Create(ctx, "s", withExpiry(hllSpec(11), sketch.Expiry{After: 2 * time.Hour}))
	must(t, err, "create again with an expiry")
	if created || info.Spec.Expiry.After != 2*time.Hour {
		t.Errorf("create again: created %v, expiry %+v", created, info.Spec.Expiry)
	}
	_, err = expiryOf(in).SetExpiry(ctx, "missing", sketch.Expiry{After: time.Hour})
	mustKind(t, err, sketch.NotFound, "set the expiry of a missing sketch")
}

// testExpiryPass: ExpireSketches removes what has expired at its time
// and nothing else, on both sides of a checkpoint.
func testExpiryPass(t *testing.T, in *Instance, clk *Clock) {
	for i, n := range []string{"x1", "x2", "x3", "x4"} {
		create(t, in, n, withExpiry(hllSpec(11), sketch.Expiry{After: time.Duration(i+1) * time.Hour}))
		add(t, in, n, Ints(0, 10))
	}
	create(t, in, "y", hllSpec(11))
	in.Settle(t)
	n, err := expiryOf(in).ExpireSketches(ctx, clk.Now())
	must(t, err, "expire now")
	if n != 0 {
		t.Errorf("expired %d at once", n)
	}
	n, err = expiryOf(in).ExpireSketches(ctx, clk.Now().Add(150*time.Minute))
	must(t, err, "expire")
	if n != 2 {
		t.Errorf("ExpireSketches 2.5 hours on removed %d, want 2", n)
	}
	// Removed, not just hidden: they stay gone at the present.
	if got := listNames(t, in, ""); !slices.Equal(got, []string{"x3", "x4", "y"}) {
		t.Errorf("List after the pass = %v, want x3 x4 y", got)
	}
	in.Reopen(t)
	if got := listNames(t, in, ""); !slices.Equal(got, []string{"x3", "x4", "y"}) {
		t.Errorf("List after the pass and a restart = %v, want x3 x4 y", got)
	}
}

// metricSource is what /metrics reads of a backend at each scrape
// (metrics.Source and metrics.QuantileSource).
type metricSource interface {
	MetricEstimates(yield func(name string, estimate float64))
	MetricQuantiles(qs []float64, yield func(name string, q, value float64))
}

// scrape returns the names MetricEstimates and MetricQuantiles yield.
func scrape(tb testing.TB, in *Instance) (estimates, quantiles []string) {
	tb.Helper()
	ms, ok := in.Store.(metricSource)
	if !ok {
		tb.Skip("the backend exports no estimates on /metrics")
	}
	ms.MetricEstimates(func(name string, _ float64) { estimates = append(estimates, name) })
	ms.MetricQuantiles([]float64{0.5}, func(name string, _, _ float64) {
		if !slices.Contains(quantiles, name) {
			quantiles = append(quantiles, name)
		}
	})
	slices.Sort(estimates)
	slices.Sort(quantiles)
	return estimates, quantiles
}

// testExpiryMetrics: a sketch created with the metric flag and an expiry
// leaves /metrics (its estimate and its quantiles) at its deadline, as it
// leaves every read, before any pass removes it; after a restart too. A
// write before the deadline of one that expires after its last write
// keeps it there.
func testExpiryMetrics(t *testing.T, in *Instance, clk *Clock) {
	t0 := clk.Now()
	metric := func(spec sketch.Spec, x sketch.Expiry) sketch.Spec {
		spec.Metric, spec.Expiry = true, x
		return spec
	}
	kllSpec := sketch.Spec{Params: sketch.KLLParams{K: 16}}
	create(t, in, "m/after", metric(hllSpec(11), sketch.Expiry{After: time.Hour}))
	create(t, in, "m/at", metric(hllSpec(11), sketch.Expiry{At: t0.Add(2 * time.Hour)}))
	create(t, in, "m/pushed", metric(hllSpec(11), sketch.Expiry{After: time.Hour}))
	create(t, in, "m/keep", metric(hllSpec(11), sketch.Expiry{}))
	create(t, in, "q/after", metric(kllSpec, sketch.Expiry{After: time.Hour}))
	create(t, in, "q/keep", metric(kllSpec, sketch.Expiry{}))
	for _, n := range []string{"m/after", "m/at", "m/pushed", "m/keep", "q/after", "q/keep"} {
		add(t, in, n, Ints(0, 50))
	}
	check := func(when string, wantEst, wantQ []string) {
		t.Helper()
		est, q := scrape(t, in)
		if !slices.Equal(est, wantEst) {
			t.Errorf("%s: estimates of %v, want %v", when, est, wantEst)
		}
		if !slices.Equal(q, wantQ) {
			t.Errorf("%s: quantiles of %v, want %v", when, q, wantQ)
		}
	}
	check("at once", []string{"m/after", "m/at", "m/keep", "m/pushed", "q/after", "q/keep"}, []string{"q/after", "q/keep"})
	clk.Advance(59 * time.Minute)
	check("59 minutes on", []string{"m/after", "m/at", "m/keep", "m/pushed", "q/after", "q/keep"}, []string{"q/after", "q/keep"})
	add(t, in, "m/pushed", Ints(0, 1)) // changes nothing but the deadline
	clk.Advance(time.Minute)
	check("at the deadline of expire_after", []string{"m/at", "m/keep", "m/pushed", "q/keep"}, []string{"q/keep"})
	in.Settle(t)
	in.Reopen(t)
	check("after a restart", []string{"m/at", "m/keep", "m/pushed", "q/keep"}, []string{"q/keep"})
	clk.Advance(time.Hour)
	check("two hours on", []string{"m/keep", "q/keep"}, []string{"q/keep"})
	in.Crash(t)
	check("after a crash", []string{"m/keep", "q/keep"}, []string{"q/keep"})
}

func errOf[T any](_ T, err error) error { return err }
