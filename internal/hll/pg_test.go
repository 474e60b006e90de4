package hll_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/pgtest"
)

// randomParams covers the whole range sketchd accepts.
func randomParams(r *rand.Rand) hll.Params {
	p := hll.Params{
		Log2m:    hll.MinLog2m + r.IntN(hll.MaxLog2m-hll.MinLog2m+1),
		Regwidth: hll.MinRegwidth + r.IntN(hll.MaxRegwidth-hll.MinRegwidth+1),
		Sparse:   r.IntN(2) == 0,
	}
	switch r.IntN(3) {
	case 0:
		p.Expthresh = hll.AutoExpthresh
	case 1:
		p.Expthresh = 0
	default:
		p.Expthresh = 1 << r.IntN(14) // 1..8192
	}
	return p
}

// randomIDs returns n ids, about a third of them text: ints from the whole
// int64 range with its edges, and UTF-8 strings (no NUL, which PostgreSQL
// text cannot hold) including the empty string.
func randomIDs(r *rand.Rand, n int) (ints []int64, texts []string) {
	edges := []int64{0, -1, 1, math.MinInt64, math.MaxInt64}
	ranges := [][2]rune{{0x01, 0x7f}, {0xa0, 0x24f}, {0x391, 0x3c9}, {0x4e00, 0x9fff}, {0x1f300, 0x1f64f}}
	for i := range n {
		switch {
		case i < len(edges) && r.IntN(2) == 0:
			ints = append(ints, edges[i])
		case r.IntN(3) == 0:
			var b strings.Builder
			for range r.IntN(12) {
				rg := ranges[r.IntN(len(ranges))]
				b.WriteRune(rg[0] + rune(r.IntN(int(rg[1]-rg[0]+1))))
			}
			texts = append(texts, b.String())
		default:
			ints = append(ints, int64(r.Uint64()))
		}
	}
	if n > 0 && r.IntN(4) == 0 {
		texts = append(texts, "")
	}
	return ints, texts
}

// logUniform returns a count spread evenly over orders of magnitude, so
// EMPTY, EXPLICIT, SPARSE and FULL all occur.
func logUniform(r *rand.Rand, max int) int {
	if r.IntN(20) == 0 {
		return 0
	}
	return int(math.Exp(r.Float64() * math.Log(float64(max))))
}

