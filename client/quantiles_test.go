package client_test

import (
	"testing"
	"time"

	"github.com/sketchd/sketchd/client"
)

// TestRangedCMSCalls drives range counts and quantiles of a Count-Min
// over a value domain, a sketch and a series, against the real server.
func TestRangedCMSCalls(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	ctx := t.Context()
	sk, _, err := c.Create(ctx, "lat", client.CreateRequest{Type: client.TypeCMS, Width: 1000, Depth: 4, DomainBits: 16})
	if err != nil || sk.DomainBits != 16 {
		t.Fatalf("Create = %+v, %v", sk, err)
	}
	vals := make([]int64, 1000)
	for i := range vals {
		vals[i] = int64(i) * 10
	}
	if _, err := c.AddInts(ctx, "lat", vals); err != nil {
		t.Fatal(err)
	}
	rc, err := c.RangeCount(ctx, "lat", 0, 4999)
	if err != nil || rc.Estimate < 500 || float64(rc.Estimate-500) > rc.ErrorBound || rc.Total != 1000 {
		t.Fatalf("RangeCount = %+v, %v", rc, err)
	}
	qs, err := c.Quantiles(ctx, "lat", 0.5, 0.9)
	if err != nil || qs.N != 1000 || len(qs.Quantiles) != 2 || qs.Quantiles[0].Value == nil {
		t.Fatalf("Quantiles = %+v, %v", qs, err)
	}
	if med := *qs.Quantiles[0].Value; med < 5000-qs.RankError*10000 || med > 5000+qs.RankError*10000 {
		t.Errorf("median %v, rank error %v", med, qs.RankError)
	}
	if _, err := c.RangeCount(ctx, "lat", 5, 4); !client.IsInvalid(err) {
		t.Errorf("RangeCount(5, 4) = %v", err)
	}

	if _, _, err := c.CreateSeries(ctx, "lat", client.SeriesRequest{Type: client.TypeCMS, Width: 500, Depth: 3, DomainBits: 16, Levels: map[string]string{client.LevelDay: "P30D"}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if _, err := c.AddSeriesInts(ctx, "lat", now, []int64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	day := now.Truncate(24 * time.Hour)
	src, err := c.SeriesRangeCount(ctx, "lat", day, day.Add(24*time.Hour), 2, 3)
	if err != nil || src.Estimate < 2 || src.Total != 3 || src.BucketCount() != 1 {
		t.Fatalf("SeriesRangeCount = %+v, %v", src, err)
	}
	sq, err := c.SeriesQuantiles(ctx, "lat", day, day.Add(24*time.Hour), 0)
	if err != nil || sq.N != 3 || sq.Quantiles[0].Value == nil {
		t.Fatalf("SeriesQuantiles = %+v, %v", sq, err)
	}
}
