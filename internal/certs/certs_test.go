package certs_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/certs"
	"github.com/sketchd/sketchd/internal/certs/certstest"
)

// serve accepts TLS connections with cfg until the test ends, completing
// each handshake and answering "ok".
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if c.(*tls.Conn).Handshake() == nil {
					io.WriteString(c, "ok")
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// dial completes a handshake (and, as a TLS 1.3 client learns of a
// refused client certificate only when it reads, one read) and returns
// the state, or the error.
func dial(addr string, cfg *tls.Config) (tls.ConnectionState, error) {
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Close()
	b := make([]byte, 2)
	if _, err := io.ReadFull(c, b); err != nil {
		return tls.ConnectionState{}, err
	}
	return c.ConnectionState(), nil
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestReloadSwapsPair: a handshake presents the loaded leaf; after new
// files and a Reload it presents the new one; a reload of a key that does
// not match, or of a half-written file, fails and the last good pair is
// still served.
func TestReloadSwapsPair(t *testing.T) {
	ca := certstest.NewCA(t, "test")
	first, second, other := ca.Server(t, "first"), ca.Server(t, "second"), ca.Server(t, "other")
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	copyFile(t, first.CertFile, cert)
	copyFile(t, first.KeyFile, key)
	f, err := certs.Load(cert, key, "")
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, f.Config())
	client := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}
	served := func() string {
		t.Helper()
		st, err := dial(addr, client)
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		return st.PeerCertificates[0].SerialNumber.String()
	}
	if got, want := served(), first.Cert.SerialNumber.String(); got != want {
		t.Fatalf("served serial %s, want the first leaf's %s", got, want)
	}

	copyFile(t, second.CertFile, cert)
	copyFile(t, second.KeyFile, key)
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	if got, want := served(), second.Cert.SerialNumber.String(); got != want {
		t.Fatalf("after Reload served serial %s, want the second leaf's %s", got, want)
	}
	if got := f.Leaf().SerialNumber.String(); got != second.Cert.SerialNumber.String() {
		t.Errorf("Leaf() serial %s, want %s", got, second.Cert.SerialNumber)
	}

	// The certificate renewed but the key is still the old one.
	copyFile(t, other.CertFile, cert)
	err = f.Reload()
	if err == nil || !strings.Contains(err.Error(), cert) || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("Reload of a mismatched pair = %v, want an error naming both files", err)
	}
	if got, want := served(), second.Cert.SerialNumber.String(); got != want {
		t.Errorf("after a failed Reload served serial %s, want the last good %s", got, want)
	}
	// A key file truncated mid-write.
	copyFile(t, other.CertFile, cert)
	if err := os.WriteFile(key, []byte("-----BEGIN PRIVATE KEY-----\nMIGH"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.Reload(); err == nil || !errors.Is(err, certs.ErrNoPEM) || !strings.Contains(err.Error(), key) {
		t.Errorf("Reload of a truncated key = %v, want ErrNoPEM naming %s", err, key)
	}
	if got, want := served(), second.Cert.SerialNumber.String(); got != want {
		t.Errorf("after a failed Reload served serial %s, want the last good %s", got, want)
	}
}

// TestConfigDefaults: TLS 1.1 is refused, 1.2 accepted, and ALPN offers
// HTTP/2 first.
func TestConfigDefaults(t *testing.T) {
	ca := certstest.NewCA(t, "test")
	p := ca.Server(t, "srv")
	f, err := certs.Load(p.CertFile, p.KeyFile, "")
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, f.Config())
	if _, err := dial(addr, &tls.Config{RootCAs: ca.Pool(), MaxVersion: tls.VersionTLS11}); err == nil {
		t.Error("a TLS 1.1 client was served")
	}
	st, err := dial(addr, &tls.Config{RootCAs: ca.Pool(), MaxVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatalf("TLS 1.2: %v", err)
	}
	if st.Version != tls.VersionTLS12 || st.NegotiatedProtocol != "h2" {
		t.Errorf("TLS 1.2 client: version %x protocol %q, want 1.2 and h2", st.Version, st.NegotiatedProtocol)
	}
	if f.MutualTLS() {
		t.Error("MutualTLS without client CAs")
	}
}

// TestMutualTLS: with client CAs a client without a certificate, or with
// one another CA signed, is refused, and one the client CA signed is
// accepted; a reload of the CA file moves acceptance to the new CA.
func TestMutualTLS(t *testing.T) {
	serverCA, clientCA, otherCA := certstest.NewCA(t, "server"), certstest.NewCA(t, "clients"), certstest.NewCA(t, "other")
	p := serverCA.Server(t, "srv")
	caFile := filepath.Join(t.TempDir(), "clients.pem")
	copyFile(t, clientCA.File, caFile)
	f, err := certs.Load(p.CertFile, p.KeyFile, caFile)
	if err != nil {
		t.Fatal(err)
	}
	if !f.MutualTLS() {
		t.Error("MutualTLS is false with client CAs")
	}
	addr := serve(t, f.Config())
	good, foreign := clientCA.Client(t, "good"), otherCA.Client(t, "foreign")
	with := func(certs ...tls.Certificate) *tls.Config {
		return &tls.Config{RootCAs: serverCA.Pool(), ServerName: "localhost", Certificates: certs}
	}
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		cfg := with()
		cfg.MaxVersion = v
		if _, err := dial(addr, cfg); err == nil {
			t.Errorf("TLS %x: a client without a certificate was served", v)
		}
		cfg = with(foreign.TLS)
		cfg.MaxVersion = v
		if _, err := dial(addr, cfg); err == nil {
			t.Errorf("TLS %x: a client certificate from another CA was accepted", v)
		}
		cfg = with(good.TLS)
		cfg.MaxVersion = v
		if _, err := dial(addr, cfg); err != nil {
			t.Errorf("TLS %x: the client CA's certificate was refused: %v", v, err)
		}
	}

	copyFile(t, otherCA.File, caFile)
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := dial(addr, with(good.TLS)); err == nil {
		t.Error("after the CA file changed, the old CA's client was still accepted")
	}
	if _, err := dial(addr, with(foreign.TLS)); err != nil {
		t.Errorf("after the CA file changed, the new CA's client was refused: %v", err)
	}
	// An empty CA file keeps the CA loaded before.
	if err := os.WriteFile(caFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.Reload(); err == nil || !strings.Contains(err.Error(), caFile) {
		t.Errorf("Reload of an empty CA file = %v, want an error naming it", err)
	}
	if _, err := dial(addr, with(foreign.TLS)); err != nil {
		t.Errorf("after a failed reload the loaded CA's client was refused: %v", err)
	}
}

// TestLoadErrors: each broken file is an error naming it.
func TestLoadErrors(t *testing.T) {
	ca := certstest.NewCA(t, "test")
	a, b := ca.Server(t, "a"), ca.Server(t, "b")
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, []byte("not PEM at all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badDER := filepath.Join(dir, "bad-der.pem")
	if err := os.WriteFile(badDER, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name               string
		cert, key, ca      string
		wantFiles          []string
		wantText, wantNoPM bool
	}{
		{"missing certificate", missing, a.KeyFile, "", []string{missing}, false, false},
		{"missing key", a.CertFile, missing, "", []string{missing}, false, false},
		{"certificate file without PEM", empty, a.KeyFile, "", []string{empty}, false, true},
		{"key given as certificate", a.KeyFile, a.KeyFile, "", []string{a.KeyFile}, false, true},
		{"certificate given as key", a.CertFile, a.CertFile, "", []string{a.CertFile}, false, true},
		{"mismatched pair", a.CertFile, b.KeyFile, "", []string{a.CertFile, b.KeyFile}, true, false},
		{"missing client CA", a.CertFile, a.KeyFile, missing, []string{missing}, false, false},
		{"client CA without PEM", a.CertFile, a.KeyFile, empty, []string{empty}, false, true},
		{"client CA not a certificate", a.CertFile, a.KeyFile, badDER, []string{badDER}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := certs.Load(tt.cert, tt.key, tt.ca)
			if err == nil || f != nil {
				t.Fatalf("Load = %v, %v, want an error", f, err)
			}
			for _, file := range tt.wantFiles {
				if !strings.Contains(err.Error(), file) {
					t.Errorf("Load error %q does not name %s", err, file)
				}
			}
			if tt.wantText && !strings.Contains(err.Error(), "does not match") {
				t.Errorf("Load error %q does not say the key does not match", err)
			}
			if errors.Is(err, certs.ErrNoPEM) != tt.wantNoPM {
				t.Errorf("Load error %q: errors.Is(ErrNoPEM) = %v, want %v", err, !tt.wantNoPM, tt.wantNoPM)
			}
		})
	}
}

// TestChainServed: a certificate file holding the leaf and an
// intermediate serves both, so a client that trusts only the root
// verifies the leaf.
func TestChainServed(t *testing.T) {
	root := certstest.NewCA(t, "root")
	inter := root.Intermediate(t, "inter")
	leaf := inter.Server(t, "leaf")
	chain := filepath.Join(t.TempDir(), "chain.pem")
	lb, _ := os.ReadFile(leaf.CertFile)
	ib, _ := os.ReadFile(inter.File)
	if err := os.WriteFile(chain, append(lb, ib...), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := certs.Load(chain, leaf.KeyFile, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := dial(serve(t, f.Config()), &tls.Config{RootCAs: root.Pool(), ServerName: "localhost"})
	if err != nil {
		t.Fatalf("a client trusting the root only: %v", err)
	}
	if len(st.PeerCertificates) != 2 || !st.PeerCertificates[1].Equal(inter.Cert) {
		t.Errorf("served %d certificates, want the leaf and the intermediate", len(st.PeerCertificates))
	}
	if _, err := st.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: root.Pool(), Intermediates: func() *x509.CertPool {
		p := x509.NewCertPool()
		p.AddCert(st.PeerCertificates[1])
		return p
	}()}); err != nil {
		t.Errorf("verify the served chain: %v", err)
	}
}

// FuzzLoad: whatever the three files hold, Load returns a configuration
// or an error naming a file, and never panics.
func FuzzLoad(f *testing.F) {
	ca := certstest.NewCA(f, "fuzz")
	p := ca.Server(f, "srv")
	certPEM, _ := os.ReadFile(p.CertFile)
	keyPEM, _ := os.ReadFile(p.KeyFile)
	caPEM, _ := os.ReadFile(ca.File)
	f.Add(certPEM, keyPEM, caPEM)
	f.Add(certPEM, keyPEM, []byte{})
	f.Add(keyPEM, certPEM, caPEM)
	f.Add(certPEM[:len(certPEM)/2], keyPEM, caPEM)
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), keyPEM, []byte("-----BEGIN CERTIFICATE-----\n\n-----END CERTIFICATE-----\n"))
	f.Add([]byte{}, []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, cert, key, clientCA []byte) {
		dir := t.TempDir()
		files := []string{filepath.Join(dir, "cert"), filepath.Join(dir, "key"), filepath.Join(dir, "ca")}
		for i, b := range [][]byte{cert, key, clientCA} {
			if err := os.WriteFile(files[i], b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		caFile := files[2]
		if len(clientCA) == 0 {
			caFile = ""
		}
		fl, err := certs.Load(files[0], files[1], caFile)
		if err != nil {
			if fl != nil {
				t.Fatal("Load returned files with an error")
			}
			if !strings.Contains(err.Error(), dir) {
				t.Fatalf("Load error %q names no file", err)
			}
			return
		}
		if fl.Leaf() == nil || fl.Config().MinVersion != tls.VersionTLS12 {
			t.Fatal("Load succeeded without a leaf or with another minimum version")
		}
	})
}

