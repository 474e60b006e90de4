package pgstoretest

import (
	"context"
	"testing"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/pgtest"
	"github.com/sketchd/sketchd/internal/sketch"
	"github.com/sketchd/sketchd/internal/store/postgres"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// TestPoolLendsEmptySchemas: a schema given back by one test is lent to
// the next one empty, and every open of a place finds the same schema.
func TestPoolLendsEmptySchemas(t *testing.T) {
	server := pgtest.DSN(t)
	ctx := context.Background()
	b := Backend(postgres.Options{})
	spec := sketch.Spec{Params: sketch.HLLParams{Params: hll.DefaultParams()}}
	lentTo := func(t *testing.T, place string) string {
		schemas.mu.Lock()
		defer schemas.mu.Unlock()
		return schemas.lent[server+"\x00"+place]
	}
	var first string
	t.Run("write", func(t *testing.T) {
		in := storetest.Open(t, b)
		if _, _, err := in.Store.Create(ctx, "kept", spec); err != nil {
			t.Fatal(err)
		}
		first = lentTo(t, in.Place())
		in.Reopen(t)
		if got := lentTo(t, in.Place()); got != first {
			t.Fatalf("a reopen got schema %q, the first open %q", got, first)
		}
		if _, err := in.Store.Describe(ctx, "kept"); err != nil {
			t.Fatalf("after a reopen: %v", err)
		}
	})
	t.Run("read", func(t *testing.T) {
		in := storetest.Open(t, b)
		if got := lentTo(t, in.Place()); got != first {
			t.Fatalf("the next test got schema %q, not the one given back (%q)", got, first)
		}
		if _, err := in.Store.Describe(ctx, "kept"); sketch.KindOf(err) != sketch.NotFound {
			t.Fatalf("the previous test's sketch in a lent schema: %v, want not found", err)
		}
	})
}
