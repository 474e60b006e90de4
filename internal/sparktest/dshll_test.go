package sparktest

import (
	"bytes"
	"fmt"
	"testing"
)

// idsSQL is the Spark relation of ids lo..hi-1 as a column id: BIGINTs
// from range (in order, in one partition: the order sketchd adds them
// in), or their decimal strings.
func idsSQL(lo, hi int64, strs bool) string {
	if strs {
		return fmt.Sprintf("(SELECT CAST(id AS STRING) AS id FROM range(%d, %d, 1, 1))", lo, hi)
	}
	return fmt.Sprintf("range(%d, %d, 1, 1)", lo, hi)
}

// TestDSHLL: ds_hll sketches and Spark's hll_sketch_* functions, both
// ways, for every tgt_type, in every mode (LIST, SET, HLL), at lg_k other
// than Spark's default 12, for integer and string ids. Spark reads
// sketchd's download to sketchd's estimate; Spark's sketch of the same
// ids has the same estimate; Spark's union of sketchd's sketch of ids
// 0..n with its own sketch of n/2..3n/2 equals Spark's union of its own
// sketches of the same ids, and so does sketchd's union of the same
// pair after uploading Spark's (an HLL_8 updatable image, which comes back
// byte for byte). A difference in hashing would change every union.
func TestDSHLL(t *testing.T) {
	s := spark.Get(t)
	d := newSketchd(t)
	for _, c := range []struct {
		tgt string
		// lgK is sketchd's sketch's; sparkLgK the lg_k Spark builds its
		// other sketch with (a union of the two needs
		// allowDifferentLgConfigK when they differ).
		lgK, sparkLgK int
		n             int64
		strs          bool
	}{
		{"HLL_4", 10, 10, 20_000, false},
		{"HLL_6", 11, 11, 20_000, false},
		{"HLL_8", 14, 14, 60_000, false},
		{"HLL_4", 14, 12, 40_000, false},
		{"HLL_6", 13, 12, 600, false},
		{"HLL_8", 10, 12, 6, false},
		{"HLL_4", 16, 12, 3_000, true},
		{"HLL_8", 12, 10, 20_000, true},
	} {
		name := fmt.Sprintf("%s_lgk%d_spark%d_n%d_strs%v", c.tgt, c.lgK, c.sparkLgK, c.n, c.strs)
		t.Run(name, func(t *testing.T) {
			a := "a_" + name
			d.create(t, a, obj{"type": "ds_hll", "lg_k": c.lgK, "tgt_type": c.tgt})
			d.add(t, a, obj{"ids": ids(0, c.n, c.strs)})
			desc := d.describe(t, a)
			img := d.raw(t, a, "")
			lo, hi := c.n/2, c.n/2+c.n
			r := s.One(t, fmt.Sprintf(`SELECT
				hll_sketch_estimate(:a),
				hll_sketch_estimate(sa),
				hll_sketch_estimate(s),
				hll_sketch_estimate(hll_union(:a, s, true)),
				hll_sketch_estimate(hll_union(sa, s, true)),
				s
			FROM (SELECT hll_sketch_agg(id, %d) AS sa FROM %s),
			     (SELECT hll_sketch_agg(id, %d) AS s FROM %s)`,
				c.lgK, idsSQL(0, c.n, c.strs), c.sparkLgK, idsSQL(lo, hi, c.strs)),
				map[string]any{"a": Binary(img)})
			estA, estSA, estS, cross, own, sImg := r.Int(t, 0), r.Int(t, 1), r.Int(t, 2), r.Int(t, 3), r.Int(t, 4), r.Bytes(t, 5)
			if want := rounded(desc.num(t, "cardinality")); estA != want {
				t.Errorf("Spark's estimate of sketchd's download = %d, want sketchd's %d", estA, want)
			}
			if estSA != estA {
				t.Errorf("Spark's sketch of the same ids estimates %d, sketchd's %d", estSA, estA)
			}
			if cross != own {
				t.Errorf("Spark's union of sketchd's sketch with its own = %d, want %d (its union of its own sketches of the same ids)", cross, own)
			}
			// Spark's own sketch, uploaded: an HLL_8 updatable image (the
			// compact flag, 8, clear in byte 5; HLL_8 in byte 7's bits 2-3).
			if len(sImg) < 8 || sImg[5]&8 != 0 || sImg[7]>>2&3 != 2 {
				t.Errorf("Spark wrote %x…, not the HLL_8 updatable image docs/formats.md says it writes", sImg[:min(8, len(sImg))])
			}
			b := "s_" + name
			up := d.upload(t, b, "", sImg)
			if got := rounded(up.num(t, "cardinality")); got != estS || up.str(t, "tgt_type") != "HLL_8" || up.num(t, "lg_k") != float64(c.sparkLgK) {
				t.Errorf("sketchd reads Spark's sketch as %v, want HLL_8 lg_k %d estimating %d", up, c.sparkLgK, estS)
			}
			if back := d.raw(t, b, ""); !bytes.Equal(back, sImg) {
				t.Errorf("Spark's upload comes back as %x…, want its bytes %x…", back[:8], sImg[:8])
			}
			if got := rounded(d.union(t, a, b).num(t, "cardinality")); got != own {
				t.Errorf("sketchd's union of its sketch and Spark's = %d, want Spark's union of its own sketches %d", got, own)
			}
		})
	}
}
