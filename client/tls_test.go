package client_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sketchd/sketchd/client"
	"github.com/sketchd/sketchd/internal/certs"
	"github.com/sketchd/sketchd/internal/certs/certstest"
	"github.com/sketchd/sketchd/internal/server"
)

// tlsSketchd serves the real service over the real store with sketchd's
// own TLS configuration (certs, as -tls-cert, -tls-key and, if clientCA
// is not "", -tls-client-ca set it up), and returns its https URL and the
// protocol of the last request it served.
func tlsSketchd(t *testing.T, pair *certstest.Pair, clientCA string) (string, *atomic.Value) {
	t.Helper()
	files, err := certs.Load(pair.CertFile, pair.KeyFile, clientCA)
	if err != nil {
		t.Fatal(err)
	}
	h, closeStore, err := openSketchd(filepath.Join(t.TempDir(), "tls.db"), server.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var proto atomic.Value
	hs := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			proto.Store(r.Proto)
			h.ServeHTTP(w, r)
		}),
		TLSConfig:         files.Config(),
		ReadHeaderTimeout: 10 * time.Second,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.ServeTLS(ln, "", "")
	t.Cleanup(func() {
		hs.Close()
		if err := closeStore(); err != nil {
			t.Error(err)
		}
	})
	return "https://" + ln.Addr().String(), &proto
}

// TestTLSWithCAFile: a client given the test's CA file adds to and reads
// a sketch of a server whose certificate that CA signed, over HTTP/2; a
// client without it refuses the server's certificate.
func TestTLSWithCAFile(t *testing.T) {
	t.Parallel()
	ca := certstest.NewCA(t, "client-test")
	url, proto := tlsSketchd(t, ca.Server(t, "server"), "")
	ctx := t.Context()

	c, err := client.New(url, client.WithCAFile(ca.File))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Create(ctx, "tls:users", client.CreateRequest{}); err != nil {
		t.Fatalf("Create over TLS: %v", err)
	}
	if _, err := c.AddInts(ctx, "tls:users", []int64{1, 2, 3, 3}); err != nil {
		t.Fatalf("AddInts over TLS: %v", err)
	}
	s, err := c.Describe(ctx, "tls:users")
	if err != nil {
		t.Fatalf("Describe over TLS: %v", err)
	}
	if s.Cardinality != 3 {
		t.Errorf("Cardinality = %v, want 3", s.Cardinality)
	}
	if got := proto.Load(); got != "HTTP/2.0" {
		t.Errorf("the server saw %v, want HTTP/2.0", got)
	}

	untrusting, err := client.New(url, client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	if err != nil {
		t.Fatal(err)
	}
	var unknown x509.UnknownAuthorityError
	if err := untrusting.Health(ctx); !errors.As(err, &unknown) {
		t.Errorf("Health without the CA = %v, want an unknown authority error", err)
	}
}

// TestTLSClientCertificate: against a server that requires client
// certificates, WithTLSConfig carries one and the calls succeed; without
// it the handshake fails.
func TestTLSClientCertificate(t *testing.T) {
	t.Parallel()
	serverCA, clientCA := certstest.NewCA(t, "server-ca"), certstest.NewCA(t, "client-ca")
	url, proto := tlsSketchd(t, serverCA.Server(t, "server"), clientCA.File)
	ctx := t.Context()
	cert := clientCA.Client(t, "backend")

	c, err := client.New(url, client.WithTLSConfig(&tls.Config{RootCAs: serverCA.Pool(), Certificates: []tls.Certificate{cert.TLS}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Create(ctx, "mtls:users", client.CreateRequest{}); err != nil {
		t.Fatalf("Create with a client certificate: %v", err)
	}
	if got := proto.Load(); got != "HTTP/2.0" {
		t.Errorf("the server saw %v, want HTTP/2.0", got)
	}
	// WithCAFile over WithTLSConfig keeps the certificate, replaces the roots.
	c, err = client.New(url, client.WithTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert.TLS}}), client.WithCAFile(serverCA.File))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Describe(ctx, "mtls:users"); err != nil {
		t.Errorf("Describe with WithTLSConfig and WithCAFile: %v", err)
	}

	anonymous, err := client.New(url, client.WithCAFile(serverCA.File), client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anonymous.Describe(ctx, "mtls:users"); err == nil {
		t.Error("a client without a certificate was served")
	}
}

// TestTLSOptionErrors: a CA file that is missing or holds no
// certificate, and a TLS option beside WithHTTPClient, are errors of New.
func TestTLSOptionErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing, notPEM := filepath.Join(dir, "missing.pem"), filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		opts []client.Option
		want string
	}{
		{"missing CA file", []client.Option{client.WithCAFile(missing)}, missing},
		{"CA file without PEM", []client.Option{client.WithCAFile(notPEM)}, notPEM},
		{"CA file and an http.Client", []client.Option{client.WithCAFile(notPEM), client.WithHTTPClient(http.DefaultClient)}, "WithHTTPClient"},
		{"TLS config and an http.Client", []client.Option{client.WithHTTPClient(http.DefaultClient), client.WithTLSConfig(&tls.Config{})}, "WithHTTPClient"},
	} {
		if c, err := client.New("https://localhost:8443", tt.opts...); err == nil || c != nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New = %v, %v, want an error mentioning %q", tt.name, c, err, tt.want)
		}
	}
}
