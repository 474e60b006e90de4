package sparktest

import (
	"bytes"
	"fmt"
	"testing"
)

// TestTheta: theta sketches and Spark's theta_* functions, both ways, in
// exact and estimation mode, for integer and string ids. Spark reads
// sketchd's download, compact and compressed (?compressed=true), to
// sketchd's estimate; Spark's union of sketchd's sketch of ids 0..n with
// its own sketch of n/2..3n/2 equals its union of its own sketches of the
// same ids; sketchd reads Spark's sketch (compressed: serial version 4,
// served back byte for byte) to Spark's estimate, and its union of the
// pair equals Spark's.
func TestTheta(t *testing.T) {
	s := spark.Get(t)
	d := newSketchd(t)
	for _, c := range []struct {
		lgK  int
		n    int64
		strs bool
	}{
		{10, 20_000, false},
		{12, 30_000, false},
		{11, 1_000, false},
		{9, 5_000, true},
		{12, 3_000, true},
		{14, 60_000, false},
	} {
		name := fmt.Sprintf("lgk%d_n%d_strs%v", c.lgK, c.n, c.strs)
		t.Run(name, func(t *testing.T) {
			a := "a_" + name
			d.create(t, a, obj{"type": "theta", "lg_k": c.lgK})
			d.add(t, a, obj{"ids": ids(0, c.n, c.strs)})
			desc := d.describe(t, a)
			img, comp := d.raw(t, a, ""), d.raw(t, a, "?compressed=true")
			lo, hi := c.n/2, c.n/2+c.n
			r := s.One(t, fmt.Sprintf(`SELECT
				theta_sketch_estimate(:a),
				theta_sketch_estimate(:c),
				theta_sketch_estimate(sa),
				theta_sketch_estimate(s),
				theta_sketch_estimate(theta_union(:a, s, %[1]d)),
				theta_sketch_estimate(theta_union(:c, s, %[1]d)),
				theta_sketch_estimate(theta_union(sa, s, %[1]d)),
				s
			FROM (SELECT theta_sketch_agg(id, %[1]d) AS sa FROM %[2]s),
			     (SELECT theta_sketch_agg(id, %[1]d) AS s FROM %[3]s)`,
				c.lgK, idsSQL(0, c.n, c.strs), idsSQL(lo, hi, c.strs)),
				map[string]any{"a": Binary(img), "c": Binary(comp)})
			estA, estC, estSA, estS, cross, crossC, own, sImg := r.Int(t, 0), r.Int(t, 1), r.Int(t, 2), r.Int(t, 3), r.Int(t, 4), r.Int(t, 5), r.Int(t, 6), r.Bytes(t, 7)
			if want := rounded(desc.num(t, "cardinality")); estA != want || estC != want {
				t.Errorf("Spark's estimates of sketchd's downloads = %d (compact), %d (compressed), want sketchd's %d", estA, estC, want)
			}
			// Spark's theta_sketch_agg ends in a union, which keeps at most
			// 2^lg_k entries (sketchd's sketch, an update sketch's
			// compaction, keeps up to about twice as many): its sketch of
			// the same ids is sketchd's union of its sketch alone.
			if alone := rounded(d.union(t, a).num(t, "cardinality")); estSA != alone {
				t.Errorf("Spark's sketch of the same ids estimates %d, sketchd's union of its sketch alone %d", estSA, alone)
			}
			if cross != own || crossC != own {
				t.Errorf("Spark's unions of sketchd's sketch with its own = %d (compact), %d (compressed), want %d (its union of its own sketches of the same ids)", cross, crossC, own)
			}
			b := "s_" + name
			up := d.upload(t, b, "", sImg)
			if got := rounded(up.num(t, "cardinality")); got != estS {
				t.Errorf("sketchd reads Spark's sketch as %v, want an estimate of %d", up, estS)
			}
			if len(sImg) > 8 && sImg[1] != 4 {
				t.Errorf("Spark wrote serial version %d, not the compressed form (4) docs/formats.md says it writes", sImg[1])
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
