package storetest

import (
	"bytes"
	"testing"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/sketch"
)

// testRangedCMS: a Count-Min over a value domain (format version 2) is
// stored, logged, replayed and merged like any Count-Min: its bytes equal
// the engine's after adds, events, a reopen and a union; a value outside
// the domain or a text is Invalid and changes nothing.
func testRangedCMS(t *testing.T, in *Instance) {
	p := cms.Params{Width: 40, Depth: 3, DomainBits: 12}
	spec := sketch.Spec{Params: sketch.CMSParams{Params: p}}
	create(t, in, "r", spec)
	create(t, in, "r2", spec)
	local, err := cms.New(p)
	must(t, err, "new")
	var ids []cms.ID
	var counts []uint64
	for v := range int64(300) {
		ids = append(ids, cms.IntID(v*13%4096))
		counts = append(counts, uint64(v%4+1))
		must(t, local.AddInt(v*13%4096, uint64(v%4+1)), "local add")
	}
	add(t, in, "r", Input{IDs: ids, Counts: counts})
	_, err = in.AddEvents(ctx, []sketch.Event{{ID: cms.IntID(4095), Sketches: []string{"r", "r2"}}}, false)
	must(t, err, "events")
	must(t, local.AddInt(4095, 1), "local add")
	want, err := local.MarshalBinary()
	must(t, err, "encode")
	if got := raw(t, in, "r"); !bytes.Equal(got, want) {
		t.Fatalf("stored ranged cms differs from the engine's (%d vs %d bytes)", len(got), len(want))
	}
	before := raw(t, in, "r")
	_, err = in.Add(ctx, "r", Input{IDs: []cms.ID{cms.IntID(1), cms.IntID(4096)}}, false)
	mustKind(t, err, sketch.Invalid, "value outside the domain")
	_, err = in.Add(ctx, "r", Input{IDs: []cms.ID{cms.TextID("a")}}, false)
	mustKind(t, err, sketch.Invalid, "text into a ranged cms")
	_, err = in.AddEvents(ctx, []sketch.Event{{ID: cms.IntID(-3), Sketches: []string{"r"}}}, false)
	mustKind(t, err, sketch.Invalid, "event outside the domain")
	if !bytes.Equal(raw(t, in, "r"), before) {
		t.Fatal("refused adds changed the sketch")
	}
	in.Settle(t)
	in.Reopen(t)
	if got := raw(t, in, "r"); !bytes.Equal(got, want) {
		t.Fatal("the ranged cms differs after a reopen")
	}
	u, err := in.Union(ctx, []string{"r", "r2"}, "u")
	must(t, err, "union")
	c, _ := sketch.CMSOf(u)
	if r, err := c.Range(4095, 4095); err != nil || r.Estimate < 2 {
		t.Errorf("union's range [4095, 4095] = %+v, %v; want at least 2", r, err)
	}
	create(t, in, "plain", sketch.Spec{Params: sketch.CMSParams{Params: cms.Params{Width: 40, Depth: 3}}})
	_, err = in.Union(ctx, []string{"r", "plain"}, "")
	mustKind(t, err, sketch.Conflict, "union of a ranged and a plain cms")
}
