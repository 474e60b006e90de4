package main

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/pgtest"
)

// pgIDs are ids sent both to sketchd and to PostgreSQL.
type pgIDs struct {
	ints  []int64
	texts []string
}

func randomPGIDs(r *rand.Rand, n int) pgIDs {
	var ids pgIDs
	edges := []int64{0, -1, 1, math.MinInt64, math.MaxInt64}
	for i := range n {
		switch {
		case i < len(edges):
			ids.ints = append(ids.ints, edges[i])
		case r.IntN(3) == 0:
			var b strings.Builder
			runes := []rune("aZ9é漢字🙂\"\\/\t")
			for range r.IntN(10) {
				b.WriteRune(runes[r.IntN(len(runes))])
			}
			ids.texts = append(ids.texts, b.String())
		default:
			ids.ints = append(ids.ints, int64(r.Uint64()))
		}
	}
	if n > 0 {
		ids.texts = append(ids.texts, "")
	}
	return ids
}

// addAll sends ids to sketch name in a random mix of body formats.
func addAll(t *testing.T, c *client, r *rand.Rand, name string, ids pgIDs) {
	t.Helper()
	path := "/v1/sketches/" + name + "/add"
	ints := ids.ints
	for len(ints) > 0 {
		n := min(len(ints), 1+r.IntN(5000))
		batch := ints[:n]
		ints = ints[n:]
		switch r.IntN(4) {
		case 0:
			c.must(t, http.StatusOK, "POST", path, "application/json", jsonBody(t, map[string]any{"ids": batch}), nil)
		case 1:
			var b []byte
			for _, v := range batch {
				b = binary.BigEndian.AppendUint64(b, uint64(v))
			}
			c.must(t, http.StatusOK, "POST", path, "application/octet-stream", b, nil)
		case 2:
			var b strings.Builder
			for _, v := range batch {
				b.WriteString(strconv.FormatInt(v, 10) + "\n")
			}
			c.must(t, http.StatusOK, "POST", path, "text/plain", []byte(b.String()), nil)
		default:
			var b strings.Builder
			for _, v := range batch {
				b.WriteString(strconv.FormatInt(v, 10) + "\r\n")
			}
			c.must(t, http.StatusOK, "POST", path, "application/x-ndjson", []byte(b.String()), nil)
		}
	}
	if len(ids.texts) > 0 {
		c.must(t, http.StatusOK, "POST", path, "application/json", jsonBody(t, map[string]any{"ids": ids.texts}), nil)
	}
}

// pgAgg is the SQL for the sketch of the ids in parameters $i and $i+1.
func pgAgg(i int, log2m, regwidth int, expthresh int64, sparse bool) string {
	args := fmt.Sprintf("%d, %d, %d, %d", log2m, regwidth, expthresh, map[bool]int{true: 1}[sparse])
	return fmt.Sprintf(`(SELECT coalesce(hll_add_agg(h, %[3]s), hll_empty(%[3]s)) AS s FROM (
		SELECT hll_hash_bigint(x) AS h FROM unnest($%[1]d::bigint[]) x
		UNION ALL SELECT hll_hash_text(y) FROM unnest($%[2]d::text[]) y) ids)`, i, i+1, args)
}

func hexOf(b []byte) string { return `\x` + hex.EncodeToString(b) }

