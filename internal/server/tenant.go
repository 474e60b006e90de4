package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/sketchd/sketchd/internal/sketch"
)

// Tenants. A token file line may end in "prefix=P" fields (auth.go's
// parseTokens): the token then sees and touches only the sketches and
// series whose names start with one of its prefixes. The token is
// resolved once, in require, which puts its *tenant into the request's
// context; nothing else reads tokens. Every refusal is decided from the
// request alone, before the store is read, so it is the same 403 whether
// the name exists or not:
//
//   - a route whose path names a sketch or series ({name}) is refused in
//     require, before its handler runs (allowPath);
//   - a handler that reads names from its body or query checks every one
//     of them before any work: allowNames for plain names (events, a
//     union's or fold's "into", the names a retention pattern makes),
//     allowOperands for operand lists (names, series ranges, prefixes),
//     allowPrefix for a prefix;
//   - a list is filtered to the token's prefixes (listWithin);
//   - routes that act for the whole server (/metrics with -auth-metrics)
//     refuse a limited token (wholeServer); an admin token cannot be
//     limited, so nothing reserved to admins is open to a limited token.
//
// A new route that takes names in its body calls, before it reads the
// store:
//
//	if err := s.allowOperands(r.Context(), "candidates", req.Candidates); err != nil {
//		return err
//	}
//
// (or allowNames for plain names); TestTenantWalk fails for a route of
// the spec that it has no case for, and for one that lets a limited token
// name a sketch outside its prefixes.

// maxTenantPrefixes bounds the prefixes of one token line: a list route
// asks the store once for each.
const maxTenantPrefixes = 64

// tenant is the set of name prefixes a limited token may name. A nil
// *tenant is an unlimited token (or an open server): it allows every name.
type tenant struct {
	// prefixes are sorted, and none starts with another (a longer one
	// adds nothing), so the names they cover are disjoint ranges in name
	// order.
	prefixes []string
}

