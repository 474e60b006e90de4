package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sketchd "github.com/sketchd/sketchd/client"
	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
)

// faultProxy stands between clients and one sketchd process, as a load
// balancer would, and loses answers of writes the process committed:
//
//   - every dropEvery-th write is forwarded, answered by sketchd, and then
//     its connection is reset instead of answered (a load balancer timing
//     out, a client deadline);
//   - every killEvery-th write is forwarded and answered by sketchd, which
//     the proxy then kills with SIGKILL before it passes the answer on, so
//     the process dies between the commit and the answer; it is started
//     again on the same data (or database) and the connection is reset.
//
// Writes in flight when the process dies are cut too. While it is down
// the proxy answers 503 with Retry-After, as a load balancer does.
type faultProxy struct {
	launch               func() (*proc, error)
	dropEvery, killEvery int64

	mu      sync.RWMutex // held for writing while the process restarts
	p       *proc
	rt      *http.Transport
	writes  atomic.Int64
	dropped atomic.Int64
	killed  atomic.Int64
	failed  atomic.Pointer[error]
}

func (f *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	write := r.Method != http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/") &&
		!strings.HasSuffix(r.URL.Path, "/frequency") && r.URL.Path != "/v1/intersection"
	var n int64
	if write {
		n = f.writes.Add(1)
	}
	f.mu.RLock()
	addr := f.p.addr
	f.mu.RUnlock()
	out, _ := http.NewRequestWithContext(r.Context(), r.Method, "http://"+addr+r.URL.RequestURI(), bytes.NewReader(body))
	out.Header = r.Header.Clone()
	resp, err := f.rt.RoundTrip(out)
	if err != nil {
		// Down, restarting, or killed under this request: its outcome is
		// unknown to the client, as behind a real load balancer.
		w.Header().Set("Retry-After", "1")
		http.Error(w, "upstream unavailable", http.StatusServiceUnavailable)
		return
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "upstream cut off", http.StatusServiceUnavailable)
		return
	}
	switch {
	case write && f.killEvery > 0 && n%f.killEvery == 0:
		f.restart()
		f.killed.Add(1)
		reset(w)
		return
	case write && f.dropEvery > 0 && n%f.dropEvery == 0:
		f.dropped.Add(1)
		reset(w)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}

// restart kills the process with SIGKILL and starts it again.
func (f *faultProxy) restart() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.p.kill()
	f.rt.CloseIdleConnections()
	p, err := f.launch()
	if err != nil {
		f.failed.Store(&err)
		return
	}
	f.p = p
}

// reset closes the client's connection with an RST instead of an answer.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// launch starts the sketchd binary with args and waits until it is ready,
// returning an error rather than failing the test (it runs in the proxy).
func launch(tb testing.TB, args ...string) (*proc, error) {
	p := &proc{addr: freeAddr(tb), stderr: &syncWriter{w: &bytes.Buffer{}}, exited: make(chan struct{})}
	p.cmd = exec.Command(sketchdBinary(tb), append([]string{"-addr", p.addr, "-log-level", "warn", "-drain-delay", "0s"}, args...)...)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	c := newClient(p.addr)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return nil, fmt.Errorf("sketchd exited at start: %v\n%s", p.err, p.log())
		default:
		}
		if status, _, err := c.do("GET", "/readyz", "", nil); err == nil && status == http.StatusOK {
			return p, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.kill()
	return nil, fmt.Errorf("sketchd not ready within 30s:\n%s", p.log())
}

// intended is what the clients meant to add, once each.
type intended struct {
	mu           sync.Mutex
	cms, freq    int64 // the Count-Min sketch's total, the freq sketch's impressions
	series       int64 // the Count-Min series' total
	calls, fails int
}

