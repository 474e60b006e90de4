package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	bbolt "go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/internal/hll"
)

// These tests damage the files of a stopped sketchd the way a disk, an
// operator or a backup restore might, and check that the real binary
// refuses to start with a message naming the file, or starts having lost
// nothing it acknowledged, and never panics. Longer sweeps over more
// seeds: SKETCHD_DAMAGE_SEEDS=200 go test -run Damage ./cmd/sketchd
// (docs/damage.md).

// damageSeeds is how many random damages of each kind a test tries.
func damageSeeds(tb testing.TB, ci int) int {
	tb.Helper()
	if v := os.Getenv("SKETCHD_DAMAGE_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			tb.Fatalf("SKETCHD_DAMAGE_SEEDS=%q", v)
		}
		return n
	}
	return ci
}

// copyTree copies the data file and its log directory to a new place.
func copyTree(tb testing.TB, data string) string {
	tb.Helper()
	dst := filepath.Join(tb.TempDir(), "sketchd.db")
	copyFile(tb, data, dst)
	os.MkdirAll(dst+".wal", 0o700)
	entries, err := os.ReadDir(data + ".wal")
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		copyFile(tb, filepath.Join(data+".wal", e.Name()), filepath.Join(dst+".wal", e.Name()))
	}
	return dst
}

func copyFile(tb testing.TB, src, dst string) {
	tb.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// startExpectingRefusal runs sketchd on data and returns its output; it
// must exit with status 1 (a refusal, not a panic or a fault) within 30s.
func startExpectingRefusal(tb testing.TB, data string, args ...string) string {
	tb.Helper()
	out, err := execOutput(sketchdBinary(tb), append([]string{"-addr", freeAddr(tb), "-data", data}, args...)...)
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		tb.Fatalf("sketchd on damaged files: %v, want exit status 1; output:\n%s", err, out)
	}
	noPanic(tb, out)
	return out
}

func noPanic(tb testing.TB, out string) {
	tb.Helper()
	for _, bad := range []string{"panic:", "fatal error", "SIGSEGV", "SIGBUS", "goroutine "} {
		if strings.Contains(out, bad) {
			tb.Fatalf("sketchd crashed (%q) instead of refusing:\n%s", bad, out)
		}
	}
}

// walRecord is one record's place in a segment.
type walRecord struct{ start, end int }

// walRecords splits a segment into its records (the file is intact).
func walRecords(tb testing.TB, b []byte) []walRecord {
	tb.Helper()
	var recs []walRecord
	for off := 0; off < len(b); {
		if len(b)-off < 8 {
			tb.Fatalf("segment has %d stray bytes at %d", len(b)-off, off)
		}
		n := 8 + int(binary.BigEndian.Uint32(b[off:]))
		recs = append(recs, walRecord{off, off + n})
		off += n
	}
	return recs
}

// onlySegment returns the path of the log segment that holds data.
func onlySegment(tb testing.TB, data string) string {
	tb.Helper()
	segs, _ := filepath.Glob(filepath.Join(data+".wal", "*.log"))
	var found string
	for _, s := range segs {
		if fi, _ := os.Stat(s); fi.Size() > 0 {
			if found != "" {
				tb.Fatalf("two segments hold data: %s, %s", found, s)
			}
			found = s
		}
	}
	if found == "" {
		tb.Fatal("no segment holds data")
	}
	return found
}

