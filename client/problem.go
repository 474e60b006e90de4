package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"
)

// ProblemTypePrefix starts every problem type sketchd sends; the rest is
// the kind (see the Kind constants).
const ProblemTypePrefix = "urn:sketchd:problem:"

// Problem kinds, the part of Problem.Type after ProblemTypePrefix.
const (
	KindInvalid              = "invalid"
	KindNotFound             = "not-found"
	KindConflict             = "conflict"
	KindTooLarge             = "too-large"
	KindUnsupportedMediaType = "unsupported-media-type"
	KindMethodNotAllowed     = "method-not-allowed"
	KindUnauthorized         = "unauthorized"
	KindForbidden            = "forbidden"
	KindUnavailable          = "unavailable"
	KindUnprocessable        = "unprocessable"
	KindNotImplemented       = "not-implemented"
	// KindDamaged is a 500 whose detail names a stored sketch or series
	// whose bytes failed their checksum; retrying does not help.
	KindDamaged  = "damaged"
	KindInternal = "internal"
	// KindKeyInFlight (409): a request with the call's Idempotency-Key
	// is still running; the client retries it.
	KindKeyInFlight = "idempotency-key-in-flight"
	// KindKeyReused (422): the Idempotency-Key was sent before with
	// another request.
	KindKeyReused = "idempotency-key-reused"
)

// Problem is an error answer: sketchd's application/problem+json
// (RFC 9457), or any other non-success answer (from a proxy, say), which
// gets Status, a Title from the status and the start of the body as
// Detail. Use errors.As to get it, or the Is… helpers.
type Problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Instance  string `json:"instance,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	// RetryAfter is the answer's Retry-After (503s carry one), 0 if none.
	RetryAfter time.Duration `json:"-"`
	// Method and Path are the request's.
	Method string `json:"-"`
	Path   string `json:"-"`
}

// Error reads like "sketchd: PUT /v1/sketches/a: 409 conflict: <detail>
// (request id …)".
func (p *Problem) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sketchd: %s %s: %d", p.Method, p.Path, p.Status)
	if k := p.Kind(); k != "" {
		b.WriteString(" " + k)
	}
	if p.Detail != "" {
		b.WriteString(": " + p.Detail)
	}
	if p.RequestID != "" {
		b.WriteString(" (request id " + p.RequestID + ")")
	}
	return b.String()
}

// Kind is the problem's kind (KindNotFound…), "" if the answer was not a
// sketchd problem.
func (p *Problem) Kind() string {
	k, ok := strings.CutPrefix(p.Type, ProblemTypePrefix)
	if !ok {
		return ""
	}
	return k
}

// maxDetail bounds the part of a non-problem body kept as Detail.
const maxDetail = 200

// problemFrom turns an unexpected answer into a *Problem.
func problemFrom(r *response, method, path string) *Problem {
	p := &Problem{}
	mt, _, _ := mime.ParseMediaType(r.header.Get("Content-Type"))
	if mt != "application/problem+json" || json.Unmarshal(r.body, p) != nil || p.Status != r.status {
		d := string(r.body)
		if len(d) > maxDetail {
			d = d[:maxDetail] + "…"
		}
		p = &Problem{Title: http.StatusText(r.status), Status: r.status, Detail: strings.TrimSpace(d)}
	}
	if p.RequestID == "" {
		p.RequestID = r.header.Get("X-Request-ID")
	}
	p.RetryAfter = retryAfter(r.header.Get("Retry-After"), time.Now())
	p.Method, p.Path = method, path
	return p
}

// StatusOf returns the HTTP status of the Problem in err's chain, 0 if
// there is none.
func StatusOf(err error) int {
	var p *Problem
	if errors.As(err, &p) {
		return p.Status
	}
	return 0
}

// IsInvalid reports a 400: the request was malformed or out of range;
// nothing changed.
func IsInvalid(err error) bool { return StatusOf(err) == http.StatusBadRequest }

// IsUnauthorized reports a 401: no token, or an unknown one.
func IsUnauthorized(err error) bool { return StatusOf(err) == http.StatusUnauthorized }

// IsForbidden reports a 403: a read token used for a write, or a name
// outside the prefixes the token is limited to.
func IsForbidden(err error) bool { return StatusOf(err) == http.StatusForbidden }

// IsUnprocessable reports a 422: a series add stamped past its late_limit
// or more than 5 minutes ahead of the server's clock; nothing changed.
func IsUnprocessable(err error) bool { return StatusOf(err) == http.StatusUnprocessableEntity }

// IsNotFound reports a 404: no such sketch (or route).
func IsNotFound(err error) bool { return StatusOf(err) == http.StatusNotFound }

// IsConflict reports a 409: the sketch exists with other parameters, or
// is of the other type for this call.
func IsConflict(err error) bool { return StatusOf(err) == http.StatusConflict }

// IsTooLarge reports a 413: the body is over the server's byte or id
// limit; send smaller batches.
func IsTooLarge(err error) bool { return StatusOf(err) == http.StatusRequestEntityTooLarge }

// IsNotImplemented reports a 501: the server's storage backend does not
// keep series.
func IsNotImplemented(err error) bool { return StatusOf(err) == http.StatusNotImplemented }

// IsUnavailable reports a 503 that outlasted the retries (or a call that
// is not retried): the server is overloaded or shutting down.
func IsUnavailable(err error) bool { return StatusOf(err) == http.StatusServiceUnavailable }
