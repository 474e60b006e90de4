package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/certs/certstest"
)

// tlsDialer returns a function making an HTTPS client of an address,
// trusting only roots, presenting certs, and offering HTTP/2 (h1only: only
// HTTP/1.1).
func tlsDialer(roots *x509.CertPool, h1only bool, certs ...tls.Certificate) func(addr string) *client {
	return func(addr string) *client {
		tr := &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: roots, Certificates: certs},
			ForceAttemptHTTP2: !h1only,
		}
		if h1only {
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		}
		return &client{base: "https://" + addr, http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
	}
}

// servedSerial completes a fresh handshake with addr and returns the
// serial number of the leaf the server presented.
func servedSerial(t *testing.T, addr string, roots *x509.CertPool) *big.Int {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots})
	if err != nil {
		t.Fatalf("TLS handshake with %s: %v", addr, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber
}

// TestTLS: with -tls-cert and -tls-key the API is HTTPS: a sketch added
// and read back over it, HTTP/2 negotiated by ALPN (and HTTP/1.1 for a
// client that offers only that), /metrics on the same port with the
// certificate's expiry; a plain HTTP request to the port is answered 400
// by the TLS layer and never reaches the API.
func TestTLS(t *testing.T) {
	t.Parallel() // it asserts no timing
	ca := certstest.NewCA(t, "sketchd-test")
	pair := ca.Server(t, "server")
	c := startInProcessOn(t, filepath.Join(t.TempDir(), "tls.db"), tlsDialer(ca.Pool(), false), "-tls-cert", pair.CertFile, "-tls-key", pair.KeyFile)

	c.must(t, http.StatusCreated, "PUT", "/v1/sketches/tls:visitors", "", nil, nil)
	c.must(t, http.StatusOK, "POST", "/v1/sketches/tls:visitors/add", "text/plain", []byte("1\n2\n3\n2\n"), nil)
	var info struct {
		Cardinality float64 `json:"cardinality"`
	}
	c.must(t, http.StatusOK, "GET", "/v1/sketches/tls:visitors", "", nil, &info)
	if info.Cardinality != 3 {
		t.Errorf("cardinality over HTTPS = %v, want 3", info.Cardinality)
	}

	req, _ := http.NewRequest("GET", c.base+"/v1/sketches/tls:visitors", nil)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.TLS == nil || resp.TLS.NegotiatedProtocol != "h2" {
		t.Errorf("protocol %s, ALPN %q, want HTTP/2 by h2", resp.Proto, resp.TLS.NegotiatedProtocol)
	}
	if resp.TLS.Version < tls.VersionTLS12 {
		t.Errorf("TLS version %x, want 1.2 or later", resp.TLS.Version)
	}
	h1 := tlsDialer(ca.Pool(), true)(strings.TrimPrefix(c.base, "https://"))
	req, _ = http.NewRequest("GET", c.base+"/healthz", nil)
	if resp, err = h1.http.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 1 {
		t.Errorf("an HTTP/1.1 client: %d over %s, want 200 over HTTP/1.1", resp.StatusCode, resp.Proto)
	}

	const expiry = "sketchd_tls_certificate_expiry_timestamp_seconds"
	if v := metricValue(t, c, expiry); int64(v) != pair.Cert.NotAfter.Unix() {
		t.Errorf("%s = %v, want the leaf's NotAfter %d", expiry, v, pair.Cert.NotAfter.Unix())
	}

	// Plain HTTP to the TLS port: a write and a read, neither served.
	plain := newClient(strings.TrimPrefix(c.base, "https://"))
	for _, r := range []struct{ method, path string }{{"PUT", "/v1/sketches/tls:plain"}, {"GET", "/v1/sketches/tls:visitors"}} {
		status, body, err := plain.do(r.method, r.path, "", nil)
		if err != nil {
			t.Fatalf("plain HTTP %s %s: %v", r.method, r.path, err)
		}
		if status != http.StatusBadRequest || !strings.Contains(string(body), "HTTP request to an HTTPS server") || strings.Contains(string(body), "cardinality") {
			t.Errorf("plain HTTP %s %s = %d %q, want 400 from the TLS layer", r.method, r.path, status, body)
		}
	}
	c.must(t, http.StatusNotFound, "GET", "/v1/sketches/tls:plain", "", nil, nil)
}

// TestMutualTLS: with -tls-client-ca a client without a certificate, or
// with one another CA signed, cannot reach even /healthz; one signed by
// the client CA adds and reads a sketch.
func TestMutualTLS(t *testing.T) {
	t.Parallel() // it asserts no timing
	serverCA, clientCA, otherCA := certstest.NewCA(t, "server-ca"), certstest.NewCA(t, "client-ca"), certstest.NewCA(t, "other-ca")
	pair := serverCA.Server(t, "server")
	good, foreign := clientCA.Client(t, "product-backend"), otherCA.Client(t, "stranger")
	c := startInProcessOn(t, filepath.Join(t.TempDir(), "mtls.db"), tlsDialer(serverCA.Pool(), false, good.TLS),
		"-tls-cert", pair.CertFile, "-tls-key", pair.KeyFile, "-tls-client-ca", clientCA.File)
	addr := strings.TrimPrefix(c.base, "https://")
	for name, dial := range map[string]func(string) *client{
		"no certificate":             tlsDialer(serverCA.Pool(), false),
		"no certificate, HTTP/1.1":   tlsDialer(serverCA.Pool(), true),
		"another CA's certificate":   tlsDialer(serverCA.Pool(), false, foreign.TLS),
		"the server's own leaf":      tlsDialer(serverCA.Pool(), true, pair.TLS),
		"another CA's, HTTP/1.1 too": tlsDialer(serverCA.Pool(), true, foreign.TLS),
	} {
		for _, path := range []string{"/healthz", "/v1/sketches"} {
			if status, body, err := dial(addr).do("GET", path, "", nil); err == nil {
				t.Errorf("%s: GET %s = %d %s, want the handshake refused", name, path, status, body)
			}
		}
	}
	c.must(t, http.StatusCreated, "PUT", "/v1/sketches/mtls:users", "", nil, nil)
	c.must(t, http.StatusOK, "POST", "/v1/sketches/mtls:users/add", "text/plain", []byte("7\n8\n"), nil)
	var info struct {
		Cardinality float64 `json:"cardinality"`
	}
	c.must(t, http.StatusOK, "GET", "/v1/sketches/mtls:users", "", nil, &info)
	if info.Cardinality != 2 {
		t.Errorf("cardinality over mutual TLS = %v, want 2", info.Cardinality)
	}
	// The configuration a mutual-TLS handshake gets offers HTTP/2 too.
	req, _ := http.NewRequest("GET", c.base+"/healthz", nil)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Errorf("mutual TLS answered over %s, want HTTP/2", resp.Proto)
	}
}

