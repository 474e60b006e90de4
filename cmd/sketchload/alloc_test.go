package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// perIDSlack is how many more allocations a request of 10,000 ids may
// take than one of 10: the noise of counting a whole process, and less
// than one allocation per 500 ids.
const perIDSlack = 20

// allocsPerUnit measures allocations of one worker unit, bodies built
// during the run (the harder case for allocation).
func allocsPerUnit(t *testing.T, w worker, unit int) float64 {
	t.Helper()
	var k uint64
	return testing.AllocsPerRun(50, func() {
		k++
		if o := w.do(t.Context(), k, unit); o.ok != unit {
			t.Fatalf("unit %d: %d of %d ok (%s)", k, o.ok, unit, o.failKey)
		}
	})
}

// TestNoAllocationPerID pins that a request costs the same allocations
// whether it carries 10 ids or 10,000: nothing is allocated per id.
// testing.AllocsPerRun counts the whole process, the test's HTTP server
// too, whose reading of a larger body varies by a few allocations from
// run to run (89 against 93 once in CI); the bound allows perIDSlack
// more for the 9,990 more ids, which one allocation per 500 ids would
// exceed.
func TestNoAllocationPerID(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"accepted": 1}`)
	}))
	defer srv.Close()
	per := map[int]float64{}
	for _, f := range allFormats {
		for _, batch := range []int{10, 10000} {
			cfg, err := parseConfig([]string{"-target", srv.URL, "-batch", strconv.Itoa(batch), "-prebuilt", "0",
				"-format", f.String(), "-c", "1", "-requests", "1"}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			w := newHTTPDriver(cfg).newWorker(0)
			allocsPerUnit(t, w, 1) // warm the connection
			per[batch] = allocsPerUnit(t, w, 1)
			w.close()
		}
		t.Logf("%s: %.1f allocations a request of 10 ids, %.1f of 10,000", f, per[10], per[10000])
		if per[10000] > per[10]+perIDSlack {
			t.Errorf("%s: %.1f allocations for a 10,000-id request, %.1f for 10 ids: want no growth with ids", f, per[10000], per[10])
		}
	}

	addr := startRedis(t)
	for _, batch := range []int{10, 1000} {
		cfg, err := parseConfig([]string{"-redis", addr, "-batch", strconv.Itoa(batch), "-prebuilt", "0", "-pipeline", "16", "-c", "1", "-requests", "1"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		w, err := newRedisDriver(cfg).newWorker(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		per[batch] = allocsPerUnit(t, w, 16)
		w.close()
	}
	t.Logf("redis: %.1f allocations a pipeline of 16 PFADDs of 10 ids, %.1f of 1000", per[10], per[1000])
	if per[1000] > per[10]+1 {
		t.Errorf("redis: %.1f allocations for 16 PFADDs of 1000 ids, %.1f for 10 ids: want no growth with ids", per[1000], per[10])
	}
}
