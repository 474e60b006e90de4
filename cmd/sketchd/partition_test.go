package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/pgtest/pgcluster"
	"github.com/sketchd/sketchd/internal/store/postgres/pgstoretest"
)

// partitionTimeout is the partition test's -write-timeout and
// -read-timeout, and partitionMargin what a request may take past it: the
// half second the store waits for PostgreSQL to answer a cancel request
// (cancelGrace), and room for a loaded machine.
const (
	partitionTimeout = 2 * time.Second
	partitionMargin  = 1500 * time.Millisecond
)

// TestCitusPartition runs two sketchd nodes on a Citus cluster whose
// coordinator and two workers each live in a network namespace of their
// own, joined by veth pairs, under TestCitusFaults's mixed write load,
// and cuts the link between the coordinator and one worker for four
// write timeouts, then restores it. It checks:
//
//   - every request is answered within its deadline plus
//     partitionMargin, during the cut too (writes to the cut worker
//     answer 503 with Retry-After);
//   - /readyz on both nodes answers 503 naming the cut worker while it
//     is cut, and 200 again after;
//   - no acknowledged id is lost, each is visible through every node
//     after the cut, and nothing never sent appears (faultLoad.verify).
//
// It logs the p99 and the slowest answer before and during the cut.
// Without namespaces (not root, no iproute2) it skips;
// SKETCHD_REQUIRE_NETNS=1 (CI) makes that a failure.
func TestCitusPartition(tt *testing.T) {
	if testing.Short() {
		tt.Skip("starts a Citus cluster in network namespaces and two sketchd processes")
	}
	t := &recorder{T: tt}
	tt.Cleanup(t.repeat)
	cl := pgcluster.StartCitusNetns(t, 2, "citus.recover_2pc_interval = '5s'")
	dsn := pgstoretest.WithSetting(pgstoretest.SchemaOn(t, cl.DSN(cl.Coordinator), t.TempDir()), "citus.shard_count", "6")
	timeout := partitionTimeout.String()
	c, admin := startFaultNodes(t, dsn, 2, "-write-timeout", timeout, "-read-timeout", timeout)
	f := newFaultLoad(t, c, admin, cl)
	f.times = &answerTimes{}
	cut := cl.Workers[1]
	want := "worker " + cut.Addr()

	stop := f.run()
	time.Sleep(2 * time.Second)
	before, _ := f.times.take()

	start := time.Now()
	cl.Cut(1)
	t.Logf("link to %s cut at %s", want, start.Format("15:04:05.000"))
	// Readiness, polled on both nodes through the cut.
	hc := &http.Client{Timeout: 10 * time.Second}
	// (A write that fails makes a node unready at once, before its probe
	// names the worker: the first 503s may say less.)
	unready := make([]time.Duration, len(c.nodes))
	seen := make([]map[string]bool, len(c.nodes))
	for time.Since(start) < 4*partitionTimeout+4*time.Second {
		for i := range c.nodes {
			status, _, body, err := get(hc, "http://"+c.pick(i)+"/readyz")
			if seen[i] == nil {
				seen[i] = map[string]bool{}
			}
			seen[i][fmt.Sprintf("%d %s %v", status, body, err)] = true
			var p struct{ Detail string }
			json.Unmarshal(body, &p)
			if err == nil && status == http.StatusServiceUnavailable && unready[i] == 0 && strings.Contains(p.Detail, want) {
				unready[i] = time.Since(start)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	during, slowest := f.times.take()
	cl.Restore(1)
	t.Logf("link restored at %s", time.Now().Format("15:04:05.000"))
	for i, d := range unready {
		if d == 0 {
			t.Errorf("node %d: /readyz never answered 503 naming %s during a %v cut; it answered %v", i, want, 4*partitionTimeout+4*time.Second, slices.Collect(maps.Keys(seen[i])))
		} else {
			t.Logf("node %d: /readyz 503 naming the worker %v after the cut", i, d.Round(time.Millisecond))
		}
	}
	time.Sleep(time.Second)
	acked := stop()
	after, _ := f.times.take()
	f.recovered("the partition")
	if problems := f.verify(f.ledger); len(problems) > 0 {
		t.Fatalf("after the partition:\n%s", strings.Join(problems, "\n"))
	}
	if acked < 20 {
		t.Fatalf("only %d writes were acknowledged; the test proves little", acked)
	}
	limit := partitionTimeout + partitionMargin
	for _, phase := range []struct {
		name  string
		times []time.Duration
	}{{"before the cut", before}, {"during the cut", during}, {"after it", after}} {
		if len(phase.times) == 0 {
			t.Errorf("no request was answered %s", phase.name)
			continue
		}
		worst := phase.times[len(phase.times)-1]
		t.Logf("%s: %d requests, p50 %v, p99 %v, max %v", phase.name, len(phase.times),
			phase.times[len(phase.times)/2].Round(time.Millisecond), phase.times[len(phase.times)*99/100].Round(time.Millisecond), worst.Round(time.Millisecond))
		if worst > limit {
			t.Errorf("%s a request took %v, past its %v deadline plus the %v margin", phase.name, worst, partitionTimeout, partitionMargin)
			if phase.name == "during the cut" {
				t.Errorf("the slowest: %s", slowest)
			}
		}
	}
	t.Logf("%d writes acknowledged; all %s", acked, f.ledger.summary())
}
