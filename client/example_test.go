package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/sketchd/sketchd/client"
	"github.com/sketchd/sketchd/internal/server"
)

// exampleServer serves sketchd over a fresh store in a temporary
// directory, for the examples; stop shuts it down and removes the files.
func exampleServer() (url string, stop func()) {
	dir, err := os.MkdirTemp("", "sketchd-example")
	if err != nil {
		log.Fatal(err)
	}
	h, closeStore, err := openSketchd(filepath.Join(dir, "sketchd.db"), server.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	return srv.URL, func() {
		srv.Close()
		if err := closeStore(); err != nil {
			log.Print(err)
		}
		os.RemoveAll(dir)
	}
}

// A product backend counts distinct users: create a sketch, add ids,
// read the estimate with its error.
func Example() {
	url, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	c, err := client.New(url) // client.WithToken(…) when the server has tokens
	if err != nil {
		log.Fatal(err)
	}
	// Defaults: log2m 14, regwidth 5, as PostgreSQL's hll.
	if _, _, err := c.Create(ctx, "campaign:42", client.CreateRequest{}); err != nil {
		log.Fatal(err)
	}
	// Integer ids hash like hll_hash_bigint, text ids like hll_hash_text.
	if _, err := c.AddInts(ctx, "campaign:42", []int64{1001, 1002, 1003}); err != nil {
		log.Fatal(err)
	}
	if _, err := c.AddStrings(ctx, "campaign:42", []string{"alice@example.com"}); err != nil {
		log.Fatal(err)
	}
	s, err := c.Describe(ctx, "campaign:42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %.0f users ± %.1f%% (%s)\n", s.Name, s.Cardinality, 100*s.StdError, s.Representation)
	// Output: campaign:42: 4 users ± 0.0% (EXPLICIT)
}

// Unions and intersections of audiences; the intersection comes with its
// error envelope and a verdict.
func ExampleClient_Intersection() {
	url, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	c, _ := client.New(url)

	web, app := make([]int64, 0, 3000), make([]int64, 0, 3000)
	for id := range int64(3000) {
		web = append(web, id)      // users 0..2999 on the web
		app = append(app, id+2000) // users 2000..4999 in the app
	}
	c.AddInts(ctx, "web", web, client.WithCreate())
	c.AddInts(ctx, "app", app, client.WithCreate())

	u, err := c.Union(ctx, client.UnionRequest{Sketches: client.Names("web", "app"), Into: "anywhere"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("union: about %.0f, stored in %s\n", round100(u.Cardinality), u.Into)

	x, err := c.Intersection(ctx, client.IntersectionRequest{Sketches: client.Names("web", "app")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("both: about %.0f (true: 1000), in [lower, upper]: %v, disjoint? %v\n", round100(x.Estimate), x.Lower <= 1000 && 1000 <= x.Upper, x.Spurious)
	// Output:
	// union: about 5000, stored in anywhere
	// both: about 1000 (true: 1000), in [lower, upper]: true, disjoint? false
}

func round100(v float64) float64 { return float64(int64(v/100+0.5)) * 100 }

// Count-Min sketches count how often each id appears. Their adds are not
// retried: a retry after a lost answer could count twice.
func ExampleClient_AddItems() {
	url, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	c, _ := client.New(url)

	c.Create(ctx, "pageviews", client.CreateRequest{Type: client.TypeCMS, Epsilon: 0.001, Delta: 0.01, TopK: 10})
	c.AddItems(ctx, "pageviews", []client.Item{
		{ID: client.Text("alice"), Count: 3},
		{ID: client.Int(42), Count: 1},
	})
	f, err := c.Frequency(ctx, "pageviews", []client.ID{client.Text("alice")})
	if err != nil {
		log.Fatal(err)
	}
	r := f.Results[0]
	fmt.Printf("%v seen %d times (at most %.3f more, with probability %.3f)\n", r.ID, r.Estimate, r.ErrorBound, r.Confidence)
	top, _ := c.Top(ctx, "pageviews", 5)
	fmt.Println("heaviest:", top[0].ID, top[0].Estimate)
	// Output:
	// "alice" seen 3 times (at most 0.004 more, with probability 0.993)
	// heaviest: "alice" 3
}

// Errors are *client.Problem, the server's problem+json.
func ExampleIsNotFound() {
	url, stop := exampleServer()
	defer stop()
	c, _ := client.New(url)

	_, err := c.Describe(context.Background(), "no-such-sketch")
	if client.IsNotFound(err) {
		fmt.Println("not there")
	}
	var p *client.Problem
	if errors.As(err, &p) {
		fmt.Println(p.Status, p.Type)
	}
	// Output:
	// not there
	// 404 urn:sketchd:problem:not-found
}

// A Batcher takes ids one at a time from a backend's request handlers and
// sends them in large requests in the background. Close (or Flush) waits
// until they are durable.
func ExampleBatcher() {
	url, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	c, _ := client.New(url)

	b := client.NewBatcher(c, client.BatcherOptions{
		Create:   true,        // make missing sketches as HLLs
		Overflow: client.Drop, // never block a request on sketchd
		OnError:  func(err *client.BatchError) { log.Print(err) },
	})
	for user := range int64(1000) {
		// In a handler: one call per event, no waiting on the network.
		if err := b.AddInt(ctx, "active:2026-11-23", user%250); err != nil {
			log.Print(err) // client.ErrDropped when the buffer is full
		}
	}
	if err := b.Close(ctx); err != nil { // at shutdown
		log.Fatal(err)
	}
	st := b.Stats()
	s, _ := c.Describe(ctx, "active:2026-11-23")
	fmt.Printf("flushed %d ids, dropped %d; %.0f distinct users\n", st.Flushed, st.Dropped, s.Cardinality)
	// Output: flushed 1000 ids, dropped 0; 250 distinct users
}

// Sketches download in the storage format PostgreSQL's hll reads.
func ExampleClient_Raw() {
	url, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	c, _ := client.New(url)

	c.AddInts(ctx, "campaign:42", []int64{1, 2}, client.WithCreate())
	r, err := c.Raw(ctx, "campaign:42", client.RawOptions{Hex: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("SELECT hll_cardinality('%s'::hll);\n", r.Data)
	// Output: SELECT hll_cardinality('\x128e7fde0820a06c76c0a8004403b7fb05c44a'::hll);
}

// A series keeps one sketch per time bucket: adds carry a time, and
// counts and rolling lines (DAU, WAU, MAU) come from the fewest buckets.
func ExampleClient_SeriesTimeseries() {
	url, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	c, _ := client.New(url)

	c.CreateSeries(ctx, "active", client.SeriesRequest{Levels: map[string]string{client.LevelDay: "P400D"}})
	today := time.Now().UTC().Truncate(24 * time.Hour)
	yesterday := today.Add(-24 * time.Hour)
	c.AddSeriesInts(ctx, "active", yesterday, []int64{1, 2, 3})
	c.AddSeriesInts(ctx, "active", today, []int64{3, 4})

	// One point a day, each the distinct users of the two days up to it.
	ts, err := c.SeriesTimeseries(ctx, "active", client.TimeseriesRequest{
		From: yesterday, To: today.Add(24 * time.Hour), Step: "P1D", Window: "P2D",
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range ts.Points {
		fmt.Printf("%s: %.0f users in the two days up to it\n", p.Start.Sub(today), p.Cardinality)
	}
	n, _ := c.SeriesCount(ctx, "active", yesterday, today)
	fmt.Printf("yesterday alone: %.0f\n", n.Cardinality)
	// Output:
	// -24h0m0s: 3 users in the two days up to it
	// 0s: 4 users in the two days up to it
	// yesterday alone: 3
}
