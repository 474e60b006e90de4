package sparktest

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// freqItems is a freq add body: ids lo..hi-1, id v counted v%mod+1 times.
func freqItems(lo, hi, mod int64) obj {
	items := make([]obj, 0, hi-lo)
	for v := lo; v < hi; v++ {
		items = append(items, obj{"id": v, "count": v%mod + 1})
	}
	return obj{"items": items}
}

// freqSQL is Spark's integer tuple sketch of the same: ids lo..hi-1, id v
// with the summary v%mod+1, summed.
func freqSQL(lgK int, lo, hi, mod int64) string {
	return fmt.Sprintf("(SELECT tuple_sketch_agg_integer(id, CAST(id %% %d + 1 AS INT), %d, 'sum') FROM range(%d, %d, 1, 1))", mod, lgK, lo, hi)
}

// sameFloat: Spark answers doubles with Java's arithmetic, sketchd with
// Go's; the same sketch gives the same double, but a sum over entries
// may differ in its last bits.
func sameFloat(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

// TestFreq: freq sketches and Spark's integer tuple sketches
// (tuple_*_integer, summaries summed), both ways, in exact and estimation
// mode. Spark reads sketchd's download (Java's IntegerSummary layout, the
// default) to sketchd's estimate and impressions (Spark's summary sum
// over the retained entries, divided by theta); Spark's union of
// sketchd's sketch of ids 0..n with its own of n/2..3n/2 (counts summed)
// equals its union of its own sketches of the same ids, estimate and
// summary; sketchd reads Spark's sketch to Spark's estimate and
// impressions, and its union of the pair equals Spark's.
func TestFreq(t *testing.T) {
	s := spark.Get(t)
	d := newSketchd(t)
	for _, c := range []struct {
		lgK int
		n   int64
	}{
		{10, 20_000},
		{12, 2_000},
		{12, 40_000},
		{14, 60_000},
	} {
		name := fmt.Sprintf("lgk%d_n%d", c.lgK, c.n)
		t.Run(name, func(t *testing.T) {
			a := "a_" + name
			d.create(t, a, obj{"type": "freq", "lg_k": c.lgK})
			d.add(t, a, freqItems(0, c.n, 5))
			desc := d.describe(t, a)
			img := d.raw(t, a, "")
			lo, hi := c.n/2, c.n/2+c.n
			r := s.One(t, fmt.Sprintf(`SELECT
				tuple_sketch_estimate_integer(:a),
				tuple_sketch_summary_integer(:a) / tuple_sketch_theta_integer(:a),
				tuple_sketch_estimate_integer(sa),
				tuple_sketch_estimate_integer(s),
				tuple_sketch_summary_integer(s) / tuple_sketch_theta_integer(s),
				tuple_sketch_estimate_integer(tuple_union_integer(:a, s, %[1]d, 'sum')),
				tuple_sketch_summary_integer(tuple_union_integer(:a, s, %[1]d, 'sum')),
				tuple_sketch_estimate_integer(tuple_union_integer(sa, s, %[1]d, 'sum')),
				tuple_sketch_summary_integer(tuple_union_integer(sa, s, %[1]d, 'sum')),
				s
			FROM (SELECT %[2]s AS sa), (SELECT %[3]s AS s)`,
				c.lgK, freqSQL(c.lgK, 0, c.n, 5), freqSQL(c.lgK, lo, hi, 3)),
				map[string]any{"a": Binary(img)})
			estA, impA, estSA, estS, impS := r.Float(t, 0), r.Float(t, 1), r.Float(t, 2), r.Float(t, 3), r.Float(t, 4)
			cross, crossSum, own, ownSum, sImg := r.Float(t, 5), r.Int(t, 6), r.Float(t, 7), r.Int(t, 8), r.Bytes(t, 9)
			// sketchd answers impressions rounded to a whole number.
			if !sameFloat(estA, desc.num(t, "cardinality")) || float64(rounded(impA)) != desc.num(t, "impressions") {
				t.Errorf("Spark reads sketchd's download as %v users, %v impressions; sketchd says %v, %v", estA, impA, desc.num(t, "cardinality"), desc.num(t, "impressions"))
			}
			// Unlike theta_sketch_agg, Spark's tuple aggregate keeps the
			// update sketch's entries, as sketchd does.
			if !sameFloat(estSA, estA) {
				t.Errorf("Spark's sketch of the same ids estimates %v, sketchd's %v", estSA, estA)
			}
			if cross != own || crossSum != ownSum {
				t.Errorf("Spark's union of sketchd's sketch with its own = %v users, summary %d; want %v, %d (its union of its own sketches of the same ids)", cross, crossSum, own, ownSum)
			}
			// Spark reads Java's layout only: the C++/Python one is refused.
			if _, err := s.Query("SELECT tuple_sketch_estimate_integer(:a)", map[string]any{"a": Binary(d.raw(t, a, "?layout=cpp"))}); err == nil || !strings.Contains(err.Error(), "TUPLE_INVALID_INPUT_SKETCH_BUFFER") {
				t.Errorf("Spark on the ?layout=cpp download: %v, want its refusal (docs/formats.md says it refuses)", err)
			}
			b := "s_" + name
			up := d.upload(t, b, "", sImg)
			if !sameFloat(up.num(t, "cardinality"), estS) || up.num(t, "impressions") != float64(rounded(impS)) {
				t.Errorf("sketchd reads Spark's sketch as %v, want %v users, %v impressions", up, estS, impS)
			}
			if got := d.union(t, a, b).num(t, "cardinality"); !sameFloat(got, own) {
				t.Errorf("sketchd's union of its sketch and Spark's = %v, want Spark's union of its own sketches %v", got, own)
			}
		})
	}
}
