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
