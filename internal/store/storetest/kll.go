package storetest

import (
	"bytes"
	"testing"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/kll"
	"github.com/sketchd/sketchd/internal/sketch"
)

// testKLL: KLL sketches of doubles and of longs keep, log, replay and
// merge their values on every backend: their bytes equal the engine's
// after adds, events and a reopen; a sketch of doubles and one of longs
// neither unite nor merge.
func testKLL(t *testing.T, in *Instance) {
	for _, items := range []kll.ItemType{kll.Doubles, kll.Longs} {
		name := "q-" + items.String()
		p := sketch.KLLParams{K: 16, Items: items}
		create(t, in, name, sketch.Spec{Params: p})
		local, err := p.New()
		must(t, err, "new")
		for round := range 5 {
			ids := Ints(int64(round*700), int64(round*700+900))
			add(t, in, name, ids)
			b, err := local.Kind().Prepare(ids)
			must(t, err, "prepare")
			_, err = local.Apply(b, nil)
			must(t, err, "apply")
		}
		_, err = in.AddEvents(ctx, []sketch.Event{{ID: cms.IntID(-5), Sketches: []string{name}}}, false)
		must(t, err, "event")
		b, _ := local.Kind().Prepare(Ints(-5, -4))
		_, _ = local.Apply(b, nil)
		if got := raw(t, in, name); !bytes.Equal(got, local.AppendBinary(nil)) {
			t.Fatalf("%s: stored sketch differs from the engine's", name)
		}
		before := raw(t, in, name)
		_, err = in.Add(ctx, name, Input{IDs: []cms.ID{cms.IntID(1), cms.TextID("x")}}, false)
		mustKind(t, err, sketch.Invalid, "a text value")
		if !bytes.Equal(raw(t, in, name), before) {
			t.Fatalf("%s: a refused add changed the sketch", name)
		}
		in.Settle(t)
		in.Reopen(t)
		if got := raw(t, in, name); !bytes.Equal(got, local.AppendBinary(nil)) {
			t.Fatalf("%s: the sketch differs after a reopen", name)
		}
		info, err := in.Describe(ctx, name)
		must(t, err, "describe")
		if info.Total != 4501 || info.Min == nil || info.Min.String() != "-5" || info.Max.String() != "3699" || info.Min.IsLong() != (items == kll.Longs) || info.RankError <= 0 {
			t.Errorf("%s: describe %+v", name, info)
		}
	}
	_, err := in.Union(ctx, []string{"q-double", "q-long"}, "")
	mustKind(t, err, sketch.Conflict, "union of doubles and longs")
	l, err := in.Union(ctx, []string{"q-long"}, "")
	must(t, err, "union")
	_, err = in.Merge(ctx, "q-double", l)
	mustKind(t, err, sketch.Conflict, "merge of longs into doubles")
	u, err := in.Union(ctx, []string{"q-double", "q-double"}, "qq")
	must(t, err, "union into")
	if q, ok := sketch.KLLOf(u); !ok || q.N() != 9002 {
		t.Errorf("union of a sketch with itself: %v", u)
	}
}
