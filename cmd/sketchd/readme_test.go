package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/pgtest"
	"github.com/sketchd/sketchd/internal/server"
)

// readmeCommand is one shell command of a README example, with the output
// the README shows for it (the "# {...}" comment lines under it), if any.
type readmeCommand struct {
	line   int    // README line the command starts on
	text   string // as written, continuation lines joined
	output string // the shown output, "" if none
}

// readmeBlock is a fenced ```sh block of the README.
type readmeBlock struct {
	line     int
	commands []readmeCommand
}

// readmeExamples returns the README's ```sh blocks that call the API
// (they mention localhost:8080); the rest (installing, testing) are not
// examples of the product.
func readmeExamples(tb testing.TB, readme string) []readmeBlock {
	tb.Helper()
	var blocks []readmeBlock
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```sh" {
			continue
		}
		b := readmeBlock{line: i + 1}
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		if !strings.Contains(strings.Join(body, "\n"), "localhost:8080") {
			continue
		}
		for j := 0; j < len(body); j++ {
			l := body[j]
			switch {
			case strings.TrimSpace(l) == "":
			case strings.HasPrefix(l, "# {") || strings.HasPrefix(l, "# ["):
				// The output of the command above; it may go on over
				// "#  " lines.
				if len(b.commands) == 0 {
					tb.Fatalf("README.md:%d: an output with no command above it", b.line+1+j)
				}
				out := strings.TrimPrefix(l, "# ")
				for j+1 < len(body) && strings.HasPrefix(body[j+1], "#  ") {
					j++
					out += strings.TrimPrefix(body[j], "#")
				}
				b.commands[len(b.commands)-1].output = out
			case strings.HasPrefix(l, "#"):
				// prose
			default:
				c := readmeCommand{line: b.line + 1 + j, text: l}
				for strings.HasSuffix(c.text, `\`) && j+1 < len(body) {
					j++
					c.text += "\n" + body[j]
				}
				b.commands = append(b.commands, c)
			}
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// TestReadme runs every API example of README.md, in order, with curl
// against a real sketchd (and psql against a real PostgreSQL where the
// README uses it): every command must succeed (curl fails on a 4xx or
// 5xx), and every output the README shows must be what sketchd prints,
// numbers to the digits shown. A shown object containing "..." may leave
// out members; one without lists them all. Editing the README is all it
// takes to test a new example.
func TestReadme(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's examples against a real server")
	}
	realCurl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("SKETCHD_REQUIRE_CURL") == "1" {
			t.Fatal("curl is not installed and SKETCHD_REQUIRE_CURL=1")
		}
		t.Skip("curl is not installed; SKETCHD_REQUIRE_CURL=1 makes this a failure")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeExamples(t, string(raw))
	if len(blocks) < 3 {
		t.Fatalf("found %d example blocks in README.md", len(blocks))
	}
	// The examples add "now" (the server's clock) and then name today and
	// yesterday from date(1): a midnight between them changes the answers
	// the README shows.
	pgtest.AwayFromMidnight(t, 2*time.Minute)

	dir := t.TempDir()
	c := startInProcess(t, filepath.Join(dir, "sketchd.db"))
	addr := strings.TrimPrefix(c.base, "http://")
	// curl as the README runs it, but failing on an HTTP error and
	// without a progress meter.
	bin := filepath.Join(dir, "bin")
	work := filepath.Join(dir, "work")
	for _, d := range []string{bin, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	shim := "#!/bin/sh\nexec " + strconv.Quote(realCurl) + " --silent --show-error --fail-with-body \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "curl"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	shownOutputs := 0
	for _, b := range blocks {
		t.Run(fmt.Sprintf("README.md:%d", b.line), func(t *testing.T) {
			blockEnv := env
			if usesPsql(b) {
				pg := readmePostgres(t)
				blockEnv = append(slices.Clone(env), pg...)
				// The README's psql lines name the reader's database
				// "analytics"; here it is the test server's.
				b.commands = slices.Clone(b.commands)
				for i := range b.commands {
					for _, kv := range pg {
						if db, ok := strings.CutPrefix(kv, "PGDATABASE="); ok {
							b.commands[i].text = strings.ReplaceAll(b.commands[i].text, "psql -d analytics ", "psql -d '"+db+"' ")
						}
					}
				}
			}
			outs, stderr := runReadmeBlock(t, bash, work, blockEnv, addr, b)
			for i, cmd := range b.commands {
				got := outs[i]
				if got.status != 0 {
					t.Errorf("README.md:%d: %s\nexited %d; it printed %q; stderr:\n%s", cmd.line, cmd.text, got.status, got.stdout, stderr)
					continue
				}
				if cmd.output == "" {
					continue
				}
				shownOutputs++
				if err := matchShown(cmd.output, got.stdout); err != nil {
					t.Errorf("README.md:%d: %s\nprinted  %s\nREADME shows %s\n%v", cmd.line, cmd.text, strings.TrimSpace(got.stdout), cmd.output, err)
				}
			}
		})
	}
	if shownOutputs < 4 {
		t.Errorf("compared %d shown outputs, want the README's examples", shownOutputs)
	}
}

// TestReadmeTokenFile loads the README's example token file the way
// -auth-tokens does.
func TestReadmeTokenFile(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "```\n# comments and blank lines are ignored\n")
	if !ok {
		t.Fatal("README.md has no example token file")
	}
	example, _, _ := strings.Cut(rest, "```")
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("# comments and blank lines are ignored\n"+example), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := server.LoadAuth(path); err != nil {
		t.Errorf("the README's example token file: %v", err)
	}
}

