package client

import (
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzIDJSON: UnmarshalJSON takes exactly JSON integers within int64 and
// JSON strings; what it takes marshals back to an equal ID.
func FuzzIDJSON(f *testing.F) {
	for _, s := range []string{`0`, `-9223372036854775808`, `9223372036854775807`, `9223372036854775808`, `"a"`, `"\u00e9\n"`,
		`""`, `1.5`, `1e3`, `null`, `true`, `[1]`, `"unterminated`, ` 42 `, `-0`, `"\ud800"`, `0x10`, `+1`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var id ID
		if err := id.UnmarshalJSON(b); err != nil {
			return
		}
		out, err := id.MarshalJSON()
		if err != nil {
			if id.IsText() && !utf8.ValidString(id.Text()) {
				return // the standard decoder keeps no invalid UTF-8, but be sure
			}
			t.Fatalf("MarshalJSON(%v) after UnmarshalJSON(%q): %v", id, b, err)
		}
		var again ID
		if err := again.UnmarshalJSON(out); err != nil || again != id {
			t.Fatalf("round trip of %q: %q -> %v, %v; want %v", b, out, again, err, id)
		}
		if !json.Valid(out) {
			t.Fatalf("MarshalJSON(%v) = %q, not JSON", id, out)
		}
	})
}

// FuzzAppendJSONString: the encoding the batcher and the add calls write
// by hand decodes, by the standard decoder, to the same string, and its
// length is what jsonStringLen charges.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a", `"`, `\`, "\n\r\t\x00\x1f\x7f", "é€😀", "\u2028", "\xff", "a\xc3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := appendJSONString([]byte("x"), s)
		if !utf8.ValidString(s) {
			if err == nil {
				t.Fatalf("appendJSONString(%q) took invalid UTF-8", s)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		out = out[1:]
		var back string
		if err := json.Unmarshal(out, &back); err != nil || back != s {
			t.Fatalf("appendJSONString(%q) = %q, decodes to %q, %v", s, out, back, err)
		}
		if n := jsonStringLen(s); n != len(out) {
			t.Fatalf("jsonStringLen(%q) = %d, encoded %d bytes", s, n, len(out))
		}
	})
}

// FuzzProblem: any error answer becomes a *Problem with the answer's
// status and a bounded detail, and never panics.
func FuzzProblem(f *testing.F) {
	f.Add(404, "application/problem+json", []byte(`{"type":"urn:sketchd:problem:not-found","title":"Not Found","status":404,"detail":"no sketch \"a\"","request_id":"r1"}`))
	f.Add(503, "application/problem+json; charset=utf-8", []byte(`{"type":"urn:sketchd:problem:unavailable","status":503}`))
	f.Add(502, "text/html", []byte("<html>bad gateway</html>"))
	f.Add(409, "application/problem+json", []byte(`{"status":400}`))
	f.Add(500, "application/problem+json", []byte(`{"status":"x"`))
	f.Add(418, "", []byte(strings.Repeat("x", 1000)))
	f.Add(418, "application/problem+json", []byte(`{"status":418,"detail":"`+strings.Repeat("y", 300)+`"}`))
	f.Fuzz(func(t *testing.T, status int, contentType string, body []byte) {
		h := http.Header{}
		h.Set("Content-Type", contentType)
		h.Set("Retry-After", string(body[:min(len(body), 12)]))
		p := problemFrom(&response{status: status, header: h, body: body}, "GET", "/x")
		if p.Status != status {
			t.Fatalf("Status = %d, want the answer's %d", p.Status, status)
		}
		if mt, _, _ := mime.ParseMediaType(contentType); mt != "application/problem+json" && len(p.Detail) > maxDetail+len("…") {
			t.Fatalf("detail of a non-problem answer is %d bytes", len(p.Detail))
		}
		if p.RetryAfter < 0 {
			t.Fatalf("RetryAfter = %v", p.RetryAfter)
		}
		_ = p.Error()
	})
}

// FuzzParsePlan: a Sketchd-Plan header parses without panicking, and what
// parses, written again in the server's form, parses to the same runs.
func FuzzParsePlan(f *testing.F) {
	for _, s := range []string{
		"day 2026-10-30T00:00:00+01:00 2026-10-31T00:00:00+01:00 2",
		"hour 2026-11-01T22:00:00Z 2026-11-01T23:00:00Z 2, month 2026-12-01T00:00:00+01:00 2026-12-01T00:00:00+01:00 1",
		"", ",", ", ", "day", "day a b 1", "day 2026-10-30T00:00:00Z 2026-10-31T00:00:00Z -1", "day 2026-10-30T00:00:00Z 2026-10-31T00:00:00Z 99999999999999999999",
		"day  2026-10-30T00:00:00Z 2026-10-31T00:00:00Z 2", "day 2026-10-30T00:00:00.5Z 2026-10-31T00:00:00Z 2,day 2026-10-30T00:00:00Z 2026-10-31T00:00:00Z 2",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		runs, err := parsePlan(v)
		if err != nil {
			return
		}
		parts := make([]string, len(runs))
		for i, r := range runs {
			if r.Count < 1 || (r.Level != LevelHour && r.Level != LevelDay && r.Level != LevelWeek && r.Level != LevelMonth) {
				t.Fatalf("parsePlan(%q) took run %+v", v, r)
			}
			parts[i] = r.Level + " " + r.First.Format(time.RFC3339Nano) + " " + r.Last.Format(time.RFC3339Nano) + " " + strconv.Itoa(r.Count)
		}
		again, err := parsePlan(strings.Join(parts, ", "))
		if err != nil || len(again) != len(runs) {
			t.Fatalf("parsePlan(%q) = %+v; written again, %+v, %v", v, runs, again, err)
		}
		for i := range runs {
			if again[i].Level != runs[i].Level || !again[i].First.Equal(runs[i].First) || !again[i].Last.Equal(runs[i].Last) || again[i].Count != runs[i].Count {
				t.Fatalf("parsePlan(%q) run %d: %+v, written again %+v", v, i, runs[i], again[i])
			}
		}
	})
}
