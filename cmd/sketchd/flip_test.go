package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// storedValue returns a copy of the value of key in bucket in the bbolt
// file at data, as bbolt reads it.
func storedValue(tb testing.TB, data, bucket string, key []byte) []byte {
	tb.Helper()
	db, err := bbolt.Open(data, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var v []byte
	db.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket([]byte(bucket)); b != nil {
			v = bytes.Clone(b.Get(key))
		}
		return nil
	})
	if len(v) == 0 {
		tb.Fatalf("no value under %q in %s", key, bucket)
	}
	return v
}

// flipStoredBit flips bit bit of byte at of the value of key in bucket,
// in the bbolt file at data. The value is found by its bytes (a record
// holds its times, so no other value has them); a stale copy of it on a
// page bbolt freed gets the same flip, harmlessly. It checks that bbolt
// then reads the value with the bit flipped.
func flipStoredBit(tb testing.TB, data, bucket string, key []byte, at, bit int) {
	tb.Helper()
	v := storedValue(tb, data, bucket, key)
	b, err := os.ReadFile(data)
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; ; {
		j := bytes.Index(b[i:], v)
		if j < 0 {
			break
		}
		b[i+j+at] ^= 1 << bit
		i += j + len(v)
	}
	if err := os.WriteFile(data, b, 0o600); err != nil {
		tb.Fatal(err)
	}
	want := bytes.Clone(v)
	want[at] ^= 1 << bit
	if got := storedValue(tb, data, bucket, key); !bytes.Equal(got, want) {
		tb.Fatalf("flipping bit %d of byte %d of %s %q did not reach the value bbolt reads", bit, at, bucket, key)
	}
}

// startOrRefuse runs sketchd on data: a running process, or the output
// of a start that refused with exit status 1 (anything else fails tb).
func startOrRefuse(tb testing.TB, data string, args ...string) (*proc, string) {
	tb.Helper()
	p := &proc{addr: freeAddr(tb), stderr: &syncWriter{w: &bytes.Buffer{}}, exited: make(chan struct{})}
	p.cmd = exec.Command(sketchdBinary(tb), append([]string{"-addr", p.addr, "-data", data, "-log-level", "warn", "-drain-delay", "0s", "-retention-interval", "1h"}, args...)...)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(func() { p.kill() })
	c := newClient(p.addr)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-p.exited:
			out := p.log()
			noPanic(tb, out)
			if code := p.cmd.ProcessState.ExitCode(); code != 1 {
				tb.Fatalf("sketchd exited with status %d, want 1 (a refusal) or a start:\n%s", code, out)
			}
			return nil, out
		default:
		}
		if status, _, err := c.do("GET", "/readyz", "", nil); err == nil && status == http.StatusOK {
			return p, ""
		}
	}
	tb.Fatalf("sketchd neither started nor exited within 30s:\n%s", p.log())
	return nil, ""
}

// flipTarget is one stored value of the sweep, and the reads that depend
// on it.
type flipTarget struct {
	name   string // the kind, for the tally
	bucket string
	key    []byte
	label  string   // how a damaged answer names it
	reads  []string // GET paths
}

