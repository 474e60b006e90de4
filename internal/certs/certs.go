// Package certs serves TLS from PEM files that can be reread while the
// server runs: a certificate chain and its private key, and optionally
// the certificate authorities whose client certificates are accepted
// (mutual TLS).
//
// A reload (Files.Reload, on SIGHUP in sketchd) reads and checks every
// file before it replaces anything, and then swaps them in one atomic
// store: a handshake sees either the old files or the new ones, never a
// certificate with another key. A reload that fails keeps what was
// loaded before, unlike the token file, which fails closed: a revoked
// token must stop working at once, while a certificate that still
// matches its key is still the server's identity, and refusing every
// handshake because a renewal job wrote half a file would take the
// service down.
//
// The configuration allows TLS 1.2 and 1.3 (Go's cipher suites for 1.2,
// all with forward secrecy) and offers HTTP/2 and HTTP/1.1 by ALPN.
package certs

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
)

// NextProtos are the application protocols offered by ALPN, in order of
// preference: HTTP/2, then HTTP/1.1.
var NextProtos = []string{"h2", "http/1.1"}

// ErrNoPEM is wrapped by an error about a file without the PEM block it
// should hold.
var ErrNoPEM = errors.New("no PEM block of the expected type")

// Files is a TLS server configuration read from PEM files. It is safe
// for concurrent use: handshakes read the current files while Reload
// replaces them.
type Files struct {
	certFile, keyFile, clientCAFile string
	base                            *tls.Config
	cur                             atomic.Pointer[loaded]
}

// loaded is one generation of the files.
type loaded struct {
	pair *tls.Certificate
	// conf is the configuration of a handshake with mutual TLS: the
	// base with this generation's client CAs (nil without -client CAs).
	conf *tls.Config
}

// Load reads the certificate chain in certFile (PEM CERTIFICATE blocks,
// the leaf first) and its private key in keyFile (a PEM PKCS #1, PKCS #8
// or SEC 1 block), and, unless clientCAFile is "", the certificate
// authorities whose client certificates are accepted, in which case
// every client must present a certificate one of them signed. An error
// names the file that is missing, unreadable, without PEM data or not a
// certificate, or both files when the key does not match the
// certificate.
func Load(certFile, keyFile, clientCAFile string) (*Files, error) {
	f := &Files{certFile: certFile, keyFile: keyFile, clientCAFile: clientCAFile}
	f.base = &tls.Config{
		MinVersion:     tls.VersionTLS12,
		NextProtos:     NextProtos,
		GetCertificate: f.certificate,
	}
	if clientCAFile != "" {
		f.base.ClientAuth = tls.RequireAndVerifyClientCert
		f.base.GetConfigForClient = f.configForClient
	}
	if err := f.Reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// Config returns the server configuration: TLS 1.2 at least, HTTP/2 and
// HTTP/1.1 by ALPN, the current certificate on every handshake, and, with
// client CAs, a client certificate required and verified against them.
// It is the same configuration after a Reload, which changes what it
// serves.
func (f *Files) Config() *tls.Config { return f.base }

// Reload rereads the files and, if every one reads and checks, serves
// them from the next handshake on. On error what was loaded before stays
// in use (nothing at all before the first successful load).
func (f *Files) Reload() error {
	pair, err := readPair(f.certFile, f.keyFile)
	if err != nil {
		return err
	}
	l := &loaded{pair: pair}
	if f.clientCAFile != "" {
		pool, err := readPool(f.clientCAFile)
		if err != nil {
			return err
		}
		l.conf = f.base.Clone()
		l.conf.GetConfigForClient = nil
		l.conf.ClientCAs = pool
	}
	f.cur.Store(l)
	return nil
}

// Leaf is the certificate the server presents now (the first of its
// chain).
func (f *Files) Leaf() *x509.Certificate { return f.cur.Load().pair.Leaf }

// MutualTLS reports whether clients must present a certificate.
func (f *Files) MutualTLS() bool { return f.clientCAFile != "" }

func (f *Files) certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return f.cur.Load().pair, nil
}

func (f *Files) configForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	return f.cur.Load().conf, nil
}

// readPair reads and checks a certificate chain and its key.
func readPair(certFile, keyFile string) (*tls.Certificate, error) {
	certPEM, err := readPEM(certFile, "certificate", func(typ string) bool { return typ == "CERTIFICATE" })
	if err != nil {
		return nil, err
	}
	keyPEM, err := readPEM(keyFile, "private key", func(typ string) bool {
		return typ == "PRIVATE KEY" || strings.HasSuffix(typ, " PRIVATE KEY")
	})
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: certificate %s and key %s: %w", certFile, keyFile, err)
	}
	if pair.Leaf == nil {
		// X509KeyPair fills Leaf (Go 1.23 on) unless GODEBUG
		// x509keypairleaf=0 turns it off.
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("certs: certificate %s: %w", certFile, err)
		}
	}
	return &pair, nil
}

// readPool reads PEM CERTIFICATE blocks into a pool; a file with none, or
// with a block that is not a certificate, is an error.
func readPool(file string) (*x509.CertPool, error) {
	data, err := readPEM(file, "client CA", func(typ string) bool { return typ == "CERTIFICATE" })
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certs: client CA %s: %w", file, err)
		}
		pool.AddCert(c)
	}
	return pool, nil
}

// readPEM reads file and checks that it holds at least one PEM block of a
// type ok accepts, so that an empty or wrong file is named as such rather
// than left to a parser's generic message.
func readPEM(file, what string, ok func(typ string) bool) ([]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("certs: %s: %w", what, err)
	}
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return nil, fmt.Errorf("certs: %s %s: %w", what, file, ErrNoPEM)
		}
		if ok(b.Type) {
			return data, nil
		}
	}
}
