package server

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/pgtest"
	"github.com/sketchd/sketchd/internal/sketch"
)

// rankFixture stores the target "t" and n candidates "c:NNNNN", all FULL
// hll sketches at the default parameters (log2m 14): 200 bases of 20,000
// to 200,000 random hashes, each candidate the union of two of them, the
// target the union of ten and 100,000 hashes of its own. It returns the
// candidates' sketches' bytes by name for a peer that needs them.
func rankFixture(tb testing.TB, e *env, n int) map[string][]byte {
	tb.Helper()
	p := sketch.DefaultHLL().Params.(sketch.HLLParams).Params
	rng := rand.New(rand.NewPCG(9, 9))
	newHLL := func(hashes int) *hll.Sketch {
		h, err := hll.New(p)
		if err != nil {
			tb.Fatal(err)
		}
		for range hashes {
			h.AddHash(rng.Uint64())
		}
		return h
	}
	bases := make([]*hll.Sketch, 200)
	for i := range bases {
		bases[i] = newHLL(20_000 + rng.IntN(180_000))
	}
	target := newHLL(100_000)
	for _, b := range bases[:10] {
		if err := target.Union(b); err != nil {
			tb.Fatal(err)
		}
	}
	ctx := tb.Context()
	if _, _, err := e.s.store.Put(ctx, "t", sketch.NewHLL(target)); err != nil {
		tb.Fatal(err)
	}
	out := make(map[string][]byte, n)
	for i := range n {
		a, b := i%len(bases), (i%len(bases)+1+i/len(bases))%len(bases)
		c := bases[a].Clone()
		if err := c.Union(bases[b]); err != nil {
			tb.Fatal(err)
		}
		if c.Representation() != hll.Full {
			tb.Fatalf("candidate %d is %s, want FULL", i, c.Representation())
		}
		name := fmt.Sprintf("c:%05d", i)
		if _, _, err := e.s.store.Put(ctx, name, sketch.NewHLL(c)); err != nil {
			tb.Fatal(err)
		}
		out[name] = encode(tb, c)
	}
	return out
}

// BenchmarkRank is the founding "Also Follows" case: one target against
// 10,000 FULL log2m-14 hll sketches, ranked in one request, beside its
// peers in the same run: 10,000 separate /v1/intersection requests, and
// (with PostgreSQL) postgresql-hll computing each pair's
// inclusion–exclusion over the same sketches in one statement. It
// reports candidates per second and, for the rank, the allocations and
// bytes per candidate (what a candidate costs while it is compared; a
// rank keeps only the top K). SKETCHD_RANK_BENCH_N=100000 ranks that many
// candidates instead (the fixture then takes minutes and about 1.1 GB of
// store; -timeout 1h).
func BenchmarkRank(b *testing.B) {
	n := benchEnvInt(b, "SKETCHD_RANK_BENCH_N", 10_000)
	var sw *switchedRanker
	e := newEnv(b, withStore(func(s Store) Store { sw = &switchedRanker{Store: s}; return sw }))
	e.validate = false
	raw := rankFixture(b, e, n)
	// One rank first, so that every run below reads a warm cache.
	must(b, e.postJSON(b, "/v1/rank", `{"target":"t","candidates":{"prefix":"c:"},"by":"intersection","top":10}`), http.StatusOK, "warm-up")
	report := func(b *testing.B, start time.Time, m0 *runtime.MemStats) {
		b.ReportMetric(float64(n)*float64(b.N)/time.Since(start).Seconds(), "candidates/s")
		if m0 != nil {
			var m1 runtime.MemStats
			runtime.ReadMemStats(&m1)
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(n*b.N), "allocs/candidate")
			b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(n*b.N), "B/candidate")
		}
	}
	for _, method := range []string{"mle", "inclusion_exclusion"} {
		b.Run("rank/method="+method, func(b *testing.B) {
			b.ReportAllocs()
			body := `{"target":"t","candidates":{"prefix":"c:"},"by":"intersection","top":10,"method":"` + method + `"}`
			var m0 runtime.MemStats
			runtime.ReadMemStats(&m0)
			start := time.Now()
			for b.Loop() {
				r := e.postJSON(b, "/v1/rank", body)
				if r.Status != http.StatusOK {
					b.Fatalf("rank: %v", r)
				}
			}
			report(b, start, &m0)
		})
		if rd, ok := sw.Store.(interface{ RanksOnDatabase() bool }); ok && rd.RanksOnDatabase() && method == "mle" {
			// The same rank read on the node: every candidate's row
			// travels and is decoded there.
			b.Run("rank-on-node/method="+method, func(b *testing.B) {
				sw.onNode.Store(true)
				defer sw.onNode.Store(false)
				body := `{"target":"t","candidates":{"prefix":"c:"},"by":"intersection","top":10,"method":"` + method + `"}`
				start := time.Now()
				for b.Loop() {
					if r := e.postJSON(b, "/v1/rank", body); r.Status != http.StatusOK {
						b.Fatalf("rank: %v", r)
					}
				}
				report(b, start, nil)
			})
		}
		b.Run("pairs/method="+method, func(b *testing.B) {
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				for i := range n {
					r := e.postJSON(b, "/v1/intersection", fmt.Sprintf(`{"sketches":["t","c:%05d"],"method":%q}`, i, method))
					if r.Status != http.StatusOK {
						b.Fatalf("intersection: %v", r)
					}
				}
			}
			report(b, start, nil)
		})
	}
	if pl, ok := sw.Store.(interface{ Pool() *pgxpool.Pool }); ok {
		// postgresql-hll's formula over the store's own table: on Citus
		// a multi-shard statement, each shard computing its rows and
		// returning its top 10.
		b.Run("postgresql_hll/store_table", func(b *testing.B) {
			q := `SELECT name, hll_cardinality($1::bytea::hll) + hll_cardinality(hll) - hll_cardinality(hll_union($1::bytea::hll, hll)) AS x
FROM sketchd_sketches WHERE starts_with(name, 'c:') ORDER BY x DESC LIMIT 10`
			t := e.raw(b, "t")
			start := time.Now()
			for b.Loop() {
				rows, err := pl.Pool().Query(b.Context(), q, t)
				topTen(b, rows, err)
			}
			report(b, start, nil)
		})
	}
	b.Run("postgresql_hll", func(b *testing.B) {
		conn := pgtest.Connect(b)
		ctx := b.Context()
		table := fmt.Sprintf("bench_rank_%d", time.Now().UnixNano())
		if _, err := conn.Exec(ctx, "CREATE TEMP TABLE "+table+" (name text PRIMARY KEY, h hll)"); err != nil {
			b.Fatal(err)
		}
		for name, v := range raw {
			if _, err := conn.Exec(ctx, "INSERT INTO "+table+" VALUES ($1, $2::hll)", name, `\x`+hex.EncodeToString(v)); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := conn.Exec(ctx, "INSERT INTO "+table+" VALUES ('t', $1::hll)", `\x`+hex.EncodeToString(e.raw(b, "t"))); err != nil {
			b.Fatal(err)
		}
		q := `SELECT c.name, hll_cardinality(t.h) + hll_cardinality(c.h) - hll_cardinality(hll_union(t.h, c.h)) AS x
FROM ` + table + ` t, ` + table + ` c WHERE t.name = 't' AND c.name LIKE 'c:%' ORDER BY x DESC LIMIT 10`
		b.ReportAllocs()
		start := time.Now()
		for b.Loop() {
			rows, err := conn.Query(ctx, q)
			topTen(b, rows, err)
		}
		report(b, start, nil)
	})
}

