package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/store/bolt"
)

// ledger records what sketchd acknowledged and what was sent.
type ledger struct {
	mu          sync.Mutex
	acked       map[string][]int64 // HLL sketch -> ids acknowledged
	cmsAcked    map[int64]uint64   // CMS id -> count acknowledged
	cmsAckedN   uint64
	cmsSentMax  uint64  // every count ever sent, acknowledged or not
	seriesAcked []int64 // ids acknowledged into the series "active"
}

// writer adds batches until the server stops answering.
func (l *ledger) writer(c *client, seed uint64, hllNames []string) {
	r := rand.New(rand.NewPCG(seed, 77))
	for {
		if r.IntN(4) == 0 {
			// CMS items: a few hot ids so counts add up.
			items := make([]map[string]int64, 1+r.IntN(50))
			counts := map[int64]uint64{}
			var sum uint64
			for i := range items {
				id, n := int64(r.IntN(200)), int64(1+r.IntN(5))
				items[i] = map[string]int64{"id": id, "count": n}
				counts[id] += uint64(n)
				sum += uint64(n)
			}
			body, _ := json.Marshal(map[string]any{"items": items})
			l.mu.Lock()
			l.cmsSentMax += sum
			l.mu.Unlock()
			status, _, err := c.do("POST", "/v1/sketches/counts/add", "application/json", body)
			if err != nil {
				return
			}
			if status == http.StatusOK {
				l.mu.Lock()
				for id, n := range counts {
					l.cmsAcked[id] += n
				}
				l.cmsAckedN += sum
				l.mu.Unlock()
			}
			continue
		}
		if r.IntN(5) == 0 {
			// A series add: one bucket per level in one record.
			ids := make([]int64, 1+r.IntN(2000))
			for i := range ids {
				ids[i] = int64(r.Uint64())
			}
			status, _, err := c.do("POST", "/v1/series/active/add", "application/json", mustJSON(map[string]any{"ids": ids}))
			if err != nil {
				return
			}
			if status == http.StatusOK {
				l.mu.Lock()
				l.seriesAcked = append(l.seriesAcked, ids...)
				l.mu.Unlock()
			}
			continue
		}
		name := hllNames[r.IntN(len(hllNames))]
		ids := make([]int64, 1+r.IntN(3000))
		for i := range ids {
			ids[i] = int64(r.Uint64())
		}
		var status int
		var err error
		if r.IntN(2) == 0 {
			status, _, err = c.do("POST", "/v1/sketches/"+name+"/add", "application/json", mustJSON(map[string]any{"ids": ids}))
		} else {
			buf := make([]byte, 0, 8*len(ids))
			for _, v := range ids {
				buf = binary.BigEndian.AppendUint64(buf, uint64(v))
			}
			status, _, err = c.do("POST", "/v1/sketches/"+name+"/add", "application/octet-stream", buf)
		}
		if err != nil {
			return
		}
		if status == http.StatusOK {
			l.mu.Lock()
			l.acked[name] = append(l.acked[name], ids...)
			l.mu.Unlock()
		}
	}
}

