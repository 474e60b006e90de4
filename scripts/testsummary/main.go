// Command testsummary reads `go test -json` on stdin and prints what
// `go test` prints without -v (each package's result, and the output of
// the tests that failed), then the tests that were skipped, each with its
// reason, and a closing count. A skip is otherwise invisible without -v:
// a test that needs PostgreSQL, Prometheus or Chromium and found none
// passes quietly. It exits 1 when a test or package failed.
//
// A run cut short still ends with the summary of what it saw. A package
// whose test binary panicked at go test's -timeout (or died otherwise)
// leaves tests that started and never ended: their output (the panic,
// which lists the running tests, and the goroutines) is printed, the
// package is named as timed out, and they are counted as unfinished. On
// SIGINT or SIGTERM, testsummary reads on for a few seconds (go test,
// interrupted too, closes its output as it stops) and then prints the
// summary, naming the signal and the packages and tests that were still
// running.
//
//	go test -json ./... | go run ./scripts/testsummary
//
// scripts/test runs it over the README's test command.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// grace is how long testsummary reads on after a signal before it
// prints the summary of what it saw.
const grace = 5 * time.Second

func main() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	failed, err := summarize(os.Stdin, os.Stdout, sigs, grace)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action      string
	Package     string
	ImportPath  string // build-output events
	Test        string
	Output      string
	FailedBuild string
}

// testKey names one test of one package.
type testKey struct{ pkg, test string }

// skip is a skipped test and the reason it gave.
type skip struct {
	testKey
	reason string
}

// run is what has been seen of a test run so far.
type run struct {
	w     io.Writer
	out   map[testKey][]string // a running test's output
	order []testKey            // the tests started and not ended, in start order
	// ended is how each test ended; a test that ran in two passes (the
	// race detector's and a normal build's, scripts/test) ended twice.
	ended map[testKey]*ending
	skips []skip // in the order they were seen
	// Packages started and not ended, in start order, and the timeout
	// panic each printed (go test -timeout: "test timed out after 30m0s").
	pkgs     []string
	timedOut map[string]string
	// unfinished counts the tests that started and never ended.
	unfinished int
	failed     bool
}

// summarize copies the result lines and failed tests' output from the
// events on r to w, then lists the skipped tests with their reasons and
// counts the tests. failed says a test or package failed, or the run was
// cut short. A signal on sigs (nil for none) ends the reading after
// grace, if r has not ended by then.
func summarize(r io.Reader, w io.Writer, sigs <-chan os.Signal, grace time.Duration) (failed bool, err error) {
	s := &run{w: w, out: map[testKey][]string{}, ended: map[testKey]*ending{}, timedOut: map[string]string{}}
	lines := make(chan []byte)
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			lines <- slices.Clone(sc.Bytes())
		}
		done <- sc.Err()
	}()
	var signalled os.Signal
	var cutoff <-chan time.Time
read:
	for {
		select {
		case line := <-lines:
			s.line(line)
		case err := <-done:
			if err != nil {
				return true, err
			}
			break read
		case sig := <-sigs:
			if signalled == nil {
				signalled = sig
				cutoff = time.After(grace)
			}
		case <-cutoff:
			break read
		}
	}
	if signalled != nil {
		s.failed = true
		fmt.Fprintf(w, "\ninterrupted by %s: the run was cut short\n", signalName(signalled))
	}
	// Packages that never ended: the stream stopped (a signal, a killed
	// go test) while they ran.
	for _, pkg := range slices.Clone(s.pkgs) {
		s.failed = true
		fmt.Fprintf(w, "%s did not finish: the test run ended while it ran\n", pkg)
		s.endPackage(pkg)
	}
	passed, failedN, skips := s.counts()
	report(w, skips)
	fmt.Fprintf(w, "tests: %d passed, %d failed, %d skipped", passed, failedN, len(skips))
	if s.unfinished > 0 {
		fmt.Fprintf(w, ", %d unfinished", s.unfinished)
	}
	fmt.Fprintln(w)
	return s.failed, nil
}

// line takes one line of go test's output.
func (s *run) line(line []byte) {
	w := s.w
	var e event
	if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
		// Not an event (go vet's or the build's own lines): as is.
		fmt.Fprintf(w, "%s\n", line)
		return
	}
	k := testKey{e.Package, e.Test}
	if e.Action == "output" {
		if d, ok := strings.CutPrefix(strings.TrimSpace(e.Output), "panic: test timed out after "); ok {
			s.timedOut[e.Package] = d
		}
	}
	switch {
	case e.Action == "build-output":
		fmt.Fprint(w, e.Output)
	case e.Action == "build-fail":
		s.failed = true
	case e.Test == "" && e.Action == "start":
		s.pkgs = append(s.pkgs, e.Package)
	case e.Test == "" && e.Action == "output":
		// The package's own lines: ok, FAIL, "no test files", a
		// panic outside any test. The bare PASS/FAIL lines before
		// "ok"/"FAIL pkg" are what -v adds. Tests left running are
		// shown before the package's result line, as go test does.
		if strings.HasPrefix(e.Output, "ok  \t") || strings.HasPrefix(e.Output, "FAIL\t") {
			s.endPackage(e.Package)
		}
		if t := strings.TrimSpace(e.Output); t != "PASS" && t != "FAIL" && !strings.HasPrefix(e.Output, "=== ") {
			fmt.Fprint(w, e.Output)
		}
	case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
		if e.Action == "fail" {
			s.failed = true
		}
		s.endPackage(e.Package)
	case e.Test == "":
	case e.Action == "run":
		s.order = append(s.order, k)
	case e.Action == "output":
		s.out[k] = append(s.out[k], e.Output)
	case e.Action == "pass":
		s.ending(k).passed = true
		s.end(k)
	case e.Action == "fail":
		s.ending(k).failed = true
		s.failed = true
		s.print(k)
		s.end(k)
	case e.Action == "skip":
		if e := s.ending(k); !e.skipped {
			e.skipped = true
			s.skips = append(s.skips, skip{k, reason(s.out[k])})
		}
		s.end(k)
	}
}

