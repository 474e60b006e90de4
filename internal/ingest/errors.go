package ingest

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Sentinel errors. Every error returned by this package is an *Error that
// wraps exactly one of them, so errors.Is(err, ErrX) classifies it; all of
// them mean "bad request, nothing was taken".
var (
	// ErrSyntax: the body is not well-formed in its format: malformed or
	// truncated JSON, trailing data, a byte order mark, invalid UTF-8, a
	// lone UTF-16 surrogate, a control character, a malformed number
	// (leading zeros, "+1", "-"), a bad line, an octet body whose length is
	// not a multiple of 8.
	ErrSyntax = errors.New("ingest: malformed body")
	// ErrType: a well-formed value of the wrong kind: a float, boolean,
	// null, object or array where an id is expected, a string under
	// "hashes", a text id where only ints are allowed (or the reverse), a
	// non-array under "ids".
	ErrType = errors.New("ingest: wrong kind of value")
	// ErrRange: an integer outside int64, or a count that is not positive.
	ErrRange = errors.New("ingest: value out of range")
	// ErrField: an unknown, duplicate, missing or conflicting object key.
	ErrField = errors.New("ingest: bad field")
	// ErrTooMany: more ids than the caller's limit.
	ErrTooMany = errors.New("ingest: too many ids")
)

// Error describes why a body was refused and where. Its Detail is safe to
// show to the client (quoted input is cut to a few dozen bytes).
type Error struct {
	Err    error  // one of the sentinels above
	Offset int    // byte offset in the body of the offending input
	Line   int    // 1-based line number for line formats, 0 otherwise
	Path   string // the value concerned, e.g. "ids[3]" or "items[2].count"; may be empty
	Reason string // what is wrong, e.g. "1.5 is not an integer (floats are not ids)"
}

// Detail is the client-facing description, e.g.
// "ids[3] at offset 27: 1.5 is not an integer (floats are not ids)" or
// "line 4 at offset 31: 12a is not an integer"; it suits a problem+json
// detail.
func (e *Error) Detail() string {
	var b strings.Builder
	if e.Line > 0 {
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteByte(' ')
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteByte(' ')
	}
	b.WriteString("at offset ")
	b.WriteString(strconv.Itoa(e.Offset))
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// Error implements error: "ingest: " followed by Detail.
func (e *Error) Error() string { return "ingest: " + e.Detail() }

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }

func newError(sentinel error, off int, reason string) *Error {
	return &Error{Err: sentinel, Offset: off, Reason: reason}
}

// snippetMax bounds how much input an error message quotes.
const snippetMax = 40

// quote renders b (cut to snippetMax bytes) as a Go-quoted string; it is
// used for keys and other strings echoed in messages.
func quote(b []byte) string {
	if len(b) > snippetMax {
		cut := snippetMax
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		return strconv.Quote(string(b[:cut])) + "…"
	}
	return strconv.Quote(string(b))
}

// token returns the bare token starting at b[i] (up to a JSON delimiter or
// whitespace), cut to snippetMax bytes, for messages such as
// "1.5 is not an integer". Non-printable input is quoted instead.
func token(b []byte, i int) string {
	j := i
	for j < len(b) && j-i < snippetMax && !isDelim(b[j]) {
		j++
	}
	if j == i {
		if i >= len(b) {
			return "end of body"
		}
		if c := b[i]; c > ' ' && c < 0x7f {
			return "'" + string(c) + "'"
		}
		return "byte " + hexByte(b[i])
	}
	t := b[i:j]
	for _, c := range t {
		if c <= ' ' || c >= 0x7f {
			return quote(t)
		}
	}
	s := string(t)
	if j < len(b) && j-i == snippetMax && !isDelim(b[j]) {
		s += "…"
	}
	return s
}

// isDelim reports whether c ends a bare JSON token.
func isDelim(c byte) bool {
	return c == ',' || c == ']' || c == '}' || c == ':' || c == '[' || c == '{' || c == '"' || isSpace(c)
}

// describe names what starts at b[i] for "want X, found Y" messages;
// value reports whether it is the start of a JSON value (so a wrong kind,
// ErrType, rather than ErrSyntax); if not, desc is the offending token.
func describe(b []byte, i int) (desc string, value bool) {
	if i >= len(b) {
		return "end of body", false
	}
	switch c := b[i]; {
	case c == '"':
		return "a string", true
	case c == '{':
		return "an object", true
	case c == '[':
		return "an array", true
	case c == '-' || c-'0' < 10:
		return "number " + token(b, i), true
	case c == 't' || c == 'f' || c == 'n':
		if lit := literal(b, i); lit != "" {
			return lit, true
		}
	}
	return token(b, i), false
}

// found is describe without the kind.
func found(b []byte, i int) string {
	d, _ := describe(b, i)
	return d
}

// literal returns "true", "false" or "null" if b[i:] starts with one of
// them followed by a delimiter or the end.
func literal(b []byte, i int) string {
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit && (i+len(lit) == len(b) || isDelim(b[i+len(lit)])) {
			return lit
		}
	}
	return ""
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func pathIndex(field string, idx int) string {
	return field + "[" + strconv.Itoa(idx) + "]"
}

// bomError refuses a body that starts with a UTF-8 byte order mark: JSON
// forbids it and in text bodies it would become part of the first id.
func bomError(b []byte) *Error {
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		return newError(ErrSyntax, 0, "body starts with a UTF-8 byte order mark (BOM); send UTF-8 without one")
	}
	return nil
}
