package pgtest

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFreePort: the port is free and below the kernel's ephemeral range,
// where no outgoing connection takes it.
func TestFreePort(t *testing.T) {
	low := ephemeralLow()
	if low <= minPort+1000 {
		t.Skipf("the ephemeral range starts at %d: FreePort lets the kernel pick", low)
	}
	for range 20 {
		p := FreePort(t)
		if p < minPort || p >= low {
			t.Fatalf("port %d, want one in [%d, %d)", p, minPort, low)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		ln.Close()
	}
}

// TestFreePortReserves: a port FreePort gave is not given again while the
// test that asked for it runs (the lock the FreePort of a test binary
// running at once meets, as this one does), and is free once it ends.
func TestFreePortReserves(t *testing.T) {
	if low := ephemeralLow(); low <= minPort+1000 {
		t.Skipf("the ephemeral range starts at %d: FreePort lets the kernel pick", low)
	}
	var p int
	t.Run("holder", func(t *testing.T) {
		p = FreePort(t)
		if release, ok := reservePort(p); ok {
			release()
			t.Fatalf("port %d reserved again while the test it was given to runs", p)
		}
	})
	release, ok := reservePort(p)
	if !ok {
		t.Fatalf("port %d still reserved after its test ended", p)
	}
	release()
}

// TestMidnightWait: AwayFromMidnight waits only within margin of a UTC
// midnight, and then until margin past it.
func TestMidnightWait(t *testing.T) {
	day := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		at, want time.Duration
	}{
		{0, time.Minute},
		{20 * time.Second, 40 * time.Second},
		{time.Minute, 0},
		{12 * time.Hour, 0},
		{24*time.Hour - time.Minute, 0},
		{24*time.Hour - 10*time.Second, 70 * time.Second},
	} {
		if got := midnightWait(day.Add(c.at), time.Minute); got != c.want {
			t.Errorf("at %v past midnight: wait %v, want %v", c.at, got, c.want)
		}
	}
	// In another zone the day still ends at UTC midnight.
	berlin := time.FixedZone("CET", 3600)
	if got := midnightWait(day.Add(-30*time.Second).In(berlin), time.Minute); got != 90*time.Second {
		t.Errorf("30s before UTC midnight, read in CET: wait %v, want 1m30s", got)
	}
}

// TestCitusSkipNamesNoOutsideFolder: the skip of a Citus test says how to
// get a cluster without pointing at the CI's folder beside the checkout,
// which is not in the repository.
func TestCitusSkipNamesNoOutsideFolder(t *testing.T) {
	rec := &skipRecorder{TB: t}
	t.Setenv("SKETCHD_REQUIRE_CITUS", "")
	func() {
		defer func() { _ = recover() }()
		CitusUnavailable(rec, "SKETCHD_CITUS_DSN is not set")
	}()
	if rec.msg == "" {
		t.Fatal("CitusUnavailable did not skip")
	}
	if strings.Contains(rec.msg, "../shared") || !strings.Contains(rec.msg, "docs/scale-out.md") || !strings.Contains(rec.msg, "SKETCHD_CITUS_DSN") {
		t.Errorf("skip message %q", rec.msg)
	}
}

// skipRecorder records a skip instead of skipping.
type skipRecorder struct {
	testing.TB
	msg string
}

func (r *skipRecorder) Helper() {}
func (r *skipRecorder) Skipf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic("skipped")
}
