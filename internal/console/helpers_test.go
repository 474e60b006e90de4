package console_test

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/api"
	"github.com/sketchd/sketchd/internal/certs"
	"github.com/sketchd/sketchd/internal/certs/certstest"
	"github.com/sketchd/sketchd/internal/server"
	"github.com/sketchd/sketchd/internal/store/bolt"
	"github.com/sketchd/sketchd/internal/store/bolt/bolttest"
	"github.com/sketchd/sketchd/internal/store/storetest"
)

// Tokens of the protected test server.
const (
	readToken  = "console-read-token"
	writeToken = "console-write-token"
)

// site is a real sketchd server (real store in a temporary directory)
// behind httptest, with the token used to seed it.
type site struct {
	url   string
	token string // write token used by the test's own API calls ("" if open)
	// client sends the test's own API calls (one trusting the test's CA
	// for an HTTPS site); nil is http.DefaultClient.
	client *http.Client
}

// openStore opens the embedded store in a temporary directory, closed
// and checked on cleanup. It is the one place these tests build a store.
func openStore(tb testing.TB) server.Store {
	tb.Helper()
	return storetest.Open(tb, bolttest.Backend(bolt.Options{})).Store
}

// newSite starts the whole server; protected turns on bearer tokens.
func newSite(tb testing.TB, protected bool) *site {
	tb.Helper()
	s, h := newHandler(tb, protected)
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// newTLSSite starts the whole server over HTTPS with sketchd's own TLS
// configuration (internal/certs, as -tls-cert and -tls-key set it up),
// serving pair, which ca signed.
func newTLSSite(tb testing.TB, protected bool, ca *certstest.CA, pair *certstest.Pair) *site {
	tb.Helper()
	s, h := newHandler(tb, protected)
	files, err := certs.Load(pair.CertFile, pair.KeyFile, "")
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	hs := &http.Server{Handler: h, TLSConfig: files.Config(), ReadHeaderTimeout: 10 * time.Second}
	go hs.ServeTLS(ln, "", "")
	tb.Cleanup(func() { hs.Close() })
	s.url = "https://" + ln.Addr().String()
	s.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}, ForceAttemptHTTP2: true}}
	return s
}

// newHandler builds the server over a fresh store; protected turns on
// bearer tokens.
func newHandler(tb testing.TB, protected bool) (*site, http.Handler) {
	tb.Helper()
	deps := server.Deps{Store: openStore(tb), OpenAPI: api.Spec()}
	s := &site{}
	if protected {
		path := filepath.Join(tb.TempDir(), "tokens")
		if err := os.WriteFile(path, []byte(readToken+" read\n"+writeToken+" write\n"), 0o600); err != nil {
			tb.Fatal(err)
		}
		auth, err := server.LoadAuth(path)
		if err != nil {
			tb.Fatal(err)
		}
		deps.Auth = auth
		s.token = writeToken
	}
	return s, server.New(server.DefaultConfig(), deps)
}

func (s *site) httpClient() *http.Client {
	if s.client != nil {
		return s.client
	}
	return http.DefaultClient
}

