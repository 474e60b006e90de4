// Package certstest makes throwaway certificate authorities and the
// certificates they sign, written to PEM files in a test's temporary
// directory, so that TLS tests run against a CA the test made rather than
// a key checked into the repository.
package certstest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority of one test.
type CA struct {
	Cert *x509.Certificate
	key  crypto.Signer
	// File is its certificate in PEM, for -tls-client-ca or a client's
	// CA file.
	File string
	dir  string
}

// Pair is a certificate a CA signed, with its key.
type Pair struct {
	Cert *x509.Certificate
	// CertFile and KeyFile hold them in PEM (the key in PKCS #8).
	CertFile, KeyFile string
	// TLS is the pair for a crypto/tls configuration.
	TLS tls.Certificate
}

// NewCA makes a CA named name, its files in a new temporary directory.
func NewCA(tb testing.TB, name string) *CA {
	tb.Helper()
	return newCA(tb, name, nil)
}

// Intermediate makes a CA that ca signs: a certificate file holding a
// leaf it signed and File lets a client that trusts only ca verify the
// leaf.
func (ca *CA) Intermediate(tb testing.TB, name string) *CA {
	tb.Helper()
	return newCA(tb, name, ca)
}

func newCA(tb testing.TB, name string, parent *CA) *CA {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(tb),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	signer, signerKey := tmpl, crypto.Signer(key)
	if parent != nil {
		signer, signerKey = parent.Cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, key.Public(), signerKey)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	ca := &CA{Cert: cert, key: key, dir: tb.TempDir()}
	ca.File = writePEM(tb, ca.dir, name+"-ca.pem", "CERTIFICATE", der)
	return ca
}

// Pool is a pool holding only this CA, for a client's RootCAs or a
// server's ClientCAs.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Server signs a server certificate for localhost, 127.0.0.1 and ::1,
// valid from an hour ago for a day; name names its files.
func (ca *CA) Server(tb testing.TB, name string) *Pair {
	tb.Helper()
	return ca.issue(tb, name, x509.ExtKeyUsageServerAuth, time.Now().Add(24*time.Hour))
}

// ServerUntil is Server with the certificate's NotAfter at notAfter (in
// the past for an expired one; NotBefore is a day before it).
func (ca *CA) ServerUntil(tb testing.TB, name string, notAfter time.Time) *Pair {
	tb.Helper()
	return ca.issue(tb, name, x509.ExtKeyUsageServerAuth, notAfter)
}

// Client signs a client certificate with common name name.
func (ca *CA) Client(tb testing.TB, name string) *Pair {
	tb.Helper()
	return ca.issue(tb, name, x509.ExtKeyUsageClientAuth, time.Now().Add(24*time.Hour))
}

func (ca *CA) issue(tb testing.TB, name string, usage x509.ExtKeyUsage, notAfter time.Time) *Pair {
	tb.Helper()
	key := newKey(tb)
	notBefore := time.Now().Add(-time.Hour)
	if nb := notAfter.Add(-24 * time.Hour); nb.Before(notBefore) {
		notBefore = nb
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	p := &Pair{
		Cert:     cert,
		CertFile: writePEM(tb, ca.dir, name+".pem", "CERTIFICATE", der),
		KeyFile:  writePEM(tb, ca.dir, name+"-key.pem", "PRIVATE KEY", keyDER),
		TLS:      tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert},
	}
	return p
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

func serial(tb testing.TB) *big.Int {
	tb.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		tb.Fatal(err)
	}
	return n.Add(n, big.NewInt(1))
}

func writePEM(tb testing.TB, dir, name, typ string, der []byte) string {
	tb.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}
