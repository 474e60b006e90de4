package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
)

// TestSeriesCenturyRead: the series of the report that took 1.27 GB and
// 10–25 s for one line (hours kept a century, one bucket stored), read
// through the binary with the default limits, on each backend. Lines and
// ranges planning more than -max-series-buckets, alone or as the 8 and
// 1,000 ranges of a union, are 422s naming the limit; a count over ten
// years of hours answers from the one bucket; the peak RSS, three reads
// at once included, stays under 100 MB above the idle RSS.
func TestSeriesCenturyRead(t *testing.T) {
	t.Parallel() // it asserts no timing
	if testing.Short() {
		t.Skip("builds the real binary")
	}
	for _, backend := range []string{"bolt", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			args := []string{}
			if backend == "postgres" {
				args = append(args, "-postgres", pgstoretest.Schema(t, t.TempDir()), "-postgres-max-conns", "4")
			}
			p := startProcess(t, filepath.Join(t.TempDir(), "d.db"), args...)
			c := newClient(p.addr)
			c.must(t, http.StatusCreated, "PUT", "/v1/series/century", "application/json", []byte(`{"levels":{"hour":"P100Y"},"late_limit":"P100Y"}`), nil)
			now := time.Now().UTC()
			at := now.Add(-2 * time.Hour)
			c.must(t, http.StatusOK, "POST", "/v1/series/century/add?ts="+at.Format(time.RFC3339), "application/json", []byte(`{"ids":[42]}`), nil)
			end := now.Truncate(time.Hour).Add(time.Hour)
			decade := "/v1/series/century/count?from=" + end.AddDate(-10, 0, 0).Format(time.RFC3339) + "&to=" + end.Format(time.RFC3339)
			c.must(t, http.StatusOK, "GET", decade, "", nil, nil) // warm: the idle RSS includes a read's code and pools
			pid := p.cmd.Process.Pid
			base := procKiB(t, pid, "VmRSS")

			century := "from=1930-01-01T00:00:00Z&to=2026-11-01T00:00:00Z"
			long := fmt.Sprintf(`{"series":"century","from":"1930-01-01T00:00:00Z","to":%q}`, end.Format(time.RFC3339))
			union := func(n int) []byte {
				return []byte(`{"sketches":[` + strings.TrimSuffix(strings.Repeat(long+",", n), ",") + `]}`)
			}
			refused := []struct {
				name, method, path string
				body               []byte
			}{
				{"monthly line over century windows", "GET", "/v1/series/century/timeseries?" + century + "&step=P1M&window=P100Y", nil},
				{"count over a century", "GET", "/v1/series/century/count?" + century, nil},
				{"raw over a century", "GET", "/v1/series/century/raw?" + century, nil},
				{"union of 8 century ranges", "POST", "/v1/union", union(8)},
				{"union of 1,000 century ranges", "POST", "/v1/union", union(1000)},
			}
			for _, r := range refused {
				start := time.Now()
				status, body, err := c.do(r.method, r.path, "application/json", r.body)
				if err != nil {
					t.Fatalf("%s: %v", r.name, err)
				}
				t.Logf("%s: %d in %v", r.name, status, time.Since(start).Round(time.Millisecond))
				if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), "-max-series-buckets") || !strings.Contains(string(body), "at most 100000 buckets") {
					t.Errorf("%s = %d %s, want 422 naming -max-series-buckets and its 100000", r.name, status, body)
				}
			}
			var count struct {
				Cardinality float64
				Plan        []struct {
					Level string
					Count int
				}
			}
			start := time.Now()
			c.must(t, http.StatusOK, "GET", decade, "", nil, &count)
			t.Logf("count over ten years of hours: %v", time.Since(start).Round(time.Millisecond))
			if count.Cardinality != 1 || len(count.Plan) != 1 || count.Plan[0].Level != "hour" || count.Plan[0].Count < 87_000 {
				t.Errorf("count over ten years = %+v, want 1 from one run of about 87,600 hours", count)
			}
			// Three at once, as in the report (2.46 GB then).
			var wg sync.WaitGroup
			for _, path := range []string{refused[0].path, refused[1].path, decade} {
				wg.Go(func() {
					if status, body, err := c.do("GET", path, "", nil); err != nil || status >= 500 {
						t.Errorf("GET %s = %d %s %v", path, status, body, err)
					}
				})
			}
			wg.Wait()
			peak := procKiB(t, pid, "VmHWM")
			t.Logf("RSS %d MiB idle, peak %d MiB", base>>20, peak>>20)
			if peak-base > 100<<20 {
				t.Errorf("peak RSS %d MiB above the idle %d MiB, want under 100 MiB", (peak-base)>>20, base>>20)
			}
		})
	}
}
