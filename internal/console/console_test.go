package console_test

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/console"
)

// get fetches path raw: no transparent decompression, so the body is
// what went over the wire.
func get(t *testing.T, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

var (
	assetRef  = regexp.MustCompile(`(?:src|href)="(/console/[^"]+)"`)
	importRef = regexp.MustCompile(`(?m)^import .* from '\./([^']+)';`)
)

// TestTransferSize loads the page as a browser would (the HTML, then every
// file it and its scripts reference) and checks the total transfer, as
// gzip, stays under 150 KB. It also checks that every embedded file is
// reachable from the page, so nothing dead ships.
func TestTransferSize(t *testing.T) {
	s := newSite(t, false)
	gz := map[string]string{"Accept-Encoding": "gzip"}
	seen := map[string]int{}
	var queue []string
	resp, page := get(t, s.url+"/", gz)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("GET / = %d, Content-Encoding %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
	}
	seen["/"] = len(page)
	html := gunzip(t, page)
	for _, m := range assetRef.FindAllStringSubmatch(html, -1) {
		queue = append(queue, m[1])
	}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		if _, ok := seen[path]; ok {
			continue
		}
		resp, body := get(t, s.url+path, gz)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d", path, resp.StatusCode)
		}
		if resp.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("GET %s: Content-Encoding %q, want gzip", path, resp.Header.Get("Content-Encoding"))
		}
		seen[path] = len(body)
		if strings.HasSuffix(path, ".js") {
			for _, m := range importRef.FindAllStringSubmatch(gunzip(t, body), -1) {
				queue = append(queue, "/console/"+m[1])
			}
		}
	}
	total := 0
	for p, n := range seen {
		t.Logf("%-22s %6d bytes gzip", p, n)
		total += n
	}
	t.Logf("total %d bytes gzip", total)
	if total >= 150*1024 {
		t.Errorf("the page transfers %d bytes gzip, want under 150 KB", total)
	}
	h, err := console.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range h.Names() {
		p := "/console/" + name
		if name == "index.html" {
			p = "/"
		}
		if _, ok := seen[p]; !ok {
			t.Errorf("embedded %s is never loaded by the page", name)
		}
	}
	if len(seen) < 5 {
		t.Errorf("the page loaded only %v", seen)
	}
}

func gunzip(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestHeaders: every console file carries the policy, no inline script or
// style is allowed by it or present in the page, types are right, and
// ETags revalidate.
func TestHeaders(t *testing.T) {
	s := newSite(t, false)
	h, err := console.New()
	if err != nil {
		t.Fatal(err)
	}
	wantType := map[string]string{".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
	for _, name := range h.Names() {
		path := "/console/" + name
		if name == "index.html" {
			path = "/"
		}
		resp, body := get(t, s.url+path, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d", path, resp.StatusCode)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if csp != console.CSP {
			t.Errorf("GET %s: Content-Security-Policy %q, want %q", path, csp, console.CSP)
		}
		for _, bad := range []string{"unsafe-inline", "unsafe-eval", "*"} {
			if strings.Contains(csp, bad) {
				t.Errorf("the policy allows %s: %q", bad, csp)
			}
		}
		if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "style-src 'self'") {
			t.Errorf("the policy does not restrict scripts and styles to the origin: %q", csp)
		}
		ext := name[strings.LastIndex(name, "."):]
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, wantType[ext]) {
			t.Errorf("GET %s: Content-Type %q, want %s", path, ct, wantType[ext])
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", path)
		}
		if name == "index.html" {
			page := string(body)
			if regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`).MatchString(page) {
				t.Errorf("index.html has an inline script")
			}
			if strings.Contains(page, "style=") || strings.Contains(page, "<style") || regexp.MustCompile(`\son[a-z]+=`).MatchString(page) {
				t.Errorf("index.html has inline styles or handlers")
			}
		}
		if strings.HasSuffix(name, ".js") && (strings.Contains(string(body), "innerHTML") || strings.Contains(string(body), "eval(")) {
			t.Errorf("%s writes HTML from strings or evaluates code", name)
		}
		etag := resp.Header.Get("ETag")
		if etag == "" {
			t.Errorf("GET %s: no ETag", path)
			continue
		}
		resp, body = get(t, s.url+path, map[string]string{"If-None-Match": etag})
		if resp.StatusCode != http.StatusNotModified || len(body) != 0 {
			t.Errorf("GET %s with If-None-Match = %d (%d bytes), want 304 and no body", path, resp.StatusCode, len(body))
		}
	}
	if !slices.Contains(h.Names(), "app.js") || !slices.Contains(h.Names(), "layout.js") {
		t.Errorf("assets %v lack the scripts", h.Names())
	}
}

// TestUnknownFile is a problem+json 404, as everywhere else.
func TestUnknownFile(t *testing.T) {
	s := newSite(t, false)
	for _, path := range []string{"/console/nope.js", "/console/index.html", "/console/..%2fconsole.go"} {
		resp, body := get(t, s.url+path, nil)
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("GET %s = %d %s, want a 404 problem", path, resp.StatusCode, resp.Header.Get("Content-Type"))
			continue
		}
		var p struct {
			Status int    `json:"status"`
			Detail string `json:"detail"`
		}
		if err := json.Unmarshal(body, &p); err != nil || p.Status != 404 || p.Detail == "" {
			t.Errorf("GET %s: problem %s (%v)", path, body, err)
		}
	}
}

// TestConsoleNeedsNoToken: the page holds no data, so a protected server
// still serves it; its API calls are what need the token.
func TestConsoleNeedsNoToken(t *testing.T) {
	s := newSite(t, true)
	if resp, _ := get(t, s.url+"/", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("GET / on a protected server = %d, want 200", resp.StatusCode)
	}
	if resp, _ := get(t, s.url+"/v1/sketches", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/sketches without a token = %d, want 401", resp.StatusCode)
	}
}

// TestVerdictIsTheAPIs: the page shows the API's verdict and words
// (verdict, verdict_text) and decides nothing itself: no script reads the
// reliable flag or writes a verdict sentence of its own. The browser
// tests check what is shown; this catches a rule creeping back into the
// scripts where no browser test looks.
func TestVerdictIsTheAPIs(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"assets/app.js", "assets/layout.js"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, re := range []*regexp.Regexp{
			regexp.MustCompile(`\.reliable\b`),
			regexp.MustCompile(`['"` + "`" + `](Not reliable|Reliable|Spurious|Exact)\.`),
		} {
			if m := re.FindString(string(b)); m != "" {
				t.Errorf("%s decides a verdict itself (%q): show the API's verdict and verdict_text", name, m)
			}
		}
	}
}
