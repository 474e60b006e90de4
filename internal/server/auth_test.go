package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	readToken  = "read-token-0123456789abcdef"
	writeToken = "write-token-0123456789abcdef"
	otherToken = "other-token-0123456789abcdef"
)

// writeTokens writes a token file and returns its path.
func writeTokens(tb testing.TB, dir, content string) string {
	tb.Helper()
	path := filepath.Join(dir, "tokens")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

func TestLoadAuth(t *testing.T) {
	t.Parallel()
	good := "# sketchd tokens\n\n" + readToken + " read\n\t" + writeToken + "\twrite  \n  # indented comment\n"
	a, err := LoadAuth(writeTokens(t, t.TempDir(), good))
	if err != nil {
		t.Fatalf("LoadAuth(good file) = %v", err)
	}
	for tok, want := range map[string]role{readToken: roleRead, writeToken: roleWrite, otherToken: roleNone, "": roleNone, readToken + " ": roleNone, strings.ToUpper(readToken): roleNone} {
		if got := a.roleOf(tok); got != want {
			t.Errorf("roleOf(%q) = %d, want %d", tok, got, want)
		}
	}

	secret := "s3cret-token-never-shown"
	for _, c := range []struct {
		name, content string
		line          int // 0: no line to name
	}{
		{"one field", readToken + " read\n" + secret + "\n", 2},
		{"three fields", secret + " read extra\n", 1},
		{"unknown role", "# c\n" + secret + " owner\n", 2},
		{"role case", secret + " Write\n", 1},
		{"short token", "short read\n", 1},
		{"duplicate token", secret + " read\n\n" + secret + " write\n", 3},
		{"token with role only", "read\n", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := LoadAuth(writeTokens(t, t.TempDir(), c.content))
			if err == nil {
				t.Fatalf("LoadAuth(%q) succeeded", c.content)
			}
			msg := err.Error()
			if c.line > 0 && !strings.Contains(msg, fmt.Sprintf("line %d", c.line)) {
				t.Errorf("error %q does not name line %d", msg, c.line)
			}
			if strings.Contains(msg, secret) || strings.Contains(msg, "short read") {
				t.Errorf("error %q shows the token", msg)
			}
		})
	}
	if _, err := LoadAuth(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("LoadAuth(missing file) succeeded")
	}
	// At startup a file with no tokens is a mistake.
	for _, content := range []string{"", "# nothing\n\n"} {
		if _, err := LoadAuth(writeTokens(t, t.TempDir(), content)); err == nil || !strings.Contains(err.Error(), "no tokens") {
			t.Errorf("LoadAuth(%q) = %v, want a no-tokens error", content, err)
		}
	}
}

// authProbe is one request of a route class.
type authProbe struct {
	name  string
	class string // "read", "write" or "open"
	// req builds the request; i makes created names unique.
	req func(i int) (method, path, ctype, body string)
}

func authProbes() []authProbe {
	const js = "application/json"
	fixed := func(method, path, ctype, body string) func(int) (string, string, string, string) {
		return func(int) (string, string, string, string) { return method, path, ctype, body }
	}
	return []authProbe{
		{"list", "read", fixed("GET", "/v1/sketches", "", "")},
		{"describe", "read", fixed("GET", "/v1/sketches/a", "", "")},
		{"frequency", "read", fixed("POST", "/v1/sketches/c/frequency", js, `{"ids":[1]}`)},
		{"frequency get", "read", fixed("GET", "/v1/sketches/c/frequency?id=1", "", "")},
		{"top", "read", fixed("GET", "/v1/sketches/c/top", "", "")},
		{"union", "read", fixed("POST", "/v1/union", js, `{"sketches":["a","b"]}`)},
		{"intersection", "read", fixed("POST", "/v1/intersection", js, `{"sketches":["a","b"]}`)},
		{"overlap", "read", fixed("POST", "/v1/overlap", js, `{"sketches":["a","b"]}`)},
		{"rank", "read", fixed("POST", "/v1/rank", js, `{"target":"a","candidates":["b"],"by":"intersection","top":1}`)},
		{"raw", "read", fixed("GET", "/v1/sketches/a/raw", "", "")},
		{"create", "write", func(i int) (string, string, string, string) {
			return "PUT", fmt.Sprintf("/v1/sketches/new-%d", i), js, `{}`
		}},
		{"delete", "write", func(i int) (string, string, string, string) {
			return "DELETE", fmt.Sprintf("/v1/sketches/del-%d", i), "", ""
		}},
		{"add", "write", fixed("POST", "/v1/sketches/a/add", js, `{"ids":[1,2]}`)},
		{"events", "write", fixed("POST", "/v1/events", js, `{"events":[{"id":3,"sketches":["a","c"]}]}`)},
		{"union into", "write", func(i int) (string, string, string, string) {
			return "POST", "/v1/union", js, fmt.Sprintf(`{"sketches":["a","b"],"into":"u-%d"}`, i)
		}},
		{"fold", "write", func(i int) (string, string, string, string) {
			return "POST", "/v1/sketches/a/fold", js, fmt.Sprintf(`{"log2m":10,"into":"f-%d"}`, i)
		}},
		{"raw put", "write", func(i int) (string, string, string, string) {
			return "PUT", fmt.Sprintf("/v1/sketches/r-%d/raw", i), "text/plain", `\x118b7f`
		}},
		{"raw post", "write", fixed("POST", "/v1/sketches/a/raw", "text/plain", `\x118b7f`)},
		{"healthz", "open", fixed("GET", "/healthz", "", "")},
		{"readyz", "open", fixed("GET", "/readyz", "", "")},
		{"openapi", "open", fixed("GET", "/openapi.yaml", "", "")},
		{"metrics", "open", fixed("GET", "/metrics", "", "")},
	}
}

