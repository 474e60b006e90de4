package sketch_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
)

// TestUnionerEqualsUnion feeds a Unioner more sketches than it holds at
// once and checks its result against Kind.Union of all of them: equal
// bytes for hll (mixed log2m, folded to the smallest) and cms, whose
// unions are associative, and for every kind when they fit in one batch.
func TestUnionerEqualsUnion(t *testing.T) {
	build := func(k *sketch.Kind, p sketch.Params, i int) sketch.Sketch {
		t.Helper()
		sk, err := p.New()
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]cms.ID, 40)
		for j := range ids {
			ids[j] = cms.IntID(int64(i*25 + j))
		}
		b, err := k.Prepare(sketch.IDs(ids))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sk.Apply(b, nil); err != nil {
			t.Fatal(err)
		}
		return sk
	}
	for _, k := range sketch.Kinds() {
		counts := []int{1, 63, 64, 65}
		if k.Type == sketch.TypeHLL || k.Type == sketch.TypeCMS {
			counts = append(counts, 200)
		}
		for _, n := range counts {
			var sks []sketch.Sketch
			var u sketch.Unioner
			for i := range n {
				p := k.Default()
				if k.Type == sketch.TypeHLL {
					hp := hll.DefaultParams()
					hp.Log2m = 10 + i%3
					p = sketch.HLLParams{Params: hp}
				}
				sk := build(k, p, i)
				sks = append(sks, sk)
				if err := u.Add(fmt.Sprint(i), sk.Clone()); err != nil {
					t.Fatal(err)
				}
			}
			got, err := u.Result()
			if err != nil {
				t.Fatal(err)
			}
			want, err := k.Union(sks)
			if err != nil {
				t.Fatal(err)
			}
			if u.Len() != n || !bytes.Equal(got.AppendBinary(nil), want.AppendBinary(nil)) {
				t.Errorf("%s: the Unioner's union of %d sketches (%d counted) differs from Kind.Union's", k.Type, n, u.Len())
			}
		}
	}
}

// TestUnionerRefusesMixedKinds names the first sketch and the odd one.
func TestUnionerRefusesMixedKinds(t *testing.T) {
	h, _ := sketch.DefaultHLL().New()
	c, _ := sketch.CMSParams{Params: cms.Params{Width: 64, Depth: 2}}.New()
	var u sketch.Unioner
	if err := u.Add("a", h); err != nil {
		t.Fatal(err)
	}
	err := u.Add("b", c)
	if sketch.KindOf(err) != sketch.Conflict || err.Error() != `cannot combine hll sketch "a" with cms sketch "b"` {
		t.Errorf("mixing kinds: %v", err)
	}
	if r, err := (&sketch.Unioner{}).Result(); r != nil || err != nil {
		t.Errorf("an empty Unioner's result is %v, %v; want nil, nil", r, err)
	}
}