// call sends one API request and decodes a 2xx JSON answer into out.
func (s *site) call(tb testing.TB, method, path, ctype string, body []byte, out any) {
	tb.Helper()
	req, err := http.NewRequest(method, s.url+path, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.httpClient().Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		tb.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			tb.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

// hllOf creates an HLL sketch holding the integer ids [from, to).
func (s *site) hllOf(tb testing.TB, name string, from, to int) {
	tb.Helper()
	s.call(tb, http.MethodPut, "/v1/sketches/"+name, "", nil, nil)
	s.addRange(tb, name, from, to)
}

// thetaOf creates a theta sketch holding the integer ids [from, to).
func (s *site) thetaOf(tb testing.TB, name string, from, to int) {
	tb.Helper()
	s.call(tb, http.MethodPut, "/v1/sketches/"+name, "application/json", []byte(`{"type":"theta"}`), nil)
	s.addRange(tb, name, from, to)
}

// addRange adds the integer ids [from, to) to a sketch.
func (s *site) addRange(tb testing.TB, name string, from, to int) {
	tb.Helper()
	var b strings.Builder
	for i := from; i < to; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	s.call(tb, http.MethodPost, "/v1/sketches/"+name+"/add", "text/plain", []byte(b.String()), nil)
}

// cmsOf creates a Count-Min sketch with top-k and the given counts.
func (s *site) cmsOf(tb testing.TB, name string, counts map[string]int) {
	tb.Helper()
	s.call(tb, http.MethodPut, "/v1/sketches/"+name, "application/json", []byte(`{"type":"cms","epsilon":0.001,"delta":0.01,"topk":10}`), nil)
	type item struct {
		ID    string `json:"id"`
		Count int    `json:"count"`
	}
	var items []item
	for id, n := range counts {
		items = append(items, item{id, n})
	}
	body, _ := json.Marshal(map[string]any{"items": items})
	s.call(tb, http.MethodPost, "/v1/sketches/"+name+"/add", "application/json", body, nil)
}

// sketchInfo is the part of a describe answer the console shows.
type sketchInfo struct {
	Name           string  `json:"name"`
	Type           string  `json:"type"`
	Cardinality    float64 `json:"cardinality"`
	Lower          float64 `json:"lower_bound"`
	Upper          float64 `json:"upper_bound"`
	StdError       float64 `json:"std_error"`
	Representation string  `json:"representation"`
	Total          int64   `json:"total"`
}

type intersection struct {
	Jaccard *struct {
		Estimate     float64
		Error        *float64
		Lower, Upper *float64
	} `json:"jaccard"`
	Estimate    float64  `json:"estimate"`
	Error       float64  `json:"error"`
	Lower       float64  `json:"lower"`
	Upper       float64  `json:"upper"`
	Spurious    bool     `json:"spurious"`
	Reliable    bool     `json:"reliable"`
	Verdict     string   `json:"verdict"`
	VerdictText string   `json:"verdict_text"`
	Warnings    []string `json:"warnings"`
}

func (s *site) intersect(tb testing.TB, names ...string) intersection {
	tb.Helper()
	body, _ := json.Marshal(map[string]any{"sketches": names})
	var x intersection
	s.call(tb, http.MethodPost, "/v1/intersection", "application/json", body, &x)
	return x
}

func (s *site) list(tb testing.TB, prefix string) []sketchInfo {
	tb.Helper()
	var page struct {
		Sketches []sketchInfo `json:"sketches"`
	}
	s.call(tb, http.MethodGet, "/v1/sketches?limit=1000&prefix="+prefix, "", nil, &page)
	return page.Sketches
}

// count formats an estimate as the console does: rounded half up, with
// thousands separators.
func count(x float64) string {
	n := int64(math.Floor(x + 0.5))
	neg := n < 0
	if neg {
		n = -n
	}
	digits := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func TestCount(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{{0, "0"}, {0.5, "1"}, {999.4, "999"}, {1000, "1,000"}, {1234567.5, "1,234,568"}, {-1500, "-1,500"}} {
		if got := count(c.in); got != c.want {
			t.Errorf("count(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// dailySeries creates an HLL series with daily buckets in UTC holding, for
// each of the last days days, the ids [100·d, 100·d + 1000) stamped d days
// ago (d = 0 is now).
func (s *site) dailySeries(tb testing.TB, name string, days int) {
	tb.Helper()
	s.call(tb, http.MethodPut, "/v1/series/"+name, "application/json",
		[]byte(`{"type":"hll","tz":"UTC","levels":{"day":"P400D"},"late_limit":"P60D"}`), nil)
	now := time.Now().UTC()
	for d := range days {
		var b strings.Builder
		for i := 100 * d; i < 100*d+1000; i++ {
			b.WriteString(strconv.Itoa(i))
			b.WriteByte('\n')
		}
		ts := now.Add(-time.Duration(d)*24*time.Hour - time.Minute).Format(time.RFC3339)
		s.call(tb, http.MethodPost, "/v1/series/"+name+"/add?ts="+ts, "text/plain", []byte(b.String()), nil)
	}
}

type point struct {
	Start       time.Time `json:"start"`
	Cardinality float64   `json:"cardinality"`
	StdError    float64   `json:"std_error"`
}

// timeseries asks the API for daily points over [from, to) with window.
func (s *site) timeseries(tb testing.TB, name string, from, to time.Time, window string) []point {
	tb.Helper()
	var r struct {
		Points []point `json:"points"`
	}
	q := url.Values{"from": {from.Format(time.RFC3339)}, "to": {to.Format(time.RFC3339)}, "step": {"P1D"}, "window": {window}}
	s.call(tb, http.MethodGet, "/v1/series/"+name+"/timeseries?"+q.Encode(), "", nil, &r)
	return r.Points
}

// raw returns a sketch's stored bytes.
func (s *site) raw(tb testing.TB, name string) []byte {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, s.url+"/v1/sketches/"+name+"/raw", nil)
	if err != nil {
		tb.Fatal(err)
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.httpClient().Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || len(b) == 0 {
		tb.Fatalf("raw %s: %d, %d bytes, %v", name, resp.StatusCode, len(b), err)
	}
	return b
}

// cmsSeries creates a daily Count-Min series with top-k and adds counts
// stamped now.
func (s *site) cmsSeries(tb testing.TB, name string, counts map[string]int) {
	tb.Helper()
	s.call(tb, http.MethodPut, "/v1/series/"+name, "application/json",
		[]byte(`{"type":"cms","epsilon":0.001,"delta":0.01,"topk":10,"tz":"UTC","levels":{"day":"P400D"}}`), nil)
	type item struct {
		ID    string `json:"id"`
		Count int    `json:"count"`
	}
	var items []item
	for id, n := range counts {
		items = append(items, item{id, n})
	}
	body, _ := json.Marshal(map[string]any{"items": items})
	ts := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	s.call(tb, http.MethodPost, "/v1/series/"+name+"/add?ts="+ts, "application/json", body, nil)
}