// TestPostgreSQLEndToEnd: bytes downloaded through the API equal
// PostgreSQL's for random parameters and ids sent in every body format;
// estimates equal hll_cardinality; PostgreSQL's bytes uploaded (binary and
// \x text) download unchanged; a mixed-log2m union stored into a sketch
// equals PostgreSQL's union at the smaller log2m.
func TestPostgreSQLEndToEnd(t *testing.T) {
	t.Parallel() // it asserts no timing
	conn := pgtest.Connect(t)
	ctx := context.Background()
	c := startInProcess(t, filepath.Join(t.TempDir(), "sketchd.db"))
	r := rand.New(rand.NewPCG(42, 7))
	for trial := range 25 {
		log2m, regwidth := 4+r.IntN(14), 1+r.IntN(7)
		expthresh := []int64{-1, 0, 1 << r.IntN(14)}[r.IntN(3)]
		sparse := r.IntN(2) == 0
		ids := randomPGIDs(r, int(math.Exp(r.Float64()*math.Log(40000))))
		name := fmt.Sprintf("t%d", trial)
		where := fmt.Sprintf("trial %d (log2m=%d regwidth=%d expthresh=%d sparse=%t, %d ids)", trial, log2m, regwidth, expthresh, sparse, len(ids.ints)+len(ids.texts))
		c.must(t, http.StatusCreated, "PUT", "/v1/sketches/"+name, "application/json",
			jsonBody(t, map[string]any{"log2m": log2m, "regwidth": regwidth, "expthresh": expthresh, "sparse": sparse}), nil)
		addAll(t, c, r, name, ids)

		var pgHex string
		var pgCard float64
		if err := conn.QueryRow(ctx, "SELECT a.s::text, hll_cardinality(a.s) FROM "+pgAgg(1, log2m, regwidth, expthresh, sparse)+" a",
			ids.ints, ids.texts).Scan(&pgHex, &pgCard); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		got := hexOf(c.must(t, http.StatusOK, "GET", "/v1/sketches/"+name+"/raw", "", nil, nil))
		if got != pgHex {
			t.Fatalf("%s: downloaded %.80s…, PostgreSQL %.80s…", where, got, pgHex)
		}
		if text := string(c.must(t, http.StatusOK, "GET", "/v1/sketches/"+name+"/raw?format=hex", "", nil, nil)); text != pgHex {
			t.Fatalf("%s: ?format=hex %.80s…, PostgreSQL %.80s…", where, text, pgHex)
		}
		var desc struct {
			Cardinality float64 `json:"cardinality"`
		}
		c.must(t, http.StatusOK, "GET", "/v1/sketches/"+name, "", nil, &desc)
		if !math.IsNaN(pgCard) && math.Abs(desc.Cardinality-pgCard) > 1e-9*math.Max(pgCard, 1) {
			t.Errorf("%s: cardinality %.17g, hll_cardinality %.17g", where, desc.Cardinality, pgCard)
		}
		if math.IsNaN(pgCard) && (desc.Cardinality <= 0 || math.IsInf(desc.Cardinality, 0)) {
			t.Errorf("%s: PostgreSQL NaN, sketchd %v; want a finite positive estimate", where, desc.Cardinality)
		}

		// PostgreSQL's bytes, uploaded as binary and as text, come back unchanged.
		raw, _ := hex.DecodeString(pgHex[2:])
		c.must(t, http.StatusCreated, "PUT", "/v1/sketches/"+name+"-bin/raw", "application/octet-stream", raw, nil)
		c.must(t, http.StatusCreated, "PUT", "/v1/sketches/"+name+"-txt/raw", "text/plain", []byte(pgHex+"\n"), nil)
		for _, n := range []string{name + "-bin", name + "-txt"} {
			if back := hexOf(c.must(t, http.StatusOK, "GET", "/v1/sketches/"+n+"/raw", "", nil, nil)); back != pgHex {
				t.Fatalf("%s: %s downloaded %.80s…, uploaded %.80s…", where, n, back, pgHex)
			}
		}
	}
}

func TestPostgreSQLMixedLog2mUnionInto(t *testing.T) {
	t.Parallel() // it asserts no timing
	conn := pgtest.Connect(t)
	ctx := context.Background()
	c := startInProcess(t, filepath.Join(t.TempDir(), "sketchd.db"))
	r := rand.New(rand.NewPCG(5, 5))
	for trial := range 10 {
		p := 6 + r.IntN(12)
		q := 4 + r.IntN(p-4)
		a, b := randomPGIDs(r, 1+r.IntN(30000)), randomPGIDs(r, 1+r.IntN(30000))
		an, bn, into := fmt.Sprintf("a%d", trial), fmt.Sprintf("b%d", trial), fmt.Sprintf("u%d", trial)
		c.must(t, http.StatusCreated, "PUT", "/v1/sketches/"+an, "application/json", jsonBody(t, map[string]any{"log2m": p}), nil)
		c.must(t, http.StatusCreated, "PUT", "/v1/sketches/"+bn, "application/json", jsonBody(t, map[string]any{"log2m": q}), nil)
		addAll(t, c, r, an, a)
		addAll(t, c, r, bn, b)
		var union struct {
			Cardinality float64 `json:"cardinality"`
			Log2m       int     `json:"log2m"`
			Into        string  `json:"into"`
		}
		c.must(t, http.StatusOK, "POST", "/v1/union", "application/json", jsonBody(t, map[string]any{"sketches": []string{an, bn}, "into": into}), &union)
		if union.Log2m != q || union.Into != into {
			t.Fatalf("union answered %+v, want log2m %d into %s", union, q, into)
		}
		var pgHex string
		var pgCard float64
		err := conn.QueryRow(ctx, "SELECT hll_union(a.s, b.s)::text, hll_cardinality(hll_union(a.s, b.s)) FROM "+
			pgAgg(1, q, 5, -1, true)+" a, "+pgAgg(3, q, 5, -1, true)+" b", a.ints, a.texts, b.ints, b.texts).Scan(&pgHex, &pgCard)
		if err != nil {
			t.Fatal(err)
		}
		if got := hexOf(c.must(t, http.StatusOK, "GET", "/v1/sketches/"+into+"/raw", "", nil, nil)); got != pgHex {
			t.Fatalf("trial %d (log2m %d ∪ %d): stored union %.80s…, PostgreSQL %.80s…", trial, p, q, got, pgHex)
		}
		if math.Abs(union.Cardinality-pgCard) > 1e-9*pgCard {
			t.Errorf("trial %d: union cardinality %.17g, PostgreSQL %.17g", trial, union.Cardinality, pgCard)
		}
	}
}
