package sketch_test

import (
	"bytes"
	"testing"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/theta"
)

// built returns a sketch of p holding the ids lo..hi-1.
func built(tb testing.TB, p sketch.Params, lo, hi int64) sketch.Sketch {
	tb.Helper()
	sk, err := p.New()
	if err != nil {
		tb.Fatal(err)
	}
	var ids []cms.ID
	for v := lo; v < hi; v++ {
		ids = append(ids, cms.IntID(v))
	}
	b, err := sk.Kind().Prepare(sketch.IDs(ids))
	if err == nil {
		_, err = sk.Apply(b, nil)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return sk
}

func hllParams(log2m, regwidth int, expthresh int64) sketch.HLLParams {
	p := hll.DefaultParams()
	p.Log2m, p.Regwidth, p.Expthresh = log2m, regwidth, expthresh
	return sketch.HLLParams{Params: p}
}

// TestConform: a sketch of the same parameters passes as is; an HLL
// written at another expthresh keeps its registers; more registers fold
// only when asked, to what folding gives; fewer never; other kinds and
// parameters are Conflicts, and folding uses the kind's union.
func TestConform(t *testing.T) {
	p12 := hllParams(12, 5, -1)
	sk := built(t, p12, 0, 5000)
	if got, err := sketch.Conform(sk, p12, false); err != nil || got != sk {
		t.Errorf("Conform to its own parameters = %v, %v; want the sketch itself", got, err)
	}
	// expthresh 0 (no explicit set) written at -1: the same registers.
	small := built(t, hllParams(12, 5, 0), 0, 50)
	got, err := sketch.Conform(small, p12, false)
	if err != nil || got.Params() != p12 {
		t.Fatalf("Conform across expthresh = %v, %v", got, err)
	}
	if want := built(t, p12, 0, 50); got.Estimate() != built(t, hllParams(12, 5, 0), 0, 50).Estimate() || want.Params() != got.Params() {
		t.Errorf("Conform across expthresh changed the estimate: %v", got.Estimate())
	}
	big := built(t, hllParams(14, 6, -1), 0, 5000)
	if _, err := sketch.Conform(big, p12, false); sketch.KindOf(err) != sketch.Conflict {
		t.Errorf("more registers without fold = %v, want Conflict", err)
	}
	got, err = sketch.Conform(big, p12, true)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := sketch.HLLOf(big)
	f, err := h.Fold(12, 5)
	if err != nil {
		t.Fatal(err)
	}
	gh, _ := sketch.HLLOf(got)
	if gh.Params() != p12.Params || gh.Estimate() != f.Estimate() || !bytes.Equal(got.AppendBinary(nil), sketch.NewHLL(f).AppendBinary(nil)) {
		t.Errorf("Conform with fold = %v (%v), want the fold %v", gh.Params(), gh.Estimate(), f.Estimate())
	}
	if _, err := sketch.Conform(built(t, hllParams(11, 5, -1), 0, 10), p12, true); sketch.KindOf(err) != sketch.Conflict {
		t.Errorf("fewer registers with fold = %v, want Conflict", err)
	}
	if _, err := sketch.Conform(built(t, hllParams(12, 4, -1), 0, 10), p12, true); sketch.KindOf(err) != sketch.Conflict {
		t.Errorf("narrower registers with fold = %v, want Conflict", err)
	}
	c := built(t, sketch.CMSParams{Params: cms.Params{Width: 64, Depth: 2}}, 0, 10)
	if _, err := sketch.Conform(c, p12, true); sketch.KindOf(err) != sketch.Conflict {
		t.Errorf("a cms as an hll = %v, want Conflict", err)
	}
	t12, t10 := sketch.ThetaParams{Params: theta.Params{LgK: 12}}, sketch.ThetaParams{Params: theta.Params{LgK: 10}}
	th := built(t, t12, 0, 10000)
	if _, err := sketch.Conform(th, t10, false); sketch.KindOf(err) != sketch.Conflict {
		t.Errorf("theta lg_k 12 as 10 without fold = %v, want Conflict", err)
	}
	if got, err := sketch.Conform(th, t10, true); err != nil || got.Params() != t10 {
		t.Errorf("theta lg_k 12 folded to 10 = %v, %v", got, err)
	}
}
