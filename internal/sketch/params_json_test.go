package sketch

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/freq"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/theta"
)

// TestParamsJSONAsEncodingJSON: the parameters written directly are the
// bytes encoding/json writes for the same members as a map (keys in
// order), for values across and beyond each kind's range, negative
// included.
func TestParamsJSONAsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	n := func() int { return rng.IntN(1<<uint(rng.IntN(40))) * (1 - 2*rng.IntN(2)) }
	check := func(p Params, m map[string]any) {
		t.Helper()
		got, err := ParamsJSON(p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("%#v: wrote %s, encoding/json %s", p, got, want)
		}
	}
	for range 2000 {
		h := hll.Params{Log2m: n(), Regwidth: n(), Expthresh: int64(n()), Sparse: rng.IntN(2) == 0}
		check(HLLParams{h}, map[string]any{"log2m": h.Log2m, "regwidth": h.Regwidth, "expthresh": h.Expthresh, "sparse": h.Sparse})
		c := cms.Params{Width: n(), Depth: n(), Conservative: rng.IntN(2) == 0, TopK: n()}
		if rng.IntN(2) == 0 {
			c.DomainBits = n()
		}
		m := map[string]any{"width": c.Width, "depth": c.Depth, "conservative": c.Conservative, "topk": c.TopK}
		if c.DomainBits > 0 {
			m["domain_bits"] = c.DomainBits
		}
		check(CMSParams{c}, m)
		lg := n()
		check(ThetaParams{theta.Params{LgK: lg}}, map[string]any{"lg_k": lg})
		check(FreqParams{freq.Params{LgK: lg}}, map[string]any{"lg_k": lg})
	}
	check(DefaultHLL().Params, map[string]any{"log2m": 14, "regwidth": 5, "expthresh": -1, "sparse": true})
}
