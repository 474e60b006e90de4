package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"github.com/sketchd/sketchd/internal/sketch"
)

// role is what a token may do; each role includes the ones before it.
type role int

const (
	roleNone role = iota
	roleRead
	roleWrite
	// roleAdmin may also choose which sketches /metrics exports (the
	// "metric" flag), so label cardinality stays the operator's.
	roleAdmin
)

// Auth holds the bearer tokens from a token file: one "token role" pair a
// line (role read, write or admin), optionally followed by "prefix=P"
// fields that limit a read or write token to the sketches and series
// whose names start with one of them (tenant.go); blank lines and lines
// starting with # ignored. Tokens are compared in constant time against
// every known token; only their SHA-256 digests are kept in memory.
//
// Auth fails closed: a file emptied and reloaded makes every token
// unknown, and a reload that cannot read or parse the file drops every
// token until a later reload succeeds, so emptying, deleting or breaking
// the file never leaves a revoked token working.
type Auth struct {
	path   string
	tokens atomic.Pointer[[]tokenEntry]
	// broken is why no token is valid after a failed reload ("" if the
	// last load succeeded); it is logged, never sent to clients.
	broken atomic.Pointer[string]
}

type tokenEntry struct {
	digest [32]byte
	role   role
	// tenant is the names the token is limited to; nil: every name.
	tenant *tenant
}

// LoadAuth reads the token file at path. A missing or unreadable file, a
// malformed line, or no token at all is an error naming the file (and
// line), never echoing a token: at startup an empty file is a mistake. (A
// file emptied later and reloaded makes every token invalid; see Reload.)
func LoadAuth(path string) (*Auth, error) {
	a := &Auth{path: path}
	n, err := a.Reload()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("auth: %s: no tokens", path)
	}
	return a, nil
}

// Reload re-reads the token file and returns how many tokens it holds. On
// error no token is valid until a later Reload succeeds.
func (a *Auth) Reload() (int, error) {
	tokens, err := a.read()
	if err != nil {
		none := []tokenEntry{}
		a.tokens.Store(&none)
		msg := err.Error()
		a.broken.Store(&msg)
		return 0, err
	}
	a.tokens.Store(&tokens)
	a.broken.Store(nil)
	return len(tokens), nil
}

func (a *Auth) read() ([]tokenEntry, error) {
	data, err := os.ReadFile(a.path)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	tokens, err := parseTokens(data)
	if err != nil {
		return nil, fmt.Errorf("auth: %s: %w", a.path, err)
	}
	return tokens, nil
}

func parseTokens(data []byte) ([]tokenEntry, error) {
	out := []tokenEntry{}
	seen := map[[32]byte]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) < 2 {
			return nil, fmt.Errorf("line %d: want \"token role\" (then any prefix=P), got %d fields", line, len(fields))
		}
		var r role
		switch fields[1] {
		case "read":
			r = roleRead
		case "write":
			r = roleWrite
		case "admin":
			r = roleAdmin
		default:
			return nil, fmt.Errorf("line %d: role must be read or write (or admin, which may also set \"metric\": true)", line)
		}
		if len(fields[0]) < 16 {
			return nil, fmt.Errorf("line %d: token shorter than 16 characters", line)
		}
		t, err := parseTenant(fields[2:])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if t != nil && r == roleAdmin {
			return nil, fmt.Errorf("line %d: an admin token acts for the whole server and cannot be limited to prefixes; give the line the role write (or read)", line)
		}
		d := sha256.Sum256([]byte(fields[0]))
		if seen[d] {
			return nil, fmt.Errorf("line %d: token repeated", line)
		}
		seen[d] = true
		out = append(out, tokenEntry{digest: d, role: r, tenant: t})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// roleOf returns the token's role, comparing against every entry without
// an early exit.
func (a *Auth) roleOf(token string) role { return a.entryOf(token).role }

// entryOf returns the token's entry (role roleNone if it is not known),
// comparing against every entry without an early exit.
func (a *Auth) entryOf(token string) tokenEntry {
	d := sha256.Sum256([]byte(token))
	found := tokenEntry{role: roleNone}
	for _, e := range *a.tokens.Load() {
		if subtle.ConstantTimeCompare(d[:], e.digest[:]) == 1 {
			found = e
		}
	}
	return found
}

// require lets a request through if auth is off or its bearer token has
// at least the role need: 401 without a known token, 403 with a read
// token on a write. A token limited to prefixes is resolved here, once:
// its tenant goes into the request's context for the handlers' checks
// (tenant.go), and a route whose path names a sketch or series ({name})
// outside it is refused before its handler runs.
func (s *Server) require(need role) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s.auth == nil {
				// An open service: whoever reaches it is the operator.
				next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyRole, roleAdmin)))
				return
			}
			token, ok := bearerToken(r.Header.Get("Authorization"))
			if !ok {
				s.metrics.AuthFailed("missing")
				s.writeProblem(w, r, sketch.Errorf(sketch.Unauthorized, "send Authorization: Bearer <token>"))
				return
			}
			entry := s.auth.entryOf(token)
			got := entry.role
			switch {
			case got == roleNone:
				s.metrics.AuthFailed("unknown")
				if s.auth.broken.Load() != nil {
					s.writeProblem(w, r, sketch.Errorf(sketch.Unauthorized, "no token is valid: the token file could not be read at the last reload (the server log says why)"))
					return
				}
				s.writeProblem(w, r, sketch.Errorf(sketch.Unauthorized, "the bearer token is not known"))
				return
			case got < need:
				s.metrics.AuthFailed("forbidden")
				s.writeProblem(w, r, sketch.Errorf(sketch.Forbidden, "this route needs a write token"))
				return
			}
			ctx := context.WithValue(r.Context(), keyRole, got)
			ctx = withScope(ctx, entry.tenant.scope(token))
			if entry.tenant != nil {
				ctx = context.WithValue(ctx, keyTenant, entry.tenant)
				if err := allowPath(ctx, r); err != nil {
					s.metrics.AuthFailed("forbidden")
					s.writeProblem(w, r, err)
					return
				}
			}
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// tokenScope is the scope of a token's idempotency keys: half of its
// SHA-256 digest, in hex, so the token itself is never stored.
func tokenScope(token string) string {
	d := sha256.Sum256([]byte(token))
	return hex.EncodeToString(d[:16])
}

// bearerToken returns the token of an Authorization header using the
// Bearer scheme, whose name is case-insensitive (RFC 9110 §11.1).
func bearerToken(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimLeft(token, " ")
	return token, token != ""
}

// requireAdmin checks an action reserved to admin tokens.
func requireAdmin(ctx context.Context, what string) error {
	if r, _ := ctx.Value(keyRole).(role); r < roleAdmin {
		return sketch.Errorf(sketch.Forbidden, "%s needs an admin token", what)
	}
	return nil
}

// requireWrite checks, inside a read route, an action that writes.
func requireWrite(ctx context.Context) error {
	if r, _ := ctx.Value(keyRole).(role); r < roleWrite {
		return sketch.Errorf(sketch.Forbidden, "storing a result needs a write token")
	}
	return nil
}