// TestLogDamage: 100 acknowledged adds of one id each sit in the log of
// a killed sketchd. Damage at random offsets (a flipped byte, a zeroed
// 4 KiB block, a changed length field) must stop the start, naming the
// segment and the offset of the first damaged record and leaving the
// segment as it was, unless the damage reaches only the last record,
// which cannot be told from a torn write: then sketchd starts, logs the
// bytes it dropped, and has every other acknowledged id. A truncation is
// such a torn tail. -recover-past-damage starts past real damage, keeps
// the segment aside and logs what it dropped.
func TestLogDamage(t *testing.T) {
	t.Parallel() // it asserts no timing
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	base := filepath.Join(t.TempDir(), "sketchd.db")
	p := startProcess(t, base, "-checkpoint-interval", "1h")
	c := newClient(p.addr)
	c.must(t, http.StatusCreated, "PUT", "/v1/sketches/h", "application/json", []byte(`{"log2m":14,"expthresh":-1}`), nil)
	ids := make([]int64, 100)
	for i := range ids {
		ids[i] = int64(1000 + i)
		c.must(t, http.StatusOK, "POST", "/v1/sketches/h/add", "application/json", []byte(fmt.Sprintf(`{"ids":[%d]}`, ids[i])), nil)
	}
	p.kill()
	seg := onlySegment(t, base)
	clean, _ := os.ReadFile(seg)
	recs := walRecords(t, clean)
	if len(recs) != 101 {
		t.Fatalf("%d records in the log, want 101 (a create and 100 adds)", len(recs))
	}

	type damage struct {
		name     string
		from, to int // the bytes changed
		apply    func(b []byte) []byte
	}
	r := rand.New(rand.NewPCG(12, 1))
	var cases []damage
	for i := range damageSeeds(t, 3) {
		o := r.IntN(len(clean))
		x := byte(1 + r.IntN(255))
		cases = append(cases, damage{fmt.Sprintf("flip-%d@%d", i, o), o, o + 1, func(b []byte) []byte { b[o] ^= x; return b }})
		z := r.IntN(len(clean))
		ze := min(z+4096, len(clean))
		cases = append(cases, damage{fmt.Sprintf("zero4k-%d@%d", i, z), z, ze, func(b []byte) []byte { clear(b[z:ze]); return b }})
		rec := recs[r.IntN(len(recs))]
		delta := uint32(1 + r.IntN(1<<16))
		cases = append(cases, damage{fmt.Sprintf("length-%d@%d", i, rec.start), rec.start, rec.start + 4, func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[rec.start:], binary.BigEndian.Uint32(b[rec.start:])^delta)
			return b
		}})
	}
	// Always include damage in the middle and in the last record.
	mid, last := recs[50], recs[100]
	cases = append(cases,
		damage{"flip-middle", (mid.start + mid.end) / 2, (mid.start+mid.end)/2 + 1, func(b []byte) []byte { b[(mid.start+mid.end)/2] ^= 0xff; return b }},
		damage{"flip-last-record", last.start + 9, last.start + 10, func(b []byte) []byte { b[last.start+9] ^= 0xff; return b }},
	)
	for _, d := range cases {
		t.Run(d.name, func(t *testing.T) {
			data := copyTree(t, base)
			seg := onlySegment(t, data)
			damaged := d.apply(bytes.Clone(clean))
			os.WriteFile(seg, damaged, 0o600)
			// The first record the damage touches, and whether an intact
			// one follows it.
			first, intactAfter := -1, false
			for i, rec := range recs {
				if first < 0 && rec.end > d.from {
					first = i
				}
				if rec.start >= d.to {
					intactAfter = true
				}
			}
			if !intactAfter {
				p := startProcess(t, data, "-log-level", "info")
				if !strings.Contains(p.log(), "torn record") || !strings.Contains(p.log(), `"offset":`+strconv.Itoa(recs[first].start)) {
					t.Errorf("no torn tail at offset %d logged:\n%s", recs[first].start, p.log())
				}
				if !strings.Contains(p.log(), "may include acknowledged writes") {
					t.Errorf("the torn tail is not said to possibly hold acknowledged writes:\n%s", p.log())
				}
				checkPrefix(t, newClient(p.addr), ids, first)
				return
			}
			out := startExpectingRefusal(t, data)
			if !strings.Contains(out, seg) || !strings.Contains(out, fmt.Sprintf("damaged at offset %d ", recs[first].start)) || !strings.Contains(out, "-recover-past-damage") {
				t.Errorf("refusal does not name %s at offset %d and what to do:\n%s", seg, recs[first].start, out)
			}
			if got, _ := os.ReadFile(seg); !bytes.Equal(got, damaged) {
				t.Fatal("the damaged segment was changed by a refused start")
			}
			// What recovery drops: the bytes from the damaged record on,
			// and the intact records after the damage, each an
			// acknowledged write.
			intact := 0
			for _, rec := range recs {
				if rec.start >= d.to {
					intact++
				}
			}
			if want := fmt.Sprintf("%d intact records (acknowledged writes, in %d bytes from the damage on) would be lost", intact, len(clean)-recs[first].start); !strings.Contains(out, want) {
				t.Errorf("refusal does not say %q:\n%s", want, out)
			}
			p := startProcess(t, data, "-recover-past-damage", "-log-level", "info")
			want := fmt.Sprintf(`"dropped_bytes":%d,"dropped_intact_records":%d`, len(clean)-recs[first].start, intact)
			if !strings.Contains(p.log(), "dropped the write-ahead log from the damage on") || !strings.Contains(p.log(), want) {
				t.Errorf("recovery does not log what it dropped (%s):\n%s", want, p.log())
			}
			if intact > 0 && !strings.Contains(p.log(), `"touched":["sketch \"h\""]`) {
				t.Errorf("recovery does not name the sketch the dropped records touched:\n%s", p.log())
			}
			if got, _ := os.ReadFile(seg + ".damaged"); !bytes.Equal(got, damaged) {
				t.Error("the damaged segment was not kept aside as it was")
			}
			checkPrefix(t, newClient(p.addr), ids, first)
		})
	}

	t.Run("truncated", func(t *testing.T) {
		data := copyTree(t, base)
		seg := onlySegment(t, data)
		cut := recs[70].start + 5
		os.WriteFile(seg, clean[:cut], 0o600)
		p := startProcess(t, data, "-log-level", "info")
		want := fmt.Sprintf(`"offset":%d,"bytes":5`, recs[70].start)
		if !strings.Contains(p.log(), "torn record") || !strings.Contains(p.log(), want) {
			t.Errorf("truncation not logged as a torn tail with %s:\n%s", want, p.log())
		}
		// Records 71-100 were acknowledged: the log must not claim
		// nothing acknowledged was lost.
		if strings.Contains(p.log(), "never acknowledged: dropped") || !strings.Contains(p.log(), "may include acknowledged writes") {
			t.Errorf("a truncation that lost acknowledged records is reported as never acknowledged:\n%s", p.log())
		}
		checkHasIDs(t, newClient(p.addr), "h", ids[:69])
	})
}

