package main

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/sketchd/sketchd/migrations"
)

// treeSums returns the SHA-256 and modification time of every file of
// the store at data (the data file and its log directory).
func treeSums(tb testing.TB, data string) map[string]string {
	tb.Helper()
	sums := map[string]string{}
	add := func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		fi, _ := os.Stat(path)
		sums[path] = fmt.Sprintf("%x %v %o", sha256.Sum256(b), fi.ModTime(), fi.Mode())
	}
	add(data)
	filepath.WalkDir(data+".wal", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			add(path)
		}
		return err
	})
	return sums
}

// runCheckBinary runs "sketchd check -data data" and returns its stdout,
// stderr and exit status; the store's files must be left as they were.
func runCheckBinary(tb testing.TB, data string) (stdout, stderr string, code int) {
	tb.Helper()
	before := treeSums(tb, data)
	cmd := exec.Command(sketchdBinary(tb), "check", "-data", data)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		tb.Fatal(err)
	}
	noPanic(tb, out.String()+errOut.String())
	after := treeSums(tb, data)
	for path, sum := range before {
		if after[path] != sum {
			tb.Errorf("sketchd check changed %s", path)
		}
	}
	if len(after) != len(before) {
		tb.Errorf("sketchd check left %d files, there were %d", len(after), len(before))
	}
	return out.String(), errOut.String(), code
}