// TestStoredValueFlips: one bit flipped inside a stored value of every
// kind (HLL EMPTY, EXPLICIT, SPARSE and FULL, Count-Min, theta, freq, a
// series bucket and a series definition) in the file of a stopped
// sketchd, 60 times (SKETCHD_FLIP_SEEDS for more). Every read of the
// damaged value afterwards must answer exactly what it answered before,
// or be loud: a 500 of type damaged naming the entry (with a log line
// naming it and, for a checksum failure, the counter), or a start
// refused with status 1. None may be silent.
func TestStoredValueFlips(t *testing.T) {
	t.Parallel() // it asserts no timing
	if testing.Short() {
		t.Skip("builds the real binary and starts it 60 times")
	}
	flips := 60
	if v := os.Getenv("SKETCHD_FLIP_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SKETCHD_FLIP_SEEDS=%q", v)
		}
		flips = n
	}
	base := t.TempDir() + "/sketchd.db"
	p := startProcess(t, base, "-checkpoint-interval", "1h", "-retention-interval", "1h")
	c := newClient(p.addr)
	put := func(path, body string) {
		c.must(t, http.StatusCreated, "PUT", path, "application/json", []byte(body), nil)
	}
	add := func(path, ct, body string) { c.must(t, http.StatusOK, "POST", path, ct, []byte(body), nil) }
	seq := func(from, to int) string {
		var b strings.Builder
		for i := from; i <= to; i++ {
			fmt.Fprintln(&b, i)
		}
		return b.String()
	}
	put("/v1/sketches/hll-empty", `{"log2m":11}`)
	put("/v1/sketches/hll-explicit", `{"log2m":11}`)
	add("/v1/sketches/hll-explicit/add", "application/json", `{"ids":[1,2,3,4,5]}`)
	put("/v1/sketches/hll-sparse", `{"log2m":14,"expthresh":0}`)
	add("/v1/sketches/hll-sparse/add", "text/plain", seq(1, 300))
	put("/v1/sketches/hll-full", `{"log2m":11}`)
	add("/v1/sketches/hll-full/add", "text/plain", seq(1, 20000))
	put("/v1/sketches/cms", `{"type":"cms","width":64,"depth":3,"topk":4}`)
	add("/v1/sketches/cms/add", "application/json", `{"items":[{"id":"a","count":3},{"id":7,"count":2}]}`)
	put("/v1/sketches/theta", `{"type":"theta","lg_k":10}`)
	add("/v1/sketches/theta/add", "text/plain", seq(1, 3000))
	put("/v1/sketches/freq", `{"type":"freq"}`)
	add("/v1/sketches/freq/add", "application/json", `{"items":[{"id":"alice","count":3},{"id":"bob","count":1}]}`)
	put("/v1/series/s", `{"tz":"UTC","levels":{"hour":"P14D"}}`)
	hour := time.Now().UTC().Truncate(time.Hour)
	add("/v1/series/s/add?ts="+hour.Format(time.RFC3339), "application/json", `{"ids":[1,2,3]}`)
	seriesRaw := fmt.Sprintf("/v1/series/s/raw?from=%s&to=%s", hour.Format(time.RFC3339), hour.Add(time.Hour).Format(time.RFC3339))
	bucketKey := binary.BigEndian.AppendUint64([]byte("s\x00\x01"), uint64(hour.Unix()))

	var targets []flipTarget
	for _, kind := range []struct{ name, sketch string }{
		{"hll EMPTY", "hll-empty"}, {"hll EXPLICIT", "hll-explicit"}, {"hll SPARSE", "hll-sparse"}, {"hll FULL", "hll-full"},
		{"cms", "cms"}, {"theta", "theta"}, {"freq", "freq"},
	} {
		targets = append(targets, flipTarget{kind.name, "sketches", []byte(kind.sketch), `sketch "` + kind.sketch + `"`,
			[]string{"/v1/sketches/" + kind.sketch + "/raw", "/v1/sketches/" + kind.sketch}})
	}
	targets = append(targets,
		flipTarget{"series bucket", "series_buckets", bucketKey, `of series "s"`, []string{seriesRaw}},
		flipTarget{"series definition", "series", []byte("s"), `series "s"`, []string{seriesRaw, "/v1/series/s"}},
	)
	// The answers before any damage.
	want := map[string][]byte{}
	for _, tg := range targets {
		for _, r := range tg.reads {
			want[r] = c.must(t, http.StatusOK, "GET", r, "", nil, nil)
		}
	}
	var desc struct{ Representation string }
	for _, kind := range []string{"EMPTY", "EXPLICIT", "SPARSE", "FULL"} {
		json.Unmarshal(want["/v1/sketches/hll-"+strings.ToLower(kind)], &desc)
		if desc.Representation != kind {
			t.Fatalf("hll-%s is %s", strings.ToLower(kind), desc.Representation)
		}
	}
	if err := p.terminate(t); err != nil {
		t.Fatal(err)
	}

	r := rand.New(rand.NewPCG(22, 1))
	// Per flip: exact (every read as before), loud (a 500 naming it, the
	// other reads as before), refused (the start), silent (a 200 with
	// other bytes), other (any other answer, such as a 500 that does not
	// name it).
	type tally struct{ exact, loud, refused, silent, other int }
	tallies := map[string]*tally{}
	for i := range flips {
		tg := targets[i%len(targets)]
		if tallies[tg.name] == nil {
			tallies[tg.name] = &tally{}
		}
		tl := tallies[tg.name]
		data := copyTree(t, base)
		n := len(storedValue(t, data, tg.bucket, tg.key))
		at, bit := r.IntN(n), r.IntN(8)
		flipStoredBit(t, data, tg.bucket, tg.key, at, bit)
		where := fmt.Sprintf("flip %d (%s, byte %d of %d, bit %d)", i, tg.name, at, n, bit)
		p, refusal := startOrRefuse(t, data)
		if p == nil {
			if !strings.Contains(refusal, data) {
				t.Errorf("%s: the refusal does not name the file:\n%s", where, refusal)
			}
			tl.refused++
			continue
		}
		c := newClient(p.addr)
		outcome := "exact"
		for _, path := range tg.reads {
			status, body, err := c.do("GET", path, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case status == http.StatusOK && bytes.Equal(body, want[path]):
			case status == http.StatusInternalServerError && strings.Contains(string(body), `"type":"urn:sketchd:problem:damaged"`) &&
				strings.Contains(strings.ReplaceAll(string(body), `\"`, `"`), tg.label):
				if outcome == "exact" {
					outcome = "loud"
				}
				checksum := strings.Contains(string(body), "failed its checksum")
				if checksum && metricValue(t, c, "sketchd_store_checksum_failures_total") < 1 {
					t.Errorf("%s: a checksum failure not counted in sketchd_store_checksum_failures_total", where)
				}
				if !strings.Contains(p.log(), "stored record is unreadable") {
					t.Errorf("%s: no log line names the damaged record:\n%s", where, p.log())
				}
			case status == http.StatusOK:
				outcome = "silent"
				t.Errorf("%s: GET %s = 200 with other bytes, served silently", where, path)
			default:
				if outcome != "silent" {
					outcome = "other"
				}
				t.Errorf("%s: GET %s = %d %.200q; want the original answer or a 500 of type damaged naming %s", where, path, status, body, tg.label)
			}
		}
		switch outcome {
		case "exact":
			tl.exact++
		case "loud":
			tl.loud++
		case "silent":
			tl.silent++
		default:
			tl.other++
		}
		p.kill()
	}
	silent := 0
	for _, tg := range targets[:min(len(targets), flips)] {
		tl := tallies[tg.name]
		t.Logf("%-18s exact %d, 500 naming it %d, refused %d, silent %d, other %d", tg.name, tl.exact, tl.loud, tl.refused, tl.silent, tl.other)
		silent += tl.silent
	}
	if silent > 0 {
		t.Errorf("%d of %d flips were served silently", silent, flips)
	}
}

