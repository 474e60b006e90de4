package server

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/sketch"
)

// FuzzImportLines: the bulk import parser never panics, refuses with an
// Invalid or TooLarge *sketch.Error naming a line, never returns more
// lines than the body has or than its cap, and keeps the raw bytes no
// longer than the body.
func FuzzImportLines(f *testing.F) {
	for _, s := range []string{
		`{"level":"day","start":"2026-01-01T00:00:00Z","bytes":"\\x148b7f"}`,
		`{"level":"hour","start":"2026-01-01T05:00:00+01:00","bytes":"FIt/"}` + "\r\n\n" + `{"level":"month","start":"2026-01-01T00:00:00Z","bytes":"\\x"}`,
		`{"level":"day","start":"2026-01-01T00:00:00Z","bytes":"\\xzz"}`,
		`{"level":"day","level":"day","start":"x","bytes":""}`,
		`{"Level":"day","start":"2026-01-01T00:00:00Z","bytes":"AA=="}`,
		`{"level":"week","start":"2026-01-05T00:00:00Z","bytes":"%%"} {}`,
		`[1,2]`, `null`, ``, "\n\n\n", `{"level":"day","start":"2026-01-01T00:00:00Z"}`,
		strings.Repeat(`{"level":"day","start":"2026-01-01T00:00:00Z","bytes":"AA=="}`+"\n", 5),
	} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, body []byte, maxLines uint8) {
		cap := int(maxLines%8) + 1
		lines, err := parseImportLines(body, cap)
		if err != nil {
			var e *sketch.Error
			if !errors.As(err, &e) || (e.Kind != sketch.Invalid && e.Kind != sketch.TooLarge) {
				t.Fatalf("error %v is not an Invalid or TooLarge *sketch.Error", err)
			}
			if e.Kind == sketch.Invalid && len(bytes.TrimSpace(body)) > 0 && !strings.HasPrefix(e.Detail, "line ") && !strings.Contains(e.Detail, "no lines") {
				t.Fatalf("refusal %q names no line", e.Detail)
			}
			return
		}
		if len(lines) == 0 || len(lines) > cap || len(lines) > bytes.Count(body, []byte{'\n'})+1 {
			t.Fatalf("%d lines from a body of %d newlines, cap %d", len(lines), bytes.Count(body, []byte{'\n'}), cap)
		}
		n := 0
		for i, l := range lines {
			n += len(l.raw)
			if !l.level.Valid() || l.start.IsZero() && !strings.Contains(string(body), "0001-01-01") || (i > 0 && l.line <= lines[i-1].line) {
				t.Fatalf("line %+v", l)
			}
		}
		if n > len(body) {
			t.Fatalf("%d raw bytes from a body of %d", n, len(body))
		}
	})
}
