package client_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sketchd/sketchd/client"
)

// TestBloomCalls drives the Bloom filter calls against the real server:
// create, check-and-add, check, union and a series' "seen today?".
func TestBloomCalls(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	ctx := t.Context()

	sk, created, err := c.Create(ctx, "seen", client.CreateRequest{Type: client.TypeBloom, ExpectedItems: 10_000, FPP: 0.001})
	if err != nil || !created || sk.Type != client.TypeBloom || sk.ExpectedItems != 10_000 || sk.FPP != 0.001 || sk.Bits == 0 || sk.Hashes == 0 {
		t.Fatalf("Create = %+v, %v, %v", sk, created, err)
	}
	fr, err := c.AddNew(ctx, "seen", []client.ID{client.Int(1), client.Text("a"), client.Int(1)})
	if err != nil || fr.Accepted != 3 || fr.NewCount != 2 || fmt.Sprint(fr.New) != fmt.Sprint([]client.ID{client.Int(1), client.Text("a")}) {
		t.Fatalf("AddNew = %+v, %v", fr, err)
	}
	if fr, err = c.AddNew(ctx, "seen", []client.ID{client.Text("a"), client.Int(2)}); err != nil || fmt.Sprint(fr.New) != fmt.Sprint([]client.ID{client.Int(2)}) {
		t.Fatalf("AddNew again = %+v, %v", fr, err)
	}
	ch, err := c.Check(ctx, "seen", []client.ID{client.Int(1), client.Int(3), client.Text("a")})
	if err != nil || ch.Present != 2 || !ch.Results[0].Present || ch.Results[1].Present || ch.Results[2].ID != client.Text("a") || ch.FalsePositiveRate <= 0 {
		t.Fatalf("Check = %+v, %v", ch, err)
	}
	if _, err := c.AddNew(ctx, "made", []client.ID{client.Int(1)}, client.WithCreate()); err != nil {
		t.Fatalf("AddNew creating: %v", err)
	}
	if sk, err = c.Describe(ctx, "made"); err != nil || sk.Type != client.TypeBloom || sk.BitsSet == 0 || sk.EstimatedItems < 0.9 {
		t.Fatalf("Describe(made) = %+v, %v", sk, err)
	}
	if _, _, err := c.Create(ctx, "h", client.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddNew(ctx, "h", []client.ID{client.Int(1)}); !client.IsConflict(err) {
		t.Fatalf("AddNew of an hll = %v, want a conflict", err)
	}
	if _, _, err := c.Create(ctx, "other", client.CreateRequest{Type: client.TypeBloom, Bits: sk.Bits, Hashes: sk.Hashes}); err != nil {
		t.Fatal(err)
	}
	u, err := c.Union(ctx, client.UnionRequest{Sketches: client.Names("made", "other")})
	if err != nil || u.Type != client.TypeBloom || u.Bits != sk.Bits || u.BitsSet != sk.BitsSet || u.ExpectedItems != 1_000_000 {
		t.Fatalf("Union = %+v, %v", u, err)
	}

	if _, _, err := c.CreateSeries(ctx, "daily", client.SeriesRequest{Type: client.TypeBloom, ExpectedItems: 1000, FPP: 0.01, Levels: map[string]string{client.LevelDay: "P30D"}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if _, err := c.AddSeriesInts(ctx, "daily", now, []int64{7}); err != nil {
		t.Fatal(err)
	}
	day := now.Truncate(24 * time.Hour)
	sc, err := c.SeriesCheck(ctx, "daily", day, day.Add(24*time.Hour), []client.ID{client.Int(7), client.Int(8)})
	if err != nil || !sc.Results[0].Present || sc.Results[1].Present || sc.BucketCount() != 1 {
		t.Fatalf("SeriesCheck = %+v, %v", sc, err)
	}
	cnt, err := c.SeriesCount(ctx, "daily", day, day.Add(24*time.Hour))
	if err != nil || cnt.Bloom == nil || cnt.Bloom.ExpectedItems != 1000 || cnt.Cardinality < 0.9 {
		t.Fatalf("SeriesCount = %+v, %v", cnt, err)
	}
}
