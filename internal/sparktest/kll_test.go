package sparktest

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// kllRanks are the normalized ranks asked of every KLL sketch.
var kllRanks = []float64{0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1}

// kllItems is one item type of sketchd's kll kind, with Spark's names
// for it.
type kllItems struct {
	items string // sketchd's "items"
	fn    string // the suffix of Spark's kll_* functions
	// value is the i-th value of a test's data, as Go and as Spark SQL
	// computes it from range's id.
	value func(i int64) float64
	sql   string
}

var (
	kllDoubles = kllItems{"double", "double", func(i int64) float64 { return float64(i)*1.25 - 100 }, "CAST(id AS DOUBLE) * 1.25D - 100D"}
	kllLongs   = kllItems{"long", "bigint", func(i int64) float64 { return float64(i*7 - 300) }, "id * 7 - 300"}
)

// exactQuantile is the quantile of rank r of sorted values as
// DataSketches answers it (inclusive: the smallest value whose rank, the
// share of values at most it, reaches r).
func exactQuantile(sorted []float64, r float64) float64 {
	i := int(math.Ceil(r*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// valsSorted returns a sorted copy of vals.
func valsSorted(vals []float64) []float64 {
	out := slices.Clone(vals)
	slices.Sort(out)
	return out
}

// rankOf is the share of sorted values at most x, and below x.
func rankOf(sorted []float64, x float64) (incl, excl float64) {
	n := float64(len(sorted))
	lo, _ := slices.BinarySearch(sorted, x)
	hi := lo
	for hi < len(sorted) && sorted[hi] == x {
		hi++
	}
	return float64(hi) / n, float64(lo) / n
}

// TestKLL: kll sketches of doubles and of longs and Spark's kll_*_double
// and kll_*_bigint functions, both ways, in exact mode and after
// compaction. Spark reads sketchd's download to sketchd's n and to the
// same quantiles and ranks, exactly (the same items and weights answer
// the same); sketchd reads Spark's sketch (longs with ?items=long) to
// Spark's answers, exactly. Spark's merge of sketchd's sketch with its
// own and sketchd's union of the pair count every value, and answer
// within the rank error of the truth (exactly, while nothing compacted).
func TestKLL(t *testing.T) {
	s := spark.Get(t)
	d := newSketchd(t)
	for _, c := range []struct {
		it kllItems
		k  int
		n  int64 // sketchd's sketch holds values 0..n-1, Spark's n/2..3n/2-1
	}{
		{kllDoubles, 200, 100},
		{kllDoubles, 200, 5_000},
		{kllDoubles, 64, 3_000},
		{kllLongs, 200, 100},
		{kllLongs, 100, 4_000},
	} {
		name := fmt.Sprintf("%s_k%d_n%d", c.it.items, c.k, c.n)
		t.Run(name, func(t *testing.T) {
			lo, hi := c.n/2, c.n/2+c.n
			var valsA, all []float64
			for i := int64(0); i < c.n; i++ {
				valsA = append(valsA, c.it.value(i))
			}
			all = slices.Clone(valsA)
			for i := lo; i < hi; i++ {
				all = append(all, c.it.value(i))
			}
			slices.Sort(all)
			a := "a_" + name
			d.create(t, a, obj{"type": "kll", "k": c.k, "items": c.it.items})
			d.add(t, a, obj{"values": valsA})
			img := d.raw(t, a, "")
			probe := []float64{c.it.value(0), c.it.value(c.n / 3), c.it.value(c.n/2) + 0.5, c.it.value(c.n - 1), c.it.value(hi)}
			if c.it.items == "long" {
				probe[2] = c.it.value(c.n / 2)
			}
			f := c.it.fn
			ranks := "array(" + csv(kllRanks) + ")"
			probes := "array(" + csv(probe) + ")"
			if f == "bigint" {
				probes = "array(" + strings.ReplaceAll(csv(probe), ",", "L,") + "L)"
			}
			r := s.One(t, fmt.Sprintf(`SELECT
				kll_sketch_get_n_%[1]s(:a),
				kll_sketch_get_quantile_%[1]s(:a, %[2]s),
				kll_sketch_get_rank_%[1]s(:a, %[3]s),
				kll_sketch_get_n_%[1]s(s),
				kll_sketch_get_quantile_%[1]s(s, %[2]s),
				kll_sketch_get_rank_%[1]s(s, %[3]s),
				kll_sketch_get_n_%[1]s(kll_sketch_merge_%[1]s(:a, s)),
				kll_sketch_get_quantile_%[1]s(kll_sketch_merge_%[1]s(:a, s), %[2]s),
				kll_sketch_get_quantile_%[1]s(kll_sketch_merge_%[1]s(sa, s), %[2]s),
				s
			FROM (SELECT kll_sketch_agg_%[1]s(%[4]s, %[5]d) AS sa FROM range(0, %[6]d, 1, 1)),
			     (SELECT kll_sketch_agg_%[1]s(%[4]s, %[5]d) AS s FROM range(%[7]d, %[8]d, 1, 1))`,
				f, ranks, probes, c.it.sql, c.k, c.n, lo, hi),
				map[string]any{"a": Binary(img)})
			sImg := r.Bytes(t, 9)

			// Spark reads sketchd's bytes as sketchd does.
			qs := "?q=" + url.QueryEscape(csv(kllRanks))
			vs := "?value=" + url.QueryEscape(csv(probe))
			ourQ := d.get(t, "/v1/sketches/"+a+"/quantile"+qs).list(t, "quantiles", "value")
			ourR := d.get(t, "/v1/sketches/"+a+"/rank"+vs).list(t, "ranks", "rank")
			if n := r.Int(t, 0); n != c.n {
				t.Errorf("Spark reads sketchd's download as n = %d, want %d", n, c.n)
			}
			if got := r.Floats(t, 1); !slices.Equal(got, ourQ) {
				t.Errorf("Spark's quantiles of sketchd's download %v, sketchd's %v", got, ourQ)
			}
			if got := r.Floats(t, 2); !slices.Equal(got, ourR) {
				t.Errorf("Spark's ranks in sketchd's download %v, sketchd's %v", got, ourR)
			}

			// Nothing in the bytes says doubles or longs: Spark reads a
			// sketch with the other type's functions without a word, and
			// answers nonsense (docs/formats.md warns of it).
			other := map[string]string{"double": "bigint", "bigint": "double"}[f]
			if wrong, err := s.Query(fmt.Sprintf("SELECT kll_sketch_get_quantile_%s(:a, 0.5)", other), map[string]any{"a": Binary(img)}); err != nil || len(wrong) != 1 || len(wrong[0]) != 1 {
				t.Errorf("Spark reading sketchd's %s sketch with kll_sketch_get_quantile_%s: %v, %v; want an answer", c.it.items, other, wrong, err)
			} else if x, err := AsFloat(wrong[0][0]); err != nil || x == exactQuantile(valsSorted(valsA), 0.5) {
				t.Errorf("Spark reading sketchd's %s sketch with kll_sketch_get_quantile_%s answers %v, the right median", c.it.items, other, wrong[0][0])
			}

			// sketchd reads Spark's bytes as Spark does.
			b := "s_" + name
			// Spark's KLL bytes do not say doubles or longs: a new
			// sketch is told which.
			up := d.upload(t, b, "?items="+c.it.items, sImg)
			if up.num(t, "n") != float64(r.Int(t, 3)) || up.str(t, "items") != c.it.items || up.num(t, "k") != float64(c.k) {
				t.Errorf("sketchd reads Spark's sketch as %v, want n %d, k %d, items %s", up, r.Int(t, 3), c.k, c.it.items)
			}
			if got := d.get(t, "/v1/sketches/"+b+"/quantile"+qs).list(t, "quantiles", "value"); !slices.Equal(got, r.Floats(t, 4)) {
				t.Errorf("sketchd's quantiles of Spark's sketch %v, Spark's %v", got, r.Floats(t, 4))
			}
			if got := d.get(t, "/v1/sketches/"+b+"/rank"+vs).list(t, "ranks", "rank"); !slices.Equal(got, r.Floats(t, 5)) {
				t.Errorf("sketchd's ranks in Spark's sketch %v, Spark's %v", got, r.Floats(t, 5))
			}

			// Merges count every value and answer within the rank error.
			// Spark's KLL compacts with random coins, so after compaction
			// each answer is checked against twice the 99% rank error:
			// the test runs many quantiles on fresh coins every time, and
			// must not fail one run in a hundred.
			union := d.json(t, http.MethodPost, "/v1/union", obj{"sketches": []string{a, b}, "into": "u_" + name}, http.StatusOK)
			if r.Int(t, 6) != int64(len(all)) || union.num(t, "n") != float64(len(all)) {
				t.Errorf("merged n: Spark %d, sketchd %v, want %d", r.Int(t, 6), union.num(t, "n"), len(all))
			}
			exact := len(all) <= c.k
			eps := 2 * union.num(t, "rank_error")
			ourU := d.get(t, "/v1/sketches/u_"+name+"/quantile"+qs).list(t, "quantiles", "value")
			for _, m := range []struct {
				who string
				got []float64
			}{
				{"Spark's merge of sketchd's sketch with its own", r.Floats(t, 7)},
				{"Spark's merge of its own sketches", r.Floats(t, 8)},
				{"sketchd's union of its sketch and Spark's", ourU},
			} {
				for i, q := range kllRanks {
					x, want := m.got[i], exactQuantile(all, q)
					if exact {
						if x != want {
							t.Errorf("%s: quantile %v = %v, want %v (nothing compacted)", m.who, q, x, want)
						}
						continue
					}
					incl, excl := rankOf(all, x)
					if q < excl-eps || q > incl+eps {
						t.Errorf("%s: quantile %v = %v, whose true rank is %v..%v, more than %v away", m.who, q, x, excl, incl, eps)
					}
				}
			}
		})
	}
}

// TestKLLLongsBeyondDoubles: longs that no double holds (beyond 2^53)
// travel exactly between sketchd's bytes and Spark's kll_*_bigint: Spark
// reads sketchd's sketch of such longs to the exact order statistics, and
// a Spark sketch of such longs uploaded with ?items=long, added to in
// sketchd (so that sketchd decodes and encodes it again) and downloaded,
// reads in Spark to the exact order statistics of all its values.
// sketchd's own JSON answers (quantiles, min, max) are doubles, so they
// are not compared here beyond 2^53.
func TestKLLLongsBeyondDoubles(t *testing.T) {
	s := spark.Get(t)
	d := newSketchd(t)
	const base = int64(1)<<62 + 1 // odd: no double holds base+2i
	var vals []any
	var want []int64
	for i := int64(0); i < 120; i++ {
		v := base + 2*i
		if i%3 == 0 {
			v = -v
		}
		vals = append(vals, v)
		want = append(want, v)
	}
	slices.Sort(want)
	orderStats := func(sorted []int64) []int64 {
		out := make([]int64, len(kllRanks))
		for i, q := range kllRanks {
			j := int(math.Ceil(q*float64(len(sorted)))) - 1
			out[i] = sorted[max(j, 0)]
		}
		return out
	}
	d.create(t, "big", obj{"type": "kll", "items": "long"})
	d.add(t, "big", obj{"values": vals})
	r := s.One(t, "SELECT kll_sketch_get_n_bigint(:a), kll_sketch_get_quantile_bigint(:a, array("+csv(kllRanks)+"))",
		map[string]any{"a": Binary(d.raw(t, "big", ""))})
	if n, got := r.Int(t, 0), r.Ints(t, 1); n != int64(len(want)) || !slices.Equal(got, orderStats(want)) {
		t.Errorf("Spark reads sketchd's longs as n %d, quantiles %v; want %d, %v", n, got, len(want), orderStats(want))
	}

	sImg := s.One(t, fmt.Sprintf("SELECT kll_sketch_agg_bigint(%d - id * 2) FROM range(0, 150, 1, 1)", base), nil).Bytes(t, 0)
	var sparks []int64
	for i := int64(0); i < 150; i++ {
		sparks = append(sparks, base-2*i)
	}
	d.upload(t, "spark", "?items=long", sImg)
	extra := base + 1000
	d.add(t, "spark", obj{"values": []any{extra}})
	sparks = append(sparks, extra)
	slices.Sort(sparks)
	r = s.One(t, "SELECT kll_sketch_get_n_bigint(:a), kll_sketch_get_quantile_bigint(:a, array("+csv(kllRanks)+"))",
		map[string]any{"a": Binary(d.raw(t, "spark", ""))})
	if n, got := r.Int(t, 0), r.Ints(t, 1); n != int64(len(sparks)) || !slices.Equal(got, orderStats(sparks)) {
		t.Errorf("Spark reads back its longs, added to in sketchd, as n %d, quantiles %v; want %d, %v", n, got, len(sparks), orderStats(sparks))
	}
}