// TestRecoveryKeepsHealthySketches: log records of /v1/events each touch
// a healthy HLL and a Count-Min whose stored value is then damaged. The
// start refuses, naming the Count-Min; -recover-past-damage starts with
// every acknowledged id in the HLL, logs each record's sketches and the
// operations it dropped, and the Count-Min answers 500 until deleted.
func TestRecoveryKeepsHealthySketches(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	base := t.TempDir() + "/sketchd.db"
	p := startProcess(t, base, "-checkpoint-interval", "1h")
	c := newClient(p.addr)
	c.must(t, http.StatusCreated, "PUT", "/v1/sketches/h", "application/json", []byte(`{"log2m":12}`), nil)
	c.must(t, http.StatusCreated, "PUT", "/v1/sketches/c", "application/json", []byte(`{"type":"cms","width":64,"depth":3}`), nil)
	if err := p.terminate(t); err != nil { // both now in bbolt
		t.Fatal(err)
	}
	p = startProcess(t, base, "-checkpoint-interval", "1h")
	c = newClient(p.addr)
	var ids []int64
	for r := range 4 {
		var events []string
		for i := range 10 {
			id := int64(1000 + 10*r + i)
			ids = append(ids, id)
			events = append(events, fmt.Sprintf(`{"id":%d,"sketches":["h","c"]}`, id))
		}
		c.must(t, http.StatusOK, "POST", "/v1/events", "application/json", []byte(`{"events":[`+strings.Join(events, ",")+`]}`), nil)
	}
	p.kill() // the four records stay in the log
	n := len(storedValue(t, base, "sketches", []byte("c")))
	flipStoredBit(t, base, "sketches", []byte("c"), n/2, 3) // inside the counters

	data := copyTree(t, base)
	out := startExpectingRefusal(t, data)
	if !strings.Contains(out, `sketch \"c\"`) && !strings.Contains(out, `sketch "c"`) || !strings.Contains(out, "-recover-past-damage") {
		t.Errorf("the refusal does not name the damaged Count-Min and what to do:\n%s", out)
	}
	p = startProcess(t, data, "-recover-past-damage", "-log-level", "info")
	c = newClient(p.addr)
	checkHasIDs(t, c, "h", ids)
	log := p.log()
	if n := strings.Count(log, `"touched":["sketch \"c\"","sketch \"h\""]`); n != 4 {
		t.Errorf("%d log lines name both sketches of a record, want one for each of the 4 records:\n%s", n, log)
	}
	if !strings.Contains(log, `add of `) || !strings.Contains(log, `to sketch \"c\"`) {
		t.Errorf("the log does not say which operations were dropped:\n%s", log)
	}
	c.must(t, http.StatusInternalServerError, "GET", "/v1/sketches/c", "", nil, nil)
	c.must(t, http.StatusNoContent, "DELETE", "/v1/sketches/c", "", nil, nil)
	c.must(t, http.StatusNotFound, "GET", "/v1/sketches/c", "", nil, nil)
}
