package client_test

import (
	"fmt"
	"testing"

	"github.com/sketchd/sketchd/client"
)

// TestUnionPrefix unions sketches by prefix through the client, stored
// under the prefix and repeated, and uses a prefix as an intersection
// operand.
func TestUnionPrefix(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	ctx := t.Context()
	for i := range 5 {
		n := fmt.Sprintf("campaign:%d", i)
		if _, _, err := c.Create(ctx, n, client.CreateRequest{Log2m: 11}); err != nil {
			t.Fatal(err)
		}
		ids := make([]int64, 100)
		for j := range ids {
			ids[j] = int64(i*100 + j)
		}
		if _, err := c.AddInts(ctx, n, ids); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		u, err := c.UnionPrefix(ctx, "campaign:", "campaign:all")
		if err != nil || u.Matched != 5 || u.Cardinality < 480 || u.Cardinality > 520 || u.Into != "campaign:all" {
			t.Fatalf("UnionPrefix(campaign:) = %+v, %v; want 5 sketches, about 500", u, err)
		}
	}
	x, err := c.Intersection(ctx, client.IntersectionRequest{Sketches: []client.Operand{{Prefix: "campaign:"}, {Sketch: "campaign:0"}}})
	if err != nil || x.Estimate < 90 || x.Estimate > 110 {
		t.Fatalf("Intersection(campaign:*, campaign:0) = %+v, %v; want about 100", x, err)
	}
	if _, err := c.UnionPrefix(ctx, "nothing:", ""); !client.IsNotFound(err) {
		t.Fatalf("UnionPrefix(nothing:) = %v, want not found", err)
	}
	if _, err := c.Union(ctx, client.UnionRequest{Sketches: []client.Operand{{Prefix: "a", Sketch: "b"}}}); err == nil || client.StatusOf(err) != 0 {
		t.Fatalf("an operand with a prefix and a sketch = %v, want a client-side error", err)
	}
}

// TestRankOverlap ranks sketches under a prefix, and a list, by their
// overlap with a target through the client: the most overlapping first,
// the target never its own candidate, and a refusal a typed error.
func TestRankOverlap(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	ctx := t.Context()
	add := func(name string, lo, hi int) {
		if _, _, err := c.Create(ctx, name, client.CreateRequest{Log2m: 11}); err != nil {
			t.Fatal(err)
		}
		ids := make([]int64, 0, hi-lo)
		for j := lo; j < hi; j++ {
			ids = append(ids, int64(j))
		}
		if _, err := c.AddInts(ctx, name, ids); err != nil {
			t.Fatal(err)
		}
	}
	add("aud:me", 0, 100)
	for i := range 4 {
		add(fmt.Sprintf("aud:%d", i), 100-25*i, 200) // shares 25·i of aud:me
	}
	r, err := c.RankOverlap(ctx, client.RankOverlapRequest{Target: client.Operand{Sketch: "aud:me"},
		Candidates: client.CandidatesWithPrefix("aud:"), By: "intersection", Top: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Scanned != 4 || len(r.Results) != 2 || r.Results[0].Name != "aud:3" || r.Results[1].Name != "aud:2" || r.Results[0].Lower > 75 || r.Results[0].Upper < 75 {
		t.Errorf("RankOverlap = %+v, want aud:3 (bounds holding 75) then aud:2 of 4", r)
	}
	r, err = c.RankOverlap(ctx, client.RankOverlapRequest{Target: client.Operand{Sketch: "aud:me"},
		Candidates: client.Candidates{List: client.Names("aud:1", "aud:2")}, By: "containment", Direction: "target_in_candidate", Top: 1})
	if err != nil || len(r.Results) != 1 || r.Results[0].Name != "aud:2" || r.Results[0].Estimate != 0.5 || r.Results[0].Intersection == nil {
		t.Errorf("RankOverlap of a list = %+v, %v; want aud:2 holding half of aud:me", r, err)
	}
	_, err = c.RankOverlap(ctx, client.RankOverlapRequest{Target: client.Operand{Sketch: "aud:me"},
		Candidates: client.CandidatesWithPrefix("aud:"), By: "size", Top: 2})
	if !client.IsInvalid(err) {
		t.Errorf("RankOverlap by size: %v, want an invalid-request error", err)
	}
}