// parseTenant reads a token line's fields after the role: each
// "prefix=P", P the start of a sketch or series name. No field gives nil,
// an unlimited token. The error says which field is wrong; it shows a
// prefix's value, never a field that is not one (it could be a token, as
// when two lines run together).
func parseTenant(fields []string) (*tenant, error) {
	if len(fields) == 0 {
		return nil, nil
	}
	if len(fields) > maxTenantPrefixes {
		return nil, fmt.Errorf("%d prefixes; a token may have at most %d", len(fields), maxTenantPrefixes)
	}
	var ps []string
	for i, f := range fields {
		p, ok := strings.CutPrefix(f, "prefix=")
		switch {
		case !ok:
			return nil, fmt.Errorf("field %d is not prefix=P: after the role a line takes only prefix= fields", i+3)
		case p == "":
			return nil, fmt.Errorf("field %d: prefix= is empty; give the start of the names the token may use, like prefix=team-a:", i+3)
		case sketch.ValidateName(p) != nil:
			return nil, fmt.Errorf("field %d: prefix=%s is not the start of a name (letters, digits and . _ : -, starting with a letter or digit, at most 200 bytes)", i+3, strconv.Quote(clip(p)))
		}
		ps = append(ps, p)
	}
	slices.Sort(ps)
	out := ps[:0]
	for _, p := range ps {
		// Sorted, a prefix comes right before the names it covers.
		if len(out) > 0 && strings.HasPrefix(p, out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return &tenant{prefixes: out}, nil
}

// tenantOf returns the request's tenant, nil for an unlimited token.
func tenantOf(ctx context.Context) *tenant {
	t, _ := ctx.Value(keyTenant).(*tenant)
	return t
}

// allows reports whether t may name name.
func (t *tenant) allows(name string) bool {
	if t == nil {
		return true
	}
	for _, p := range t.prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// String lists t's prefixes for messages: "team-a:" or "shared:".
func (t *tenant) String() string {
	q := make([]string, len(t.prefixes))
	for i, p := range t.prefixes {
		q[i] = strconv.Quote(p)
	}
	return strings.Join(q, " or ")
}

// scope returns the scope of the idempotency keys of token: for an
// unlimited token half of its SHA-256 digest in hex, as before tokens
// could be limited; for a limited one the same over the token and its
// prefixes, so a token whose prefixes a reload changed cannot replay an
// answer given under the old ones.
func (t *tenant) scope(token string) string {
	if t == nil {
		return tokenScope(token)
	}
	d := sha256.Sum256([]byte(token + "\x00prefix=" + strings.Join(t.prefixes, "\x00prefix=")))
	return hex.EncodeToString(d[:16])
}

// outside is the refusal of a name outside t.
func (t *tenant) outside(field, name string) error {
	return sketch.Errorf(sketch.Forbidden, "%s %s is outside this token's names: it may use only names starting with %s", field, strconv.Quote(clip(name)), t)
}

// allowPath refuses a request whose path names ({name}) a sketch or
// series outside its token's prefixes; a name that is not valid is left
// for the handler to refuse as it does for every token.
func allowPath(ctx context.Context, r *http.Request) error {
	t := tenantOf(ctx)
	if t == nil || chi.URLParam(r, "name") == "" {
		return nil
	}
	name, err := nameParam(r)
	if err != nil {
		return nil
	}
	if !t.allows(name) {
		return t.outside("the path's name", name)
	}
	return nil
}

// allowNames refuses, before any work, a request naming a sketch or
// series (one of names, the request's field) outside its token's
// prefixes. It reads nothing: the answer is the same whether the name
// exists or not.
func (s *Server) allowNames(ctx context.Context, field string, names ...string) error {
	t := tenantOf(ctx)
	if t == nil {
		return nil
	}
	for _, n := range names {
		if !t.allows(n) {
			s.metrics.AuthFailed("forbidden")
			return t.outside(field, n)
		}
	}
	return nil
}

// allowPrefix refuses a union over a prefix that is not inside the
// token's prefixes (starting with one of them). A wider prefix is refused
// rather than narrowed, so one request never means different sets under
// different tokens without saying so; lists, which are searches, are
// filtered instead (listWithin).
func (s *Server) allowPrefix(ctx context.Context, field, prefix string) error {
	t := tenantOf(ctx)
	if t == nil || t.allows(prefix) {
		return nil
	}
	s.metrics.AuthFailed("forbidden")
	return sketch.Errorf(sketch.Forbidden, "%s %s reaches outside this token's names: give a prefix starting with %s", field, strconv.Quote(clip(prefix)), t)
}

// allowOperands checks every operand of a request (field names them in
// the answer): each sketch name and series range must be inside the
// token's prefixes, and each prefix inside one of them (allowPrefix).
func (s *Server) allowOperands(ctx context.Context, field string, ops []operand) error {
	if tenantOf(ctx) == nil {
		return nil
	}
	for i, o := range ops {
		var err error
		switch {
		case o.Prefix != nil:
			err = s.allowPrefix(ctx, fmt.Sprintf("%s[%d].prefix", field, i), *o.Prefix)
		case o.Series != "":
			err = s.allowNames(ctx, fmt.Sprintf("%s[%d].series", field, i), o.Series)
		default:
			err = s.allowNames(ctx, fmt.Sprintf("%s[%d]", field, i), o.Name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// wholeServer refuses a limited token on a route that answers for the
// whole server (/metrics with -auth-metrics: it names every sketch with
// the metric flag).
func (s *Server) wholeServer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t := tenantOf(r.Context()); t != nil {
			s.metrics.AuthFailed("forbidden")
			s.writeProblem(w, r, sketch.Errorf(sketch.Forbidden, "%s answers for the whole server; this token may use only names starting with %s", r.URL.Path, t))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// listWithin lists, through list (a store's listing: up to limit names
// starting with prefix and sorting after after, whether more follow, and
// any it skipped), only what the request's token may see: for a limited
// token, the names under prefix that also start with one of its
// prefixes, in name order, a page of at most limit. A prefix that shares
// no name with the token's lists nothing.
func listWithin[T any](ctx context.Context, prefix, after string, limit int, list func(prefix, after string, limit int) ([]T, bool, []string, error)) ([]T, bool, []string, error) {
	t := tenantOf(ctx)
	if t == nil {
		return list(prefix, after, limit)
	}
	// The ranges to list: prefix itself if it lies inside one of the
	// token's, else the token's prefixes that start with it. Either way
	// disjoint and in name order (tenant.prefixes).
	var ranges []string
	for _, p := range t.prefixes {
		if strings.HasPrefix(prefix, p) {
			ranges = []string{prefix}
			break
		}
		if strings.HasPrefix(p, prefix) {
			ranges = append(ranges, p)
		}
	}
	var out []T
	var skipped []string
	for i, p := range ranges {
		if len(out) == limit {
			// The page is full: more follow if any later range holds
			// a name after the cursor.
			for _, q := range ranges[i:] {
				more, _, _, err := list(q, after, 1)
				if err != nil {
					return nil, false, nil, err
				}
				if len(more) > 0 {
					return out, true, skipped, nil
				}
			}
			return out, false, skipped, nil
		}
		page, more, sk, err := list(p, after, limit-len(out))
		if err != nil {
			return nil, false, nil, err
		}
		out, skipped = append(out, page...), append(skipped, sk...)
		if more {
			return out, true, skipped, nil
		}
	}
	return out, false, skipped, nil
}
