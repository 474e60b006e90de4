package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGeneratedPythonClient generates a Python client from
// api/openapi.yaml with openapi-python-client, as a user of the spec
// would, and runs testdata/generated_client.py through it against a live
// sketchd: create every kind with the generated models' defaults, add
// through each variant of AddRequest, describe, union, intersection, a
// series add and count, and problems decoded. It needs
// openapi-python-client and python-dateutil (pip install
// openapi-python-client==0.29.1 python-dateutil); without them it skips,
// and SKETCHD_REQUIRE_PYCLIENT=1 (set by CI) makes that a failure.
func TestGeneratedPythonClient(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a client and runs it against a real server")
	}
	t.Parallel() // it asserts no timing
	gen, err := exec.LookPath("openapi-python-client")
	if err != nil {
		pyClientUnavailable(t, "openapi-python-client is not on PATH (pip install openapi-python-client==0.29.1 python-dateutil)")
	}
	// The generator's own Python (its virtual environment) has the
	// generated code's dependencies, httpx and attrs.
	python := filepath.Join(filepath.Dir(gen), "python3")
	if _, err := os.Stat(python); err != nil {
		if python, err = exec.LookPath("python3"); err != nil {
			pyClientUnavailable(t, "python3 is not on PATH")
		}
	}
	if out, err := exec.Command(python, "-c", "import httpx, attrs, dateutil").CombinedOutput(); err != nil {
		pyClientUnavailable(t, "the generated client's dependencies are missing ("+strings.TrimSpace(string(out))+"): pip install python-dateutil")
	}
	spec, err := filepath.Abs("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("testdata/generated_client.py")
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gen, "generate", "--path", spec, "--meta", "none", "--output-path", filepath.Join(dir, "sketchd_client"))
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("openapi-python-client generate: %v\n%s", err, out)
	}
	// The generator warns about what it leaves out. The only omissions
	// allowed are the bodies that are not JSON (ids one a line, raw
	// bytes, the YAML of /openapi.yaml); anything else (a duplicate model,
	// an unparsable schema) is a flaw of the spec that breaks generated code.
	for _, w := range generatorWarnings(string(out)) {
		if !strings.Contains(w, "Unsupported content type") && !strings.Contains(w, "Unsupported content_type") {
			t.Errorf("openapi-python-client warns:\n%s", w)
		}
	}

	c := startInProcess(t, filepath.Join(t.TempDir(), "sketchd.db"))
	run := exec.CommandContext(ctx, python, script, c.base)
	run.Env = append(os.Environ(), "PYTHONPATH="+dir, "PYTHONDONTWRITEBYTECODE=1")
	out, err = run.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the generated client's script failed: %v", err)
	}
	if !strings.Contains(string(out), "generated client: every check passed") {
		t.Fatal("the script did not finish its checks")
	}

	// What the script made, read back without it: every kind with its
	// defaults, as the Go side sees them.
	for name, want := range map[string]map[string]any{
		"py:hll":   {"type": "hll", "log2m": 14.0, "regwidth": 5.0, "cardinality": 4.0},
		"py:cms":   {"type": "cms", "width": 2719.0, "depth": 5.0, "total": 4.0},
		"py:theta": {"type": "theta", "lg_k": 12.0, "cardinality": 100.0},
		"py:freq":  {"type": "freq", "lg_k": 12.0},
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

func pyClientUnavailable(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("SKETCHD_REQUIRE_PYCLIENT") == "1" {
		t.Fatalf("SKETCHD_REQUIRE_PYCLIENT=1 but %s", why)
	}
	t.Skipf("%s; SKETCHD_REQUIRE_PYCLIENT=1 makes this a failure", why)
}

// generatorWarnings picks openapi-python-client's warnings out of its
// output: each "WARNING ..." or "Unable to ..." heading with the first
// line of its reason.
func generatorWarnings(out string) []string {
	var ws []string
	lines := strings.Split(out, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "WARNING") && !strings.HasPrefix(lines[i], "Unable to") {
			continue
		}
		w := lines[i]
		// The reason follows the heading after one blank line.
		for j := i + 1; j < len(lines) && j <= i+3; j++ {
			if strings.TrimSpace(lines[j]) != "" {
				w += "\n" + lines[j]
				break
			}
		}
		ws = append(ws, w)
	}
	return ws
}