// TestTLSReloadOnHangup runs the binary: SIGHUP after the certificate
// files were replaced serves the new leaf (a fresh handshake sees its
// serial) without dropping the listener; a SIGHUP with a key that does
// not match keeps the leaf served before and logs why.
func TestTLSReloadOnHangup(t *testing.T) {
	t.Parallel() // it asserts no timing
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	ca := certstest.NewCA(t, "sketchd-test")
	first, second, third := ca.Server(t, "first"), ca.Server(t, "second"), ca.Server(t, "third")
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	install := func(cert, key string) {
		t.Helper()
		for from, to := range map[string]string{cert: certFile, key: keyFile} {
			b, err := os.ReadFile(from)
			if err != nil {
				t.Fatal(err)
			}
			// Write a new file and rename it, as a renewal job does.
			if err := os.WriteFile(to+".new", b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(to+".new", to); err != nil {
				t.Fatal(err)
			}
		}
	}
	install(first.CertFile, first.KeyFile)
	p := startProcessOn(t, 30*time.Second, filepath.Join(dir, "hup.db"), tlsDialer(ca.Pool(), false), "-tls-cert", certFile, "-tls-key", keyFile, "-log-level", "info")
	c := tlsDialer(ca.Pool(), false)(p.addr)
	c.must(t, http.StatusCreated, "PUT", "/v1/sketches/hup", "", nil, nil)
	if got := servedSerial(t, p.addr, ca.Pool()); got.Cmp(first.Cert.SerialNumber) != 0 {
		t.Fatalf("served serial %v, want the first leaf's %v", got, first.Cert.SerialNumber)
	}

	install(second.CertFile, second.KeyFile)
	p.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for servedSerial(t, p.addr, ca.Pool()).Cmp(second.Cert.SerialNumber) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the first leaf is still served 10s after SIGHUP:\n%s", p.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.waitLog(t, "reloaded the TLS certificate")
	// The connection pooled before the reload, and new ones, still work.
	c.must(t, http.StatusOK, "GET", "/v1/sketches/hup", "", nil, nil)

	// A renewed certificate installed without its new key.
	install(third.CertFile, second.KeyFile)
	p.cmd.Process.Signal(syscall.SIGHUP)
	p.waitLog(t, "reloading the TLS certificate failed")
	if got := servedSerial(t, p.addr, ca.Pool()); got.Cmp(second.Cert.SerialNumber) != 0 {
		t.Errorf("after a failed reload the served serial is %v, want the second leaf's %v", got, second.Cert.SerialNumber)
	}
	line := logLine(p.log(), "reloading the TLS certificate failed")
	if !strings.Contains(line, certFile) || !strings.Contains(line, keyFile) || !strings.Contains(line, `"level":"ERROR"`) {
		t.Errorf("the failed reload's log line %q should be an error naming %s and %s", line, certFile, keyFile)
	}
	dial := tlsDialer(ca.Pool(), false)(p.addr)
	dial.must(t, http.StatusOK, "GET", "/v1/sketches/hup", "", nil, nil)
	if err := p.terminate(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.log())
	}
}