// checkPrefix checks that sketch h holds the ids of the records before
// record first (record 0 creates it, record k adds ids[k-1]).
func checkPrefix(tb testing.TB, c *client, ids []int64, first int) {
	tb.Helper()
	if first == 0 {
		c.must(tb, http.StatusNotFound, "GET", "/v1/sketches/h", "", nil, nil)
		return
	}
	checkHasIDs(tb, c, "h", ids[:first-1])
}

// checkHasIDs checks that the HLL name holds every id of want.
func checkHasIDs(tb testing.TB, c *client, name string, want []int64) {
	tb.Helper()
	stored, err := hll.Decode(c.must(tb, http.StatusOK, "GET", "/v1/sketches/"+name+"/raw", "", nil, nil))
	if err != nil {
		tb.Fatal(err)
	}
	u := stored.Clone()
	for _, id := range want {
		u.AddInt64(id)
	}
	before, _ := stored.MarshalBinary()
	after, _ := u.MarshalBinary()
	if !bytes.Equal(before, after) {
		tb.Errorf("%s lost acknowledged ids: estimate %.0f, with them %.0f", name, stored.Estimate(), u.Estimate())
	}
}

// TestDataFileDamage: a store of 320 sketches, shut down cleanly, then its
// files damaged: the newer bbolt meta page, a truncated or zero-length
// data file, bytes flipped at random, a deleted log. sketchd refuses to
// start with a message naming the file, never panics, and never starts
// with fewer sketches than it had.
func TestDataFileDamage(t *testing.T) {
	t.Parallel() // it asserts no timing
	if testing.Short() {
		t.Skip("builds the real binary")
	}
	base := filepath.Join(t.TempDir(), "sketchd.db")
	p := startProcess(t, base, "-checkpoint-interval", "1h")
	c := newClient(p.addr)
	var events []string
	for i := range 320 {
		events = append(events, fmt.Sprintf(`{"id":%d,"sketches":["s%03d"]}`, i, i))
	}
	c.must(t, http.StatusOK, "POST", "/v1/events?create=true", "application/json", []byte(`{"events":[`+strings.Join(events, ",")+`]}`), nil)
	if err := p.terminate(t); err != nil {
		t.Fatal(err)
	}
	clean, _ := os.ReadFile(base)
	const page = 4096
	if len(clean) < 4*page {
		t.Fatalf("data file of %d bytes", len(clean))
	}
	txid := func(pg int) uint64 { return binary.LittleEndian.Uint64(clean[pg*page+64:]) }
	newer := 0
	if txid(1) > txid(0) {
		newer = 1
	}
	// The pages in use end at the newer meta page's high-water mark; the
	// file may be longer (bbolt grows it in steps).
	used := int(binary.LittleEndian.Uint64(clean[newer*page+56:])) * page
	if used < 4*page || used > len(clean) {
		t.Fatalf("high-water mark %d bytes in a file of %d", used, len(clean))
	}

	refuses := func(t *testing.T, data string, want ...string) {
		t.Helper()
		out := startExpectingRefusal(t, data)
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("refusal lacks %q:\n%s", w, out)
			}
		}
	}
	t.Run("newer meta page", func(t *testing.T) {
		data := copyTree(t, base)
		b := bytes.Clone(clean)
		b[newer*page+16] ^= 0xff
		os.WriteFile(data, b, 0o600)
		refuses(t, data, data, "older than its write-ahead log")
		// The operator may accept the loss.
		p := startProcess(t, data, "-recover-past-damage")
		if !strings.Contains(p.log(), "recovering past damage: starting although the data file is older") {
			t.Errorf("-recover-past-damage does not log what it accepts:\n%s", p.log())
		}
	})
	t.Run("older meta page", func(t *testing.T) {
		data := copyTree(t, base)
		b := bytes.Clone(clean)
		b[(1-newer)*page+16] ^= 0xff
		os.WriteFile(data, b, 0o600)
		p := startProcess(t, data)
		checkCount(t, newClient(p.addr), 320)
	})
	for _, size := range []int{used / 2, 3 * page} {
		t.Run(fmt.Sprintf("truncated to %d", size), func(t *testing.T) {
			data := copyTree(t, base)
			os.WriteFile(data, clean[:size], 0o600)
			refuses(t, data, data, "is truncated", fmt.Sprintf("it has %d bytes, its pages need %d", size, used))
		})
	}
	t.Run("truncated below its meta pages", func(t *testing.T) {
		data := copyTree(t, base)
		os.WriteFile(data, clean[:page+100], 0o600)
		refuses(t, data, data, "is truncated", fmt.Sprintf("it has %d bytes", page+100))
	})
	t.Run("zero length", func(t *testing.T) {
		data := copyTree(t, base)
		os.WriteFile(data, nil, 0o600)
		refuses(t, data, data, "is empty")
	})
	t.Run("missing", func(t *testing.T) {
		data := copyTree(t, base)
		os.Remove(data)
		refuses(t, data, data, "is missing")
	})
	t.Run("log deleted", func(t *testing.T) {
		data := copyTree(t, base)
		os.RemoveAll(data + ".wal")
		refuses(t, data, data+".wal", "missing")
		p := startProcess(t, data, "-recover-past-damage")
		checkCount(t, newClient(p.addr), 320) // the log held nothing more
	})
	t.Run("another store's log", func(t *testing.T) {
		data := copyTree(t, base)
		other := filepath.Join(t.TempDir(), "other.db")
		p := startProcess(t, other)
		p.terminate(t)
		os.RemoveAll(data + ".wal")
		os.Rename(other+".wal", data+".wal")
		refuses(t, data, "belongs to another store")
	})
	r := rand.New(rand.NewPCG(3, 4))
	for i := range damageSeeds(t, 6) {
		flips := make([]int, 1+r.IntN(8))
		for j := range flips {
			flips[j] = 2*page + r.IntN(used-2*page) // in use, past the meta pages
		}
		t.Run(fmt.Sprintf("flips-%d", i), func(t *testing.T) {
			data := copyTree(t, base)
			b := bytes.Clone(clean)
			for _, o := range flips {
				b[o] ^= byte(1 + r.IntN(255))
			}
			os.WriteFile(data, b, 0o600)
			started, code, out := tryStart(t, data)
			noPanic(t, out)
			if started {
				return // the flips hit nothing in use
			}
			if code == 1 {
				if !strings.Contains(out, data) {
					t.Errorf("refusal does not name the file:\n%s", out)
				}
				return
			}
			t.Fatalf("sketchd with flipped bytes at %v exited with status %d (it should refuse with 1, or run)\n%s", flips, code, out)
		})
	}
}