func mustBytes(h *hll.Sketch) []byte {
	b, err := h.MarshalBinary()
	if err != nil {
		panic(err)
	}
	return b
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestCrashRecovery runs the real binary, adds from several goroutines,
// kills it with SIGKILL at random moments, restarts it on the same file
// and checks that nothing acknowledged was lost: every HLL is unchanged by
// a union with the sketch of its acknowledged ids, every acknowledged CMS
// count is covered, and no count appears that was never sent.
func TestCrashRecovery(t *testing.T) {
	t.Parallel() // it asserts no timing
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	data := filepath.Join(t.TempDir(), "sketchd.db")
	hllNames := []string{"visits", "clicks", "signups"}
	params := hll.Params{Log2m: 12, Regwidth: 5, Expthresh: hll.AutoExpthresh, Sparse: true}
	l := &ledger{acked: map[string][]int64{}, cmsAcked: map[int64]uint64{}}
	r := rand.New(rand.NewPCG(2026, 11))
	const cycles = 6
	for cycle := range cycles {
		// A short checkpoint interval on odd cycles kills some runs
		// mid-checkpoint, the others with everything in the log.
		interval := "30s"
		if cycle%2 == 1 {
			interval = "100ms"
		}
		p := startProcess(t, data, "-checkpoint-interval", interval)
		c := newClient(p.addr)
		if cycle == 0 {
			for _, n := range hllNames {
				c.must(t, http.StatusCreated, "PUT", "/v1/sketches/"+n, "application/json", []byte(`{"log2m":12}`), nil)
			}
			c.must(t, http.StatusCreated, "PUT", "/v1/sketches/counts", "application/json", []byte(`{"type":"cms","width":300,"depth":4}`), nil)
			c.must(t, http.StatusCreated, "PUT", "/v1/series/active", "application/json", []byte(`{"log2m":12,"levels":{"hour":"P2D","day":"P30D"}}`), nil)
		}
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l.writer(newClient(p.addr), uint64(cycle*100+w), hllNames)
			}()
		}
		time.Sleep(time.Duration(150+r.IntN(700)) * time.Millisecond)
		p.kill()
		wg.Wait()
	}

	p := startProcess(t, data)
	c := newClient(p.addr)
	total := 0
	for _, name := range hllNames {
		stored, err := hll.Decode(c.must(t, http.StatusOK, "GET", "/v1/sketches/"+name+"/raw", "", nil, nil))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ack, _ := hll.New(params)
		for _, id := range l.acked[name] {
			ack.AddInt64(id)
		}
		total += len(l.acked[name])
		u := stored.Clone()
		if err := u.Union(ack); err != nil {
			t.Fatal(err)
		}
		before, _ := stored.MarshalBinary()
		after, _ := u.MarshalBinary()
		if string(before) != string(after) {
			t.Errorf("%s lost acknowledged ids: stored estimate %.0f, with the acknowledged ids %.0f", name, stored.Estimate(), u.Estimate())
		}
	}
	if total == 0 || len(l.seriesAcked) == 0 {
		t.Fatal("no write was acknowledged; the test proves nothing")
	}
	// The series: the union of the last two days holds every acknowledged id.
	now := time.Now().UTC()
	rng := "?from=" + now.Add(-48*time.Hour).Truncate(time.Hour).Format(time.RFC3339) + "&to=" + now.Add(2*time.Hour).Truncate(time.Hour).Format(time.RFC3339)
	stored, err := hll.Decode(c.must(t, http.StatusOK, "GET", "/v1/series/active/raw"+rng, "", nil, nil))
	if err != nil {
		t.Fatalf("series: %v", err)
	}
	ack, _ := hll.New(params)
	for _, id := range l.seriesAcked {
		ack.AddInt64(id)
	}
	u := stored.Clone()
	if err := u.Union(ack); err != nil {
		t.Fatal(err)
	}
	if b1, b2 := mustBytes(stored), mustBytes(u); string(b1) != string(b2) {
		t.Errorf("the series lost acknowledged ids: stored estimate %.0f, with the acknowledged ids %.0f", stored.Estimate(), u.Estimate())
	}
	var desc struct {
		Total uint64 `json:"total"`
	}
	c.must(t, http.StatusOK, "GET", "/v1/sketches/counts", "", nil, &desc)
	if desc.Total < l.cmsAckedN || desc.Total > l.cmsSentMax {
		t.Errorf("CMS total %d, want between the acknowledged %d and the sent %d", desc.Total, l.cmsAckedN, l.cmsSentMax)
	}
	var ids []string
	for id := range l.cmsAcked {
		ids = append(ids, fmt.Sprint(id))
	}
	var freq struct {
		Results []struct {
			ID       int64  `json:"id"`
			Estimate uint64 `json:"estimate"`
		} `json:"results"`
	}
	c.must(t, http.StatusOK, "POST", "/v1/sketches/counts/frequency", "application/json", []byte(`{"ids":[`+strings.Join(ids, ",")+`]}`), &freq)
	for _, res := range freq.Results {
		if res.Estimate < l.cmsAcked[res.ID] {
			t.Errorf("CMS id %d: estimate %d below the acknowledged %d", res.ID, res.Estimate, l.cmsAcked[res.ID])
		}
	}
	t.Logf("%d HLL ids, %d series ids and %d CMS counts acknowledged across %d kills; CMS total %d (sent %d)", total, len(l.seriesAcked), l.cmsAckedN, cycles, desc.Total, l.cmsSentMax)
	if err := p.terminate(t); err != nil {
		t.Errorf("SIGTERM exit: %v\n%s", err, p.log())
	}
	if err := bolt.Check(data); err != nil {
		t.Errorf("the file after six kills: %v", err)
	}
}

// TestSecondProcessFailsFast: a second sketchd on the same file exits at
// once with a message saying why, instead of hanging on the lock.
func TestSecondProcessFailsFast(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the real binary")
	}
	data := filepath.Join(t.TempDir(), "sketchd.db")
	startProcess(t, data)
	p := &proc{addr: freeAddr(t)}
	start := time.Now()
	out, err := execOutput(sketchdBinary(t), "-addr", p.addr, "-data", data)
	if err == nil {
		t.Fatal("second sketchd on the same file started")
	}
	if !strings.Contains(out, "locked by another process") {
		t.Errorf("second sketchd said %q, want a lock message", out)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("second sketchd took %v to give up", d)
	}
}

// TestGracefulShutdown: SIGTERM lets a request in flight finish, commits
// and exits 0; the data is there on restart without any log to replay.
func TestGracefulShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the real binary")
	}
	data := filepath.Join(t.TempDir(), "sketchd.db")
	p := startProcess(t, data, "-log-level", "info")
	c := newClient(p.addr)
	ids := make([]int64, 200000)
	for i := range ids {
		ids[i] = int64(i)
	}
	body := mustJSON(map[string]any{"ids": ids})
	done := make(chan int, 1)
	go func() {
		status, _, _ := c.do("POST", "/v1/sketches/big/add?create=true", "application/json", body)
		done <- status
	}()
	time.Sleep(20 * time.Millisecond)
	if err := p.terminate(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.log())
	}
	status := <-done
	if !strings.Contains(p.log(), `"msg":"stopped"`) {
		t.Errorf("no clean stop in the log:\n%s", p.log())
	}
	// The request either finished (200) before the listener closed or was
	// never accepted; it must not have been cut off half-way.
	p2 := startProcess(t, data)
	c2 := newClient(p2.addr)
	got, _, err := c2.do("GET", "/v1/sketches/big", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if status == http.StatusOK && got != http.StatusOK {
		t.Errorf("acknowledged before shutdown, but missing after restart (%d)", got)
	}
	entries, _ := os.ReadDir(data + ".wal")
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".log") {
			continue // the checkpoint marker
		}
		if info, _ := e.Info(); info.Size() > 0 {
			t.Errorf("log segment %s not empty after a clean restart", e.Name())
		}
	}
}
