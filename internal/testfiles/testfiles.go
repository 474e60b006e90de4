// Package testfiles writes the small trees tests build in temporary
// folders: a module of a few packages for go test or go list to read.
package testfiles

import (
	"os"
	"path/filepath"
	"testing"
)

// Write writes files under dir, each at its slash-separated path with
// its content, making the folders on the way, and fails tb if one cannot
// be written.
func Write(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}
