package idem

import (
	"context"
	"errors"
	"testing"

	"github.com/sketchd/sketchd/internal/sketch"
)

func TestGuardContext(t *testing.T) {
	ctx := context.Background()
	if From(ctx) != nil || Without(ctx) != ctx {
		t.Fatal("a bare context carries a guard")
	}
	g := &Guard{ID: ID{Key: "k"}}
	gctx := With(ctx, g)
	if From(gctx) != g {
		t.Fatal("With does not carry the guard")
	}
	if From(Without(gctx)) != nil {
		t.Fatal("Without keeps the guard")
	}
}

func TestSeal(t *testing.T) {
	g := &Guard{}
	if _, err := g.Seal(Result{}); err == nil || g.Answer() != nil {
		t.Fatal("Seal without a renderer succeeded")
	}
	calls := 0
	g.Render = func(res Result) ([]byte, error) {
		calls++
		if res.Added.Accepted == 0 {
			return nil, errors.New("nothing")
		}
		return []byte{byte(res.Added.Accepted)}, nil
	}
	if _, err := g.Seal(Result{}); err == nil || g.Answer() != nil {
		t.Fatalf("a failed render left answer %q, err %v", g.Answer(), err)
	}
	g.Seal(Result{Added: sketch.Added{Accepted: 3}})
	b, err := g.Seal(Result{Added: sketch.Added{Accepted: 5}})
	if err != nil || string(b) != "\x05" || string(g.Answer()) != "\x05" || calls != 3 {
		t.Fatalf("the last seal's answer = %q (%v), kept %q after %d renders", b, err, g.Answer(), calls)
	}
}