func usesPsql(b readmeBlock) bool {
	for _, c := range b.commands {
		if regexp.MustCompile(`(^|[\s|$(])psql\s`).MatchString(c.text) {
			return true
		}
	}
	return false
}

// readmePostgres gives psql a schema of its own with the tables the
// README's SQL names, and returns the environment that points psql at it.
// Without PostgreSQL the test skips (fails with SKETCHD_REQUIRE_PG=1).
func readmePostgres(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("psql"); err != nil {
		if os.Getenv("SKETCHD_REQUIRE_PG") == "1" {
			t.Fatal("psql is not installed and SKETCHD_REQUIRE_PG=1")
		}
		t.Skip("psql is not installed")
	}
	conn := pgtest.Connect(t)
	ctx := context.Background()
	schema := fmt.Sprintf("readme_%d_%d", os.Getpid(), time.Now().UnixNano())
	for _, q := range []string{
		`CREATE SCHEMA ` + schema,
		`CREATE TABLE ` + schema + `.events (user_id bigint, campaign int, day date)`,
		// Each user on one of the 30 days before today (UTC).
		`INSERT INTO ` + schema + `.events SELECT g, 42, (now() AT TIME ZONE 'UTC')::date - 1 - g % 30 FROM generate_series(1, 1000) AS g`,
		`CREATE TABLE ` + schema + `.my_saved_sketches (s hll)`,
		`INSERT INTO ` + schema + `.my_saved_sketches SELECT hll_add_agg(hll_hash_bigint(g), 14, 5, -1, 1) FROM generate_series(500, 2000) AS g`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		if _, err := conn.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("dropping %s: %v", schema, err)
		}
	})
	cfg := conn.Config()
	env := []string{
		"PGHOST=" + cfg.Host, "PGPORT=" + strconv.Itoa(int(cfg.Port)), "PGDATABASE=" + cfg.Database,
		"PGUSER=" + cfg.User, "PGOPTIONS=-c search_path=" + schema + ",public",
	}
	if cfg.Password != "" {
		env = append(env, "PGPASSWORD="+cfg.Password)
	}
	return env
}

type commandResult struct {
	status int
	stdout string
}

