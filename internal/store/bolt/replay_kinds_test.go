package bolt

import (
	"slices"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/bloom"
	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/kll"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// TestReplayNewKinds: KLL sketches (whose compactions must replay with
// the same coins), Bloom filters and Count-Mins over a value domain come
// back byte for byte from the log after a crash, before and after a
// checkpoint.
func TestReplayNewKinds(t *testing.T) {
	bp, _ := bloom.ParamsFor(5000, 0.01)
	specs := map[string]sketch.Spec{
		"kd": {Params: sketch.KLLParams{K: 8, Items: kll.Doubles}},
		"kl": {Params: sketch.KLLParams{K: 12, Items: kll.Longs}},
		"b":  {Params: sketch.BloomParams{Params: bp}},
		"r":  {Params: sketch.CMSParams{Params: cms.Params{Width: 30, Depth: 2, DomainBits: 14}}},
	}
	for _, mode := range []string{"crash", "checkpoint then crash"} {
		t.Run(mode, func(t *testing.T) {
			s, path := openStore(t, Options{CheckpointInterval: time.Hour})
			for name, spec := range specs {
				mustCreate(t, s, name, spec)
			}
			add := func(lo, hi int64) {
				for name := range specs {
					if _, err := s.Add(ctx, name, storetest.Ints(lo, hi), false); err != nil {
						t.Fatalf("add to %s: %v", name, err)
					}
				}
			}
			for i := range int64(20) {
				add(i*300, i*300+450)
			}
			if mode == "checkpoint then crash" {
				if err := s.Checkpoint(ctx); err != nil {
					t.Fatal(err)
				}
				for i := range int64(10) {
					add(9000+i*50, 9000+i*50+77)
				}
			}
			want := map[string][]byte{}
			for name := range specs {
				want[name] = rawOf(t, s, name)
			}
			crash(t, s)
			s = reopen(t, path, Options{})
			for name, w := range want {
				if got := rawOf(t, s, name); !slices.Equal(got, w) {
					t.Errorf("%s differs after the log replayed", name)
				}
			}
		})
	}
}
