package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/pace"
)

func benchEnvInt(tb testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("%s=%q: want a positive whole number", name, v)
	}
	return n
}

// BenchmarkBackup measures, in one iteration on the test backend
// (SKETCHD_TEST_BACKEND), over SKETCHD_BACKUP_BENCH_SKETCHES FULL HLLs
// (default 10,000; log2m 14, regwidth 5: 10 KiB each):
//
//   - load_api_s: loading them through the API (PUT /raw, 8 clients),
//     the peer of restore_s;
//
//   - backup_MB/s: GET /v1/backup read to the end, archive bytes over
//     time; its peers, cp_MB/s (bbolt: cp of the data file right after a
//     checkpoint) or pg_dump_MB/s (PostgreSQL: pg_dump of the sketchd
//     tables' schema, custom format without compression, to a file;
//     when pg_dump is on PATH);
//
//   - restore_s: verifying the archive and restoring it into an empty
//     store of the same backend.
//
//     go test -run '^$' -bench Backup -benchtime 1x ./internal/server
//     SKETCHD_TEST_BACKEND=postgres go test -run '^$' -bench Backup -benchtime 1x ./internal/server
//
// With SKETCHD_BACKUP_BENCH_SMALL=N it uses N default HLLs of three ids
// each instead (EXPLICIT, 27 bytes), loaded through POST /v1/events with
// create (8 clients, 100 sketches an event, 3 events a request).
func BenchmarkBackup(b *testing.B) {
	n := benchEnvInt(b, "SKETCHD_BACKUP_BENCH_SKETCHES", 10_000)
	small := 0
	if os.Getenv("SKETCHD_BACKUP_BENCH_SMALL") != "" {
		small = benchEnvInt(b, "SKETCHD_BACKUP_BENCH_SMALL", 1)
	}
	p := hll.Params{Log2m: 14, Regwidth: 5, Expthresh: 0, Sparse: false}
	bodies := make([][]byte, 64)
	for i := range bodies {
		bodies[i] = encode(b, hllOf(b, p, idRange(int64(i)*100_000, int64(i)*100_000+50_000)...))
	}
	for b.Loop() {
		e := newEnv(b)
		e.validate = false
		start := time.Now()
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if small > 0 {
					for first := w * 100; first < small; first += 800 {
						var names []string
						for i := first; i < min(first+100, small); i++ {
							names = append(names, fmt.Sprintf("%q", fmt.Sprintf("small-%07d", i)))
						}
						list := strings.Join(names, ",")
						body := `{"events":[{"id":1,"sketches":[` + list + `]},{"id":2,"sketches":[` + list + `]},{"id":3,"sketches":[` + list + `]}]}`
						r, err := e.try(b, request{Method: http.MethodPost, Path: "/v1/events?create=true",
							Body: strings.NewReader(body), Header: []string{"Content-Type: application/json"}})
						if err != nil || r.Status != http.StatusOK {
							b.Errorf("events: %v %v", r, err)
							return
						}
					}
					return
				}
				for i := w; i < n; i += 8 {
					r, err := e.try(b, request{Method: http.MethodPut, Path: fmt.Sprintf("/v1/sketches/full-%06d/raw", i),
						Body: bytes.NewReader(bodies[i%len(bodies)]), Header: []string{"Content-Type: application/octet-stream"}})
					if err != nil || r.Status != http.StatusCreated {
						b.Errorf("put %d: %v %v", i, r, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		loadAPI := time.Since(start)

		start = time.Now()
		arch := e.getBackup(b)
		backupTime := time.Since(start)
		b.ReportMetric(float64(len(arch))/(1<<20)/backupTime.Seconds(), "backup_MB/s")
		b.ReportMetric(float64(len(arch))/(1<<20), "archive_MB")
		peer(b, e)

		e2 := newEnv(b)
		start = time.Now()
		if _, err := e2.restoreInto(b, arch, false); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "restore_s")
		b.ReportMetric(loadAPI.Seconds(), "load_api_s")
	}
}

// peer measures the backend's own copy of the same data: cp of the
// bbolt file after a checkpoint, or pg_dump of the schema.
func peer(b *testing.B, e *env) {
	ctx := context.Background()
	dst := filepath.Join(b.TempDir(), "copy")
	switch st := e.db.Store.(type) {
	case interface {
		Checkpoint(context.Context) error
		Path() string
	}:
		if err := st.Checkpoint(ctx); err != nil {
			b.Fatal(err)
		}
		fi, err := os.Stat(st.Path())
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if out, err := exec.Command("cp", st.Path(), dst).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v: %s", err, out)
		}
		b.ReportMetric(float64(fi.Size())/(1<<20)/time.Since(start).Seconds(), "cp_MB/s")
	case interface{ Pool() *pgxpool.Pool }:
		pgDump, err := exec.LookPath("pg_dump")
		if err != nil {
			return
		}
		cc := st.Pool().Config().ConnConfig
		schema, _, _ := strings.Cut(cc.RuntimeParams["search_path"], ",")
		args := []string{"-h", cc.Host, "-p", strconv.Itoa(int(cc.Port)), "-d", cc.Database, "-n", schema, "-Fc", "-Z", "0", "-f", dst}
		if cc.User != "" {
			args = append(args, "-U", cc.User)
		}
		start := time.Now()
		if out, err := exec.Command(pgDump, args...).CombinedOutput(); err != nil {
			b.Fatalf("pg_dump %s: %v: %s", strings.Join(args, " "), err, out)
		}
		d := time.Since(start)
		fi, err := os.Stat(dst)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(fi.Size())/(1<<20)/d.Seconds(), "pg_dump_MB/s")
		b.ReportMetric(float64(fi.Size())/(1<<20), "pg_dump_MB")
	}
}

