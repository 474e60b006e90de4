package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"github.com/sketchd/sketchd/internal/sketch"
)

// role is what a token may do; write includes read.
type role int

const (
	roleNone role = iota
	roleRead
	roleWrite
)

// Auth holds the bearer tokens from a token file: one "token role" pair a
// line (role read or write), blank lines and lines starting with # ignored.
// Tokens are compared in constant time against every known token; only
// their SHA-256 digests are kept in memory.
type Auth struct {
	path   string
	tokens atomic.Pointer[[]tokenEntry]
}

type tokenEntry struct {
	digest [32]byte
	role   role
}

// LoadAuth reads the token file at path. A malformed line is an error
// naming the file and line, never echoing the token.
func LoadAuth(path string) (*Auth, error) {
	a := &Auth{path: path}
	if err := a.Reload(); err != nil {
		return nil, err
	}
	return a, nil
}

// Reload re-reads the token file; on error the previous tokens stay.
func (a *Auth) Reload() error {
	data, err := os.ReadFile(a.path)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	tokens, err := parseTokens(data)
	if err != nil {
		return fmt.Errorf("auth: %s: %w", a.path, err)
	}
	a.tokens.Store(&tokens)
	return nil
}

func parseTokens(data []byte) ([]tokenEntry, error) {
	var out []tokenEntry
	seen := map[[32]byte]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 2 {
			return nil, fmt.Errorf("line %d: want \"token role\", got %d fields", line, len(fields))
		}
		var r role
		switch fields[1] {
		case "read":
			r = roleRead
		case "write":
			r = roleWrite
		default:
			return nil, fmt.Errorf("line %d: role must be read or write", line)
		}
		if len(fields[0]) < 16 {
			return nil, fmt.Errorf("line %d: token shorter than 16 characters", line)
		}
		d := sha256.Sum256([]byte(fields[0]))
		if seen[d] {
			return nil, fmt.Errorf("line %d: token repeated", line)
		}
		seen[d] = true
		out = append(out, tokenEntry{digest: d, role: r})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no tokens")
	}
	return out, nil
}

// roleOf returns the token's role, comparing against every entry without
// an early exit.
func (a *Auth) roleOf(token string) role {
	d := sha256.Sum256([]byte(token))
	found := roleNone
	for _, e := range *a.tokens.Load() {
		if subtle.ConstantTimeCompare(d[:], e.digest[:]) == 1 {
			found = e.role
		}
	}
	return found
}

// require lets a request through if auth is off or its bearer token has
// at least the role need: 401 without a known token, 403 with a read
// token on a write.
func (s *Server) require(need role) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s.auth == nil {
				next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyRole, roleWrite)))
				return
			}
			token, ok := bearerToken(r.Header.Get("Authorization"))
			if !ok {
				s.metrics.AuthFailed("missing")
				s.writeProblem(w, r, sketch.Errorf(sketch.Unauthorized, "send Authorization: Bearer <token>"))
				return
			}
			got := s.auth.roleOf(token)
			switch {
			case got == roleNone:
				s.metrics.AuthFailed("unknown")
				s.writeProblem(w, r, sketch.Errorf(sketch.Unauthorized, "the bearer token is not known"))
				return
			case got < need:
				s.metrics.AuthFailed("forbidden")
				s.writeProblem(w, r, sketch.Errorf(sketch.Forbidden, "this route needs a write token"))
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyRole, got)))
		})
	}
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

// requireWrite checks, inside a read route, an action that writes.
func requireWrite(ctx context.Context) error {
	if r, _ := ctx.Value(keyRole).(role); r < roleWrite {
		return sketch.Errorf(sketch.Forbidden, "storing a result needs a write token")
	}
	return nil
}
