package main

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/testfiles"
)

// TestClassify runs racefree's classification on a small module: a
// package is race-free only when neither it, with its tests, nor a
// module package it links (without theirs) starts a goroutine, in each of
// the ways the rule names.
func TestClassify(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list on a module of its own")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
	}
	dir := t.TempDir()
	test := func(pkg, body string) string {
		return "package " + pkg + "\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {\n" + body + "\n}\n"
	}
	files := map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n",
		// Race-free: nothing starts a goroutine.
		"clean/c.go":      "package clean\n\nfunc F() int { return 1 }\n",
		"clean/c_test.go": test("clean", "\t_ = F()"),
		// A goroutine in a dependency's tests is not linked in.
		"testsonly/t.go":          "package testsonly\n\nfunc G() {}\n",
		"testsonly/t_test.go":     test("testsonly", "\tgo G()"),
		"usestestsonly/u_test.go": "package usestestsonly\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/testsonly\"\n)\n\nfunc TestX(t *testing.T) { testsonly.G() }\n",
		// Not race-free, each for one reason.
		"gostmt/g_test.go":    test("gostmt", "\tgo func() {}()"),
		"parallel/p_test.go":  test("parallel", "\tt.Parallel()"),
		"waitgroup/w_test.go": "package waitgroup\n\nimport (\n\t\"sync\"\n\t\"testing\"\n)\n\nfunc TestX(t *testing.T) {\n\tvar wg sync.WaitGroup\n\twg.Go(func() {})\n\twg.Wait()\n}\n",
		"afterfunc/a_test.go": "package afterfunc\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestX(t *testing.T) { time.AfterFunc(time.Second, func() {}).Stop() }\n",
		"httptest/h_test.go":  "package httptest\n\nimport (\n\t\"net/http/httptest\"\n\t\"testing\"\n)\n\nfunc TestX(t *testing.T) { _ = httptest.NewRecorder() }\n",
		"serve/s.go":          "package serve\n\nimport (\n\t\"net\"\n\t\"net/http\"\n)\n\nfunc Run(l net.Listener) error { return http.Serve(l, nil) }\n",
		"serve/s_test.go":     test("serve", ""),
		// A build-tagged file counts whatever the tags.
		"tagged/t_test.go":      test("tagged", ""),
		"tagged/t_race_test.go": "//go:build race\n\npackage tagged\n\nfunc init() { go func() {}() }\n",
		// Linking a package that starts one (in its code) is enough.
		"importsserve/i_test.go": "package importsserve\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/serve\"\n)\n\nfunc TestX(t *testing.T) { _ = serve.Run }\n",
		// An external test package counts as the package's tests.
		"external/e.go":      "package external\n",
		"external/e_test.go": "package external_test\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) { go func() {}() }\n",
		// No tests: not listed.
		"notests/n.go": "package notests\n",
	}
	testfiles.Write(t, dir, files)
	t.Chdir(dir)
	t.Setenv("GOWORK", "off")
	t.Setenv("GOFLAGS", "-mod=mod")
	got := classifyHere(t, "example.com/m/")
	want := map[string]string{
		"clean":         "",
		"testsonly":     "a go statement", // its own tests do
		"usestestsonly": "",
		"gostmt":        "a go statement",
		"parallel":      "calls Parallel",
		"waitgroup":     "calls Go",
		"afterfunc":     "calls AfterFunc",
		"httptest":      "imports net/http/httptest",
		"serve":         "calls Serve",
		"tagged":        "a go statement",
		"importsserve":  "calls Serve",
		"external":      "a go statement",
	}
	var names []string
	for name := range got {
		names = append(names, name)
	}
	slices.Sort(names)
	for name, why := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s is not listed; listed: %v", name, names)
		case why == "" && g != "":
			t.Errorf("%s: %q, want race-free", name, g)
		case why != "" && !strings.Contains(g, why):
			t.Errorf("%s: %q, want a reason containing %q", name, g, why)
		}
	}
	if _, ok := got["notests"]; ok {
		t.Errorf("notests, a package without tests, is listed")
	}
	// From a package's own folder, the module packages it links outside
	// that folder are read too.
	t.Chdir(filepath.Join(dir, "importsserve"))
	pkgs, err := classify([]string{"."})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 || !strings.Contains(pkgs[0].why, "calls Serve") {
		t.Errorf("from importsserve's folder: %+v, want it not race-free, for serve's Serve", pkgs)
	}
}

// TestThisModule: the packages that compute (the codecs, the
// intersection, the parsers) run in a normal build and the server under
// the race detector. A t.Parallel or a goroutine added to one of the
// first moves it under the race detector, five to ten times slower:
// this names it.
func TestThisModule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list on the module")
	}
	t.Chdir("../..")
	why := classifyHere(t, "github.com/sketchd/sketchd/")
	for _, p := range []string{"internal/hll", "internal/sketch", "internal/ingest", "internal/kll", "internal/theta", "internal/dshll", "internal/zeta", "internal/series"} {
		if w, ok := why[p]; !ok || w != "" {
			t.Errorf("%s is not race-free: %s", p, w)
		}
	}
	for _, p := range []string{"internal/server", "internal/store/bolt", "cmd/sketchd"} {
		if why[p] == "" {
			t.Errorf("%s is listed race-free, yet it serves HTTP and writes from several goroutines", p)
		}
	}
}

// classifyHere classifies the packages under the current folder and
// returns why each is raced ("" if race-free), by its path without
// prefix.
func classifyHere(t *testing.T, prefix string) map[string]string {
	t.Helper()
	pkgs, err := classify([]string{"./..."})
	if err != nil {
		t.Fatal(err)
	}
	why := map[string]string{}
	for _, p := range pkgs {
		why[strings.TrimPrefix(p.path, prefix)] = p.why
	}
	return why
}
