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

	"github.com/jackc/pgx/v5"

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

// readmeBlock is a fenced ```sh block of the README (or of a docs page).
type readmeBlock struct {
	file     string // as the reader finds it: README.md, docs/api.md
	line     int
	commands []readmeCommand
}

// exampleDocs are the pages whose API examples TestReadme runs, each in
// order against a fresh server of its own: the README, and the pages its
// walk-through moved out of it.
var exampleDocs = []string{"README.md", "docs/api.md"}

// readmeExamples returns the ```sh blocks of a page (file, as named in
// messages) that call the API: they name $SKETCHD, the variable the
// examples take the address from, or localhost:8080. The rest
// (installing, testing) are not examples of the product.
func readmeExamples(tb testing.TB, file, readme string) []readmeBlock {
	tb.Helper()
	var blocks []readmeBlock
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```sh" {
			continue
		}
		b := readmeBlock{file: file, line: i + 1}
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		if text := strings.Join(body, "\n"); !strings.Contains(text, "localhost:8080") && !strings.Contains(text, "$SKETCHD") {
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
					tb.Fatalf("%s:%d: an output with no command above it", file, b.line+1+j)
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

// TestReadme runs every API example of README.md and of the docs pages
// that carry the rest of the walk-through (exampleDocs), each page in
// order against a real sketchd of its own, with curl (and psql against a
// real PostgreSQL where a page uses it): every command must succeed (curl
// fails on a 4xx or 5xx), and every output a page shows must be what
// sketchd prints, numbers to the digits shown. A shown object containing
// "..." may leave out members; one without lists them all. Editing a page
// is all it takes to test a new example. date(1) is BSD's, as on macOS:
// an example that needs GNU date fails here.
func TestReadme(t *testing.T) {
	t.Parallel() // it asserts no timing
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
	realDate, err := exec.LookPath("date")
	if err != nil {
		t.Skip("date is not installed")
	}
	// The examples add "now" (the server's clock) and then name today and
	// yesterday from date(1): a midnight between them changes the answers
	// the README shows.
	pgtest.AwayFromMidnight(t, 2*time.Minute)
	shownOutputs := 0
	for _, page := range exampleDocs {
		raw, err := os.ReadFile(filepath.Join("../..", page))
		if err != nil {
			t.Fatal(err)
		}
		blocks := readmeExamples(t, page, string(raw))
		if len(blocks) < 3 {
			t.Fatalf("found %d example blocks in %s", len(blocks), page)
		}
		t.Run(page, func(t *testing.T) {
			shownOutputs += runReadmePage(t, bash, realCurl, realDate, blocks)
		})
	}
	if shownOutputs < 4 {
		t.Errorf("compared %d shown outputs, want the README's examples", shownOutputs)
	}
}

// bsdDate is date(1) as macOS has it, over GNU date: -u, -v adjustments
// ([+-]N with y, m, w, d, H, M or S) and +format; GNU's -d is refused as
// BSD refuses it.
const bsdDate = `#!/usr/bin/env bash
args=() adj=
for a in "$@"; do
  case $a in
    -u) args+=(-u) ;;
    -v*)
      v=${a#-v} num=${a#-v} num=${num%?} unit=${a: -1}
      case $num in [+-][0-9]*) ;; *) echo "date: -v$v: only relative adjustments here" >&2; exit 1 ;; esac
      case $unit in y) u=years ;; m) u=months ;; w) u=weeks ;; d) u=days ;; H) u=hours ;; M) u=minutes ;; S) u=seconds ;; *) echo "date: illegal time format" >&2; exit 1 ;; esac
      adj="$adj $num $u" ;;
    +*) args+=("$a") ;;
    *) echo "date: illegal option -- ${a#-}" >&2; echo "usage: date [-jnRu] [-r seconds|file] [-v[+|-]val[ymwdHMS]] [+output_fmt]" >&2; exit 1 ;;
  esac