// newAuthEnv serves a store holding HLLs a, b and a CMS c with heavy
// hitters, behind the tokens readToken and writeToken.
func newAuthEnv(tb testing.TB, authMetrics bool) (*env, *Auth, string) {
	tb.Helper()
	path := writeTokens(tb, tb.TempDir(), readToken+" read\n"+writeToken+" write\n")
	a, err := LoadAuth(path)
	if err != nil {
		tb.Fatal(err)
	}
	e := newEnv(tb, withAuth(a), withConfig(func(c *Config) { c.AuthMetrics = authMetrics }))
	w := "Authorization: Bearer " + writeToken
	for _, s := range []struct{ name, body string }{{"a", `{"log2m":11}`}, {"b", `{"log2m":11}`}, {"c", `{"type":"cms","width":64,"depth":3,"topk":2}`}} {
		must(tb, e.send(tb, "PUT", "/v1/sketches/"+s.name, "application/json", s.body, w), 201, "create "+s.name)
	}
	return e, a, path
}

// TestAuthRoles sends every route class with no token, an unknown one, a
// read token and a write token.
func TestAuthRoles(t *testing.T) {
	t.Parallel()
	e, _, _ := newAuthEnv(t, false)
	tokens := []struct{ name, header string }{
		{"no token", ""},
		{"unknown token", "Authorization: Bearer " + otherToken},
		{"basic scheme", "Authorization: Basic " + writeToken},
		{"empty bearer", "Authorization: Bearer "},
		{"read token", "Authorization: Bearer " + readToken},
		{"write token", "Authorization: Bearer " + writeToken},
		{"write token, lower-case scheme", "Authorization: bearer " + writeToken},
	}
	i := 0
	for _, p := range authProbes() {
		for _, tok := range tokens {
			t.Run(p.name+"/"+tok.name, func(t *testing.T) {
				i++
				if p.name == "delete" {
					must(t, e.send(t, "PUT", fmt.Sprintf("/v1/sketches/del-%d", i), "application/json", `{}`, "Authorization: Bearer "+writeToken), 201, "create for delete")
				}
				method, path, ctype, body := p.req(i)
				var hdr []string
				if tok.header != "" {
					hdr = append(hdr, tok.header)
				}
				r := e.send(t, method, path, ctype, body, hdr...)
				for _, secret := range []string{readToken, writeToken, otherToken} {
					if strings.Contains(string(r.Body), secret) || strings.Contains(fmt.Sprint(r.Header), secret) {
						t.Fatalf("the answer shows a token: %v", r)
					}
				}
				var want int
				switch {
				case p.class == "open":
					want = 200
				case strings.HasPrefix(tok.name, "write"):
					want = 2
				case tok.name == "read token" && p.class == "read":
					want = 2
				case tok.name == "read token":
					want = 403
				default:
					want = 401
				}
				switch want {
				case 2:
					if r.Status < 200 || r.Status > 299 {
						t.Fatalf("%s %s = %v, want 2xx", method, path, r)
					}
				case 200:
					must(t, r, 200, method+" "+path)
				default:
					checkProblem(t, r, want)
				}
				if want == 401 && !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("401 with WWW-Authenticate %q, want a Bearer challenge", r.Header.Get("WWW-Authenticate"))
				}
			})
		}
	}
	// A read token's refused union into created nothing.
	r := e.postJSON(t, "/v1/union", `{"sketches":["a"],"into":"read-into"}`, "Authorization: Bearer "+readToken)
	checkProblem(t, r, 403)
	checkProblem(t, e.get(t, "/v1/sketches/read-into", "Authorization: Bearer "+writeToken), 404)
}

func TestAuthMetrics(t *testing.T) {
	t.Parallel()
	e, _, _ := newAuthEnv(t, true)
	r := e.get(t, "/metrics")
	checkProblem(t, r, 401)
	if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("401 with WWW-Authenticate %q", r.Header.Get("WWW-Authenticate"))
	}
	checkProblem(t, e.get(t, "/metrics", "Authorization: Bearer "+otherToken), 401)
	r = must(t, e.get(t, "/metrics", "Authorization: Bearer "+readToken), 200, "metrics with a read token")
	if !strings.Contains(string(r.Body), "sketchd_auth_failures_total") {
		t.Errorf("metrics lack sketchd_auth_failures_total")
	}
	must(t, e.get(t, "/metrics", "Authorization: Bearer "+writeToken), 200, "metrics with a write token")
	for _, p := range []string{"/healthz", "/readyz", "/openapi.yaml"} {
		must(t, e.get(t, p), 200, p+" without a token")
	}
}

