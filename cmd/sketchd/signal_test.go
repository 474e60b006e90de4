package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// startBinary runs the sketchd binary with stdin (nil: /dev/null) and env
// added to the test's environment, text logs on the returned writer,
// and waits until it is ready. Unlike startProcess it leaves
// -drain-delay to the caller.
func startBinary(t *testing.T, stdin *os.File, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{addr: freeAddr(t), stderr: &syncWriter{w: &bytes.Buffer{}}, exited: make(chan struct{})}
	p.cmd = exec.Command(sketchdBinary(t), append([]string{"-addr", p.addr, "-data", filepath.Join(t.TempDir(), "x.db"), "-log-format", "text"}, args...)...)
	p.cmd.Stdin = stdin
	p.cmd.Stderr = p.stderr
	p.cmd.Env = append(os.Environ(), env...)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.kill() })
	waitReady(t, p.addr, p.exited)
	return p
}

// waitLog waits (at most 30s) for the process's log to contain s.
func (p *proc) waitLog(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.log(), s) {
		select {
		case <-p.exited:
			t.Fatalf("sketchd exited before logging %q: %v\n%s", s, p.err, p.log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sketchd did not log %q within 30s:\n%s", s, p.log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSecondSignalExitsAtOnce: SIGINT starts a drain (here a long one);
// a second SIGINT ends the process at once, with status 130 and a line
// saying so, instead of waiting out the drain.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			p := startBinary(t, nil, nil, "-drain-delay", "10m")
			p.cmd.Process.Signal(sig)
			p.waitLog(t, "shutting down: /readyz answers 503")
			p.cmd.Process.Signal(sig)
			select {
			case <-p.exited:
			case <-time.After(time.Minute):
				t.Fatalf("sketchd still runs a minute after a second %v:\n%s", sig, p.log())
			}
			var ee *exec.ExitError
			if !errors.As(p.err, &ee) || ee.ExitCode() != 128+int(sig) {
				t.Errorf("after a second %v sketchd exited with %v, want status %d", sig, p.err, 128+int(sig))
			}
			if want := fmt.Sprintf("sketchd: second %v: exiting without draining", sig); !strings.Contains(p.log(), want) {
				t.Errorf("no %q in the log:\n%s", want, p.log())
			}
		})
	}
}

// TestDrainDelayOnATerminal: with stdin a terminal (someone pressed
// Ctrl-C) there is no drain delay unless -drain-delay is given; without a
// terminal (a service manager, a container) the default 5s applies.
func TestDrainDelayOnATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	tty := openPTY(t)
	for _, tt := range []struct {
		name  string
		stdin *os.File
		args  []string
		env   []string
		want  string
	}{
		{"terminal", tty, nil, nil, "drain_delay=0s"},
		{"terminal with -drain-delay", tty, []string{"-drain-delay", "2s"}, nil, "drain_delay=2s"},
		{"terminal with SKETCHD_DRAIN_DELAY", tty, nil, []string{"SKETCHD_DRAIN_DELAY=3s"}, "drain_delay=3s"},
		{"no terminal", nil, nil, nil, "drain_delay=5s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := startBinary(t, tt.stdin, tt.env, tt.args...)
			p.cmd.Process.Signal(syscall.SIGINT)
			p.waitLog(t, "shutting down: /readyz answers 503")
			line := logLine(p.log(), "shutting down: /readyz answers 503")
			if !strings.Contains(line, tt.want) {
				t.Errorf("the drain line is %q, want %s", line, tt.want)
			}
			if tt.want == "drain_delay=0s" {
				if !strings.Contains(line, "stdin is a terminal") {
					t.Errorf("the drain line %q does not say why there is no delay", line)
				}
				select {
				case <-p.exited:
				case <-time.After(time.Minute):
					t.Fatalf("sketchd still runs a minute after SIGINT:\n%s", p.log())
				}
				if p.err != nil {
					t.Errorf("sketchd exited with %v, want status 0", p.err)
				}
			}
		})
	}
}

// TestUnknownSettingWarned: the binary warns about a misspelt SKETCHD_
// variable, naming the one meant.
func TestUnknownSettingWarned(t *testing.T) {
	t.Parallel() // it asserts no timing
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	p := startBinary(t, nil, []string{"SKETCHD_ADRR=127.0.0.1:1"}, "-drain-delay", "0s", "-log-level", "warn")
	if line := logLine(p.log(), "SKETCHD_ADRR"); !strings.Contains(line, "level=WARN") || !strings.Contains(line, "did you mean SKETCHD_ADDR?") {
		t.Errorf("no warning about SKETCHD_ADRR in the log:\n%s", p.log())
	}
}

func logLine(log, s string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// openPTY opens a pseudo-terminal and returns its terminal end, or skips
// when the system has none.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlocking a pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("naming a pseudo-terminal: %v", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	if !isTerminal(tty) {
		t.Fatal("isTerminal is false for a pseudo-terminal")
	}
	if f, err := os.Open(os.DevNull); err == nil {
		defer f.Close()
		if isTerminal(f) {
			t.Fatal("isTerminal is true for /dev/null")
		}
	}
	return tty
}
