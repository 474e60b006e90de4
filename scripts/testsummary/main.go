// Command testsummary reads `go test -json` on stdin and prints what
// `go test` prints without -v (each package's result, and the output of
// the tests that failed), then the tests that were skipped, each with its
// reason, and a closing count. A skip is otherwise invisible without -v:
// a test that needs PostgreSQL, Prometheus or Chromium and found none
// passes quietly. It exits 1 when a test or package failed.
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
	"slices"
	"strings"
)

func main() {
	failed, err := summarize(os.Stdin, os.Stdout)
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

// summarize copies the result lines and failed tests' output from the
// events on r to w, then lists the skipped tests with their reasons and
// counts the tests. failed says a test or package failed.
func summarize(r io.Reader, w io.Writer) (failed bool, err error) {
	out := map[testKey][]string{} // a running test's output
	var skips []skip
	passed, failedN := 0, 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Not an event (go vet's or the build's own lines): as is.
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		k := testKey{e.Package, e.Test}
		switch {
		case e.Action == "build-output":
			fmt.Fprint(w, e.Output)
		case e.Action == "build-fail":
			failed = true
		case e.Test == "" && e.Action == "output":
			// The package's own lines: ok, FAIL, "no test files", a
			// panic outside any test. The bare PASS/FAIL lines before
			// "ok"/"FAIL pkg" are what -v adds.
			if t := strings.TrimSpace(e.Output); t != "PASS" && t != "FAIL" && !strings.HasPrefix(e.Output, "=== ") {
				fmt.Fprint(w, e.Output)
			}
		case e.Test == "" && e.Action == "fail":
			failed = true
		case e.Test == "":
		case e.Action == "output":
			out[k] = append(out[k], e.Output)
		case e.Action == "pass":
			passed++
			delete(out, k)
		case e.Action == "fail":
			failedN++
			failed = true
			for _, l := range out[k] {
				if !strings.HasPrefix(l, "=== ") {
					fmt.Fprint(w, l)
				}
			}
			delete(out, k)
		case e.Action == "skip":
			skips = append(skips, skip{k, reason(out[k])})
			delete(out, k)
		}
	}
	if err := sc.Err(); err != nil {
		return true, err
	}
	report(w, skips)
	fmt.Fprintf(w, "tests: %d passed, %d failed, %d skipped\n", passed, failedN, len(skips))
	return failed, nil
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