// TestCheckCommand: "sketchd check" reads a stopped store without
// changing a byte of it and lists every damaged sketch and log record
// with what can be recovered; its exit status is 0 when it finds
// nothing, 1 when it finds damage, 2 when it cannot check.
func TestCheckCommand(t *testing.T) {
	t.Parallel() // it asserts no timing
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	// A store with sketches of several kinds and a series, checkpointed,
	// then 20 adds to h, a replacing upload of r, and a kill -9: the log
	// holds them.
	base := filepath.Join(t.TempDir(), "sketchd.db")
	p := startProcess(t, base, "-checkpoint-interval", "1h")
	c := newClient(p.addr)
	for name, body := range map[string]string{"h": `{"log2m":11}`, "r": `{"log2m":11}`, "quiet": `{"log2m":11}`, "c": `{"type":"cms","width":32,"depth":2}`} {
		c.must(t, http.StatusCreated, "PUT", "/v1/sketches/"+name, "application/json", []byte(body), nil)
	}
	c.must(t, http.StatusOK, "POST", "/v1/sketches/quiet/add", "application/json", []byte(`{"ids":[1,2,3]}`), nil)
	c.must(t, http.StatusCreated, "PUT", "/v1/series/s", "application/json", []byte(`{"levels":{"hour":"P2D"}}`), nil)
	c.must(t, http.StatusOK, "POST", "/v1/series/s/add", "application/json", []byte(`{"ids":[1]}`), nil)
	if err := p.terminate(t); err != nil {
		t.Fatal(err)
	}
	clean := filepath.Join(t.TempDir(), "clean.db")
	copyFile(t, base, clean)
	copyDir(t, base+".wal", clean+".wal")
	p = startProcess(t, base, "-checkpoint-interval", "1h")
	c = newClient(p.addr)
	for i := range 20 {
		c.must(t, http.StatusOK, "POST", "/v1/sketches/h/add", "application/json", []byte(fmt.Sprintf(`{"ids":[%d]}`, 100+i)), nil)
	}
	raw := c.must(t, http.StatusOK, "GET", "/v1/sketches/quiet/raw", "", nil, nil)
	c.must(t, http.StatusOK, "PUT", "/v1/sketches/r/raw", "application/octet-stream", raw, nil)
	p.kill()
	seg := onlySegment(t, base)
	segBytes, _ := os.ReadFile(seg)
	recs := walRecords(t, segBytes)
	if len(recs) != 21 {
		t.Fatalf("%d log records, want 21", len(recs))
	}

	expect := func(t *testing.T, data string, code int, want ...string) string {
		t.Helper()
		out, errOut, got := runCheckBinary(t, data)
		if got != code {
			t.Errorf("sketchd check exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", got, code, out, errOut)
		}
		for _, w := range want {
			if !strings.Contains(out+errOut, w) {
				t.Errorf("sketchd check output lacks %q:\n%s%s", w, out, errOut)
			}
		}
		return out
	}
	t.Run("clean", func(t *testing.T) {
		out := expect(t, clean, 0, "no damage found", fmt.Sprintf("schema version %d", migrations.Latest()))
		if strings.Contains(out, "DAMAGED") {
			t.Errorf("a clean store reported damaged:\n%s", out)
		}
	})
	t.Run("not shut down cleanly", func(t *testing.T) {
		expect(t, copyTree(t, base), 0, "no damage found", "replays 21 log records")
	})
	t.Run("damaged sketches", func(t *testing.T) {
		data := copyTree(t, base)
		for _, name := range []string{"quiet", "h", "r", "c"} {
			n := len(storedValue(t, data, "sketches", []byte(name)))
			flipStoredBit(t, data, "sketches", []byte(name), n/2, 1)
		}
		bucket := storedBucketKey(t, data, "s")
		n := len(storedValue(t, data, "series_buckets", bucket))
		flipStoredBit(t, data, "series_buckets", bucket, n-1, 0) // in its checksum
		out := expect(t, data, 1,
			`DAMAGED: sketch "quiet"`, "failed its checksum",
			`DAMAGED: sketch "h"`, "the log changes it", "-recover-past-damage",
			`DAMAGED: sketch "r"`, "the log replaces it with a whole new state",
			`DAMAGED: sketch "c"`, "restore it from a backup, or DELETE the sketch",
			`of series "s"`, "DELETE the series",
			"5 damaged")
		if strings.Count(out, "DAMAGED:") != 5 {
			t.Errorf("want exactly 5 damaged records listed:\n%s", out)
		}
	})
	t.Run("recovered by the log", func(t *testing.T) {
		// What check says is recovered is: the start replaces r from the
		// log and serves it.
		data := copyTree(t, base)
		n := len(storedValue(t, data, "sketches", []byte("r")))
		flipStoredBit(t, data, "sketches", []byte("r"), n/2, 1)
		expect(t, data, 1, `DAMAGED: sketch "r"`, "all of it: the log replaces it", "1 damaged")
		p := startProcess(t, data)
		if got := newClient(p.addr).must(t, http.StatusOK, "GET", "/v1/sketches/r/raw", "", nil, nil); string(got) != string(raw) {
			t.Errorf("r after the start = %x, want the logged upload %x", got, raw)
		}
		p.terminate(t)
		expect(t, data, 0, "no damage found")
	})
	t.Run("damaged log record", func(t *testing.T) {
		data := copyTree(t, base)
		b := append([]byte(nil), segBytes...)
		b[recs[10].start+12] ^= 0x40
		os.WriteFile(onlySegment(t, data), b, 0o600)
		expect(t, data, 1, fmt.Sprintf("the log record at offset %d", recs[10].start), "10 intact records after it",
			`touching sketch "h", sketch "r"`, "sketchd refuses to start")
	})
	t.Run("torn tail", func(t *testing.T) {
		data := copyTree(t, base)
		os.WriteFile(onlySegment(t, data), segBytes[:recs[15].start+3], 0o600)
		expect(t, data, 1, fmt.Sprintf("at offset %d", recs[15].start), "may include acknowledged writes")
	})
	t.Run("truncated data file", func(t *testing.T) {
		data := copyTree(t, base)
		b, _ := os.ReadFile(data)
		os.WriteFile(data, b[:3*4096], 0o600)
		expect(t, data, 1, "is truncated")
	})
	t.Run("no store", func(t *testing.T) {
		out, errOut, code := runCheckBinaryNoStore(t, filepath.Join(t.TempDir(), "none.db"))
		if code != 2 || !strings.Contains(errOut, "no store at") {
			t.Errorf("check of nothing: status %d, %s%s; want 2 and a message", code, out, errOut)
		}
	})
	t.Run("running", func(t *testing.T) {
		data := copyTree(t, clean)
		startProcess(t, data)
		_, errOut, code := runCheckBinary(t, data)
		if code != 2 || !strings.Contains(errOut, "locked") {
			t.Errorf("check of a running store: status %d, %s; want 2 saying it is locked", code, errOut)
		}
	})
	t.Run("help", func(t *testing.T) {
		out, err := exec.Command(sketchdBinary(t), "check", "-h").Output()
		if err != nil || !strings.Contains(string(out), "Usage: sketchd check") || !strings.Contains(string(out), "Exit status") {
			t.Errorf("sketchd check -h = %v, %s", err, out)
		}
		out, _ = exec.Command(sketchdBinary(t), "-h").Output()
		if !strings.Contains(string(out), "sketchd check") {
			t.Errorf("sketchd -h does not mention check:\n%s", out)
		}
	})
}

// runCheckBinaryNoStore runs "sketchd check" where there is no store.
func runCheckBinaryNoStore(tb testing.TB, data string) (stdout, stderr string, code int) {
	tb.Helper()
	cmd := exec.Command(sketchdBinary(tb), "check", "-data", data)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if ee, ok := cmd.Run().(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if _, err := os.Stat(data); err == nil {
		tb.Errorf("sketchd check created %s", data)
	}
	return out.String(), errOut.String(), code
}

// storedBucketKey returns the key of the first stored bucket of series
// name.
func storedBucketKey(tb testing.TB, data, name string) []byte {
	tb.Helper()
	db, err := bbolt.Open(data, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var key []byte
	db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket([]byte("series_buckets")).Cursor()
		k, _ := c.Seek([]byte(name + "\x00"))
		key = append([]byte(nil), k...)
		return nil
	})
	if !strings.HasPrefix(string(key), name+"\x00") {
		tb.Fatalf("no bucket of series %s", name)
	}
	return key
}

