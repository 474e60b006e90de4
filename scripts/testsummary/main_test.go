package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "test", "-json", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	events, err := cmd.Output()
	if err == nil {
		t.Fatal("go test passed a module with a failing test")
	}
	var out bytes.Buffer
	failed, err := summarize(bytes.NewReader(events), &out)
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
	failed, err = summarize(strings.NewReader(`{"Action":"pass","Package":"p","Test":"TestX"}`+"\n"), &out)
	if err != nil || failed {
		t.Errorf("summarize of a passing run = %v, %v", failed, err)
	}
}