// ending is how a test ended, in every pass that ran it.
type ending struct{ passed, failed, skipped bool }

func (s *run) ending(k testKey) *ending {
	e := s.ended[k]
	if e == nil {
		e = &ending{}
		s.ended[k] = e
	}
	return e
}

// counts are the tests that passed, those that failed, and those
// skipped: a test counts once, as failed if it failed in any pass, else
// as passed if it passed in any, else as skipped.
func (s *run) counts() (passed, failed int, skips []skip) {
	for _, e := range s.ended {
		switch {
		case e.failed:
			failed++
		case e.passed:
			passed++
		}
	}
	for _, sk := range s.skips {
		if e := s.ended[sk.testKey]; !e.failed && !e.passed {
			skips = append(skips, sk)
		}
	}
	return passed, failed, skips
}

// end forgets an ended test.
func (s *run) end(k testKey) {
	delete(s.out, k)
	if i := slices.Index(s.order, k); i >= 0 {
		s.order = slices.Delete(s.order, i, i+1)
	}
}

// print writes what a test printed, without the === lines -v adds.
func (s *run) print(k testKey) {
	for _, l := range s.out[k] {
		if !strings.HasPrefix(l, "=== ") {
			fmt.Fprint(s.w, l)
		}
	}
}

// endPackage closes a package that ended (or never will): the tests it
// started and never ended are printed and counted as unfinished, and a
// timeout is named.
func (s *run) endPackage(pkg string) {
	if i := slices.Index(s.pkgs, pkg); i >= 0 {
		s.pkgs = slices.Delete(s.pkgs, i, i+1)
	}
	var names []string
	for _, k := range slices.Clone(s.order) {
		if k.pkg != pkg {
			continue
		}
		s.print(k)
		s.end(k)
		names = append(names, k.test)
	}
	s.unfinished += len(names)
	if len(names) > 0 {
		s.failed = true
	}
	switch d, timedOut := s.timedOut[pkg]; {
	case timedOut:
		s.failed = true
		fmt.Fprintf(s.w, "%s timed out after %s (go test -timeout)", pkg, d)
		if len(names) > 0 {
			fmt.Fprintf(s.w, "; still running: %s", strings.Join(names, ", "))
		}
		fmt.Fprintln(s.w)
	case len(names) > 0:
		fmt.Fprintf(s.w, "%s ended with tests still running: %s\n", pkg, strings.Join(names, ", "))
	}
	delete(s.timedOut, pkg)
}

// signalName is "SIGINT" for syscall.SIGINT, and so on.
func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// reason is what a skipped test printed: its t.Skip message (with file
// and line) and anything it logged before.
func reason(lines []string) string {
	var parts []string
	for _, l := range lines {
		if strings.HasPrefix(l, "=== ") || strings.HasPrefix(strings.TrimSpace(l), "--- SKIP") {
			continue
		}
		if t := strings.TrimSpace(l); t != "" {
			parts = append(parts, t)
		}
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " ")
}

// report lists the skips, those with the same reason in one package
// together.
func report(w io.Writer, skips []skip) {
	if len(skips) == 0 {
		return
	}
	type group struct {
		pkg, reason string
		tests       []string
	}
	var groups []*group
	byKey := map[[2]string]*group{}
	for _, s := range skips {
		key := [2]string{s.pkg, s.reason}
		g := byKey[key]
		if g == nil {
			g = &group{pkg: s.pkg, reason: s.reason}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.tests = append(g.tests, s.test)
	}
	slices.SortStableFunc(groups, func(a, b *group) int { return strings.Compare(a.pkg, b.pkg) })
	fmt.Fprintf(w, "\nSkipped (%d), and why:\n", len(skips))
	for _, g := range groups {
		names := g.tests
		more := ""
		if len(names) > 6 {
			names, more = names[:6], fmt.Sprintf(" and %d more", len(g.tests)-6)
		}
		fmt.Fprintf(w, "  %s %s%s\n      %s\n", g.pkg, strings.Join(names, ", "), more, g.reason)
	}
	fmt.Fprintln(w)
}
