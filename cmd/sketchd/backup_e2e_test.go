package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/archive"
	"github.com/sketchd/sketchd/internal/pgtest"
	"github.com/sketchd/sketchd/internal/store/bolt"
	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
)

// startStoppable runs sketchd in this process on data and returns its
// client and a stop function that waits for it to exit.
func startStoppable(tb testing.TB, data string, args ...string) (*client, string, func()) {
	tb.Helper()
	addr := freeAddr(tb)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = run(ctx, append([]string{"-addr", addr, "-data", data, "-log-level", "warn", "-drain-delay", "0s"}, args...), func(string) string { return "" }, io.Discard, io.Discard)
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
		if runErr != nil {
			tb.Errorf("run: %v", runErr)
		}
	}
	tb.Cleanup(stop)
	waitReady(tb, addr, done)
	return newClient(addr), addr, stop
}

// fill gives a store sketches of several kinds, a series with buckets,
// and a write under an idempotency key.
func fill(tb testing.TB, c *client) {
	tb.Helper()
	for _, s := range []struct{ name, create, add string }{
		{"h", `{"type":"hll","log2m":11,"metric":true}`, `{"ids":[1,2,3,"a"]}`},
		{"h-full", `{"type":"hll","log2m":10,"expthresh":0,"sparse":false}`, `{"ids":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]}`},
		{"c", `{"type":"cms","width":64,"depth":3,"expire_after":"P2D"}`, `{"items":[{"id":2,"count":10}]}`},
		{"t", `{"type":"theta","lg_k":10}`, `{"ids":[1,2,3]}`},
		{"k", `{"type":"kll","k":64}`, `{"values":[5,1.5,-3]}`},
		{"b", `{"type":"bloom","bits":640,"hashes":3}`, `{"ids":[1,2]}`},
	} {
		c.must(tb, http.StatusCreated, "PUT", "/v1/sketches/"+s.name, "application/json", []byte(s.create), nil)
		c.must(tb, http.StatusOK, "POST", "/v1/sketches/"+s.name+"/add", "application/json", []byte(s.add), nil)
	}
	c.must(tb, http.StatusCreated, "PUT", "/v1/series/s", "application/json", []byte(`{"log2m":12,"tz":"Europe/Berlin","levels":{"day":"P400D","month":"P5Y"}}`), nil)
	now := time.Now()
	for d := range 4 {
		ts := now.Add(-time.Duration(d) * 24 * time.Hour).UTC().Format(time.RFC3339)
		c.must(tb, http.StatusOK, "POST", "/v1/series/s/add?ts="+ts, "application/json", []byte(`{"ids":[1,2,3,`+string(rune('4'+d))+`]}`), nil)
	}
}

// rawAll downloads every sketch's bytes and the series' description.
func rawAll(tb testing.TB, c *client) map[string][]byte {
	tb.Helper()
	out := map[string][]byte{}
	for _, n := range []string{"h", "h-full", "c", "t", "k", "b"} {
		out[n] = c.must(tb, http.StatusOK, "GET", "/v1/sketches/"+n+"/raw", "", nil, nil)
	}
	out["series s"] = c.must(tb, http.StatusOK, "GET", "/v1/series/s/raw?from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z", "", nil, nil)
	return out
}

func sameRaw(tb testing.TB, got, want map[string][]byte, what string) {
	tb.Helper()
	for n, w := range want {
		if !bytes.Equal(got[n], w) {
			tb.Errorf("%s: %s is %x, want %x", what, n, got[n], w)
		}
	}
}

func runCmd(args ...string) (string, error) {
	var out bytes.Buffer
	err := run(context.Background(), args, func(string) string { return "" }, &out, io.Discard)
	return out.String(), err
}

