package pgtest

import (
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Tail returns the last lines of s.
func Tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// AwayFromMidnight returns the time once the wall clock is at least
// margin from a UTC midnight on either side, waiting if it is not (in
// 2·margin of every day, a wait of at most 2·margin). A test whose
// expectations name today's bucket while a server stamps adds, or judges
// a period in progress, by its own clock starts with it, so that one day
// lasts the whole test if the test takes less than margin.
func AwayFromMidnight(tb testing.TB, margin time.Duration) time.Time {
	tb.Helper()
	now := time.Now().UTC()
	wait := midnightWait(now, margin)
	if wait == 0 {
		return now
	}
	tb.Logf("waiting %v for the clock to leave midnight", wait.Round(time.Second))
	time.Sleep(wait)
	return time.Now().UTC()
}

// midnightWait is how long from now until the clock is margin past the
// nearest UTC midnight, if it is nearer than margin; else 0.
func midnightWait(now time.Time, margin time.Duration) time.Duration {
	since := now.Sub(now.Truncate(24 * time.Hour))
	switch {
	case since < margin:
		return margin - since
	case since > 24*time.Hour-margin:
		return 24*time.Hour - since + margin
	}
	return 0
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// for a server a test starts. It is chosen below the kernel's ephemeral
// range (net.ipv4.ip_local_port_range), from which every outgoing
// connection takes its local port: a port from that range can be taken
// by any connection between the check and the server's bind (which then
// fails with "address already in use"), and a busy run, many packages at
// once, makes that likely. Where the range starts too low to leave room,
// the kernel picks.
//
// The port is also reserved for the rest of the test against every other
// FreePort on the machine (the test binaries of other packages run at
// once): without that, two callers drawing the same port between one's
// check and its server's bind (seconds for a Citus node's initdb), or
// while a node a test stopped is down, collide, about once in a thousand
// runs of the whole suite.
func FreePort(tb testing.TB) int {
	tb.Helper()
	if low := ephemeralLow(); low > minPort+1000 {
		for range 100 {
			p := minPort + rand.IntN(low-minPort)
			release, ok := reservePort(p)
			if !ok {
				continue
			}
			if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
				ln.Close()
				tb.Cleanup(release)
				return p
			}
			release()
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// portLocks is the directory of the files FreePort locks, one a port.
var portLocks = filepath.Join(os.TempDir(), "sketchd-test-ports")

// reservePort takes port p among FreePort's callers: an exclusive flock
// on a file named for it, which the kernel also drops when the process
// ends, however it ends. It reports false if another caller holds p;
// where no lock file can be made it reserves nothing and reports true.
func reservePort(p int) (release func(), ok bool) {
	if err := os.MkdirAll(portLocks, 0o777); err != nil {
		return func() {}, true
	}
	f, err := os.OpenFile(filepath.Join(portLocks, strconv.Itoa(p)), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return func() {}, true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true
}

// minPort is the lowest port FreePort picks: above the usual fixed ports
// of local servers (PostgreSQL's 5432, Redis's 6379, 8080).
const minPort = 10000

// ephemeralLow returns the first port of the kernel's ephemeral range,
// or 32768 (Linux's default) when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return low
}