// tryStart runs sketchd on data until it is ready (then stops it with
// SIGTERM) or exits, and returns which, the exit status and its output.
func tryStart(tb testing.TB, data string) (started bool, code int, out string) {
	tb.Helper()
	p := &proc{addr: freeAddr(tb), stderr: &syncWriter{w: &bytes.Buffer{}}, exited: make(chan struct{})}
	p.cmd = exec.Command(sketchdBinary(tb), "-addr", p.addr, "-data", data, "-checkpoint-interval", "1h", "-log-level", "warn")
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
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
			return false, p.cmd.ProcessState.ExitCode(), p.log()
		default:
		}
		if status, _, err := c.do("GET", "/readyz", "", nil); err == nil && status == http.StatusOK {
			p.terminate(tb)
			return true, 0, p.log()
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.kill()
	tb.Fatalf("sketchd neither started nor exited within 30s:\n%s", p.log())
	return false, 0, ""
}

// checkCount checks, through /metrics, how many sketches the store holds.
func checkCount(tb testing.TB, c *client, want int) {
	tb.Helper()
	body := string(c.must(tb, http.StatusOK, "GET", "/metrics", "", nil, nil))
	total := 0
	// The text format writes large gauges as floats (1e+06).
	for _, m := range regexp.MustCompile(`(?m)^sketchd_sketches\{[^}]*\} (\S+)$`).FindAllStringSubmatch(body, -1) {
		n, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			tb.Fatalf("sketchd_sketches value %q: %v", m[1], err)
		}
		total += int(n)
	}
	if total != want {
		tb.Errorf("%d sketches, want %d", total, want)
	}
}