func copyDir(tb testing.TB, src, dst string) {
	tb.Helper()
	os.MkdirAll(dst, 0o700)
	entries, err := os.ReadDir(src)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		copyFile(tb, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
	}
}

// keyedAdd adds id to the Count-Min c with an Idempotency-Key.
func keyedAdd(tb testing.TB, c *client, key string, id int) {
	tb.Helper()
	req, err := http.NewRequest("POST", c.base+"/v1/sketches/c/add", strings.NewReader(fmt.Sprintf(`{"ids":[%d]}`, id)))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.http.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("keyed add %s = %d", key, resp.StatusCode)
	}
}

// storedKey returns the bbolt key of the idempotency key record whose
// key is key.
func storedKey(tb testing.TB, data, key string) []byte {
	tb.Helper()
	db, err := bbolt.Open(data, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var found []byte
	db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("idempotency")).ForEach(func(k, _ []byte) error {
			if strings.HasSuffix(string(k), "\x01c"+key) {
				found = append([]byte(nil), k...)
			}
			return nil
		})
	})
	if found == nil {
		tb.Fatalf("no stored idempotency key %q", key)
	}
	return found
}

// TestCheckIdempotencyKeys: twelve writes under Idempotency-Keys, their
// keys checkpointed into the data file, then twelve more left in the log
// by a kill -9. A bit flipped in any one key record, in the data file or
// in the log, makes "sketchd check" exit 1 naming it: the key in the data
// file (which the start refuses, as check says), the log record's offset
// in the log.
func TestCheckIdempotencyKeys(t *testing.T) {
	t.Parallel() // it asserts no timing
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	base := filepath.Join(t.TempDir(), "sketchd.db")
	p := startProcess(t, base, "-checkpoint-interval", "1h")
	c := newClient(p.addr)
	c.must(t, http.StatusCreated, "PUT", "/v1/sketches/c", "application/json", []byte(`{"type":"cms","width":32,"depth":2}`), nil)
	for i := range 12 {
		keyedAdd(t, c, fmt.Sprintf("stored-%02d", i), i)
	}
	if err := p.terminate(t); err != nil { // the keys now in bbolt
		t.Fatal(err)
	}
	out, errOut, code := runCheckBinary(t, copyTree(t, base))
	if code != 0 || !strings.Contains(out, "12 idempotency keys read") {
		t.Errorf("check of the undamaged store: status %d, want 0 having read the 12 keys\n%s%s", code, out, errOut)
	}
	r := rand.New(rand.NewPCG(12, 1))
	for i := range 12 {
		key := fmt.Sprintf("stored-%02d", i)
		data := copyTree(t, base)
		bkey := storedKey(t, data, key)
		n := len(storedValue(t, data, "idempotency", bkey))
		at, bit := r.IntN(n), r.IntN(8)
		flipStoredBit(t, data, "idempotency", bkey, at, bit)
		out, errOut, code := runCheckBinary(t, data)
		if code != 1 || !strings.Contains(out, fmt.Sprintf(`DAMAGED: idempotency key %q of a write to "c"`, key)) || !strings.Contains(out, "1 damaged") {
			t.Errorf("%s, byte %d of %d, bit %d: check exit status %d, want 1 naming the key:\n%s%s", key, at, n, bit, code, out, errOut)
		}
		if p, refusal := startOrRefuse(t, data); p != nil {
			t.Errorf("%s, byte %d bit %d: sketchd started on a damaged key record, check says it refuses", key, at, bit)
		} else if !strings.Contains(refusal, key) {
			t.Errorf("%s: the refusal does not name the key:\n%s", key, refusal)
		}
	}

	p = startProcess(t, base, "-checkpoint-interval", "1h")
	c = newClient(p.addr)
	for i := range 12 {
		keyedAdd(t, c, fmt.Sprintf("logged-%02d", i), 100+i)
	}
	p.kill()
	segBytes, err := os.ReadFile(onlySegment(t, base))
	if err != nil {
		t.Fatal(err)
	}
	recs := walRecords(t, segBytes)
	if len(recs) != 12 {
		t.Fatalf("%d log records, want 12", len(recs))
	}
	for i, rec := range recs {
		data := copyTree(t, base)
		b := append([]byte(nil), segBytes...)
		at := rec.start + 8 + r.IntN(rec.end-rec.start-8) // in the payload
		b[at] ^= 1 << r.IntN(8)
		os.WriteFile(onlySegment(t, data), b, 0o600)
		out, errOut, code := runCheckBinary(t, data)
		want := fmt.Sprintf("the log record at offset %d", rec.start)
		if i == len(recs)-1 {
			want = fmt.Sprintf("the log's last record, at offset %d", rec.start)
		}
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("log record %d (logged-%02d), byte %d: check exit status %d, want 1 naming %q:\n%s%s", i, i, at, code, want, out, errOut)
		}
	}
}
