package client_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/sketchd/sketchd/client"
)

// TestSeriesCalls drives every series method against the real server.
func TestSeriesCalls(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	ctx := t.Context()
	today := time.Now().UTC().Truncate(24 * time.Hour)
	yesterday := today.Add(-24 * time.Hour)
	tomorrow := today.Add(24 * time.Hour)

	sr, created, err := c.CreateSeries(ctx, "dau", client.SeriesRequest{Levels: map[string]string{client.LevelHour: "P14D", client.LevelDay: "P400D"}})
	if err != nil || !created || sr.Type != client.TypeHLL || sr.TZ != "UTC" || sr.LateLimit != "P7D" || len(sr.Levels) != 2 || sr.Params["log2m"] != 14.0 {
		t.Fatalf("CreateSeries(dau) = %+v, %v, %v", sr, created, err)
	}
	if _, created, err = c.CreateSeries(ctx, "dau", client.SeriesRequest{Levels: map[string]string{client.LevelHour: "P14D", client.LevelDay: "P400D"}}); err != nil || created {
		t.Fatalf("CreateSeries(dau) again = %v, %v; want existing", created, err)
	}
	if _, _, err = c.CreateSeries(ctx, "dau", client.SeriesRequest{Levels: map[string]string{client.LevelDay: "P30D"}}); !client.IsConflict(err) {
		t.Fatalf("CreateSeries(dau, other levels) = %v, want a conflict", err)
	}

	add := func(what string, n int, err error, want int) {
		t.Helper()
		if err != nil || n != want {
			t.Fatalf("%s = %d, %v; want %d", what, n, err, want)
		}
	}
	n, err := c.AddSeriesInts(ctx, "dau", yesterday.Add(time.Hour), []int64{1, 2, 3})
	add("AddSeriesInts", n, err, 3)
	n, err = c.AddSeriesStrings(ctx, "dau", today, []string{"a", "b"})
	add("AddSeriesStrings", n, err, 2)
	n, err = c.AddSeriesIDs(ctx, "dau", today, []client.ID{client.Int(3), client.Text("c")})
	add("AddSeriesIDs", n, err, 2)
	n, err = c.AddSeriesHashes(ctx, "dau", today, []int64{0x7e57})
	add("AddSeriesHashes", n, err, 1)
	if _, err := c.AddSeriesInts(ctx, "dau", today.Add(-30*24*time.Hour), []int64{9}); !client.IsUnprocessable(err) {
		t.Fatalf("AddSeriesInts 30 days late = %v, want unprocessable (422)", err)
	}
	// Backfill: with late_limit P60D, 30 days late goes to days only.
	if _, _, err := c.CreateSeries(ctx, "hist", client.SeriesRequest{Levels: map[string]string{client.LevelHour: "P14D", client.LevelDay: "P400D"}}); err != nil {
		t.Fatal(err)
	}
	ch, err := c.ChangeSeries(ctx, "hist", client.SeriesChange{LateLimit: "P60D"})
	if err != nil || ch.LateLimit != "P60D" || ch.Levels[0].Retention != "P14D" {
		t.Fatalf("ChangeSeries(late_limit P60D) = %+v, %v", ch, err)
	}
	ba, err := c.BackfillSeries(ctx, "hist", today.Add(-30*24*time.Hour), []client.ID{client.Int(9)})
	if err != nil || ba.Accepted != 1 || len(ba.Levels) != 1 || ba.Levels[0] != client.LevelDay || len(ba.Warnings) != 1 {
		t.Fatalf("BackfillSeries 30 days late = %+v, %v; want the day level only, with a warning", ba, err)
	}
	if _, err := c.ChangeSeries(ctx, "hist", client.SeriesChange{Levels: map[string]string{client.LevelMonth: "P5Y"}}); !client.IsInvalid(err) {
		t.Fatalf("ChangeSeries(a level not kept) = %v, want invalid", err)
	}
	if ch, err = c.ChangeSeries(ctx, "hist", client.SeriesChange{LateLimit: "P7D"}); err != nil || ch.LateLimit != "P7D" {
		t.Fatalf("ChangeSeries(late_limit P7D) = %+v, %v", ch, err)
	}
	if err := c.DeleteSeries(ctx, "hist"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddSeriesInts(ctx, "dau", today, []int64{9}, client.WithCreate()); err == nil || client.StatusOf(err) != 0 {
		t.Fatalf("AddSeriesInts with WithCreate = %v, want an error before sending", err)
	}

	// Yesterday {1,2,3}; today {a,b,3,c,hash}; both days 7 distinct.
	cnt, err := c.SeriesCount(ctx, "dau", yesterday, today)
	if err != nil || cnt.Cardinality != 3 || !cnt.From.Equal(yesterday) || !cnt.To.Equal(today) || cnt.Buckets != nil ||
		len(cnt.Plan) != 1 || cnt.Plan[0].Level != client.LevelDay || !cnt.Plan[0].First.Equal(yesterday) || !cnt.Plan[0].Last.Equal(yesterday) || cnt.BucketCount() != 1 {
		t.Fatalf("SeriesCount(yesterday) = %+v, %v; want 3 from a plan of one day bucket", cnt, err)
	}
	cnt, err = c.SeriesCountBuckets(ctx, "dau", yesterday, tomorrow)
	if err != nil || cnt.Cardinality != 7 || len(cnt.Buckets) != 2 || cnt.Buckets[1].Level != client.LevelDay || !cnt.Buckets[1].Start.Equal(today) || cnt.BucketCount() != 2 {
		t.Fatalf("SeriesCountBuckets(two days) = %+v, %v; want 7 from two day buckets, listed", cnt, err)
	}
	if cnt, err = c.SeriesCount(ctx, "dau", yesterday, tomorrow); err != nil || cnt.Cardinality != 7 {
		t.Fatalf("SeriesCount(two days) = %+v, %v; want 7", cnt, err)
	}
	ts, err := c.SeriesTimeseries(ctx, "dau", client.TimeseriesRequest{From: yesterday, To: tomorrow, Step: "P1D"})
	if err != nil || ts.Step != "P1D" || ts.Window != "P1D" || len(ts.Points) != 2 || ts.Points[0].Cardinality != 3 || ts.Points[1].Cardinality != 5 ||
		!ts.Points[1].Start.Equal(today) || !ts.Points[1].WindowFrom.Equal(today) {
		t.Fatalf("SeriesTimeseries = %+v, %v; want points 3 and 5", ts, err)
	}
	if ts, err = c.SeriesTimeseries(ctx, "dau", client.TimeseriesRequest{From: today, To: tomorrow, Window: "P2D"}); err != nil || len(ts.Points) != 1 || ts.Points[0].Cardinality != 7 {
		t.Fatalf("SeriesTimeseries(window 2 days) = %+v, %v; want one point of 7", ts, err)
	}
	raw, err := c.SeriesRaw(ctx, "dau", yesterday, tomorrow, false)
	if err != nil || len(raw.Data) == 0 || !raw.From.Equal(yesterday) || raw.Buckets != 2 ||
		len(raw.Plan) != 1 || raw.Plan[0] != (client.PlanRun{Level: client.LevelDay, First: raw.Plan[0].First, Last: raw.Plan[0].Last, Count: 2}) || !raw.Plan[0].First.Equal(yesterday) || !raw.Plan[0].Last.Equal(today) {
		t.Fatalf("SeriesRaw = %+v, %v", raw, err)
	}
	if sk, _, err := c.PutRaw(ctx, "both-days", raw.Data); err != nil || sk.Cardinality != 7 {
		t.Fatalf("the series' raw union holds %+v, %v; want 7", sk, err)
	}
	// Series ranges as union and intersection operands, and events.
	u, err := c.Union(ctx, client.UnionRequest{Sketches: []client.Operand{{Series: "dau", From: yesterday, To: today}, {Sketch: "both-days"}}})
	if err != nil || u.Cardinality != 7 {
		t.Fatalf("Union(yesterday of dau, both-days) = %+v, %v; want 7", u, err)
	}
	x, err := c.Intersection(ctx, client.IntersectionRequest{Method: client.MethodInclusionExclusion, Sketches: []client.Operand{
		{Series: "dau", From: yesterday, To: today}, {Series: "dau", From: today, To: tomorrow}}})
	if err != nil || x.Estimate != 1 {
		t.Fatalf("Intersection(yesterday, today) = %+v, %v; want 1 (id 3)", x, err)
	}
	if _, err := c.Union(ctx, client.UnionRequest{Sketches: []client.Operand{{Sketch: "a", Series: "dau"}}}); err == nil || client.StatusOf(err) != 0 {
		t.Fatalf("Union of an operand naming a sketch and a series = %v, want an error before sending", err)
	}
	n, err = c.AddEvents(ctx, []client.Event{{ID: client.Int(99), Series: []string{"dau"}, TS: today}, {ID: client.Int(98), Series: []string{"dau"}, Sketches: []string{"both-days"}, TS: today}})
	add("AddEvents(series)", n, err, 2)
	if cnt, err = c.SeriesCount(ctx, "dau", today, tomorrow); err != nil || cnt.Cardinality != 7 {
		t.Fatalf("SeriesCount(today) after events = %+v, %v; want 7", cnt, err)
	}
	hex, err := c.SeriesRaw(ctx, "dau", yesterday, tomorrow, true)
	if err != nil || !bytes.HasPrefix(hex.Data, []byte(`\x`)) {
		t.Fatalf("SeriesRaw(hex) = %q, %v", hex.Data, err)
	}
	sr, err = c.DescribeSeries(ctx, "dau")
	if err != nil || sr.SizeBytes == 0 {
		t.Fatalf("DescribeSeries = %+v, %v", sr, err)
	}
	for _, l := range sr.Levels {
		if l.Buckets != 2 || !l.Oldest.Before(l.Newest) {
			t.Errorf("level %+v, want 2 buckets, oldest before newest", l)
		}
	}

	// A Count-Min series.
	if _, _, err := c.CreateSeries(ctx, "views", client.SeriesRequest{Type: client.TypeCMS, TopK: 5, Levels: map[string]string{client.LevelDay: "P30D"}}); err != nil {
		t.Fatal(err)
	}
	n, err = c.AddSeriesItems(ctx, "views", today, []client.Item{{ID: client.Text("alice"), Count: 3}, {ID: client.Int(42), Count: 1}})
	add("AddSeriesItems", n, err, 2)
	cnt, err = c.SeriesCount(ctx, "views", yesterday, tomorrow, client.Text("alice"))
	if err != nil || cnt.Total != 4 || len(cnt.Results) != 1 || cnt.Results[0].Estimate != 3 || cnt.Results[0].ID != client.Text("alice") {
		t.Fatalf("SeriesCount(views, alice) = %+v, %v", cnt, err)
	}
	top, err := c.SeriesTop(ctx, "views", yesterday, tomorrow, 1)
	if err != nil || len(top.Items) != 1 || top.Items[0].ID != client.Text("alice") || top.Items[0].Estimate != 3 || top.BucketCount() != 2 {
		t.Fatalf("SeriesTop(views) = %+v, %v", top, err)
	}
	if _, err := c.SeriesTop(ctx, "dau", yesterday, tomorrow, 1); !client.IsConflict(err) {
		t.Fatalf("SeriesTop(an hll series) = %v, want a conflict", err)
	}

	page, err := c.ListSeries(ctx, client.ListOptions{Limit: 1})
	if err != nil || len(page.Series) != 1 || page.Series[0].Name != "dau" || page.Next != "dau" {
		t.Fatalf("ListSeries(limit 1) = %+v, %v", page, err)
	}
	if page, err = c.ListSeries(ctx, client.ListOptions{After: page.Next}); err != nil || len(page.Series) != 1 || page.Series[0].Name != "views" || page.Next != "" {
		t.Fatalf("ListSeries(second page) = %+v, %v", page, err)
	}
	if err := c.DeleteSeries(ctx, "views"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DescribeSeries(ctx, "views"); !client.IsNotFound(err) {
		t.Fatalf("DescribeSeries(deleted) = %v, want not found", err)
	}
}

// TestMergeRawFold: an upload with fewer registers is a conflict unless
// the call asks to fold the stored sketch down.
func TestMergeRawFold(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	ctx := t.Context()
	c.AddInts(ctx, "small", []int64{1, 2}, client.WithCreate())
	if _, err := c.Fold(ctx, "small", client.FoldRequest{Log2m: 10}); err != nil {
		t.Fatal(err)
	}
	small, err := c.Raw(ctx, "small", client.RawOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.AddInts(ctx, "big", []int64{3}, client.WithCreate())
	if _, err := c.MergeRaw(ctx, "big", small.Data); !client.IsConflict(err) {
		t.Fatalf("MergeRaw of fewer registers = %v, want a conflict", err)
	}
	sk, err := c.MergeRaw(ctx, "big", small.Data, client.WithFold())
	if err != nil || sk.Log2m != 10 || sk.FoldedFromLog2m != 14 || sk.Cardinality != 3 {
		t.Fatalf("MergeRaw with WithFold = %+v, %v; want log2m 10 folded from 14, 3 ids", sk, err)
	}
}

// TestImportBuckets: sketches downloaded from one sketch become buckets
// of a series, one at a time and in bulk, and the series counts them.
func TestImportBuckets(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	ctx := t.Context()
	if _, _, err := c.CreateSeries(ctx, "h", client.SeriesRequest{Levels: map[string]string{client.LevelDay: "P400D", client.LevelMonth: "P5Y"}}); err != nil {
		t.Fatal(err)
	}
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -50)
	var bulk []client.BucketImport
	for i := range 5 {
		ids := make([]int64, 100)
		for j := range ids {
			ids[j] = int64(i*50 + j) // 300 distinct over the five days
		}
		name := "d" + string(rune('0'+i))
		if _, err := c.AddInts(ctx, name, ids, client.WithCreate()); err != nil {
			t.Fatal(err)
		}
		raw, err := c.Raw(ctx, name, client.RawOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bulk = append(bulk, client.BucketImport{Level: client.LevelDay, Start: day.AddDate(0, 0, i), Data: raw.Data})
	}
	got, err := c.PutBucket(ctx, "h", client.LevelDay, day, bulk[0].Data)
	if err != nil || len(got.Buckets) != 2 || got.Buckets[0].Action != "replaced" || got.Buckets[1].Action != "rolled_up" {
		t.Fatalf("PutBucket = %+v, %v; want the day replaced, its month rolled up", got, err)
	}
	if got, err = c.ImportBuckets(ctx, "h", bulk[1:]); err != nil || len(got.Buckets) < 5 {
		t.Fatalf("ImportBuckets = %+v, %v", got, err)
	}
	cnt, err := c.SeriesCount(ctx, "h", day, day.AddDate(0, 0, 5))
	if err != nil || cnt.Cardinality != 300 {
		t.Fatalf("SeriesCount over the imported days = %+v, %v; want 300", cnt, err)
	}
	if _, err = c.MergeBucket(ctx, "h", client.LevelDay, day.Add(time.Hour), bulk[0].Data); !client.IsInvalid(err) {
		t.Fatalf("MergeBucket inside a day = %v, want invalid", err)
	}
	if got, err = c.MergeBuckets(ctx, "h", bulk[:1]); err != nil || got.Buckets[0].Action != "merged" {
		t.Fatalf("MergeBuckets = %+v, %v", got, err)
	}
}

// TestRetentionAndFunnel: a daily retention table and a funnel over a
// series, against the real server.
func TestRetentionAndFunnel(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	ctx := t.Context()
	if _, _, err := c.CreateSeries(ctx, "a", client.SeriesRequest{Levels: map[string]string{client.LevelDay: "P400D"}, LateLimit: "P30D"}); err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	first := today.AddDate(0, 0, -3)
	for d := range 3 {
		ids := make([]int64, 300)
		for i := range ids {
			ids[i] = int64(100*d + i)
		}
		if _, err := c.AddSeriesInts(ctx, "a", first.AddDate(0, 0, d).Add(time.Hour), ids); err != nil {
			t.Fatal(err)
		}
	}
	r, err := c.Retention(ctx, client.RetentionRequest{Series: "a", Period: client.PeriodDay, Start: first, Cohorts: 2, Periods: 2})
	if err != nil || len(r.Cohorts) != 2 || len(r.Cohorts[0].Cells) != 2 || r.Cohorts[0].Cells[0].Estimate != 200 || r.Cohorts[0].Cells[1].Share.Estimate != 100.0/300 || !r.Cohorts[0].Cells[0].Reliable {
		t.Fatalf("Retention = %+v, %v", r, err)
	}
	day := func(d int) client.Operand {
		return client.Operand{Series: "a", From: first.AddDate(0, 0, d), To: first.AddDate(0, 0, d+1)}
	}
	f, err := c.Funnel(ctx, client.FunnelRequest{Steps: []client.Operand{day(0), day(1), day(2)}})
	if err != nil || len(f.Steps) != 3 || f.Steps[0].Conversion != nil || f.Steps[2].Estimate != 100 || f.Steps[2].Conversion.Estimate != 0.5 || f.Steps[2].Overall.Estimate != 100.0/300 {
		t.Fatalf("Funnel = %+v, %v", f, err)
	}
	if _, err := c.Funnel(ctx, client.FunnelRequest{Steps: []client.Operand{day(0)}}); !client.IsInvalid(err) {
		t.Fatalf("Funnel of one step = %v, want invalid", err)
	}
}