func build(t *testing.T, p hll.Params, ints []int64, texts []string) *hll.Sketch {
	t.Helper()
	s, err := hll.New(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range ints {
		s.AddInt64(v)
	}
	for _, v := range texts {
		s.AddString(v)
	}
	return s
}

func hexOf(t *testing.T, s *hll.Sketch) string {
	t.Helper()
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return `\x` + hex.EncodeToString(b)
}

// pgAgg is the SQL that builds a sketch from int and text arrays, an EMPTY
// one when both are empty (hll_add_agg of no rows is NULL).
func pgAgg(intsArg, textsArg int, p hll.Params) string {
	args := fmt.Sprintf("%d, %d, %d, %d", p.Log2m, p.Regwidth, p.Expthresh, boolInt(p.Sparse))
	return fmt.Sprintf(`(SELECT coalesce(hll_add_agg(h, %[3]s), hll_empty(%[3]s)) AS s FROM (
		SELECT hll_hash_bigint(x) AS h FROM unnest($%[1]d::bigint[]) x
		UNION ALL SELECT hll_hash_text(y) FROM unnest($%[2]d::text[]) y) ids)`, intsArg, textsArg, args)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkEstimate compares with hll_cardinality: equal within 1e-9, except
// where PostgreSQL returns NaN. For regwidth >= 6 that is everywhere beyond
// linear counting (its 2^L overflows) and sketchd must give a finite
// positive number; for narrower registers only when they saturate (the raw
// estimate reaches 2^L), where sketchd returns 2^L·ln(m) (Estimate's doc).
func checkEstimate(t *testing.T, where string, s *hll.Sketch, pg float64) {
	t.Helper()
	got := s.Estimate()
	if math.IsNaN(pg) {
		p := s.Params()
		if p.Regwidth >= 6 {
			if math.IsNaN(got) || math.IsInf(got, 0) || got <= 0 {
				t.Errorf("%s: PostgreSQL NaN, Estimate() = %v, want finite and positive", where, got)
			}
			return
		}
		if want := math.Ldexp(1, 1<<p.Regwidth-2+p.Log2m) * math.Log(float64(p.NumRegisters())); got != want {
			t.Errorf("%s: PostgreSQL NaN (saturated), Estimate() = %v, want 2^L·ln(m) = %v", where, got, want)
		}
		return
	}
	if math.Abs(got-pg) > 1e-9*math.Max(math.Abs(pg), 1e-300) {
		t.Errorf("%s: Estimate() = %.17g, hll_cardinality = %.17g", where, got, pg)
	}
}

func TestPostgreSQLInterop(t *testing.T) {
	conn := pgtest.Connect(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(20261122, 3))
	seen := map[string]bool{}
	const trials = 150
	for trial := range trials {
		p := randomParams(r)
		aInts, aTexts := randomIDs(r, logUniform(r, 60000))
		bInts, bTexts := randomIDs(r, logUniform(r, 20000))
		where := fmt.Sprintf("trial %d (%v, %d+%d ids)", trial, p, len(aInts)+len(aTexts), len(bInts)+len(bTexts))
		a, b := build(t, p, aInts, aTexts), build(t, p, bInts, bTexts)
		var pgA, pgB, pgU string
		var cardA, cardU float64
		err := conn.QueryRow(ctx, fmt.Sprintf(`SELECT a.s::text, b.s::text, hll_union(a.s, b.s)::text, hll_cardinality(a.s), hll_cardinality(hll_union(a.s, b.s))
			FROM %s a, %s b`, pgAgg(1, 2, p), pgAgg(3, 4, p)),
			aInts, aTexts, bInts, bTexts).Scan(&pgA, &pgB, &pgU, &cardA, &cardU)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if got := hexOf(t, a); got != pgA {
			t.Fatalf("%s: bytes\n got %s\nwant %s", where, abbrev(got), abbrev(pgA))
		}
		if got := hexOf(t, b); got != pgB {
			t.Fatalf("%s: second sketch bytes\n got %s\nwant %s", where, abbrev(got), abbrev(pgB))
		}
		checkEstimate(t, where, a, cardA)
		u := a.Clone()
		if err := u.Union(b); err != nil {
			t.Fatal(err)
		}
		if got := hexOf(t, u); got != pgU {
			t.Fatalf("%s: union bytes\n got %s\nwant %s", where, abbrev(got), abbrev(pgU))
		}
		checkEstimate(t, where+" union", u, cardU)
		// Bytes PostgreSQL made decode and re-encode unchanged.
		for _, h := range []string{pgA, pgB, pgU} {
			raw, _ := hex.DecodeString(h[2:])
			d, err := hll.Decode(raw)
			if err != nil {
				t.Fatalf("%s: Decode(PostgreSQL's %s): %v", where, abbrev(h), err)
			}
			if got := hexOf(t, d); got != h {
				t.Fatalf("%s: re-encoded PostgreSQL bytes\n got %s\nwant %s", where, abbrev(got), abbrev(h))
			}
		}
		seen[a.Representation().String()] = true
		seen[u.Representation().String()] = true
		seen[fmt.Sprintf("regwidth=%d", p.Regwidth)] = true
		seen[fmt.Sprintf("sparse=%t", p.Sparse)] = true
	}
	for _, want := range []string{"EMPTY", "EXPLICIT", "SPARSE", "FULL", "regwidth=1", "regwidth=4", "regwidth=5", "regwidth=6", "regwidth=7", "sparse=true", "sparse=false"} {
		if !seen[want] {
			t.Errorf("no trial produced %s; widen the random choices", want)
		}
	}
}

// TestPostgreSQLMixedLog2mUnion: PostgreSQL cannot union sketches of
// different log2m; sketchd folds to the smaller one, and the result must
// equal PostgreSQL's union of both sets built at that log2m.
func TestPostgreSQLMixedLog2mUnion(t *testing.T) {
	conn := pgtest.Connect(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 11))
	for trial := range 40 {
		p := randomParams(r)
		q := p
		q.Log2m = hll.MinLog2m + r.IntN(p.Log2m-hll.MinLog2m+1)
		aInts, aTexts := randomIDs(r, logUniform(r, 40000))
		bInts, bTexts := randomIDs(r, logUniform(r, 40000))
		where := fmt.Sprintf("trial %d (%v folded to log2m=%d)", trial, p, q.Log2m)
		u, err := hll.Union(build(t, p, aInts, aTexts), build(t, q, bInts, bTexts))
		if err != nil {
			t.Fatal(err)
		}
		var pgU string
		var card float64
		err = conn.QueryRow(ctx, fmt.Sprintf(`SELECT hll_union(a.s, b.s)::text, hll_cardinality(hll_union(a.s, b.s)) FROM %s a, %s b`,
			pgAgg(1, 2, q), pgAgg(3, 4, q)), aInts, aTexts, bInts, bTexts).Scan(&pgU, &card)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		// The union keeps the first sketch's expthresh; PostgreSQL's has q's, equal here.
		if got := hexOf(t, u); got != pgU {
			t.Fatalf("%s: bytes\n got %s\nwant %s", where, abbrev(got), abbrev(pgU))
		}
		checkEstimate(t, where, u, card)
	}
}

func abbrev(s string) string {
	if len(s) > 120 {
		return s[:120] + fmt.Sprintf("… (%d chars)", len(s))
	}
	return s
}