// TestTLSStartupErrors: a TLS flag without its partner, or a file that
// cannot serve, stops sketchd before it creates its data file, with an
// error naming the missing flag or the file.
func TestTLSStartupErrors(t *testing.T) {
	ca := certstest.NewCA(t, "sketchd-test")
	a, b := ca.Server(t, "a"), ca.Server(t, "b")
	dir := t.TempDir()
	missing := filepath.Join(dir, "absent.pem")
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want []string
	}{
		{"cert without key", []string{"-tls-cert", a.CertFile}, nil, []string{"-tls-key is missing"}},
		{"key without cert", []string{"-tls-key", a.KeyFile}, nil, []string{"-tls-cert is missing"}},
		{"cert from the environment without key", nil, map[string]string{"SKETCHD_TLS_CERT": a.CertFile}, []string{"-tls-key is missing"}},
		{"client CA alone", []string{"-tls-client-ca", ca.File}, nil, []string{"-tls-client-ca needs -tls-cert and -tls-key"}},
		{"mismatched pair", []string{"-tls-cert", a.CertFile, "-tls-key", b.KeyFile}, nil, []string{a.CertFile, b.KeyFile, "does not match"}},
		{"mismatched pair from the environment", nil, map[string]string{"SKETCHD_TLS_CERT": b.CertFile, "SKETCHD_TLS_KEY": a.KeyFile}, []string{b.CertFile, a.KeyFile, "does not match"}},
		{"missing certificate", []string{"-tls-cert", missing, "-tls-key", a.KeyFile}, nil, []string{missing, "no such file"}},
		{"missing key", []string{"-tls-cert", a.CertFile, "-tls-key", missing}, nil, []string{missing, "no such file"}},
		{"key given as the certificate", []string{"-tls-cert", a.KeyFile, "-tls-key", a.KeyFile}, nil, []string{a.KeyFile, "no PEM block"}},
		{"client CA not PEM", []string{"-tls-cert", a.CertFile, "-tls-key", a.KeyFile, "-tls-client-ca", notPEM}, nil, []string{notPEM, "no PEM block"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".db")
			args := append([]string{"-addr", "127.0.0.1:0", "-data", data}, tt.args...)
			// A configuration that starts would serve until the context
			// ends: give it a moment, then the missing error is the failure.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := run(ctx, args, env(tt.env), io.Discard, io.Discard)
			if err == nil {
				t.Fatalf("run(%v) started and served", args)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("run(%v) = %v, want an error mentioning %q", args, err, w)
				}
			}
			for _, p := range []string{data, data + ".wal"} {
				if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s exists after a TLS configuration error (stat: %v)", p, err)
				}
			}
		})
	}
}

