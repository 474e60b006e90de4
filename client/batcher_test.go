package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sketchd/sketchd/client"
	"github.com/sketchd/sketchd/internal/hll"
)

// reference builds in process the HLL sketchd should hold after the
// given ids, with the default parameters, and returns its bytes.
func reference(tb testing.TB, ints []int64, texts []string, hashes []int64) []byte {
	tb.Helper()
	s, err := hll.New(hll.DefaultParams())
	if err != nil {
		tb.Fatal(err)
	}
	for _, v := range ints {
		s.AddInt64(v)
	}
	for _, v := range texts {
		s.AddString(v)
	}
	for _, h := range hashes {
		s.AddHash(uint64(h))
	}
	b, err := s.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func rawBytes(tb testing.TB, c *client.Client, name string) []byte {
	tb.Helper()
	r, err := c.Raw(tb.Context(), name, client.RawOptions{})
	if err != nil {
		tb.Fatalf("Raw(%s): %v", name, err)
	}
	return r.Data
}

// TestBatcherConcurrent adds ints, texts and hashes to several sketches
// from many goroutines (run it with -race), closes the batcher, and
// compares every sketch byte for byte with one built from the same ids
// in process.
func TestBatcherConcurrent(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	var errs atomic.Int64
	b := client.NewBatcher(c, client.BatcherOptions{
		MaxBatch: 700, Interval: 5 * time.Millisecond, Concurrency: 3, Create: true,
		OnError: func(e *client.BatchError) { errs.Add(1); t.Errorf("batch error: %v", e) },
	})
	const goroutines, perG, sketches = 16, 3000, 4
	want := make([]struct {
		ints   []int64
		texts  []string
		hashes []int64
	}, sketches)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			ctx := context.Background()
			for i := range perG {
				v := int64(g*perG + i)
				k := int(v) % sketches
				name := fmt.Sprintf("s%d", k)
				var err error
				switch i % 4 {
				case 0:
					err = b.AddInt(ctx, name, v)
				case 1:
					err = b.AddInts(ctx, name, v, -v)
				case 2:
					err = b.AddStrings(ctx, name, fmt.Sprintf("user-%d", v))
				case 3:
					err = b.AddHashes(ctx, name, v*0x1E3779B97F4A7C15)
				}
				if err != nil {
					t.Errorf("add: %v", err)
					return
				}
				mu.Lock()
				w := &want[k]
				switch i % 4 {
				case 0:
					w.ints = append(w.ints, v)
				case 1:
					w.ints = append(w.ints, v, -v)
				case 2:
					w.texts = append(w.texts, fmt.Sprintf("user-%d", v))
				case 3:
					w.hashes = append(w.hashes, v*0x1E3779B97F4A7C15)
				}
				mu.Unlock()
				if i%500 == 0 {
					if err := b.Flush(ctx); err != nil {
						t.Errorf("Flush: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	if err := b.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	st := b.Stats()
	total := uint64(goroutines * perG * 5 / 4)
	if st.Added != total || st.Flushed != total || st.Failed != 0 || st.Dropped != 0 || st.BufferedBytes != 0 || errs.Load() != 0 {
		t.Fatalf("Stats = %+v, want %d added and flushed, nothing else", st, total)
	}
	for k := range sketches {
		name := fmt.Sprintf("s%d", k)
		got := rawBytes(t, c, name)
		if w := reference(t, want[k].ints, want[k].texts, want[k].hashes); !bytes.Equal(got, w) {
			t.Errorf("%s holds %d bytes that differ from the %d of a sketch built from the same ids", name, len(got), len(w))
		}
	}
	if err := b.AddInt(t.Context(), "s0", 1); !errors.Is(err, client.ErrClosed) {
		t.Errorf("AddInt after Close = %v, want ErrClosed", err)
	}
	if err := b.Close(t.Context()); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// TestBatcherFlushOnClose: with an interval and a batch size never
// reached, nothing is sent until Close, which sends it all.
func TestBatcherFlushOnClose(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	for _, n := range []string{"a", "b"} {
		if _, _, err := c.Create(t.Context(), n, client.CreateRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	b := client.NewBatcher(c, client.BatcherOptions{Interval: time.Hour, MaxBatch: 1 << 20})
	ctx := t.Context()
	ints := []int64{10, 20, 30}
	if err := b.AddInts(ctx, "a", ints...); err != nil {
		t.Fatal(err)
	}
	if err := b.AddStrings(ctx, "b", "x", "y"); err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.Requests != 0 || st.Added != 5 || st.BufferedBytes != 24+len(`"x","y"`) {
		t.Fatalf("Stats before Close = %+v; want 5 ids buffered in 31 bytes, no request", st)
	}
	if sk, _ := c.Describe(ctx, "a"); sk.Cardinality != 0 {
		t.Fatalf("a holds %v before Close", sk.Cardinality)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := rawBytes(t, c, "a"), reference(t, ints, nil, nil); !bytes.Equal(got, want) {
		t.Errorf("a after Close = %x, want %x", got, want)
	}
	if got, want := rawBytes(t, c, "b"), reference(t, nil, []string{"x", "y"}, nil); !bytes.Equal(got, want) {
		t.Errorf("b after Close = %x, want %x", got, want)
	}
	if st := b.Stats(); st.Requests != 2 || st.Flushed != 5 {
		t.Errorf("Stats after Close = %+v; want 2 requests, 5 flushed", st)
	}
}

// TestBatcherInterval: ids are sent within the interval without a Flush.
func TestBatcherInterval(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	b := client.NewBatcher(c, client.BatcherOptions{Interval: 10 * time.Millisecond, Create: true})
	defer b.Close(context.Background())
	if err := b.AddInts(t.Context(), "a", 1, 2, 3); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.Stats().Flushed != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("ids not sent 10 s after an add with a 10 ms interval: %+v", b.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if sk, err := c.Describe(t.Context(), "a"); err != nil || sk.Cardinality != 3 {
		t.Fatalf("Describe(a) = %+v, %v", sk, err)
	}
}

// TestBatcherErrors: a request that fails reaches OnError with its
// sketch and count, Flush returns it, and Stats counts the ids as failed.
func TestBatcherErrors(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	if _, _, err := c.Create(t.Context(), "ok", client.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	reported := make(chan *client.BatchError, 10)
	b := client.NewBatcher(c, client.BatcherOptions{Interval: time.Hour, OnError: func(e *client.BatchError) { reported <- e }})
	ctx := t.Context()
	b.AddInts(ctx, "ok", 1, 2)
	b.AddInts(ctx, "missing", 1, 2, 3)
	err := b.Flush(ctx)
	var be *client.BatchError
	if !errors.As(err, &be) || be.Sketch != "missing" || be.Count != 3 || !client.IsNotFound(err) {
		t.Fatalf("Flush = %v; want the 404 for the 3 ids of missing", err)
	}
	select {
	case e := <-reported:
		if e.Sketch != "missing" || e.Count != 3 || !client.IsNotFound(e) {
			t.Errorf("OnError got %v", e)
		}
	default:
		t.Error("OnError was not called before Flush returned")
	}
	if st := b.Stats(); st.Flushed != 2 || st.Failed != 3 || st.Added != 5 {
		t.Errorf("Stats = %+v; want 2 flushed, 3 failed", st)
	}
	if err := b.AddStrings(ctx, "ok", "fine", "\xff\xfe"); err == nil || b.Stats().Added != 5 {
		t.Errorf("AddStrings(invalid UTF-8) = %v, added %d; want an error and nothing added", err, b.Stats().Added)
	}
	if err := b.Close(ctx); err != nil {
		t.Errorf("Close = %v (the failure was reported by Flush already)", err)
	}
}

// stalledAdds holds every add request until released.
type stalledAdds struct {
	release chan struct{}
	waiting atomic.Int64
}

func (s *stalledAdds) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			s.waiting.Add(1)
			select {
			case <-s.release:
			case <-r.Context().Done():
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// TestBatcherBoundWhenStalled: with the server not answering, the buffer
// stops at MaxBufferBytes; Drop counts what it refused, Block makes the
// add wait for its context; once the server answers, everything accepted
// arrives.
func TestBatcherBoundWhenStalled(t *testing.T) {
	t.Parallel()
	for _, overflow := range []client.Overflow{client.Drop, client.Block} {
		t.Run(fmt.Sprint(overflow), func(t *testing.T) {
			t.Parallel()
			st := &stalledAdds{release: make(chan struct{})}
			s := startSketchd(t, st.wrap)
			c := newClient(t, s)
			if _, _, err := c.Create(t.Context(), "a", client.CreateRequest{}); err != nil {
				t.Fatal(err)
			}
			const maxBytes = 8 * 1000
			b := client.NewBatcher(c, client.BatcherOptions{MaxBatch: 100, MaxBufferBytes: maxBytes, Interval: time.Millisecond, Concurrency: 2, Overflow: overflow})
			var accepted []int64
			var dropped int
			for i := range int64(3000) {
				ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
				err := b.AddInt(ctx, "a", i)
				cancel()
				switch {
				case err == nil:
					accepted = append(accepted, i)
				case overflow == client.Drop && errors.Is(err, client.ErrDropped),
					overflow == client.Block && errors.Is(err, context.DeadlineExceeded):
					dropped++
				default:
					t.Fatalf("AddInt(%d) = %v", i, err)
				}
				if got := b.Stats().BufferedBytes; got > maxBytes {
					t.Fatalf("%d bytes buffered, over the bound %d", got, maxBytes)
				}
			}
			stats := b.Stats()
			if len(accepted) != maxBytes/8 || stats.Added != uint64(len(accepted)) || stats.BufferedBytes != maxBytes {
				t.Fatalf("accepted %d ids, Stats %+v; want exactly the %d that fit", len(accepted), stats, maxBytes/8)
			}
			if overflow == client.Drop && stats.Dropped != uint64(dropped) || overflow == client.Block && stats.Dropped != 0 {
				t.Fatalf("Stats.Dropped = %d, saw %d refusals", stats.Dropped, dropped)
			}
			if n := st.waiting.Load(); n > 2 {
				t.Fatalf("%d requests in flight, more than Concurrency 2", n)
			}
			close(st.release)
			if err := b.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got, want := rawBytes(t, c, "a"), reference(t, accepted, nil, nil); !bytes.Equal(got, want) {
				t.Errorf("after the stall the sketch is not the one built from the %d accepted ids", len(accepted))
			}
		})
	}
}

// TestBatcherCloseTimeout: Close with a context that ends while the
// server stalls returns its error, cancels the requests and counts their
// ids as failed.
func TestBatcherCloseTimeout(t *testing.T) {
	t.Parallel()
	st := &stalledAdds{release: make(chan struct{})}
	defer close(st.release)
	s := startSketchd(t, st.wrap)
	c := newClient(t, s)
	b := client.NewBatcher(c, client.BatcherOptions{Create: true})
	if err := b.AddInts(t.Context(), "a", 1, 2, 3); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := b.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want the deadline", err)
	}
	if stats := b.Stats(); stats.Failed != 3 || stats.Flushed != 0 || stats.BufferedBytes != 0 {
		t.Fatalf("Stats after a timed-out Close = %+v; want 3 failed", stats)
	}
}

// TestBatcherCountMinNotRetried: without Idempotency-Keys a Count-Min
// batcher sends once.
func TestBatcherCountMinNotRetried(t *testing.T) {
	t.Parallel()
	f := newFaults("/add", 1, unavailable("0"))
	s := startSketchd(t, f.wrap)
	c := newClient(t, s, quick, client.WithoutIdempotencyKeys())
	if _, _, err := c.Create(t.Context(), "c", client.CreateRequest{Type: client.TypeCMS}); err != nil {
		t.Fatal(err)
	}
	b := client.NewBatcher(c, client.BatcherOptions{CountMin: true})
	b.AddInts(t.Context(), "c", 1, 1, 2)
	if err := b.Flush(t.Context()); !client.IsUnavailable(err) || f.seen.Load() != 1 {
		t.Fatalf("Flush = %v after %d requests; want the 503 after one", err, f.seen.Load())
	}
	b.AddInts(t.Context(), "c", 1, 1, 2)
	if err := b.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if sk, _ := c.Describe(t.Context(), "c"); sk.Total != 3 {
		t.Fatalf("total = %d, want 3 (the second flush only)", sk.Total)
	}
}

// TestBatcherDurable: what the batcher reports flushed survives a
// restart of the server and its store.
func TestBatcherDurable(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	c := newClient(t, s)
	b := client.NewBatcher(c, client.BatcherOptions{MaxBatch: 1000, Create: true})
	var ids []int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	for g := range 8 {
		wg.Go(func() {
			for i := range 5000 {
				v := int64(g)<<32 | int64(i)
				if err := b.AddInt(context.Background(), "d", v); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ids = append(ids, v)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := b.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.Flushed != 40_000 {
		t.Fatalf("Flushed = %d, want 40000", st.Flushed)
	}
	// Stop the server and close the store without any further request,
	// then serve the same file again.
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	again := startSketchdAt(t, s.path, nil)
	c2 := newClient(t, again)
	if got, want := rawBytes(t, c2, "d"), reference(t, ids, nil, nil); !bytes.Equal(got, want) {
		t.Fatalf("after a restart d is not the sketch of the 40,000 flushed ids")
	}
	b.Close(t.Context())
}

// TestBatcherTinyBuffer: a bound too small for one id is an error, not a
// hang.
func TestBatcherTinyBuffer(t *testing.T) {
	t.Parallel()
	s := startSketchd(t, nil)
	b := client.NewBatcher(newClient(t, s), client.BatcherOptions{MaxBufferBytes: 7})
	defer b.Close(t.Context())
	for name, add := range map[string]func() error{
		"AddInt":     func() error { return b.AddInt(t.Context(), "a", 1) },
		"AddInts":    func() error { return b.AddInts(t.Context(), "a", 1, 2) },
		"AddHashes":  func() error { return b.AddHashes(t.Context(), "a", 1) },
		"AddStrings": func() error { return b.AddStrings(t.Context(), "a", "eight by") },
	} {
		if err := add(); err == nil || errors.Is(err, client.ErrDropped) {
			t.Errorf("%s with a 7-byte bound = %v, want an error", name, err)
		}
	}
	if st := b.Stats(); st.Added != 0 || st.BufferedBytes != 0 {
		t.Errorf("Stats = %+v, want nothing added", st)
	}
}
