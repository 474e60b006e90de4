package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/pgtest"
	"github.com/sketchd/sketchd/internal/poison"
)

// client talks to one sketchd over HTTP.
type client struct {
	base string
	http *http.Client
}

func newClient(addr string) *client {
	return &client{base: "http://" + addr, http: &http.Client{Timeout: 30 * time.Second}}
}

// do sends a request and returns the status and body; transport errors are
// returned as is (a killed server).
func (c *client) do(method, path, contentType string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// must sends a request that must answer want, and decodes a JSON answer
// into out (if non-nil).
func (c *client) must(tb testing.TB, want int, method, path, contentType string, body []byte, out any) []byte {
	tb.Helper()
	status, b, err := c.do(method, path, contentType, body)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	if status != want {
		tb.Fatalf("%s %s = %d %s, want %d", method, path, status, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			tb.Fatalf("%s %s: decoding %s: %v", method, path, b, err)
		}
	}
	return b
}

func jsonBody(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// freeAddr returns a loopback address that was free a moment ago, its
// port below the kernel's ephemeral range (pgtest.FreePort says why).
func freeAddr(tb testing.TB) string {
	tb.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(pgtest.FreePort(tb)))
}

// waitReady polls /readyz until it answers 200, for at most 30s.
func waitReady(tb testing.TB, addr string, exited <-chan struct{}) {
	tb.Helper()
	waitReadyWithin(tb, addr, exited, 30*time.Second)
}

func waitReadyWithin(tb testing.TB, addr string, exited <-chan struct{}, limit time.Duration) {
	tb.Helper()
	waitReadyOn(tb, newClient(addr), exited, limit)
}

// waitReadyOn polls /readyz through c (an HTTPS client, say) until it
// answers 200, for at most limit.
func waitReadyOn(tb testing.TB, c *client, exited <-chan struct{}, limit time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			tb.Fatal("sketchd exited before becoming ready")
		default:
		}
		if status, _, err := c.do("GET", "/readyz", "", nil); err == nil && status == http.StatusOK {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("sketchd on %s not ready after %v", c.base, limit)
}

// startInProcess runs sketchd's run() in this process (so -race sees the
// whole stack) and stops it when the test ends.
func startInProcess(tb testing.TB, data string, args ...string) *client {
	tb.Helper()
	return startInProcessOn(tb, data, newClient, args...)
}

// startInProcessOn is startInProcess with the client dial makes for the
// listen address (an HTTPS one, say), which also polls /readyz.
func startInProcessOn(tb testing.TB, data string, dial func(addr string) *client, args ...string) *client {
	tb.Helper()
	addr := freeAddr(tb)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = run(ctx, append([]string{"-addr", addr, "-data", data, "-log-level", "warn", "-drain-delay", "0s"}, args...), func(string) string { return "" }, io.Discard, io.Discard)
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
		if runErr != nil {
			tb.Errorf("run: %v", runErr)
		}
	})
	c := dial(addr)
	waitReadyOn(tb, c, done, 30*time.Second)
	return c
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// sketchdBinary builds cmd/sketchd once per test run, with the tag
// sketchd_poison when the tests have it (scripts/test): the processes
// the end-to-end tests start poison the buffers they release, as the
// tests' own code does (internal/poison).
func sketchdBinary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sketchd-test-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "sketchd")
		args := []string{"build", "-o", binPath}
		if poison.Enabled {
			args = append(args, "-tags", "sketchd_poison")
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return binPath
}

// proc is a sketchd process.
type proc struct {
	cmd    *exec.Cmd
	addr   string
	stderr *syncWriter // read with log(), while the process runs too
	exited chan struct{}
	err    error
}

// startProcess runs the sketchd binary on data and waits (at most 30s)
// until it is ready.
func startProcess(tb testing.TB, data string, args ...string) *proc {
	tb.Helper()
	return startProcessWithin(tb, 30*time.Second, data, args...)
}

func startProcessWithin(tb testing.TB, limit time.Duration, data string, args ...string) *proc {
	tb.Helper()
	return startProcessOn(tb, limit, data, newClient, args...)
}

// startProcessOn is startProcessWithin polling /readyz through the client
// dial makes for the listen address.
func startProcessOn(tb testing.TB, limit time.Duration, data string, dial func(addr string) *client, args ...string) *proc {
	tb.Helper()
	p := &proc{addr: freeAddr(tb), stderr: &syncWriter{w: &bytes.Buffer{}}, exited: make(chan struct{})}
	p.cmd = exec.Command(sketchdBinary(tb), append([]string{"-addr", p.addr, "-data", data, "-log-level", "warn", "-drain-delay", "0s"}, args...)...)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(func() { p.kill() })
	waitReadyOn(tb, dial(p.addr), p.exited, limit)
	return p
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// terminate sends SIGTERM and returns the exit error (nil for status 0).
func (p *proc) terminate(tb testing.TB) error {
	tb.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.err
	case <-time.After(60 * time.Second):
		tb.Fatal("sketchd did not stop within 60s of SIGTERM")
		return nil
	}
}

func (p *proc) log() string {
	return strings.TrimSpace(p.stderr.String())
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

// execOutput runs a command to completion (at most a minute) and returns
// its combined output.
func execOutput(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

// metricValue reads a counter or gauge without labels from /metrics.
func metricValue(t *testing.T, c *client, name string) float64 {
	t.Helper()
	b := c.must(t, http.StatusOK, "GET", "/metrics", "", nil, nil)
	// A scan of lines, not a regular expression: the flip tests read
	// /metrics after every flip, and a multi-line match over it took a
	// third of their CPU under the race detector.
	for line := range strings.Lines(string(b)) {
		if value, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), name+" "); ok {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Errorf("/metrics has no %s", name)
	return 0
}