func TestBackupAndRestoreCommands(t *testing.T) {
	t.Parallel() // it asserts no timing
	dir := t.TempDir()
	c, addr, _ := startStoppable(t, filepath.Join(dir, "a.db"))
	fill(t, c)
	want := rawAll(t, c)
	file := filepath.Join(dir, "a.skar")
	if out, err := runCmd("backup", "-url", "http://"+addr, "-o", file); err != nil || !strings.Contains(out, "6 sketches, 1 series") {
		t.Fatalf("backup: %q, %v", out, err)
	}
	if _, err := os.Stat(file + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("backup left %s.tmp: %v", file, err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}

	// A refused stream (a token the server does not know) leaves no file.
	tokens := filepath.Join(dir, "tokens")
	os.WriteFile(tokens, []byte("admin-token-00000 admin\n"), 0o600)
	wrong := filepath.Join(dir, "wrong")
	os.WriteFile(wrong, []byte("not-a-known-token\n"), 0o600)
	_, addr2, _ := startStoppable(t, filepath.Join(dir, "auth.db"), "-auth-tokens", tokens)
	failed := filepath.Join(dir, "failed.skar")
	if _, err := runCmd("backup", "-url", "http://"+addr2, "-token-file", wrong, "-o", failed); err == nil {
		t.Fatal("backup with an unknown token succeeded")
	}
	for _, p := range []string{failed, failed + ".tmp"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused backup left %s", p)
		}
	}
	if _, err := runCmd("backup", "-url", "http://"+addr2, "-token-file", tokens, "-o", failed); err != nil {
		t.Errorf("backup with the admin token: %v", err)
	}

	// -max-rate paces the reading and changes nothing in the archive; a
	// rate that does not parse is refused before anything is read.
	paced := filepath.Join(dir, "paced.skar")
	if _, err := runCmd("backup", "-url", "http://"+addr, "-max-rate", "500M", "-o", paced); err != nil {
		t.Errorf("backup -max-rate 500M: %v", err)
	} else if pb, err := os.ReadFile(paced); err != nil || len(pb) != len(b) {
		t.Errorf("the paced archive has %d bytes (%v), the unpaced one %d", len(pb), err, len(b))
	}
	if _, err := runCmd("backup", "-url", "http://"+addr, "-max-rate", "20MB", "-o", failed); err == nil || !strings.Contains(err.Error(), "-max-rate") {
		t.Errorf("backup -max-rate 20MB: %v, want an error naming -max-rate", err)
	}

	// A damaged or truncated archive is refused, naming record and
	// offset, and creates no target.
	for name, d := range map[string][]byte{
		"flipped":   func() []byte { d := bytes.Clone(b); d[len(d)/2] ^= 4; return d }(),
		"truncated": b[:len(b)-10],
	} {
		p := filepath.Join(dir, name+".skar")
		os.WriteFile(p, d, 0o600)
		target := filepath.Join(dir, name+".db")
		_, err := runCmd("restore", "-i", p, "-data", target)
		var ae *archive.Error
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), "byte offset") || !strings.Contains(err.Error(), "record") {
			t.Errorf("restore of a %s archive: %v, want an error naming record and offset", name, err)
		}
		if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("restore of a %s archive created %s", name, target)
		}
	}

	restored := filepath.Join(dir, "restored.db")
	if out, err := runCmd("restore", "-i", file, "-data", restored); err != nil || !strings.Contains(out, "restored 6 sketches") {
		t.Fatalf("restore: %q, %v", out, err)
	}
	if _, err := runCmd("restore", "-i", file, "-data", restored); err == nil || !strings.Contains(err.Error(), "-replace") {
		t.Errorf("restore into a non-empty store: %v, want a refusal naming -replace", err)
	}
	if _, err := runCmd("restore", "-i", file, "-data", restored, "-replace"); err != nil {
		t.Errorf("restore -replace: %v", err)
	}
	c2, _, _ := startStoppable(t, restored)
	sameRaw(t, rawAll(t, c2), want, "restored")
}