// topTen reads a peer's answer: ten rows, or the benchmark fails.
func topTen(b *testing.B, rows pgx.Rows, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
	k := 0
	for rows.Next() {
		k++
	}
	if rows.Err() != nil || k != 10 {
		b.Fatalf("%d rows, %v", k, rows.Err())
	}
}

// TestRankMemoryBounded: a rank holds the target and its top K, never
// the candidates it has let go: after comparing 4,000 candidates with
// top 10, the live heap it keeps is what it kept after 400 (within 64
// KiB; each candidate kept would hold its entry and verdict text, a few
// hundred bytes, 1 MiB for the 3,600 more), and a candidate costs the
// same allocations whether it is the 400th or the 4,000th.
func TestRankMemoryBounded(t *testing.T) {
	p := hll.Params{Log2m: 11, Regwidth: 5, Expthresh: -1, Sparse: true}
	target := sketch.NewHLL(hllOf(t, p, idRange(0, 20000)...))
	var cands []sketch.Sketch
	for i := range 8 {
		cands = append(cands, sketch.NewHLL(hllOf(t, p, idRange(int64(i*2500), int64(i*2500+9000))...)))
	}
	labels := make([]string, 4000)
	for i := range labels {
		labels[i] = fmt.Sprintf("c:%05d", i)
	}
	plan := rankPlan{by: rankIntersection, top: 10, method: sketch.MethodInclusionExclusion}
	run := func(n int) (retained int64, mallocs uint64) {
		k := &ranker{p: plan, label: "t", target: target, z: 3, keep: plan.top + 1}
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for i := range n {
			if err := k.add(labels[i], cands[i%len(cands)]); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&m1)
		mallocs = m1.Mallocs - m0.Mallocs
		runtime.GC()
		runtime.ReadMemStats(&m1)
		if len(k.h) != plan.top+1 || k.n != n {
			t.Fatalf("the ranker holds %d entries after %d candidates (counted %d), want %d", len(k.h), n, k.n, plan.top+1)
		}
		runtime.KeepAlive(k)
		return int64(m1.HeapAlloc) - int64(m0.HeapAlloc), mallocs
	}
	run(100) // warm up
	small, mSmall := run(400)
	large, mLarge := run(4000)
	if large-small > 64<<10 {
		t.Errorf("the rank kept %d KiB after 4,000 candidates and %d KiB after 400: it holds candidates it let go", large>>10, small>>10)
	}
	perSmall, perLarge := float64(mSmall)/400, float64(mLarge)/4000
	if perLarge > 1.1*perSmall {
		t.Errorf("a candidate cost %.1f allocations among 4,000 and %.1f among 400", perLarge, perSmall)
	}
	t.Logf("retained %d / %d bytes; %.1f / %.1f allocations per candidate", small, large, perSmall, perLarge)
}