// TestReloadUnderHandshakes: while the files flip between two pairs and
// Reload runs again and again (some reloads catching a certificate of
// one pair beside the key of the other, and failing), every handshake
// completes with one of the two leaves: a handshake never sees a
// certificate with another pair's key, which would fail its signature.
func TestReloadUnderHandshakes(t *testing.T) {
	ca := certstest.NewCA(t, "test")
	pairs := []*certstest.Pair{ca.Server(t, "a"), ca.Server(t, "b")}
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	copyFile(t, pairs[0].CertFile, cert)
	copyFile(t, pairs[0].KeyFile, key)
	f, err := certs.Load(cert, key, "")
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, f.Config())
	stop := make(chan struct{})
	flipped := make(chan int)
	go func() {
		n := 0
		defer func() { flipped <- n }()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := pairs[i%2]
			for from, to := range map[string]string{p.CertFile: cert, p.KeyFile: key} {
				b, _ := os.ReadFile(from)
				os.WriteFile(to+".new", b, 0o600)
				os.Rename(to+".new", to)
			}
			if f.Reload() == nil {
				n++
			}
		}
	}()
	client := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}
	seen := map[string]int{}
	for range 200 {
		st, err := dial(addr, client)
		if err != nil {
			t.Fatalf("a handshake during reloads: %v", err)
		}
		seen[st.PeerCertificates[0].SerialNumber.String()]++
	}
	close(stop)
	if n := <-flipped; n < 2 {
		t.Errorf("only %d reloads succeeded; the test did not swap pairs", n)
	}
	for s := range seen {
		if s != pairs[0].Cert.SerialNumber.String() && s != pairs[1].Cert.SerialNumber.String() {
			t.Errorf("served serial %s, neither pair's", s)
		}
	}
}
