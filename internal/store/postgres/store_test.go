package postgres_test

import (
	"context"
	"hash/fnv"
	"io/fs"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sketchd/sketchd/internal/bloom"
	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/freq"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/kll"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/postgres"
	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
	"github.com/sketchd/sketchd/internal/store/storetest"
	"github.com/sketchd/sketchd/internal/theta"
	pgmigrations "github.com/sketchd/sketchd/migrations/postgres"
)

var ctx = context.Background()

// open opens n stores (nodes) over one fresh schema.
func open(t *testing.T, n int) []*postgres.DB {
	t.Helper()
	return openWith(t, n, postgres.Options{MaxConns: 3})
}

// openWith opens n stores with opts over one fresh schema.
func openWith(t *testing.T, n int, opts postgres.Options) []*postgres.DB {
	t.Helper()
	dsn := pgstoretest.Schema(t, t.TempDir())
	dbs := make([]*postgres.DB, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range dbs {
		// Nodes start together: the migration lock lets one apply the schema.
		wg.Go(func() { dbs[i], errs[i] = postgres.Open(ctx, dsn, opts) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		t.Cleanup(func() { dbs[i].Close() })
	}
	return dbs
}

func hllSpec(log2m int) sketch.Spec {
	p := hll.DefaultParams()
	p.Log2m = log2m
	return sketch.Spec{Params: sketch.HLLParams{Params: p}}
}

// TestStoredHLLIsPostgresHLL adds random int and text ids through two
// nodes in many concurrent batches, then checks in SQL that the hll column
// is byte for byte hll_add_agg of the same ids and that hll_cardinality on
// it is what describe says.
func TestStoredHLLIsPostgresHLL(t *testing.T) {
	dbs := open(t, 2)
	pool := dbs[0].Pool()
	for _, log2m := range []int{11, 14} {
		name := "h" + strconv.Itoa(log2m)
		if _, _, err := dbs[0].Create(ctx, name, hllSpec(log2m)); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(log2m), 1))
		var ints []int64
		var texts []string
		var batches []storetest.Input
		for range 40 {
			var in storetest.Input
			for range 1 + rng.IntN(400) {
				if rng.IntN(5) == 0 {
					s := "u" + strconv.Itoa(rng.IntN(100000))
					texts = append(texts, s)
					in.IDs = append(in.IDs, cms.TextID(s))
				} else {
					v := rng.Int64() >> rng.IntN(50)
					ints = append(ints, v)
					in.IDs = append(in.IDs, cms.IntID(v))
				}
			}
			batches = append(batches, in)
		}
		var wg sync.WaitGroup
		for i, in := range batches {
			wg.Go(func() {
				if _, err := dbs[i%2].Add(ctx, name, in, false); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		info, err := dbs[1].Describe(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		p := info.Spec.Params.(sketch.HLLParams)
		sparse := 0
		if p.Sparse {
			sparse = 1
		}
		var equal bool
		var card float64
		err = pool.QueryRow(ctx, `
			WITH want AS (
				SELECT hll_union_agg(h) AS h FROM (
					SELECT hll_add_agg(hll_hash_bigint(x), $3, $4, $5, $6) AS h FROM unnest($1::bigint[]) x
					UNION ALL
					SELECT hll_add_agg(hll_hash_text(x), $3, $4, $5, $6) FROM unnest($2::text[]) x) parts)
			SELECT hll_send(s.hll) = hll_send(want.h), hll_cardinality(s.hll)
			FROM sketchd_sketches s, want WHERE s.name = $7`,
			ints, texts, p.Log2m, p.Regwidth, p.Expthresh, sparse, name).Scan(&equal, &card)
		if err != nil {
			t.Fatal(err)
		}
		if !equal {
			t.Errorf("%s: the stored hll differs from hll_add_agg of the %d ids sent", name, len(ints)+len(texts))
		}
		if d := card - info.Cardinality; d > 1e-6*card || d < -1e-6*card {
			t.Errorf("%s: hll_cardinality = %v, describe = %v", name, card, info.Cardinality)
		}
		if info.Representation != "FULL" && log2m == 11 {
			t.Errorf("%s: %d ids left it %s; the test means to cover FULL", name, len(ints), info.Representation)
		}
	}
}

// TestNodesSeeEachOther: a write acknowledged by one node is what the
// next read on another node sees, for every kind of write.
func TestNodesSeeEachOther(t *testing.T) {
	dbs := open(t, 2)
	a, b := dbs[0], dbs[1]
	if _, err := a.Add(ctx, "h", storetest.Ints(0, 100), true); err != nil {
		t.Fatal(err)
	}
	// b learns h's kind and parameters...
	if _, err := b.Add(ctx, "h", storetest.Ints(100, 200), false); err != nil {
		t.Fatal(err)
	}
	// ...then a replaces h with a Count-Min: b's next add must go to the
	// Count-Min, as a plain id counted once.
	c, _ := cms.New(cms.Params{Width: 64, Depth: 2})
	if err := a.Delete(ctx, "h"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Put(ctx, "h", sketch.NewCMS(c)); err != nil {
		t.Fatal(err)
	}
	added, err := b.Add(ctx, "h", storetest.Ints(0, 3), false)
	if err != nil {
		t.Fatal(err)
	}
	if added.Type != sketch.TypeCMS {
		t.Errorf("b added to a %s, want the cms a put", added.Type)
	}
	info, err := a.Describe(ctx, "h")
	if err != nil || info.Total != 3 {
		t.Fatalf("a sees total %d (%v), want 3", info.Total, err)
	}
	// Parameters changed by a put on one node are honoured by the other's
	// delta.
	if _, err := b.Add(ctx, "g", storetest.Ints(0, 10), true); err != nil {
		t.Fatal(err)
	}
	h12, _ := hll.New(hllSpec(12).Params.(sketch.HLLParams).Params)
	if _, _, err := a.Put(ctx, "g", sketch.NewHLL(h12)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Add(ctx, "g", storetest.Ints(0, 500), false); err != nil {
		t.Fatal(err)
	}
	var want []byte
	{
		w, _ := hll.New(hllSpec(12).Params.(sketch.HLLParams).Params)
		hs, _ := storetest.Ints(0, 500).Hashes()
		w.AddHashes(hs, nil)
		want, _ = w.MarshalBinary()
	}
	err = a.View(ctx, []string{"g"}, func(sks []sketch.Sketch) error {
		if got := sks[0].AppendBinary(nil); string(got) != string(want) {
			t.Errorf("g after a put at log2m=12 on a and an add on b differs from the sketch of the ids added")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNodesConcurrent has two nodes add to the same HLLs and Count-Mins
// at once (events across several sketches, so transactions lock rows on
// both nodes): nothing deadlocks, nothing is lost.
func TestNodesConcurrent(t *testing.T) {
	dbs := open(t, 3)
	names := []string{"a", "b", "c", "d"}
	for _, n := range names {
		if _, _, err := dbs[0].Create(ctx, n, hllSpec(10)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := dbs[0].Create(ctx, "m", sketch.Spec{Params: sketch.CMSParams{Params: cms.Params{Width: 128, Depth: 3}}}); err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 9, 30
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			db := dbs[w%len(dbs)]
			for r := range rounds {
				id := int64(w*rounds + r)
				// Names in both orders, so two nodes' transactions ask for
				// the same rows in opposite orders.
				evNames := []string{names[(w+r)%4], names[(w+r+1)%4], "m"}
				if w%2 == 1 {
					evNames = []string{"m", names[(w+r+1)%4], names[(w+r)%4]}
				}
				if _, err := db.AddEvents(ctx, []sketch.Event{{ID: cms.IntID(id), Sketches: evNames}}, false); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	info, err := dbs[1].Describe(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	if info.Total != workers*rounds {
		t.Errorf("cms total = %d, want %d", info.Total, workers*rounds)
	}
	for i, n := range names {
		w := hll.DefaultParams()
		w.Log2m = 10
		want, _ := hll.New(w)
		for wk := range workers {
			for r := range rounds {
				if (wk+r)%4 == i || (wk+r+1)%4 == i {
					want.AddHashes([]uint64{hll.HashInt64(int64(wk*rounds + r))}, nil)
				}
			}
		}
		wb, _ := want.MarshalBinary()
		err := dbs[2].View(ctx, []string{n}, func(sks []sketch.Sketch) error {
			if string(sks[0].AppendBinary(nil)) != string(wb) {
				t.Errorf("%s differs from the sketch of the ids sent to it", n)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestMigrationsOnce: three nodes starting together applied the schema
// once, and it has the columns SQL readers are promised.
func TestMigrationsOnce(t *testing.T) {
	dbs := open(t, 3)
	var n int
	if err := dbs[0].Pool().QueryRow(ctx, "SELECT count(*) FROM sketchd_schema_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	steps, err := fs.Glob(pgmigrations.FS, "*.sql")
	if err != nil || len(steps) < 2 {
		t.Fatalf("embedded steps %v, %v", steps, err)
	}
	if n != len(steps) {
		t.Errorf("sketchd_schema_migrations has %d rows, want %d (each step applied once)", n, len(steps))
	}
	if _, err := dbs[1].Add(ctx, "x", storetest.Ints(0, 1000), true); err != nil {
		t.Fatal(err)
	}
	var name, params string
	var card float64
	err = dbs[2].Pool().QueryRow(ctx, "SELECT name, hll_cardinality(hll), params::text FROM sketchd_sketches").Scan(&name, &card, &params)
	if err != nil {
		t.Fatal(err)
	}
	if name != "x" || card < 950 || card > 1050 || params != `{"log2m": 14, "sparse": true, "regwidth": 5, "expthresh": -1}` {
		t.Errorf("SQL reads %q, %v, %s", name, card, params)
	}
	// Every kind's params read as docs/postgres.md shows them, with the
	// names a create body uses.
	for name, spec := range map[string]sketch.Spec{
		"t": {Params: sketch.ThetaParams{Params: theta.Params{LgK: 10}}},
		"f": {Params: sketch.FreqParams{Params: freq.Params{LgK: 11}}},
		"c": {Params: sketch.CMSParams{Params: cms.Params{Width: 100, Depth: 3}}},
		"r": {Params: sketch.CMSParams{Params: cms.Params{Width: 100, Depth: 3, DomainBits: 16}}},
		"b": {Params: sketch.BloomParams{Params: bloom.Params{Bits: 1024, Hashes: 3}}},
		"q": {Params: sketch.KLLParams{K: 100, Items: kll.Longs}},
		"s": {Params: sketch.BloomParams{Params: bloom.Params{Bits: 1024, Hashes: 3, ExpectedItems: 50, FPP: 0.05}}},
	} {
		if _, _, err := dbs[0].Create(ctx, name, spec); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{
		"t": `theta {"lg_k": 10}`,
		"f": `freq {"lg_k": 11}`,
		"c": `cms {"topk": 0, "depth": 3, "width": 100, "conservative": false}`,
		"r": `cms {"topk": 0, "depth": 3, "width": 100, "domain_bits": 16, "conservative": false}`,
		"b": `bloom {"bits": 1024, "hashes": 3}`,
		"q": `kll {"k": 100, "items": "long"}`,
		"s": `bloom {"fpp": 0.05, "bits": 1024, "hashes": 3, "expected_items": 50}`,
	} {
		var kind string
		if err := dbs[1].Pool().QueryRow(ctx, "SELECT kind, params::text FROM sketchd_sketches WHERE name = $1", name).Scan(&kind, &params); err != nil {
			t.Fatal(err)
		}
		if got := kind + " " + params; got != want {
			t.Errorf("SQL reads %s for %s, want %s", got, name, want)
		}
	}
}

// TestNamedReadBudget: a read of several named sketches that would hold
// more than CacheBytes at once is refused (TooLarge, naming
// -cache-bytes) as the rows arrive; within the bound it is answered.
func TestNamedReadBudget(t *testing.T) {
	t.Parallel()
	db := openWith(t, 1, postgres.Options{CacheBytes: 7 << 20})[0]
	spec := sketch.Spec{Params: sketch.BloomParams{Params: bloom.Params{Bits: 1 << 24, Hashes: 3}}} // 2 MiB
	var names []string
	for i := range 6 {
		name := "b:" + strconv.Itoa(i)
		if _, _, err := db.Create(ctx, name, spec); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	if _, err := db.Union(ctx, names[:3], ""); err != nil {
		t.Fatalf("a union of 3 filters (6 MiB) within 7 MiB: %v", err)
	}
	_, err := db.Union(ctx, names, "")
	if sketch.KindOf(err) != sketch.TooLarge || !strings.Contains(err.Error(), "-cache-bytes") {
		t.Errorf("a union of 6 filters (12 MiB) within 7 MiB: %v, want TooLarge naming -cache-bytes", err)
	}
}

// TestWriteReadBudget: a write that would read several sketches whole
// whose sizes add up to more than CacheBytes (a union stored with into,
// an events write to several filters) is refused before any row is read
// and changes nothing, on the node that decoded them (which counts their
// memory) and on one that never saw them (which asks the database); within
// the bound it commits.
func TestWriteReadBudget(t *testing.T) {
	t.Parallel()
	dbs := openWith(t, 2, postgres.Options{CacheBytes: 7 << 20})
	spec := sketch.Spec{Params: sketch.BloomParams{Params: bloom.Params{Bits: 1 << 24, Hashes: 3}}} // 2 MiB
	var names []string
	for i := range 6 {
		name := "b:" + strconv.Itoa(i)
		if _, _, err := dbs[0].Create(ctx, name, spec); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	before := map[string]uint64{}
	for _, n := range names {
		before[n] = stateSum(t, dbs[0], n)
	}
	for i, db := range dbs {
		into := "b:all" + strconv.Itoa(i)
		_, err := db.Union(ctx, names, into)
		if sketch.KindOf(err) != sketch.TooLarge || !strings.Contains(err.Error(), "-cache-bytes") {
			t.Errorf("node %d: a union of 6 filters (12 MiB) stored within 7 MiB: %v, want TooLarge naming -cache-bytes", i, err)
		}
		if _, err := db.Describe(ctx, into); sketch.KindOf(err) != sketch.NotFound {
			t.Errorf("node %d: the refused union stored something: %v", i, err)
		}
		_, err = db.AddEvents(ctx, []sketch.Event{{ID: cms.IntID(9), Sketches: names}}, false)
		if sketch.KindOf(err) != sketch.TooLarge {
			t.Errorf("node %d: an event for 6 filters (12 MiB) within 7 MiB: %v, want TooLarge", i, err)
		}
		for _, n := range names {
			if got := stateSum(t, db, n); got != before[n] {
				t.Errorf("node %d: the refused writes changed %s", i, n)
			}
		}
		if _, err := db.Union(ctx, names[:3], "b:three"+strconv.Itoa(i)); err != nil {
			t.Errorf("node %d: a union of 3 filters (6 MiB) stored within 7 MiB: %v", i, err)
		}
	}
}

// stateSum is a digest of name's stored bytes, read through db.
func stateSum(t *testing.T, db *postgres.DB, name string) uint64 {
	t.Helper()
	var sum uint64
	err := db.View(ctx, []string{name}, func(sks []sketch.Sketch) error {
		h := fnv.New64a()
		h.Write(sks[0].AppendBinary(nil))
		sum = h.Sum64()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestMetricEstimatesFollowWrites: a node's /metrics estimates follow
// every change another node makes to a metric sketch (adds, a put, a
// delete and a new sketch under the same name, of another kind), though
// a scrape decodes only the sketches that changed since the last one:
// each HLL estimate is postgresql-hll's hll_cardinality of the stored
// value, each Count-Min total the number of ids added.
func TestMetricEstimatesFollowWrites(t *testing.T) {
	dbs := open(t, 2)
	a, b := dbs[0], dbs[1]
	scrape := func() map[string]float64 {
		got := map[string]float64{}
		a.MetricEstimates(func(name string, v float64) { got[name] = v })
		return got
	}
	cardinality := func(name string) float64 {
		var v float64
		if err := a.Pool().QueryRow(ctx, `SELECT hll_cardinality(hll) FROM sketchd_sketches WHERE name = $1`, name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	check := func(step string, want map[string]float64) {
		t.Helper()
		// Twice: the second scrape answers from what the first decoded.
		for range 2 {
			if got := scrape(); !maps.Equal(got, want) {
				t.Fatalf("%s: MetricEstimates = %v, want %v", step, got, want)
			}
		}
	}
	metric := func(spec sketch.Spec) sketch.Spec { spec.Metric = true; return spec }
	for name, spec := range map[string]sketch.Spec{"m.hll": metric(hllSpec(11)), "m.cms": metric(cmsSpec()), "plain": hllSpec(11)} {
		if _, _, err := a.Create(ctx, name, spec); err != nil {
			t.Fatal(err)
		}
	}
	check("created", map[string]float64{"m.hll": 0, "m.cms": 0})
	if _, err := b.Add(ctx, "m.hll", storetest.Ints(0, 1000), false); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Add(ctx, "m.cms", storetest.Ints(0, 7), false); err != nil {
		t.Fatal(err)
	}
	check("added on the other node", map[string]float64{"m.hll": cardinality("m.hll"), "m.cms": 7})
	if _, err := b.Add(ctx, "m.hll", storetest.Ints(1000, 3000), false); err != nil {
		t.Fatal(err)
	}
	check("added again", map[string]float64{"m.hll": cardinality("m.hll"), "m.cms": 7})
	empty, err := hllSpec(11).New()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Put(ctx, "m.hll", empty); err != nil {
		t.Fatal(err)
	}
	check("replaced by an empty HLL", map[string]float64{"m.hll": 0, "m.cms": 7})
	if err := b.Delete(ctx, "m.cms"); err != nil {
		t.Fatal(err)
	}
	check("deleted", map[string]float64{"m.hll": 0})
	if _, _, err := b.Create(ctx, "m.cms", metric(hllSpec(11))); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Add(ctx, "m.cms", storetest.Ints(0, 5), false); err != nil {
		t.Fatal(err)
	}
	check("created again as an HLL", map[string]float64{"m.hll": 0, "m.cms": cardinality("m.cms")})
}