// workload runs writers of every counting kind through url until each
// has made its calls: Count-Min adds, freq adds, events to both sketches
// and the series, series adds.
func workload(t *testing.T, url string, opts []sketchd.Option, call []sketchd.CallOption, want *intended) {
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			c, err := sketchd.New(url, opts...)
			if err != nil {
				t.Error(err)
				return
			}
			r := rand.New(rand.NewPCG(uint64(w), 25))
			for i := range 30 {
				var err error
				var cms, freq, series int64
				switch i % 4 {
				case 0:
					items := make([]sketchd.Item, 1+r.IntN(20))
					for j := range items {
						items[j] = sketchd.Item{ID: sketchd.Int(int64(r.IntN(100))), Count: int64(1 + r.IntN(9))}
						cms += items[j].Count
					}
					_, err = c.AddItems(ctx, "c", items, call...)
				case 1:
					ids := make([]int64, 1+r.IntN(50))
					for j := range ids {
						ids[j] = int64(r.IntN(300))
					}
					freq = int64(len(ids))
					_, err = c.AddInts(ctx, "f", ids, call...)
				case 2:
					evs := make([]sketchd.Event, 1+r.IntN(10))
					for j := range evs {
						evs[j] = sketchd.Event{ID: sketchd.Int(int64(r.IntN(300))), Sketches: []string{"c", "f"}, Series: []string{"cs"}}
					}
					cms, freq, series = int64(len(evs)), int64(len(evs)), int64(len(evs))
					_, err = c.AddEvents(ctx, evs, call...)
				default:
					items := make([]sketchd.Item, 1+r.IntN(20))
					for j := range items {
						items[j] = sketchd.Item{ID: sketchd.Int(int64(r.IntN(100))), Count: int64(1 + r.IntN(9))}
						series += items[j].Count
					}
					_, err = c.AddSeriesItems(ctx, "cs", time.Time{}, items, call...)
				}
				want.mu.Lock()
				want.calls++
				if err != nil {
					want.fails++
				} else {
					want.cms += cms
					want.freq += freq
					want.series += series
				}
				want.mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// TestExactlyOnceThroughFaults runs the real binary behind a proxy that
// loses answers after the commit, by dropping the connection and by
// killing the process with SIGKILL between the commit and the answer,
// while clients write Count-Min adds, freq adds, events and series adds
// and retry. With Idempotency-Keys every total ends exactly at what the
// clients meant to add; the same run without keys (retrying anyway)
// counts the lost answers twice, so the test sees the difference.
func TestExactlyOnceThroughFaults(t *testing.T) {
	t.Parallel() // it asserts no timing
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	backends := map[string]func(t *testing.T) []string{
		"bolt": func(t *testing.T) []string {
			return []string{"-data", filepath.Join(t.TempDir(), "sketchd.db"), "-checkpoint-interval", "200ms"}
		},
		"postgres": func(t *testing.T) []string {
			return []string{"-data", filepath.Join(t.TempDir(), "unused.db"), "-postgres", pgstoretest.Schema(t, t.TempDir()), "-postgres-max-conns", "4"}
		},
		// On Citus the key's row is distributed with the sketch it
		// guards, so a keyed add commits with its key on one worker.
		"citus": func(t *testing.T) []string {
			return []string{"-data", filepath.Join(t.TempDir(), "unused.db"), "-postgres", pgstoretest.CitusSchema(t, t.TempDir()), "-postgres-max-conns", "4"}
		},
	}
	for name, args := range backends {
		for _, keys := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/keys=%v", name, keys), func(t *testing.T) {
				a := args(t)
				runFaults(t, a, keys)
			})
		}
	}
}

func runFaults(t *testing.T, args []string, keys bool) {
	p, err := launch(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	f := &faultProxy{launch: func() (*proc, error) { return launch(t, args...) }, p: p, dropEvery: 7, killEvery: 23,
		rt: &http.Transport{MaxIdleConnsPerHost: 16}}
	t.Cleanup(func() {
		f.mu.Lock()
		f.p.kill()
		f.mu.Unlock()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	url := "http://" + ln.Addr().String()

	setup, err := sketchd.New(url, sketchd.WithRetry(sketchd.RetryPolicy{MaxAttempts: 40, BaseDelay: 20 * time.Millisecond, MaxDelay: 500 * time.Millisecond, MaxRetryAfter: 5 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		req  sketchd.CreateRequest
	}{{"c", sketchd.CreateRequest{Type: sketchd.TypeCMS, Width: 2000, Depth: 3}}, {"f", sketchd.CreateRequest{Type: "freq"}}} {
		if _, _, err := setup.Create(ctx, c.name, c.req); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := setup.CreateSeries(ctx, "cs", sketchd.SeriesRequest{Type: sketchd.TypeCMS, Width: 2000, Depth: 3, Levels: map[string]string{"day": "P30D"}}); err != nil {
		t.Fatal(err)
	}
	f.writes.Store(0)

	opts := []sketchd.Option{sketchd.WithRetry(sketchd.RetryPolicy{MaxAttempts: 40, BaseDelay: 20 * time.Millisecond, MaxDelay: 500 * time.Millisecond, MaxRetryAfter: 5 * time.Second})}
	var call []sketchd.CallOption
	if !keys {
		opts = append(opts, sketchd.WithoutIdempotencyKeys())
		call = append(call, sketchd.WithUnsafeRetry())
	}
	want := &intended{}
	workload(t, url, opts, call, want)
	if errp := f.failed.Load(); errp != nil {
		t.Fatalf("restarting sketchd: %v", *errp)
	}
	if f.dropped.Load() == 0 || f.killed.Load() == 0 {
		t.Fatalf("%d answers dropped, %d kills: the faults did not happen", f.dropped.Load(), f.killed.Load())
	}

	cm, err := setup.Describe(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	fq, err := setup.Describe(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	sc, err := setup.SeriesCount(ctx, "cs", now.Add(-48*time.Hour).Truncate(24*time.Hour), now.Add(48*time.Hour).Truncate(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d calls (%d failed), %d answers dropped, %d kills between commit and answer; totals: cms %d (meant %d), freq %d (meant %d), series %d (meant %d)",
		want.calls, want.fails, f.dropped.Load(), f.killed.Load(), cm.Total, want.cms, fq.Impressions, want.freq, sc.Total, want.series)
	if keys {
		if want.fails > 0 {
			t.Errorf("%d calls failed after their retries", want.fails)
		}
		if cm.Total != want.cms || fq.Impressions != want.freq || sc.Total != want.series {
			t.Errorf("with keys the totals are cms %d, freq %d, series %d; want exactly %d, %d, %d", cm.Total, fq.Impressions, sc.Total, want.cms, want.freq, want.series)
		}
		return
	}
	if cm.Total+fq.Impressions+sc.Total <= want.cms+want.freq+want.series {
		t.Errorf("without keys the retries of lost answers did not count twice (cms %d of %d, freq %d of %d, series %d of %d): the faults are not exercised",
			cm.Total, want.cms, fq.Impressions, want.freq, sc.Total, want.series)
	}
}
