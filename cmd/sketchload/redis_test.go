package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/pgtest"
)

// startRedis runs a throwaway redis-server (no persistence) on a free
// loopback port and returns its address. It skips the test when
// redis-server is missing or will not start, unless
// SKETCHD_REQUIRE_REDIS=1 (CI) makes that a failure.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		redisUnavailable(t, "redis-server not found on PATH")
	}
	port := pgtest.FreePort(t)
	var log bytes.Buffer
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir(), "--protected-mode", "yes")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		redisUnavailable(t, "redis-server would not start: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for range 100 {
		if reply, err := redisDo(addr, "PING"); err == nil && reply == "+PONG" {
			return addr
		}
		select {
		case <-exited:
			redisUnavailable(t, "redis-server exited at start: %s", log.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	redisUnavailable(t, "redis-server on %s did not answer PING within 5s: %s", addr, log.String())
	return ""
}

// redisUnavailable skips the test that needs Redis, saying why, or fails
// it under SKETCHD_REQUIRE_REDIS=1 (CI installs redis-server).
func redisUnavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("SKETCHD_REQUIRE_REDIS") == "1" {
		t.Fatal(msg + " (SKETCHD_REQUIRE_REDIS=1)")
	}
	t.Skip(msg + ": skipping the Redis mode test (SKETCHD_REQUIRE_REDIS=1 makes this a failure)")
}

// redisDo sends one command on a fresh connection and returns the reply's
// first line without CRLF.
func redisDo(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var b []byte
	b = fmt.Appendf(b, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write(b); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

func pfcount(t *testing.T, addr string, keys ...string) int64 {
	t.Helper()
	reply, err := redisDo(addr, append([]string{"PFCOUNT"}, keys...)...)
	if err != nil || !strings.HasPrefix(reply, ":") {
		t.Fatalf("PFCOUNT %v = %q, %v", keys, reply, err)
	}
	n, err := strconv.ParseInt(reply[1:], 10, 64)
	if err != nil {
		t.Fatalf("PFCOUNT reply %q: %v", reply, err)
	}
	return n
}

// near reports whether Redis's estimate is within 3% of the true distinct
// count (its standard error is 0.81%).
func near(got, want int64) bool {
	return math.Abs(float64(got-want)) <= 0.03*float64(want)
}

func TestRunRedis(t *testing.T) {
	addr := startRedis(t)

	t.Run("sequential ids built during the run", func(t *testing.T) {
		// 1000 commands of 100 ids: ids 0…99999 once each; 1000 is not a
		// multiple of the pipeline, so the last round trip is partial.
		res, stderr, err := runJSON(t, t.Context(), "-redis", addr, "-prefix", "seq", "-c", "4",
			"-requests", "1000", "-pipeline", "16", "-dist", "sequential", "-prebuilt", "0", "-ids", "150000")
		if err != nil {
			t.Fatalf("run: %v (stderr %s)", err, stderr)
		}
		if res.Mode != "redis" || res.Requests != 1000 || res.OKRequests != 1000 || res.IDs != 100_000 || len(res.Failures) != 0 {
			t.Errorf("result mode %s requests %d ok %d ids %d failures %v, want redis 1000 1000 100000 none",
				res.Mode, res.Requests, res.OKRequests, res.IDs, res.Failures)
		}
		if res.Latency.Count != 1000 {
			t.Errorf("latency count = %d, want one per command (1000)", res.Latency.Count)
		}
		if got := pfcount(t, addr, "seq-0"); !near(got, 100_000) {
			t.Errorf("PFCOUNT seq-0 = %d, want 100000 ± 3%%", got)
		}
	})

	t.Run("prebuilt uniform ids over three keys", func(t *testing.T) {
		const blocks, batch = 50, 200
		res, stderr, err := runJSON(t, t.Context(), "-redis", addr, "-prefix", "uni", "-sketches", "3", "-pick", "random",
			"-requests", "400", "-batch", strconv.Itoa(batch), "-prebuilt", strconv.Itoa(blocks), "-pipeline", "7", "-seed", "42")
		if err != nil {
			t.Fatalf("run: %v (stderr %s)", err, stderr)
		}
		if res.IDs != 400*batch || res.BytesSent <= 400*batch*4 {
			t.Errorf("ids %d bytes %d, want %d ids and more than 4 bytes an id", res.IDs, res.BytesSent, 400*batch)
		}
		// The ids sent are exactly the pool's: rebuild it to count them.
		g := newIDGen(distUniform, 100_000_000, 0, 42, poolStream)
		ids := make([]int64, batch)
		distinct := map[int64]bool{}
		for j := range uint64(blocks) {
			g.fill(ids, j)
			for _, id := range ids {
				distinct[id] = true
			}
		}
		want := int64(len(distinct))
		if got := pfcount(t, addr, "uni-0", "uni-1", "uni-2"); !near(got, want) {
			t.Errorf("PFCOUNT of the union = %d, want %d ± 3%%", got, want)
		}
		for _, k := range []string{"uni-0", "uni-1", "uni-2"} {
			if got := pfcount(t, addr, k); got == 0 || got > want+want*3/100 {
				t.Errorf("PFCOUNT %s = %d, want some of the %d ids", k, got, want)
			}
		}
	})

	t.Run("error replies are counted by kind", func(t *testing.T) {
		if reply, err := redisDo(addr, "SET", "str-0", "not a sketch"); err != nil || reply != "+OK" {
			t.Fatalf("SET = %q, %v", reply, err)
		}
		res, _, err := runJSON(t, t.Context(), "-redis", addr, "-prefix", "str", "-requests", "40", "-prebuilt", "4", "-c", "2")
		if !errors.Is(err, ErrNoSuccess) {
			t.Errorf("run error = %v, want ErrNoSuccess", err)
		}
		if want := map[string]int64{"redis:WRONGTYPE": 40}; res == nil || !maps.Equal(res.Failures, want) {
			t.Errorf("failures = %v, want %v", res.Failures, want)
		}
	})

	t.Run("open loop", func(t *testing.T) {
		res, stderr, err := runJSON(t, t.Context(), "-redis", addr, "-prefix", "rate", "-requests", "64",
			"-rate", "2000", "-prebuilt", "4", "-c", "2")
		if err != nil {
			t.Fatalf("run: %v (stderr %s)", err, stderr)
		}
		if res.OKRequests != 64 || res.Rate != 2000 {
			t.Errorf("ok %d rate %v, want 64 and 2000", res.OKRequests, res.Rate)
		}
	})

	t.Run("unreachable", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Skip(err)
		}
		dead := l.Addr().String()
		l.Close()
		_, _, err = runJSON(t, context.Background(), "-redis", dead, "-requests", "1")
		if err == nil || !strings.Contains(err.Error(), dead) {
			t.Errorf("run error = %v, want a dial error naming %s", err, dead)
		}
	})
}

func TestRedisErrorKey(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"-WRONGTYPE Operation against a key\r\n": "redis:WRONGTYPE",
		"-ERR unknown command\r\n":               "redis:ERR",
		"-OOM\r\n":                               "redis:OOM",
		"-\r\n":                                  "redis:error",
		"-" + strings.Repeat("X", 40) + "\r\n":   "redis:error",
	}
	for _, in := range slices.Sorted(maps.Keys(tests)) {
		if got := redisErrorKey([]byte(in)); got != tests[in] {
			t.Errorf("redisErrorKey(%q) = %q, want %q", in, got, tests[in])
		}
	}
}
