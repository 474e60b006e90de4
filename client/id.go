package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// ID is a user id as sketchd hashes it: an integer (hashed like
// PostgreSQL's hll_hash_bigint) or a text (hashed like hll_hash_text of its
// UTF-8 bytes). Int(42) and Text("42") are different ids. The zero ID is
// Int(0).
type ID struct {
	text  string
	n     int64
	isStr bool
}

// Int is the integer id n.
func Int(n int64) ID { return ID{n: n} }

// Text is the text id s. It must be valid UTF-8 (JSON cannot carry
// anything else); calls refuse one that is not, before sending.
func Text(s string) ID { return ID{text: s, isStr: true} }

// IsText reports whether id is a text id.
func (id ID) IsText() bool { return id.isStr }

// Int returns an integer id's value (0 for a text id).
func (id ID) Int() int64 { return id.n }

// Text returns a text id's value ("" for an integer id).
func (id ID) Text() string { return id.text }

// String is the integer in decimal, or the text quoted.
func (id ID) String() string {
	if id.isStr {
		return strconv.Quote(id.text)
	}
	return strconv.FormatInt(id.n, 10)
}

// MarshalJSON writes a JSON integer or a JSON string.
func (id ID) MarshalJSON() ([]byte, error) {
	return appendID(nil, id)
}

// UnmarshalJSON reads a JSON integer (within int64) or a JSON string;
// anything else (a fraction, an exponent, null, true) is an error.
func (id *ID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*id = Text(s)
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("client: id %.40s is neither an int64 nor a string", b)
	}
	*id = Int(n)
	return nil
}

// appendID appends id as JSON.
func appendID(dst []byte, id ID) ([]byte, error) {
	if id.isStr {
		return appendJSONString(dst, id.text)
	}
	return strconv.AppendInt(dst, id.n, 10), nil
}

// errNotUTF8 refuses a text id JSON cannot carry: encoding/json would
// replace the bad bytes with U+FFFD and so silently add another id.
func errNotUTF8(s string) error {
	return fmt.Errorf("client: text id %q is not valid UTF-8", s)
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, everything else as is.
func appendJSONString(dst []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return dst, errNotUTF8(s)
	}
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), nil
}