done
if [ -n "$adj" ]; then args=(-d "$adj" "${args[@]}"); fi
exec GNUDATE "${args[@]}"
`

// runReadmePage runs one page's example blocks in order against a fresh
// server and returns how many shown outputs it compared.
func runReadmePage(t *testing.T, bash, realCurl, realDate string, blocks []readmeBlock) int {
	dir := t.TempDir()
	c := startInProcess(t, filepath.Join(dir, "sketchd.db"))
	addr := strings.TrimPrefix(c.base, "http://")
	// curl as the README runs it, but failing on an HTTP error and
	// without a progress meter; date as macOS has it.
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
	if err := os.WriteFile(filepath.Join(bin, "date"), []byte(strings.Replace(bsdDate, "GNUDATE", strconv.Quote(realDate), 1)), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "SKETCHD=http://"+addr)

	// The page runs as a reader runs it: in one shell, top to bottom, so
	// a block may use what an earlier one defined (the address, day).
	if slices.ContainsFunc(blocks, usesPsql) {
		pg, ok := readmePostgresOrSkip(t)
		if ok {
			env = append(env, pg...)
			// The pages' psql lines name the reader's database
			// "analytics"; here it is the test server's.
			for _, kv := range pg {
				if db, ok := strings.CutPrefix(kv, "PGDATABASE="); ok {
					for bi := range blocks {
						blocks[bi].commands = slices.Clone(blocks[bi].commands)
						for i := range blocks[bi].commands {
							blocks[bi].commands[i].text = strings.ReplaceAll(blocks[bi].commands[i].text, "psql -d analytics ", "psql -d '"+db+"' ")
						}
					}
				}
			}
		} else {
			// Without PostgreSQL the page runs without its psql blocks.
			blocks = slices.DeleteFunc(slices.Clone(blocks), usesPsql)
		}
	}
	all := readmeBlock{file: blocks[0].file, line: blocks[0].line}
	for _, b := range blocks {
		all.commands = append(all.commands, b.commands...)
	}
	outs, stderr := runReadmeBlock(t, bash, work, env, addr, all)
	shownOutputs := 0
	for _, b := range blocks {
		t.Run(fmt.Sprintf("%s:%d", b.file, b.line), func(t *testing.T) {
			for _, cmd := range b.commands {
				got := outs[0]
				outs = outs[1:]
				if got.status != 0 {
					t.Errorf("%s:%d: %s\nexited %d; it printed %q; the page's stderr:\n%s", b.file, cmd.line, cmd.text, got.status, got.stdout, stderr)
					continue
				}
				if cmd.output == "" {
					continue
				}
				shownOutputs++
				if err := matchShown(cmd.output, got.stdout); err != nil {
					t.Errorf("%s:%d: %s\nprinted  %s\n%s shows %s\n%v", b.file, cmd.line, cmd.text, strings.TrimSpace(got.stdout), b.file, cmd.output, err)
				}
			}
		})
	}
	return shownOutputs
}

// TestReadmeDay runs the README's day function with the machine's own
// date(1) (GNU's on Linux; TestReadme runs it with BSD's): each day it
// names is the UTC date that many days from today.
func TestReadmeDay(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	def := regexp.MustCompile(`(?m)^day\(\) \{.*\}`).FindString(string(raw))
	if def == "" {
		t.Fatal("README.md defines no day function")
	}
	pgtest.AwayFromMidnight(t, time.Minute)
	for _, n := range []int{-30, -7, -1, 0, 1} {
		arg := fmt.Sprintf("%+d", n)
		out, err := exec.Command("bash", "-c", def+"\nday "+arg).Output()
		if err != nil {
			t.Fatalf("day %s: %v", arg, err)
		}
		if got, want := strings.TrimSpace(string(out)), time.Now().UTC().AddDate(0, 0, n).Format(time.DateOnly); got != want {
			t.Errorf("day %s printed %s, want %s", arg, got, want)
		}
	}
}

// TestReadmeTokenFile loads the example token file of docs/operations.md
// the way -auth-tokens does.
func TestReadmeTokenFile(t *testing.T) {
	raw, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), "```\n# comments and blank lines are ignored\n")
	if !ok {
		t.Fatal("docs/operations.md has no example token file")
	}
	example, _, _ := strings.Cut(rest, "```")
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("# comments and blank lines are ignored\n"+example), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := server.LoadAuth(path); err != nil {
		t.Errorf("the example token file of docs/operations.md: %v", err)
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

// readmePostgresOrSkip is readmePostgres, but without PostgreSQL (and
// without SKETCHD_REQUIRE_PG=1) it logs that the page's psql blocks are
// left out and returns false instead of skipping the whole page.
func readmePostgresOrSkip(t *testing.T) ([]string, bool) {
	t.Helper()
	var env []string
	ok := t.Run("postgres", func(st *testing.T) { env = readmePostgres(st, t) })
	if !ok || env == nil {
		t.Log("the page's psql blocks are left out: no PostgreSQL (SKETCHD_REQUIRE_PG=1 makes this a failure)")
		return nil, false
	}
	return env, true
}

// readmePostgres gives psql a schema of its own with the tables the
// README's SQL names, dropped when owner ends, and returns the environment
// that points psql at it. Without PostgreSQL t skips (fails with
// SKETCHD_REQUIRE_PG=1).
func readmePostgres(t, owner *testing.T) []string {
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
	cfg := conn.Config()
	connString := cfg.ConnString()
	owner.Cleanup(func() {
		ctx := context.Background()
		c, err := pgx.Connect(ctx, connString)
		if err != nil {
			owner.Errorf("dropping %s: %v", schema, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			owner.Errorf("dropping %s: %v", schema, err)
		}
	})
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
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
			t.Fatalf("no end marker for %s:%d in %q", b.file, b.commands[i].line, rest)
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