// BenchmarkAddsDuringBackup measures the p99 latency of adds (4 clients,
// one id each to one of 1,000 sketches) for SKETCHD_BACKUP_BENCH_SECONDS
// (default 3) without a backup, then as long again with backups running
// back to back, over SKETCHD_BACKUP_BENCH_SKETCHES FULL HLLs (default
// 10,000), on the test backend; on bbolt, again while backups each
// after a checkpoint run back to back (a backup as it was when it began
// with one; it no longer writes or syncs anything), and while
// checkpoints alone do:
//
//	go test -run '^$' -bench AddsDuringBackup -benchtime 1x ./internal/server
func BenchmarkAddsDuringBackup(b *testing.B) {
	n := benchEnvInt(b, "SKETCHD_BACKUP_BENCH_SKETCHES", 10_000)
	secs := benchEnvInt(b, "SKETCHD_BACKUP_BENCH_SECONDS", 3)
	p := hll.Params{Log2m: 14, Regwidth: 5, Expthresh: 0, Sparse: false}
	body := encode(b, hllOf(b, p, idRange(0, 50_000)...))
	for b.Loop() {
		e := newEnv(b)
		e.validate = false
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += 8 {
					r, err := e.try(b, request{Method: http.MethodPut, Path: fmt.Sprintf("/v1/sketches/full-%06d/raw", i),
						Body: bytes.NewReader(body), Header: []string{"Content-Type: application/octet-stream"}})
					if err != nil || r.Status != http.StatusCreated {
						b.Errorf("put %d: %v %v", i, r, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		adds := func(d time.Duration) []time.Duration {
			var mu sync.Mutex
			var lat []time.Duration
			var wg sync.WaitGroup
			end := time.Now().Add(d)
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; time.Now().Before(end); i++ {
						t := time.Now()
						r, err := e.try(b, request{Method: http.MethodPost, Path: fmt.Sprintf("/v1/sketches/full-%06d/add", (i*4+w)%1000),
							Body: strings.NewReader(idsJSON(int64(i*4 + w + 1_000_000))), Header: []string{"Content-Type: application/json"}})
						if err != nil || r.Status != http.StatusOK {
							b.Errorf("add: %v %v", r, err)
							return
						}
						mu.Lock()
						lat = append(lat, time.Since(t))
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			return lat
		}
		d := time.Duration(secs) * time.Second
		// during runs the adds while fn runs back to back, and returns
		// their p99 and how many times fn ran.
		during := func(fn func() error) (time.Duration, int) {
			stop := make(chan struct{})
			done := make(chan struct{})
			runs := 0
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := fn(); err != nil {
						b.Error(err)
						return
					}
					runs++
				}
			}()
			lat := adds(d)
			close(stop)
			<-done
			return p99(lat), runs
		}
		// SKETCHD_BACKUP_BENCH_RATE reads each backup at that rate, as
		// sketchd backup -max-rate does (20M: 20 MB a second).
		var rate float64
		if v := os.Getenv("SKETCHD_BACKUP_BENCH_RATE"); v != "" {
			r, err := pace.ParseRate(v)
			if err != nil {
				b.Fatalf("SKETCHD_BACKUP_BENCH_RATE: %v", err)
			}
			rate = r
		}
		backup := func() error {
			resp, err := e.srv.Client().Get(e.srv.URL + "/v1/backup")
			if err != nil {
				return err
			}
			var to io.Writer = io.Discard
			if rate > 0 {
				to = pace.NewWriter(to, rate)
			}
			_, err = io.Copy(to, resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				return fmt.Errorf("backup: %d %v", resp.StatusCode, err)
			}
			return nil
		}
		q := p99(adds(d))
		g, backups := during(backup)
		// On bbolt a backup once started with a checkpoint: the adds
		// again, while backups each after a checkpoint (what a backup
		// was) and while checkpoints alone run back to back, say what
		// that cost them.
		if cp, ok := e.db.Store.(interface{ Checkpoint(context.Context) error }); ok {
			checkpoint := func() error { return cp.Checkpoint(context.Background()) }
			old, _ := during(func() error {
				if err := checkpoint(); err != nil {
					return err
				}
				return backup()
			})
			c, _ := during(checkpoint)
			b.ReportMetric(float64(old.Microseconds())/1000, "p99_checkpoint_backup_ms")
			b.ReportMetric(float64(c.Microseconds())/1000, "p99_checkpoints_ms")
		}
		b.ReportMetric(float64(q.Microseconds())/1000, "p99_quiet_ms")
		b.ReportMetric(float64(g.Microseconds())/1000, "p99_backup_ms")
		b.ReportMetric(float64(g)/float64(q), "p99_ratio")
		b.ReportMetric(float64(backups), "backups")
	}
}

func p99(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)*99/100]
}