// TestCopyAcrossBackends copies bbolt -> PostgreSQL (-> Citus, when
// SKETCHD_CITUS_DSN is set) -> bbolt: every sketch's and the series'
// bytes come back identical, and every bucket's.
func TestCopyAcrossBackends(t *testing.T) {
	t.Parallel() // it asserts no timing
	pgtest.Connect(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	c, _, stop := startStoppable(t, src)
	fill(t, c)
	want := rawAll(t, c)
	stop()

	hops := []string{src, pgstoretest.Schema(t, filepath.Join(dir, "pg"))}
	if os.Getenv("SKETCHD_CITUS_DSN") != "" {
		hops = append(hops, pgstoretest.CitusSchema(t, filepath.Join(dir, "citus")))
	}
	back := filepath.Join(dir, "back.db")
	hops = append(hops, back)
	for i := 1; i < len(hops); i++ {
		out, err := runCmd("copy", "-from", hops[i-1], "-to", hops[i])
		if err != nil || !strings.Contains(out, "verified 6 sketches, 1 series") {
			t.Fatalf("copy hop %d: %q, %v", i, out, err)
		}
	}
	// Copying into a non-empty target is refused.
	if _, err := runCmd("copy", "-from", src, "-to", hops[1]); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("copy into a non-empty database: %v", err)
	}

	// Every bucket's bytes, read from both files.
	buckets := func(path string) map[string][]byte {
		db, err := bolt.Open(path, bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var buf bytes.Buffer
		aw, _ := archive.NewWriter(&buf, archive.Header{})
		if err := db.Backup(context.Background(), aw); err != nil {
			t.Fatal(err)
		}
		aw.Close()
		r, _ := archive.NewReader(&buf)
		out := map[string][]byte{}
		for {
			rec, err := r.Next()
			if err == io.EOF {
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
			if rec.Bucket != nil {
				out[rec.Bucket.Level+" "+rec.Bucket.Start.String()] = rec.Bucket.Bytes
			}
		}
	}
	wb, gb := buckets(src), buckets(back)
	if len(wb) < 4 {
		t.Fatalf("source has %d buckets", len(wb))
	}
	sameRaw(t, gb, wb, "buckets after the round trip")
	if len(gb) != len(wb) {
		t.Errorf("%d buckets after the round trip, want %d", len(gb), len(wb))
	}
	c2, _, _ := startStoppable(t, back)
	sameRaw(t, rawAll(t, c2), want, "after the round trip")
}

// walkthroughBlocks returns the ```sh blocks of the section heading of
// the markdown file path.
func walkthroughBlocks(tb testing.TB, path, heading string) []string {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(raw), "\n"+heading+"\n")
	if !ok {
		tb.Fatalf("%s has no %q", path, heading)
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	var blocks []string
	for {
		_, rest, ok := strings.Cut(sec, "```sh\n")
		if !ok {
			return blocks
		}
		body, rest, _ := strings.Cut(rest, "```")
		blocks = append(blocks, body)
		sec = rest
	}
}

// TestScaleOutWalkthrough runs docs/scale-out.md's "Moving from bbolt to
// PostgreSQL or Citus" as an operator would: the backup while the server
// runs, then, once it is stopped, the copy into PostgreSQL; a server on
// the database then serves the same bytes.
func TestScaleOutWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sketchd and runs the walk-through")
	}
	t.Parallel() // it asserts no timing
	pgtest.Connect(t)
	blocks := walkthroughBlocks(t, "../../docs/scale-out.md", "## Moving from bbolt to PostgreSQL or Citus")
	if len(blocks) != 2 {
		t.Fatalf("found %d sh blocks in the walk-through, want 2 (backup; copy)", len(blocks))
	}
	dir := t.TempDir()
	bin := filepath.Dir(sketchdBinary(t))
	os.WriteFile(filepath.Join(dir, "admin.token"), []byte("admin-token-00000\n"), 0o600)
	// The server runs open (the test's client sends no token); the
	// walk-through's token file is sent and ignored.
	c, addr, stop := startStoppable(t, filepath.Join(dir, "sketchd.db"))
	fill(t, c)
	want := rawAll(t, c)
	pg := pgstoretest.Schema(t, filepath.Join(dir, "pg"))
	runBlock := func(block string) {
		t.Helper()
		cmd := exec.Command("bash", "-e", "-c", strings.ReplaceAll(block, "localhost:8080", addr))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "PGDSN="+pg)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s\n%v: %s", block, err, out)
		}
	}
	runBlock(blocks[0])
	if _, err := os.Stat(filepath.Join(dir, "before-move.skar")); err != nil {
		t.Fatalf("the backup step left no archive: %v", err)
	}
	stop()
	runBlock(blocks[1])
	c2 := startInProcess(t, filepath.Join(dir, "unused.db"), "-postgres", pg)
	sameRaw(t, rawAll(t, c2), want, "after the move to PostgreSQL")
}
