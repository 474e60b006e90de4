package client_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/client"
)

// TestKLLCalls drives the KLL calls against the real server: values in,
// quantiles, ranks, CDF and PMF out, a library-style upload of longs, and
// a series' rolling p99.
func TestKLLCalls(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	ctx := t.Context()
	sk, _, err := c.Create(ctx, "lat", client.CreateRequest{Type: client.TypeKLL, K: 100})
	if err != nil || sk.Type != client.TypeKLL || sk.K != 100 || sk.Items != client.ItemsDouble || sk.Min != nil {
		t.Fatalf("Create = %+v, %v", sk, err)
	}
	vals := make([]float64, 10_000)
	for i := range vals {
		vals[i] = float64(i) / 10
	}
	if n, err := c.AddValues(ctx, "lat", vals); err != nil || n != 10_000 {
		t.Fatalf("AddValues = %d, %v", n, err)
	}
	if sk, err = c.Describe(ctx, "lat"); err != nil || sk.N != 10_000 || *sk.Min != 0 || *sk.Max != 999.9 || sk.RankError == 0 {
		t.Fatalf("Describe = %+v, %v", sk, err)
	}
	qa, err := c.Quantiles(ctx, "lat", 0.5, 1)
	if err != nil || qa.Type != client.TypeKLL || math.Abs(*qa.Quantiles[0].Value-500) > qa.RankError*1000 || *qa.Quantiles[1].Value != 999.9 {
		t.Fatalf("Quantiles = %+v, %v", qa, err)
	}
	rk, err := c.Rank(ctx, "lat", 250)
	if err != nil || math.Abs(rk.Ranks[0].Rank-0.25) > rk.RankError || rk.Ranks[0].Lower >= rk.Ranks[0].Rank {
		t.Fatalf("Rank = %+v, %v", rk, err)
	}
	cdf, err := c.CDF(ctx, "lat", 100, 900)
	if err != nil || len(cdf.Values) != 3 || cdf.Values[2] != 1 || math.Abs(cdf.Values[1]-0.9) > cdf.RankError {
		t.Fatalf("CDF = %+v, %v", cdf, err)
	}
	pmf, err := c.PMF(ctx, "lat", 100, 900)
	if err != nil || math.Abs(pmf.Values[1]-0.8) > pmf.RankError {
		t.Fatalf("PMF = %+v, %v", pmf, err)
	}
	if _, err := c.CDF(ctx, "lat", 900, 100); !client.IsInvalid(err) {
		t.Fatalf("CDF of decreasing splits = %v", err)
	}

	if _, _, err := c.Create(ctx, "sizes", client.CreateRequest{Type: client.TypeKLL, Items: client.ItemsLong}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddLongs(ctx, "sizes", []int64{3, 1, 2}); err != nil {
		t.Fatal(err)
	}
	raw, err := c.Raw(ctx, "sizes", client.RawOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lib := append([]byte(nil), raw.Data...)
	lib[7] = 0 // as the libraries write a sketch of longs
	if sk, _, err = c.PutRaw(ctx, "copy", lib, client.WithLongs()); err != nil || sk.Items != client.ItemsLong || sk.N != 3 {
		t.Fatalf("PutRaw(WithLongs) = %+v, %v", sk, err)
	}
	if sk, err = c.MergeRaw(ctx, "copy", lib, client.WithLongs()); err != nil || sk.N != 6 {
		t.Fatalf("MergeRaw(WithLongs) = %+v, %v", sk, err)
	}
	u, err := c.Union(ctx, client.UnionRequest{Sketches: client.Names("sizes", "copy")})
	if err != nil || u.Type != client.TypeKLL || u.N != 9 || *u.Max != 3 {
		t.Fatalf("Union = %+v, %v", u, err)
	}
	// Without an option the stored sketch says what the bytes keep; a new
	// sketch needs one.
	if sk, err = c.MergeRaw(ctx, "copy", lib); err != nil || sk.N != 9 || sk.Items != client.ItemsLong {
		t.Fatalf("MergeRaw into longs = %+v, %v", sk, err)
	}
	doubles, err := c.Raw(ctx, "lat", client.RawOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err = c.PutRaw(ctx, "copy2", doubles.Data); !client.IsInvalid(err) || !strings.Contains(err.Error(), "?items=long or ?items=double") {
		t.Fatalf("PutRaw of a library's KLL bytes into a new sketch = %v", err)
	}
	if sk, _, err = c.PutRaw(ctx, "copy2", doubles.Data, client.WithDoubles()); err != nil || sk.Items != client.ItemsDouble || sk.N != 10_000 {
		t.Fatalf("PutRaw(WithDoubles) = %+v, %v", sk, err)
	}
	if err = c.Delete(ctx, "copy2"); err != nil {
		t.Fatal(err)
	}

	if _, _, err := c.CreateSeries(ctx, "lat", client.SeriesRequest{Type: client.TypeKLL, K: 50, Levels: map[string]string{client.LevelDay: "P30D"}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	if _, err := c.AddSeriesValues(ctx, "lat", now, []float64{1, 2, 3, 100}); err != nil {
		t.Fatal(err)
	}
	ts, err := c.SeriesTimeseries(ctx, "lat", client.TimeseriesRequest{From: day, To: day.Add(24 * time.Hour), Q: []float64{0.99}})
	if err != nil || len(ts.Points) != 1 || *ts.Points[0].Quantiles[0].Value != 100 || ts.Points[0].Total != 4 {
		t.Fatalf("SeriesTimeseries = %+v, %v", ts, err)
	}
	cnt, err := c.SeriesCount(ctx, "lat", day, day.Add(24*time.Hour))
	if err != nil || cnt.KLL == nil || cnt.KLL.N != 4 || cnt.KLL.K != 50 {
		t.Fatalf("SeriesCount = %+v, %v", cnt, err)
	}
	sr, err := c.SeriesRank(ctx, "lat", day, day.Add(24*time.Hour), 3)
	if err != nil || sr.Ranks[0].Rank != 0.75 {
		t.Fatalf("SeriesRank = %+v, %v", sr, err)
	}
	sc, err := c.SeriesCDF(ctx, "lat", day, day.Add(24*time.Hour), 2)
	if err != nil || sc.Values[0] != 0.5 {
		t.Fatalf("SeriesCDF = %+v, %v", sc, err)
	}
	sp, err := c.SeriesPMF(ctx, "lat", day, day.Add(24*time.Hour), 2)
	if err != nil || sp.Values[1] != 0.5 || sp.BucketCount() != 1 {
		t.Fatalf("SeriesPMF = %+v, %v", sp, err)
	}
	if _, _, err := c.CreateSeries(ctx, "sizes", client.SeriesRequest{Type: client.TypeKLL, Items: client.ItemsLong, Levels: map[string]string{client.LevelDay: "P30D"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddSeriesLongs(ctx, "sizes", now, []int64{-4, 9}); err != nil {
		t.Fatal(err)
	}
	if q, err := c.SeriesQuantiles(ctx, "sizes", day, day.Add(24*time.Hour), 0, 1); err != nil || *q.Quantiles[0].Value != -4 || *q.Quantiles[1].Value != 9 {
		t.Fatalf("SeriesQuantiles of longs = %+v, %v", q, err)
	}
}