// TestKillDuringBigCheckpoint: 200,000 new sketches sit in the log; a
// SIGTERM starts the checkpoint that copies them all into bbolt and a
// kill -9 interrupts it. The restart, which replays and checkpoints them
// all again, must be quick (it took 48 s when checkpoints were quadratic)
// and have every sketch; then a SIGTERM shuts down within its timeout.
// SKETCHD_BIG_SKETCHES=1000000 runs it with a million (docs/damage.md).
func TestKillDuringBigCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	total := 200_000
	if v := os.Getenv("SKETCHD_BIG_SKETCHES"); v != "" {
		total, _ = strconv.Atoi(v)
	}
	const per = 20_000
	data := filepath.Join(t.TempDir(), "sketchd.db")
	args := []string{"-checkpoint-interval", "1h", "-cache-bytes", strconv.Itoa(256 << 20)}
	p := startProcess(t, data, args...)
	addNew := func(c *client, from int) {
		for i := from; i < from+total; i += per {
			var b strings.Builder
			b.WriteString(`{"events":[`)
			for j := i; j < i+per; j++ {
				if j > i {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"id":%d,"sketches":["n%07d"]}`, j, j)
			}
			b.WriteString(`]}`)
			for {
				// 503: changed sketches fill the cache until a checkpoint
				// commits them; back off like a client should.
				status, body, err := c.do("POST", "/v1/events?create=true", "application/json", []byte(b.String()))
				if err != nil {
					t.Fatal(err)
				}
				if status == http.StatusOK {
					break
				}
				if status != http.StatusServiceUnavailable {
					t.Fatalf("events = %d %s", status, body)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	addNew(newClient(p.addr), 0)
	p.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(100 * time.Millisecond)
	p.kill()
	start := time.Now()
	p = startProcessWithin(t, 10*time.Minute, data, args...)
	ready := time.Since(start)
	c := newClient(p.addr)
	checkCount(t, c, total)
	// As many new sketches again, left in the log: the shutdown must
	// checkpoint them all within its timeout.
	addNew(c, total)
	rss := peakRSS(p.cmd.Process.Pid)
	start = time.Now()
	if err := p.terminate(t); err != nil {
		t.Fatal(err)
	}
	stop := time.Since(start)
	t.Logf("%d new sketches: restart after kill -9 ready in %v; %d more: SIGTERM to exit %v (peak RSS %s)", total, ready, total, stop, rss)
	if stop > 20*time.Second {
		t.Errorf("shutdown with %d new sketches took %v, past the 20s shutdown timeout", total, stop)
	}
	// The bound on the restart is for the default size.
	if total == 200_000 && (ready > 15*time.Second || stop > 15*time.Second) {
		t.Errorf("restart took %v and shutdown %v, want each well under the 20s shutdown timeout", ready, stop)
	}
	p = startProcess(t, data, args...)
	checkCount(t, newClient(p.addr), 2*total)
}

// peakRSS reads a process's peak resident memory (Linux), or "?".
func peakRSS(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// TestUnreadableRecord: one sketch record damaged in the file of a
// stopped sketchd. It starts; listing answers 200 without it and names it
// in Sketchd-Unreadable; /metrics counts it; reading it is a 500; DELETE
// removes it.
func TestUnreadableRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the real binary")
	}
	data := filepath.Join(t.TempDir(), "sketchd.db")
	p := startProcess(t, data)
	c := newClient(p.addr)
	for _, n := range []string{"a", "b", "c"} {
		c.must(t, http.StatusCreated, "PUT", "/v1/sketches/"+n, "application/json", []byte(`{}`), nil)
	}
	if err := p.terminate(t); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(data, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("sketches")).Put([]byte("b"), []byte{1, 1, 0, 9}) })
	db.Close()

	p = startProcess(t, data)
	c = newClient(p.addr)
	req, _ := http.NewRequest("GET", c.base+"/v1/sketches", nil)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Sketchd-Unreadable") != `"b"` {
		t.Errorf("list = %d, Sketchd-Unreadable %q; want 200 naming \"b\"", resp.StatusCode, resp.Header.Get("Sketchd-Unreadable"))
	}
	var list struct {
		Sketches []struct{ Name string } `json:"sketches"`
	}
	c.must(t, http.StatusOK, "GET", "/v1/sketches", "", nil, &list)
	if len(list.Sketches) != 2 || list.Sketches[0].Name != "a" || list.Sketches[1].Name != "c" {
		t.Errorf("listed %+v, want a and c", list.Sketches)
	}
	// The Parquet listing leaves it out too, and says so in the header
	// and in the file.
	req, _ = http.NewRequest("GET", c.base+"/v1/sketches?format=parquet", nil)
	resp, err = c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	file, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Sketchd-Unreadable") != `"b"` {
		t.Fatalf("Parquet list = %d, Sketchd-Unreadable %q, %v; want 200 naming \"b\"", resp.StatusCode, resp.Header.Get("Sketchd-Unreadable"), err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := pf.Lookup("sketchd.unreadable"); v != `"b"` || pf.NumRows() != 2 {
		t.Errorf("the Parquet listing holds %d rows and sketchd.unreadable %q; want a and c, and \"b\"", pf.NumRows(), v)
	}
	if metricValue(t, c, "sketchd_store_unreadable_records_total") < 1 {
		t.Error("sketchd_store_unreadable_records_total does not count it")
	}
	c.must(t, http.StatusInternalServerError, "GET", "/v1/sketches/b", "", nil, nil)
	c.must(t, http.StatusNoContent, "DELETE", "/v1/sketches/b", "", nil, nil)
	c.must(t, http.StatusNotFound, "GET", "/v1/sketches/b", "", nil, nil)
	if !strings.Contains(p.log(), `"sketch":"\"b\""`) || !strings.Contains(p.log(), data) {
		t.Errorf("the log does not name the sketch and the file:\n%s", p.log())
	}
}

// TestDataPathErrors: a data path sketchd cannot use, because its folder
// is missing or not writable, is refused as what it is, never as a
// damaged file to restore from a backup.
func TestDataPathErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the real binary")
	}
	notDamage := func(t *testing.T, out, data string, want ...string) {
		t.Helper()
		noPanic(t, out)
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("refusal lacks %q:\n%s", w, out)
			}
		}
		if strings.Contains(out, data+" is damaged") || strings.Contains(out, "Restore it from a backup") {
			t.Errorf("a path problem is reported as damage:\n%s", out)
		}
	}
	t.Run("missing folder", func(t *testing.T) {
		data := filepath.Join(t.TempDir(), "no-such-folder", "sketchd.db")
		notDamage(t, startExpectingRefusal(t, data), data, "does not exist", filepath.Dir(data))
	})
	t.Run("read-only folder", func(t *testing.T) {
		// A folder the user sketchd runs as may not write to. Root may
		// write anywhere: then sketchd runs as nobody.
		dir := t.TempDir()
		for _, d := range []string{filepath.Dir(dir), dir} {
			os.Chmod(d, 0o755)
		}
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		data := filepath.Join(ro, "sketchd.db")
		args := []string{sketchdBinary(t), "-addr", freeAddr(t), "-data", data}
		if os.Geteuid() == 0 {
			setpriv, err := exec.LookPath("setpriv")
			if err != nil {
				t.Skip("running as root without setpriv (util-linux) to run sketchd as another user")
			}
			bin := filepath.Join(dir, "sketchd")
			copyFile(t, args[0], bin)
			os.Chmod(bin, 0o755)
			args = append([]string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin}, args[1:]...)
		}
		out, err := execOutput(args[0], args[1:]...)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("sketchd in a read-only folder: %v, want exit status 1; output:\n%s", err, out)
		}
		notDamage(t, out, data, "permission denied", "Nothing is damaged")
	})
}
