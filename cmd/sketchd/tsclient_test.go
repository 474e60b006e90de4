package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGeneratedTypeScriptClients generates the two common TypeScript
// clients from api/openapi.yaml at their default settings, as a user of
// the spec would: openapi-typescript's types used through openapi-fetch,
// and @hey-api/openapi-ts's SDK. tsc (strict) type-checks
// testdata/tsclient's two scripts against them, which fails if a field
// with a default became required in a request body, and node runs them
// against a live sketchd: every kind created with its defaults and once
// with no body, adds, a count, a union, an intersection, a series
// created with its defaults, added to and counted, a retention table,
// and problems decoded.
//
// The generators are the npm packages pinned in
// testdata/tsclient/package.json (and its lock file), installed in
// SKETCHD_TSCLIENT_DIR (default ~/.cache/sketchd-ci-npm; .ci/run installs
// them there with npm ci). Without node or the packages it skips, and
// SKETCHD_REQUIRE_TSCLIENT=1 (set by CI) makes that a failure.
func TestGeneratedTypeScriptClients(t *testing.T) {
	if testing.Short() {
		t.Skip("generates two clients and runs them against a real server")
	}
	t.Parallel() // it asserts no timing
	node, err := exec.LookPath("node")
	if err != nil {
		tsClientUnavailable(t, "node is not on PATH (apt-get install nodejs npm)")
	}
	modules := filepath.Join(tsClientDir(t), "node_modules")
	for _, p := range []string{".bin/openapi-typescript", ".bin/openapi-ts", ".bin/tsc", "openapi-fetch/package.json"} {
		if _, err := os.Stat(filepath.Join(modules, p)); err != nil {
			tsClientUnavailable(t, "the pinned npm packages are not installed in "+filepath.Dir(modules)+
				" (cp cmd/sketchd/testdata/tsclient/package*.json there and run npm ci, or set SKETCHD_TSCLIENT_DIR)")
		}
	}
	// What is installed is what package.json pins (a folder left from
	// before a change of pins would test other generators).
	var pins struct {
		DevDependencies map[string]string `json:"devDependencies"`
	}
	b, err := os.ReadFile(filepath.Join("testdata", "tsclient", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pins); err != nil || len(pins.DevDependencies) == 0 {
		t.Fatalf("testdata/tsclient/package.json: %v", err)
	}
	for pkg, want := range pins.DevDependencies {
		if got := npmVersion(t, modules, pkg); got != want {
			t.Errorf("%s %s is installed in %s; testdata/tsclient/package.json pins %s", pkg, got, modules, want)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	spec, err := filepath.Abs("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []string{"openapi_fetch.ts", "hey_api.ts", "tsconfig.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "tsclient", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := func(what string, name string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		return string(out)
	}
	bin := func(name string) string { return filepath.Join(modules, ".bin", name) }
	// Each generator with no options but where to read and write.
	run("openapi-typescript", bin("openapi-typescript"), spec, "-o", filepath.Join(dir, "ot", "schema.d.ts"))
	run("@hey-api/openapi-ts", bin("openapi-ts"), "-i", spec, "-o", filepath.Join(dir, "hey"))
	run("tsc", bin("tsc"), "-p", dir)

	c := startInProcess(t, filepath.Join(t.TempDir(), "sketchd.db"))
	for script, done := range map[string]string{
		"openapi_fetch.js": "openapi-fetch client: every check passed",
		"hey_api.js":       "hey-api client: every check passed",
	} {
		out := run(script, node, filepath.Join(dir, "out", script), c.base)
		t.Logf("%s:\n%s", script, out)
		if !strings.Contains(out, done) {
			t.Errorf("%s did not finish its checks", script)
		}
	}

	// What the scripts made, read back without them: the kinds created
	// with a type alone have their defaults.
	for name, want := range map[string]map[string]any{
		"of:empty":  {"type": "hll", "log2m": 14.0, "regwidth": 5.0, "cardinality": 2.0},
		"hey:empty": {"type": "hll", "log2m": 14.0, "regwidth": 5.0, "cardinality": 2.0},
		"of:cms":    {"type": "cms", "width": 2719.0, "depth": 5.0, "topk": 0.0},
		"hey:cpc":   {"type": "cpc", "lg_k": 11.0},
		"hey:kll2":  {"type": "kll", "k": 200.0, "items": "long"},
	} {
		var got map[string]any
		c.must(t, 200, "GET", "/v1/sketches/"+name, "", nil, &got)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", name, k, got[k], v)
			}
		}
	}
}

// tsClientDir is where the pinned npm packages are installed.
func tsClientDir(t *testing.T) string {
	if d := os.Getenv("SKETCHD_TSCLIENT_DIR"); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		tsClientUnavailable(t, "no cache directory to find the npm packages in: set SKETCHD_TSCLIENT_DIR")
	}
	return filepath.Join(cache, "sketchd-ci-npm")
}

// npmVersion is the version of the package installed in modules.
func npmVersion(t *testing.T, modules, pkg string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(modules, pkg, "package.json"))
	if err != nil {
		return "(absent)"
	}
	var p struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("%s/package.json: %v", pkg, err)
	}
	return p.Version
}

func tsClientUnavailable(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("SKETCHD_REQUIRE_TSCLIENT") == "1" {
		t.Fatalf("SKETCHD_REQUIRE_TSCLIENT=1 but %s", why)
	}
	t.Skipf("%s; SKETCHD_REQUIRE_TSCLIENT=1 makes this a failure", why)
}
