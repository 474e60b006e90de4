package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/poison"
)

// TestHelpAndVersion: the binary answers -h with its usage and -version
// with its build, both on stdout with exit status 0, and touches no data.
func TestHelpAndVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the real binary")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "x.db")
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"-h"}, []string{"Usage: sketchd [flags]", "-addr", "-data", "-auth-tokens", "SKETCHD_<FLAG>"}},
		{[]string{"-help"}, []string{"Usage: sketchd [flags]"}},
		{[]string{"-version"}, []string{"sketchd ", "revision ", runtime.Version()}},
	} {
		cmd := exec.Command(sketchdBinary(t), append([]string{"-data", data}, tt.args...)...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("sketchd %v: %v (stderr %q), want exit status 0", tt.args, err, stderr.String())
		}
		for _, w := range tt.want {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("sketchd %v printed %q, want it to contain %q", tt.args, stdout.String(), w)
			}
		}
		if stderr.Len() != 0 {
			t.Errorf("sketchd %v wrote %q to stderr, want nothing", tt.args, stderr.String())
		}
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("-h or -version touched the data file: stat = %v", err)
	}
	out, err := execOutput(sketchdBinary(t), "-nope")
	if err == nil || !strings.Contains(out, "-nope") || !strings.Contains(out, "sketchd -h") {
		t.Errorf("sketchd -nope = %v, %q; want a failure naming the flag and pointing at -h", err, out)
	}
}

// TestBinaryPoisonedAsTheTests: the sketchd the end-to-end tests start
// was built with the tag sketchd_poison exactly when the tests were, so
// under scripts/test its processes poison the buffers they release too.
func TestBinaryPoisonedAsTheTests(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the real binary")
	}
	t.Parallel()
	out, err := exec.Command("go", "version", "-m", sketchdBinary(t)).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	tagged := regexp.MustCompile(`(?m)^\s*build\s+-tags=.*\bsketchd_poison\b`).Match(out)
	if tagged != poison.Enabled {
		t.Errorf("the binary built with sketchd_poison: %t; the tests: %t\n%s", tagged, poison.Enabled, out)
	}
}

// TestConfigCheckedBeforeData: every configuration mistake, the token file
// and a taken address included, stops sketchd before it creates, opens or
// migrates its data file.
func TestConfigCheckedBeforeData(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	short := write("short", "tooshort read\n")
	badRole := write("role", "0123456789abcdef owner\n")
	empty := write("empty", "# nothing\n")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()

	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"short token", []string{"-auth-tokens", short}, "shorter than 16 characters"},
		{"unknown role", []string{"-auth-tokens", badRole}, "role must be read or write"},
		{"no tokens", []string{"-auth-tokens", empty}, "no tokens"},
		{"missing token file", []string{"-auth-tokens", filepath.Join(dir, "absent")}, "no such file"},
		{"address taken", []string{"-addr", taken.Addr().String()}, "address already in use"},
		{"bad debug address", []string{"-debug-addr", taken.Addr().String()}, "address already in use"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".db")
			args := append([]string{"-addr", "127.0.0.1:0", "-data", data}, tt.args...)
			err := run(context.Background(), args, func(string) string { return "" }, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("run(%v) = %v, want an error mentioning %q", args, err, tt.want)
			}
			for _, p := range []string{data, data + ".wal"} {
				if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s exists after a configuration error (stat: %v)", p, err)
				}
			}
		})
	}
}

// TestOpenWarning: with no token file, listening beyond loopback logs a
// warning; on loopback it does not.
func TestOpenWarning(t *testing.T) {
	for _, tt := range []struct {
		addr string
		warn bool
	}{
		{"127.0.0.1:0", false},
		{":0", true},
	} {
		t.Run(tt.addr, func(t *testing.T) {
			var logs syncWriter
			logs.w = new(bytes.Buffer)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, []string{"-addr", tt.addr, "-data", filepath.Join(t.TempDir(), "x.db"), "-log-format", "text", "-drain-delay", "0s"},
					func(string) string { return "" }, io.Discard, &logs)
			}()
			deadline := time.Now().Add(30 * time.Second)
			for !strings.Contains(logs.String(), "msg=listening") {
				if time.Now().After(deadline) {
					t.Fatalf("no listening line after 30s: %s", logs.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			got := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "the API is open")
			if got != tt.warn {
				t.Errorf("-addr %s: open-API warning logged = %v, want %v; logs:\n%s", tt.addr, got, tt.warn, logs.String())
			}
			// The loopback address it suggests has the port it listens
			// on (:0 picks one that is never 8080's).
			if got {
				m := regexp.MustCompile(`msg=listening addr=\S*:(\d+) `).FindStringSubmatch(logs.String())
				if m == nil {
					t.Fatalf("no port in the listening line:\n%s", logs.String())
				}
				if want := "-addr 127.0.0.1:" + m[1] + " to listen on loopback only"; !strings.Contains(logs.String(), want) {
					t.Errorf("the warning does not suggest %q:\n%s", want, logs.String())
				}
			}
		})
	}
}

// TestLogFormatFollowsTerminal: without -log-format (or its variable) the
// log is text when stderr is a terminal and JSON otherwise; a format given
// wins either way.
func TestLogFormatFollowsTerminal(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		env      string
		terminal bool
		wantText bool
	}{
		{nil, "", false, false},
		{nil, "", true, true},
		{[]string{"-log-format", "json"}, "", true, false},
		{nil, "json", true, false},
		{[]string{"-log-format", "text"}, "", false, true},
	} {
		cfg, err := parseConfig(tt.args, func(k string) string {
			if k == "SKETCHD_LOG_FORMAT" {
				return tt.env
			}
			return ""
		}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		newLogger(cfg, &buf, tt.terminal).Info("hello", "k", 1)
		text := strings.Contains(buf.String(), "msg=hello k=1")
		json := strings.HasPrefix(buf.String(), "{") && strings.Contains(buf.String(), `"msg":"hello"`)
		if text != tt.wantText || json == tt.wantText {
			t.Errorf("args %v, SKETCHD_LOG_FORMAT=%q, terminal %v: logged %q, want text %v", tt.args, tt.env, tt.terminal, buf.String(), tt.wantText)
		}
	}
}
