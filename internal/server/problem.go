package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/sketchd/sketchd/internal/sketch"
)

// problem is an RFC 9457 problem detail. Type is a stable URN per kind of
// problem; Detail is safe for the client; internal errors get a generic
// detail and are logged in full with the request id.
type problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Instance  string `json:"instance,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

// httpError is a refusal decided by the HTTP layer itself (media type,
// method, route): statuses with no domain kind.
type httpError struct {
	status int
	detail string
}

func (e *httpError) Error() string { return e.detail }

func errUnsupportedMedia(detail string) error {
	return &httpError{http.StatusUnsupportedMediaType, detail}
}

// statusOf maps an error to its HTTP status and problem type.
func statusOf(err error) (int, string) {
	var ke *keyError
	if errors.As(err, &ke) {
		return ke.status, ke.kind
	}
	var he *httpError
	if errors.As(err, &he) {
		switch he.status {
		case http.StatusUnsupportedMediaType:
			return he.status, "unsupported-media-type"
		case http.StatusMethodNotAllowed:
			return he.status, "method-not-allowed"
		case http.StatusNotFound:
			return he.status, "not-found"
		case http.StatusNotImplemented:
			return he.status, "not-implemented"
		case http.StatusRequestTimeout:
			return he.status, "request-timeout"
		}
		return he.status, "invalid"
	}
	switch k := sketch.KindOf(err); k {
	case sketch.Invalid:
		return http.StatusBadRequest, k.String()
	case sketch.NotFound:
		return http.StatusNotFound, k.String()
	case sketch.Conflict:
		return http.StatusConflict, k.String()
	case sketch.TooLarge:
		return http.StatusRequestEntityTooLarge, k.String()
	case sketch.Unauthorized:
		return http.StatusUnauthorized, k.String()
	case sketch.Forbidden:
		return http.StatusForbidden, k.String()
	case sketch.Unavailable:
		return http.StatusServiceUnavailable, k.String()
	case sketch.Unprocessable:
		return http.StatusUnprocessableEntity, k.String()
	case sketch.Damaged:
		return http.StatusInternalServerError, k.String()
	}
	return http.StatusInternalServerError, "internal"
}

// statusClientClosed is the non-standard status for a request whose
// client went away before the answer.
const statusClientClosed = 499

func statusText(status int) string {
	if status == statusClientClosed {
		return "Client Closed Request"
	}
	return http.StatusText(status)
}

// problemTypePrefix prefixes every problem type; the rest names the kind
// (invalid, not-found, conflict, too-large, unsupported-media-type,
// method-not-allowed, request-timeout, unauthorized, forbidden,
// unavailable, damaged, internal, idempotency-key-in-flight,
// idempotency-key-reused).
const problemTypePrefix = "urn:sketchd:problem:"

// writeProblem renders err as application/problem+json. Only internal
// errors are logged, here, once.
func (s *Server) writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	status, kind := statusOf(err)
	missed := missedDeadline(r.Context())
	switch {
	case missed != nil && status != http.StatusRequestTimeout && kind != sketch.Damaged.String() && (status >= 500 || errors.Is(err, context.DeadlineExceeded)):
		// The request's own deadline passed: whatever the store said
		// (a cancelled query, a commit cut short), the client is told
		// that, and to retry. Damage stays a 500 that names it.
		status, kind = http.StatusServiceUnavailable, sketch.Unavailable.String()
		err = sketch.Wrap(sketch.Unavailable, err, missed.detail())
	case r.Context().Err() != nil && status != http.StatusRequestTimeout && missed == nil:
		// The client went away: nobody reads this answer, and it is
		// not the server's failure. 499 is the code proxies use for it.
		// A body read past its deadline also ends the context, but that
		// client is still there to read the 408.
		status, kind = statusClientClosed, "client-closed"
	}
	p := problem{
		Type:      problemTypePrefix + kind,
		Title:     statusText(status),
		Status:    status,
		Instance:  r.URL.Path,
		RequestID: requestIDOf(r.Context()),
	}
	var he *httpError
	var ke *keyError
	var se *sketch.Error
	switch {
	case errors.As(err, &he):
		p.Detail = he.detail
	case errors.As(err, &se) && se.Kind == sketch.Damaged:
		// Names the damaged sketch, never its bytes; logged like any 500.
		p.Detail = se.Detail
		s.log.ErrorContext(r.Context(), "request failed: stored data is damaged", "request_id", p.RequestID, "method", r.Method, "path", r.URL.Path, "err", err)
	case errors.As(err, &ke):
		p.Detail = ke.detail
	case status == http.StatusInternalServerError:
		p.Detail = "an internal error occurred; the request id identifies it in the server's logs"
		s.log.ErrorContext(r.Context(), "request failed", "request_id", p.RequestID, "method", r.Method, "path", r.URL.Path, "err", err)
	case errors.As(err, &se):
		p.Detail = se.Detail
	default:
		p.Detail = err.Error()
	}
	switch status {
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="sketchd"`)
	case http.StatusRequestTimeout:
		// The rest of the body is still on its way: the connection
		// cannot carry another request.
		w.Header().Set("Connection", "close")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(p)
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// writeJSON renders v with status: encoded to a buffer first, so a
// failure to encode is a clean 500 rather than a half-written body.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	w.Write(buf.Bytes()) // the status is sent: a failed write is the client's loss
	return nil
}