// runReadmeBlock runs a block's commands in one bash, in dir, with
// localhost:8080 replaced by addr, and returns each command's exit status
// and standard output, and the block's standard error.
func runReadmeBlock(t *testing.T, bash, dir string, env []string, addr string, b readmeBlock) ([]commandResult, string) {
	t.Helper()
	marker := fmt.Sprintf("@@readme-%d@@", time.Now().UnixNano())
	var script strings.Builder
	script.WriteString("set -o pipefail\n")
	for i, c := range b.commands {
		fmt.Fprintf(&script, "%s\n__s=$?; printf '\\n%s %d %%d\\n' \"$__s\"\n", strings.ReplaceAll(c.text, "localhost:8080", addr), marker, i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-c", script.String())
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bash: %v\nstderr:\n%s", err, stderr.String())
	}
	out := make([]commandResult, len(b.commands))
	rest := stdout.String()
	for i := range b.commands {
		before, after, ok := strings.Cut(rest, "\n"+marker+" "+strconv.Itoa(i)+" ")
		if !ok {
			t.Fatalf("no end marker for README.md:%d in %q", b.commands[i].line, rest)
		}
		statusText, tail, _ := strings.Cut(after, "\n")
		status, err := strconv.Atoi(statusText)
		if err != nil {
			t.Fatalf("marker status %q: %v", statusText, err)
		}
		out[i] = commandResult{status: status, stdout: before}
		rest = tail
	}
	return out, stderr.String()
}

// exactFields are the members whose numbers the README must show as
// sketchd prints them, not rounded.
var exactFields = map[string]bool{"epsilon": true, "delta": true, "confidence": true, "error_bound": true}

// omitted stands for "..." in a shown JSON object: members left out.
const omitted = "\u2026"

// matchShown reports how got differs from the JSON value shown in the
// README (text after the value is prose and ignored).
func matchShown(shown, got string) error {
	start := strings.IndexAny(shown, "{[")
	if start < 0 {
		return fmt.Errorf("no JSON value in %q", shown)
	}
	text := strings.ReplaceAll(shown[start:], "...", strconv.Quote(omitted)+":null")
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var want any
	if err := dec.Decode(&want); err != nil {
		return fmt.Errorf("the README's output %q is not JSON with ... for omitted members: %v", shown, err)
	}
	dec = json.NewDecoder(strings.NewReader(got))
	dec.UseNumber()
	var have any
	if err := dec.Decode(&have); err != nil {
		return fmt.Errorf("sketchd's output is not JSON: %v", err)
	}
	return matchValue("$", want, have)
}

func matchValue(path string, want, have any) error {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: printed %v, README shows an object", path, have)
		}
		if _, partial := w[omitted]; !partial {
			for k := range h {
				if _, ok := w[k]; !ok {
					return fmt.Errorf("%s: printed member %q, which the README does not show (add ... if it leaves members out)", path, k)
				}
			}
		}
		for k, wv := range w {
			if k == omitted {
				continue
			}
			hv, ok := h[k]
			if !ok {
				return fmt.Errorf("%s: README shows member %q, sketchd does not print it", path, k)
			}
			if err := matchValue(path+"."+k, wv, hv); err != nil {
				return err
			}
		}
		return nil
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return fmt.Errorf("%s: printed %v, README shows %v", path, have, want)
		}
		for i := range w {
			if err := matchValue(fmt.Sprintf("%s[%d]", path, i), w[i], h[i]); err != nil {
				return err
			}
		}
		return nil
	case json.Number:
		h, ok := have.(json.Number)
		if !ok {
			return fmt.Errorf("%s: printed %v, README shows %s", path, have, w)
		}
		// A parameter sketchd derives from the one asked for (a Count-Min's
		// epsilon from its width) is shown as printed: rounded, it would
		// look like the value asked for rather than the one in use.
		if field, _, _ := strings.Cut(path[strings.LastIndex(path, ".")+1:], "["); exactFields[field] && h.String() != w.String() {
			return fmt.Errorf("%s: printed %s, README shows %s; show a parameter as printed, every digit", path, h, w)
		}
		digits := -1 // an integer is shown exactly
		if _, frac, ok := strings.Cut(w.String(), "."); ok {
			digits = len(frac)
		}
		if digits < 0 {
			if h.String() != w.String() {
				return fmt.Errorf("%s: printed %s, README shows %s", path, h, w)
			}
			return nil
		}
		f, err := h.Float64()
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		if got := strconv.FormatFloat(f, 'f', digits, 64); got != w.String() {
			return fmt.Errorf("%s: printed %s, which is %s to the %d digits the README shows, not %s", path, h, got, digits, w)
		}
		return nil
	default:
		if fmt.Sprint(want) != fmt.Sprint(have) {
			return fmt.Errorf("%s: printed %v, README shows %v", path, have, want)
		}
		return nil
	}
}
