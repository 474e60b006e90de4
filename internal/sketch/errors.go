package sketch

import (
	"errors"
	"fmt"
)

// ErrorKind classifies an error by what the API user should do about it. The
// HTTP layer maps each kind to one status; anything unclassified is an
// internal error whose details are logged, never shown.
type ErrorKind uint8

// Error kinds.
const (
	Internal     ErrorKind = iota // a bug or an I/O failure: 500
	Invalid                       // the request is malformed or out of range: 400
	NotFound                      // the named sketch does not exist: 404
	Conflict                      // the request contradicts the stored state: 409
	TooLarge                      // a body or upload exceeds a limit: 413
	Unauthorized                  // no or unknown credentials: 401
	Forbidden                     // credentials lack the needed role: 403
	Unavailable                   // overloaded or shutting down; retry later: 503
	// Unprocessable: well-formed, but what it asks cannot be applied (an
	// add stamped past a series' late_limit or ahead of the clock): 422.
	Unprocessable
	// Damaged: a stored value failed its checksum or cannot be decoded:
	// 500, with a detail naming the sketch (never its bytes).
	Damaged
)

// String names the kind as the problem type URIs do.
func (k ErrorKind) String() string {
	switch k {
	case Invalid:
		return "invalid"
	case NotFound:
		return "not-found"
	case Conflict:
		return "conflict"
	case TooLarge:
		return "too-large"
	case Unauthorized:
		return "unauthorized"
	case Forbidden:
		return "forbidden"
	case Unavailable:
		return "unavailable"
	case Unprocessable:
		return "unprocessable"
	case Damaged:
		return "damaged"
	}
	return "internal"
}

// Error is an error the API may show: Detail is safe to send to the
// client; Err, if any, is the cause, for logs and errors.Is.
type Error struct {
	Kind   ErrorKind
	Detail string
	Err    error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Detail + ": " + e.Err.Error()
	}
	return e.Detail
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error of kind k with a formatted client-safe detail.
func Errorf(k ErrorKind, format string, args ...any) *Error {
	return &Error{Kind: k, Detail: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error of kind k whose detail is detail and whose cause
// is err.
func Wrap(k ErrorKind, err error, detail string) *Error {
	return &Error{Kind: k, Detail: detail, Err: err}
}

// KindOf returns the kind of the first *Error in err's chain, or Internal.
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}