func TestAuthReload(t *testing.T) {
	t.Parallel()
	e, a, path := newAuthEnv(t, false)
	read := func(tok string) response { return e.get(t, "/v1/sketches/a", "Authorization: Bearer "+tok) }
	must(t, read(readToken), 200, "old read token")

	if err := os.WriteFile(path, []byte(otherToken+" write\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	must(t, read(readToken), 200, "old token before Reload")
	if _, err := a.Reload(); err != nil {
		t.Fatalf("Reload = %v", err)
	}
	checkProblem(t, read(readToken), 401)
	checkProblem(t, read(writeToken), 401)
	must(t, read(otherToken), 200, "new token")
	must(t, e.postJSON(t, "/v1/sketches/a/add", `{"ids":[9]}`, "Authorization: Bearer "+otherToken), 200, "write with the new token")

	// An emptied file revokes every token.
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := a.Reload(); err != nil || n != 0 {
		t.Fatalf("Reload of an empty file = %d, %v; want 0, nil", n, err)
	}
	checkProblem(t, read(otherToken), 401)
	checkProblem(t, e.postJSON(t, "/v1/sketches/a/add", `{"ids":[9]}`, "Authorization: Bearer "+otherToken), 401)

	// A file that cannot be read or parsed refuses every token, and the
	// error never shows one; a good file brings them back.
	restore := func() {
		t.Helper()
		if err := os.WriteFile(path, []byte(otherToken+" write\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if n, err := a.Reload(); err != nil || n != 1 {
			t.Fatalf("Reload = %d, %v; want 1, nil", n, err)
		}
		must(t, read(otherToken), 200, "token after a good reload")
	}
	for _, broken := range []string{otherToken + " owner\n", "short write\n", otherToken + " write\n" + otherToken + " read\n"} {
		restore()
		if err := os.WriteFile(path, []byte(broken), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := a.Reload()
		if err == nil {
			t.Fatalf("Reload of %q succeeded", broken)
		}
		if strings.Contains(err.Error(), otherToken) || strings.Contains(err.Error(), "short write") {
			t.Errorf("Reload error %q shows a token", err)
		}
		r := read(otherToken)
		checkProblem(t, r, 401)
		if !strings.Contains(string(r.Body), "could not be read") {
			t.Errorf("401 after a failed reload says %s; want it to say the token file could not be read", r.Body)
		}
		checkProblem(t, read(readToken), 401)
	}
	restore()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Reload(); err == nil {
		t.Fatal("Reload of a missing file succeeded")
	}
	checkProblem(t, read(otherToken), 401)
	checkProblem(t, e.postJSON(t, "/v1/sketches/a/add", `{"ids":[9]}`, "Authorization: Bearer "+otherToken), 401)
}

// TestMetricFlagNeedsAdmin: with auth on, only an admin token may put a
// sketch on /metrics; a write token may create and re-create sketches
// without the flag (or turn it off, as it may delete the sketch).
func TestMetricFlagNeedsAdmin(t *testing.T) {
	t.Parallel()
	const adminToken = "admin-token-0123456789abcdef"
	a, err := LoadAuth(writeTokens(t, t.TempDir(), writeToken+" write\n"+adminToken+" admin\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withAuth(a))
	w, adm := "Authorization: Bearer "+writeToken, "Authorization: Bearer "+adminToken
	r := e.send(t, "PUT", "/v1/sketches/m", "application/json", `{"metric":true}`, w)
	checkProblem(t, r, 403)
	if !strings.Contains(string(r.Body), "admin") {
		t.Errorf("403 body %s does not say an admin token is needed", r.Body)
	}
	checkProblem(t, e.send(t, "PUT", "/v1/sketches/m", "application/json", `{"type":"cms","width":8,"depth":2,"metric":true}`, w), 403)
	must(t, e.send(t, "PUT", "/v1/sketches/m", "application/json", `{}`, w), 201, "write token, no metric flag")
	checkProblem(t, e.send(t, "PUT", "/v1/sketches/m", "application/json", `{"metric":true}`, w), 403)
	must(t, e.send(t, "PUT", "/v1/sketches/m", "application/json", `{"metric":true}`, adm), 200, "admin token sets the flag")
	must(t, e.send(t, "PUT", "/v1/sketches/n", "application/json", `{"metric":true}`, adm), 201, "admin token creates with the flag")
	must(t, e.send(t, "PUT", "/v1/sketches/n", "application/json", `{"metric":false}`, w), 200, "write token clears the flag")
	must(t, e.postJSON(t, "/v1/sketches/m/add", `{"ids":[1,2,3]}`, adm), 200, "admin token writes")

	m := e.get(t, "/metrics")
	if !strings.Contains(string(m.Body), `sketchd_sketch_estimate{name="m"} 3`) || strings.Contains(string(m.Body), `name="n"`) {
		t.Errorf("/metrics estimates:\n%s\nwant m (3) and not n", grepLines(string(m.Body), "sketchd_sketch_estimate{"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