// TestTLSDocWalkthrough runs the OpenSSL block of docs/tls.md as written
// and serves with what it makes: mutual TLS with its CA, a client with
// its client certificate adds a sketch, one without is refused.
func TestTLSDocWalkthrough(t *testing.T) {
	t.Parallel() // it asserts no timing
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("no openssl on PATH")
	}
	doc, err := os.ReadFile("../../docs/tls.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "## A CA for trying it out")
	if !ok {
		t.Fatal(`docs/tls.md has no "A CA for trying it out" section`)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/tls.md: no sh block in the walk-through")
	}
	dir := t.TempDir()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", block)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docs/tls.md's block: %v\n%s", err, out)
	}
	file := func(name string) string { return filepath.Join(dir, name) }
	pemCA, err := os.ReadFile(file("ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pemCA) {
		t.Fatal("ca.pem holds no certificate")
	}
	clientPair, err := tls.LoadX509KeyPair(file("client.crt"), file("client.key"))
	if err != nil {
		t.Fatal(err)
	}
	c := startInProcessOn(t, filepath.Join(dir, "walk.db"), tlsDialer(roots, false, clientPair),
		"-tls-cert", file("tls.crt"), "-tls-key", file("tls.key"), "-tls-client-ca", file("ca.pem"))
	c.must(t, http.StatusCreated, "PUT", "/v1/sketches/walkthrough", "", nil, nil)
	if status, _, err := tlsDialer(roots, false)(strings.TrimPrefix(c.base, "https://")).do("GET", "/readyz", "", nil); err == nil {
		t.Errorf("a client without the walk-through's client certificate got %d", status)
	}
}

// TestTLSSlowBodyOverHTTP2: a body that stops arriving gets 408 at
// -body-timeout on an HTTP/2 stream too (the deadline is the stream's,
// set through http.ResponseController), and the add changes nothing.
func TestTLSSlowBodyOverHTTP2(t *testing.T) {
	ca := certstest.NewCA(t, "sketchd-test")
	pair := ca.Server(t, "server")
	c := startInProcessOn(t, filepath.Join(t.TempDir(), "slow.db"), tlsDialer(ca.Pool(), false),
		"-tls-cert", pair.CertFile, "-tls-key", pair.KeyFile, "-body-timeout", "1s")
	c.must(t, http.StatusCreated, "PUT", "/v1/sketches/slow", "", nil, nil)

	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte("1\n2\n"))
	req, _ := http.NewRequest("POST", c.base+"/v1/sketches/slow/add", pr)
	req.Header.Set("Content-Type", "text/plain")
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatalf("a stalled body: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("a stalled body over %s = %d %s, want 408 over HTTP/2", resp.Proto, resp.StatusCode, body)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the 408 came after %v, want about -body-timeout (1s)", d)
	}
	var info struct {
		Cardinality float64 `json:"cardinality"`
	}
	c.must(t, http.StatusOK, "GET", "/v1/sketches/slow", "", nil, &info)
	if info.Cardinality != 0 {
		t.Errorf("the stalled add changed the sketch: cardinality %v, want 0", info.Cardinality)
	}
}

