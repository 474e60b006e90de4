package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestGoClientFromAnotherModule follows docs/clients.md's "Using the Go
// client from your module" as a user would: a new module beside a checkout
// of this repository (../sketchd), the page's commands run as written, its
// program built there and run against a real sketchd, printing what the
// page says it prints.
func TestGoClientFromAnotherModule(t *testing.T) {
	t.Parallel() // it asserts no timing
	if testing.Short() {
		t.Skip("builds a module of its own")
	}
	raw, err := os.ReadFile("../../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "### Using the Go client from your module\n")
	if !ok {
		t.Fatal(`docs/clients.md has no "### Using the Go client from your module"`)
	}
	section, _, _ = strings.Cut(section, "\n### ")
	commands := fenced(t, section, "sh")
	program := fenced(t, section, "go")
	var want []string
	if _, after, ok := strings.Cut(section, "It prints "); ok {
		sentence, _, _ := strings.Cut(after, "\n\n")
		sentence, _, _ = strings.Cut(sentence, "(") // the aside is not output
		for _, m := range regexp.MustCompile("`([^`]*)`").FindAllStringSubmatch(sentence, -1) {
			want = append(want, m[1])
		}
	}
	if len(want) == 0 {
		t.Fatal(`the section does not say what the program prints ("It prints ...")`)
	}

	checkout, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(checkout, filepath.Join(dir, "sketchd")); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(dir, "myapp")
	if err := os.Mkdir(app, 0o755); err != nil {
		t.Fatal(err)
	}
	c := startInProcess(t, filepath.Join(t.TempDir(), "sketchd.db"))
	addr := strings.TrimPrefix(c.base, "http://")
	if err := os.WriteFile(filepath.Join(app, "main.go"), []byte(strings.ReplaceAll(program, "localhost:8080", addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sh := func(script string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
		cmd.Dir = app
		// A workspace of the caller's would hide what go.mod says.
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
		return string(out)
	}
	sh("go mod init example.com/myapp")
	sh(commands)
	mod, err := os.ReadFile(filepath.Join(app, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), "github.com/sketchd/sketchd v0.0.0-00010101000000-000000000000") {
		t.Errorf("go.mod after the README's commands does not require the version the README names:\n%s", mod)
	}
	sh("go build -o app .")
	got := strings.TrimSpace(sh("./app"))
	if got != strings.Join(want, "\n") {
		t.Errorf("the README's program printed\n%s\nthe README says\n%s", got, strings.Join(want, "\n"))
	}
}

// fenced returns the body of the first ```lang block of text.
func fenced(t *testing.T, text, lang string) string {
	t.Helper()
	_, after, ok := strings.Cut(text, "```"+lang+"\n")
	if !ok {
		t.Fatalf("no ```%s block in the README's section", lang)
	}
	body, _, ok := strings.Cut(after, "```\n")
	if !ok {
		t.Fatalf("the ```%s block does not end", lang)
	}
	return body
}
