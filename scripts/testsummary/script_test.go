package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/testfiles"
)

// TestScriptWithoutCCompiler runs scripts/test on a small module with a
// PATH that has go and the usual tools but no C compiler: the race
// detector needs cgo, so the script warns that -race is off, and the
// tests still run, under the sketchd_poison tag (a test that exists only
// with it runs) and not as a race build. With the compiler on PATH and
// no packages given, the packages whose tests start a goroutine (a,
// internal/server) run under the race detector, the longest-running
// (here internal/server) first, and the one whose tests start none (b)
// in a normal build; internal/server's allocation test, skipped under
// the race detector, runs again in a normal build and counts once, as
// passed.
func TestScriptWithoutCCompiler(t *testing.T) {
	if testing.Short() {
		t.Skip("runs scripts/test on a module of its own")
	}
	script, err := filepath.Abs("../test")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":                         "module example.com/m\n\ngo 1.22\n",
		"a/a_test.go":                    "package a\n\nimport \"testing\"\n\nfunc TestRuns(t *testing.T) {\n\tdone := make(chan bool)\n\tgo func() { done <- true }()\n\t<-done\n}\n",
		"a/poison_test.go":               "//go:build sketchd_poison\n\npackage a\n\nimport \"testing\"\n\nfunc TestPoisonTag(t *testing.T) {}\n",
		"internal/server/s_test.go":      "package server\n\nimport \"testing\"\n\nfunc TestFirst(t *testing.T) { t.Parallel() }\n\nfunc TestEventsDecodeAllocation(t *testing.T) {\n\tif raceEnabled {\n\t\tt.Skip(\"allocation sizes differ under the race detector\")\n\t}\n}\n",
		"internal/server/race_test.go":   "//go:build race\n\npackage server\n\nconst raceEnabled = true\n",
		"internal/server/norace_test.go": "//go:build !race\n\npackage server\n\nconst raceEnabled = false\n",
		// b's tests start no goroutine: with a C compiler, a normal build.
		"b/b_test.go": "//go:build !race\n\npackage b\n\nimport \"testing\"\n\nfunc TestNormalBuild(t *testing.T) {}\n",
		// TestRace fails unless the build is a race build exactly when
		// WANT_RACE is 1.
		"a/race_on_test.go":  "//go:build race\n\npackage a\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestRace(t *testing.T) {\n\tif os.Getenv(\"WANT_RACE\") != \"1\" {\n\t\tt.Fatal(\"a race build\")\n\t}\n}\n",
		"a/race_off_test.go": "//go:build !race\n\npackage a\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestRace(t *testing.T) {\n\tif os.Getenv(\"WANT_RACE\") == \"1\" {\n\t\tt.Fatal(\"not a race build\")\n\t}\n}\n",
	}
	testfiles.Write(t, dir, files)
	// A PATH of every command on this one but the C compilers.
	noCC := t.TempDir()
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			name := e.Name()
			switch {
			case name == "cc" || name == "c++" || name == "gcc" || name == "g++" || name == "clang" || name == "clang++",
				strings.HasSuffix(name, "-gcc") || strings.Contains(name, "-gcc-") || strings.HasPrefix(name, "gcc-") || strings.HasPrefix(name, "clang-"):
				continue
			}
			if _, err := os.Lstat(filepath.Join(noCC, name)); err == nil {
				continue // an earlier PATH entry's wins
			}
			if err := os.Symlink(filepath.Join(d, name), filepath.Join(noCC, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func(path, wantRace string, args ...string) string {
		t.Helper()
		cmd := exec.Command(script, args...)
		cmd.Dir = dir
		// -p=1: one package at a time, so the result lines come in the
		// order scripts/test gives the packages.
		env := []string{"PATH=" + path, "GOFLAGS=-mod=mod -p=1", "GOWORK=off", "WANT_RACE=" + wantRace}
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); k != "PATH" && k != "WANT_RACE" && k != "CGO_ENABLED" && k != "CC" && k != "GOFLAGS" && k != "GOWORK" {
				env = append(env, kv)
			}
		}
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("scripts/test: %v\n%s", err, out)
		}
		return string(out)
	}
	const warning = "scripts/test: WARNING: no C compiler found"
	out := run(noCC, "0", "./...")
	if !strings.Contains(out, warning) || !strings.Contains(out, "running WITHOUT -race") {
		t.Errorf("without a C compiler scripts/test gives no warning that -race is off:\n%s", out)
	}
	if !strings.Contains(out, "tests: 6 passed, 0 failed, 0 skipped\n") {
		t.Errorf("without a C compiler scripts/test did not run a's, b's and internal/server's six tests without -race:\n%s", out)
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Log("no gcc on this PATH: the run with a compiler is left out")
		return
	}
	out = run(os.Getenv("PATH"), "1")
	if strings.Contains(out, "WARNING") || !strings.Contains(out, "tests: 6 passed, 0 failed, 0 skipped\n") {
		t.Errorf("with a C compiler scripts/test warned, or did not run every test once and count it once:\n%s", out)
	}
	if s, a := strings.Index(out, "example.com/m/internal/server\t"), strings.Index(out, "example.com/m/a\t"); s < 0 || a < 0 || s > a {
		t.Errorf("given no packages, scripts/test did not run internal/server first:\n%s", out)
	}
	normal := strings.Index(out, "-- in a normal build")
	if b := strings.Index(out, "example.com/m/b\t"); normal < 0 || b < normal || strings.Count(out, "example.com/m/internal/server\t") != 2 {
		t.Errorf("given no packages, scripts/test did not run b, and internal/server's allocation test, in a normal build after the race pass:\n%s", out)
	}
}
