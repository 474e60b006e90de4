package postgres_test

import (
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/pgtest"
	"github.com/sketchd/sketchd/internal/store/postgres"
	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// TestConformance runs the suite on plain PostgreSQL and checks that
// every statement the store sent meanwhile is one docs/scale-out.md
// lists.
func TestConformance(t *testing.T) {
	t.Parallel()
	pgtest.DSN(t)
	conformance(t, pgstoretest.Backend)
}

// TestConformanceCitus runs the suite on a Citus coordinator with
// workers (SKETCHD_CITUS_DSN), where the migrations distribute the
// tables, and checks the statements as TestConformance does: the list in
// docs/scale-out.md is the list of what Citus was seen to run.
func TestConformanceCitus(t *testing.T) {
	t.Parallel()
	pgtest.CitusDSN(t)
	conformance(t, pgstoretest.Citus)
}

func conformance(t *testing.T, backend func(postgres.Options) storetest.Backend) {
	log := &statementLog{}
	// After every (parallel) subtest.
	t.Cleanup(func() { log.checkDocumented(t) })
	b := backend(postgres.Options{Tracer: log})
	storetest.Run(t, b)
	// The statements of /metrics, which the suite does not call.
	t.Run("Metrics", func(t *testing.T) {
		t.Parallel()
		in := storetest.Open(t, b)
		db := in.Store.(*postgres.DB)
		spec := hllSpec(11)
		spec.Metric = true
		if _, _, err := db.Create(ctx, "m", spec); err != nil {
			t.Fatal(err)
		}
		n := 0
		db.SketchCounts(func(kind, rep string, count int) { n += count })
		var names []string
		db.MetricEstimates(func(name string, _ float64) { names = append(names, name) })
		if n != 1 || len(names) != 1 || names[0] != "m" {
			t.Errorf("SketchCounts counted %d sketches, MetricEstimates gave %v; want 1 and [m]", n, names)
		}
	})
	// The statements of the background key sweep, over the bound so that
	// it also drops the oldest keys: three keys of 113 bytes each (as the
	// sweep counts them) against a bound of 250 drop the oldest.
	t.Run("KeySweep", func(t *testing.T) {
		t.Parallel()
		opts := postgres.Options{Tracer: log, KeyBytes: 250}
		in := storetest.Open(t, backend(opts))
		db := in.Store.(*postgres.DB)
		for _, name := range []string{"swept1", "swept2", "swept3"} {
			g := &idem.Guard{ID: idem.ID{Target: name, Key: "k"}, Render: func(idem.Result) ([]byte, error) { return []byte("{}"), nil }}
			if _, _, err := db.Create(idem.With(ctx, g), name, hllSpec(11)); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := db.SweepKeys(ctx, time.Now()); err != nil || n != 1 {
			t.Fatalf("SweepKeys = %d, %v; want the oldest key evicted", n, err)
		}
	})
}

// Both halves of the contract, checked when the tests build: a backend
// that lost a series method would only be skipped by the series tests.
var (
	_ storetest.Store       = (*postgres.DB)(nil)
	_ storetest.SeriesStore = (*postgres.DB)(nil)
	_ storetest.ExpiryStore = (*postgres.DB)(nil)
)
