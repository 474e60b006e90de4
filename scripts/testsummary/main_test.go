package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/testfiles"
)

// TestSummarize runs `go test -json` on a small module whose tests pass,
// fail, skip and have subtests, and checks the summary: the failed test's
// output, each skip with its reason, the counts, and the failure.
func TestSummarize(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module of its own")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n",
		"a/a_test.go": `package a

import "testing"

func TestPasses(t *testing.T) { t.Log("quiet when it passes") }

func TestFails(t *testing.T) { t.Error("this went wrong") }

func TestNeedsPrometheus(t *testing.T) { t.Skip("prometheus is not installed; SKETCHD_REQUIRE_PROMETHEUS=1 makes this a failure") }

func TestSome(t *testing.T) {
	t.Run("runs", func(t *testing.T) {})
	t.Run("skips", func(t *testing.T) { t.Skipf("needs %s", "a browser") })
}
`,
		"b/b_test.go": `package b

import "testing"

func TestFine(t *testing.T) {}
`,
	}
	testfiles.Write(t, dir, files)
	cmd := exec.Command("go", "test", "-json", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	events, err := cmd.Output()
	if err == nil {
		t.Fatal("go test passed a module with a failing test")
	}
	var out bytes.Buffer
	failed, err := summarize(bytes.NewReader(events), &out, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !failed {
		t.Error("summarize did not report the failure")
	}
	got := out.String()
	for _, want := range []string{
		"--- FAIL: TestFails",
		"this went wrong",
		"FAIL\texample.com/m/a",
		"ok  \texample.com/m/b",
		"Skipped (2), and why:",
		"example.com/m/a TestNeedsPrometheus\n      a_test.go:9: prometheus is not installed; SKETCHD_REQUIRE_PROMETHEUS=1 makes this a failure\n",
		"example.com/m/a TestSome/skips\n      a_test.go:13: needs a browser\n",
		"tests: 4 passed, 1 failed, 2 skipped\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "quiet when it passes") || strings.Contains(got, "=== RUN") {
		t.Errorf("the summary shows what go test without -v does not:\n%s", got)
	}
	// A run without failures is not a failure.
	failed, err = summarize(strings.NewReader(`{"Action":"pass","Package":"p","Test":"TestX"}`+"\n"), &out, nil, 0)
	if err != nil || failed {
		t.Errorf("summarize of a passing run = %v, %v", failed, err)
	}
}

// TestSummarizeTimeout feeds the summary what go test -json printed for a
// run whose package a timed out (go test -timeout 3s, recorded in
// testdata/timeout.json): a test hung in a subtest, after one passed
// and one skipped, beside package b that passed and skipped. The summary
// shows the timeout's panic, names the package as timed out with the
// tests it left running, counts them unfinished, fails, and still lists
// every skip.
func TestSummarizeTimeout(t *testing.T) {
	events, err := os.ReadFile("testdata/timeout.json")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	failed, err := summarize(bytes.NewReader(events), &out, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !failed {
		t.Error("summarize did not report the timed-out run as failed")
	}
	got := out.String()
	for _, want := range []string{
		"ok  \texample.com/m/b",
		"a_test.go:14: waiting for a reply that never comes\npanic: test timed out after 3s\n\trunning tests:\n\t\tTestHangs (3s)\n\t\tTestHangs/inner (3s)\n",
		"example.com/m/a timed out after 3s (go test -timeout); still running: TestHangs, TestHangs/inner\nFAIL\texample.com/m/a\t3.034s\n",
		"Skipped (2), and why:",
		"example.com/m/a TestNeedsChromium\n      a_test.go:10: chromium is not installed\n",
		"example.com/m/b TestSkips\n      b_test.go:7: needs postgres\n",
		"tests: 2 passed, 0 failed, 2 skipped, 2 unfinished\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q:\n%s", want, got)
		}
	}
}

// TestSummarizeCutShort feeds the summary the same run's output cut off
// while package a ran (go test killed): a never-ended package is named,
// its running tests are shown and counted, and the skips seen so far
// are listed.
func TestSummarizeCutShort(t *testing.T) {
	events, err := os.ReadFile("testdata/timeout.json")
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(events, []byte("panic: test timed out"))
	if i < 0 {
		t.Fatal("testdata/timeout.json has no timeout panic")
	}
	events = events[:bytes.LastIndexByte(events[:i], '\n')+1]
	var out bytes.Buffer
	failed, err := summarize(bytes.NewReader(events), &out, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !failed {
		t.Error("summarize did not report the cut-off run as failed")
	}
	got := out.String()
	for _, want := range []string{
		"example.com/m/a did not finish: the test run ended while it ran\n    a_test.go:14: waiting for a reply that never comes\nexample.com/m/a ended with tests still running: TestHangs, TestHangs/inner\n",
		"Skipped (2), and why:",
		"tests: 2 passed, 0 failed, 2 skipped, 2 unfinished\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q:\n%s", want, got)
		}
	}
}

// TestSummarizeSignal sends the summary a SIGTERM while go test's output
// is still open: after the grace period it prints what it saw, names
// the signal and the package and test still running, and fails.
func TestSummarizeSignal(t *testing.T) {
	events, err := os.ReadFile("testdata/timeout.json")
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(events, []byte("panic: test timed out"))
	events = events[:bytes.LastIndexByte(events[:i], '\n')+1]
	r, w := io.Pipe()
	defer w.Close() // never before the signal, as a go test still running
	sigs := make(chan os.Signal, 1)
	var out bytes.Buffer
	done := make(chan bool)
	go func() {
		failed, err := summarize(r, &out, sigs, time.Second)
		if err != nil {
			t.Error(err)
		}
		done <- failed
	}()
	if _, err := w.Write(events); err != nil { // returns once all is read
		t.Fatal(err)
	}
	sigs <- syscall.SIGTERM
	select {
	case failed := <-done:
		if !failed {
			t.Error("summarize did not report the interrupted run as failed")
		}
	case <-time.After(time.Minute):
		t.Fatal("summarize did not end after the signal and its grace period")
	}
	got := out.String()
	for _, want := range []string{
		"interrupted by SIGTERM: the run was cut short\n",
		"example.com/m/a did not finish",
		"still running: TestHangs, TestHangs/inner\n",
		"Skipped (2), and why:",
		"tests: 2 passed, 0 failed, 2 skipped, 2 unfinished\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q:\n%s", want, got)
		}
	}
}