// TestTLSProbeNotLogged: a TCP probe that connects and closes (a
// tcpSocket probe, a load balancer's check) leaves no warning in the log,
// while a plain HTTP request to the TLS port does.
func TestTLSProbeNotLogged(t *testing.T) {
	t.Parallel() // it asserts no timing
	ca := certstest.NewCA(t, "sketchd-test")
	pair := ca.Server(t, "server")
	addr := freeAddr(t)
	var logs syncWriter
	logs.w = new(bytes.Buffer)
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan struct{})
	var runErr error
	go func() {
		defer close(exited)
		runErr = run(ctx, []string{"-addr", addr, "-data", filepath.Join(t.TempDir(), "probe.db"), "-log-format", "text", "-drain-delay", "0s",
			"-tls-cert", pair.CertFile, "-tls-key", pair.KeyFile}, func(string) string { return "" }, io.Discard, &logs)
	}()
	defer func() {
		cancel()
		<-exited
		if runErr != nil {
			t.Error(runErr)
		}
	}()
	waitReadyOn(t, tlsDialer(ca.Pool(), false)(addr), exited, 30*time.Second)
	for range 3 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
	time.Sleep(300 * time.Millisecond)
	if status, _, err := newClient(addr).do("GET", "/healthz", "", nil); err != nil || status != http.StatusBadRequest {
		t.Fatalf("plain HTTP = %d, %v, want 400", status, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "client sent an HTTP request to an HTTPS server") {
		if time.Now().After(deadline) {
			t.Fatalf("no warning about the plain HTTP request:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "TLS handshake error") && !strings.Contains(l, "HTTP request to an HTTPS server") {
			t.Errorf("a probe was logged: %s", l)
		}
		if strings.Contains(l, "HTTP request to an HTTPS server") && !strings.Contains(l, "level=WARN") {
			t.Errorf("the plain HTTP request was logged below warn: %s", l)
		}
	}
}

// TestTLSExpiredWarned: an expired certificate starts (so a renewal and
// SIGHUP can fix it without a restart) with a warning that says so.
func TestTLSExpiredWarned(t *testing.T) {
	ca := certstest.NewCA(t, "sketchd-test")
	pair := ca.ServerUntil(t, "expired", time.Now().Add(-time.Hour))
	var logs syncWriter
	logs.w = new(bytes.Buffer)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-data", filepath.Join(t.TempDir(), "expired.db"), "-log-format", "text", "-drain-delay", "0s",
			"-tls-cert", pair.CertFile, "-tls-key", pair.KeyFile}, func(string) string { return "" }, io.Discard, &logs)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "msg=listening") {
		if time.Now().After(deadline) {
			t.Fatalf("no listening line after 30s:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if line := logLine(logs.String(), "the TLS certificate has expired"); !strings.Contains(line, "level=WARN") || !strings.Contains(line, "serial="+pair.Cert.SerialNumber.String()) {
		t.Errorf("no warning naming the expired certificate:\n%s", logs.String())
	}
}

// TestBackupOverTLS: sketchd backup saves the archive of a server that
// serves HTTPS with a private CA given by -ca-file, and refuses the
// server without it (an unknown authority), leaving no file.
func TestBackupOverTLS(t *testing.T) {
	t.Parallel() // it asserts no timing
	ca := certstest.NewCA(t, "sketchd-test")
	pair := ca.Server(t, "server")
	dir := t.TempDir()
	c := startInProcessOn(t, filepath.Join(dir, "tls.db"), tlsDialer(ca.Pool(), false), "-tls-cert", pair.CertFile, "-tls-key", pair.KeyFile)
	c.must(t, http.StatusCreated, "PUT", "/v1/sketches/tls:visitors", "", nil, nil)
	c.must(t, http.StatusOK, "POST", "/v1/sketches/tls:visitors/add", "text/plain", []byte("1\n2\n3\n"), nil)
	file := filepath.Join(dir, "b.skar")
	if _, err := runCmd("backup", "-url", c.base, "-o", file); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("backup over TLS without -ca-file: %v, want a certificate error", err)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused backup left %s (%v)", file, err)
	}
	if out, err := runCmd("backup", "-url", c.base, "-ca-file", ca.File, "-o", file); err != nil || !strings.Contains(out, "1 sketches") {
		t.Fatalf("backup over TLS with -ca-file: %q, %v", out, err)
	}
}
