package ingest

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// scanString looks for the end of the JSON string whose content starts at
// b[i] (just after the opening quote). If the content is clean (no escape
// and no problem) it returns the index of the closing quote and ok=true,
// and the content is b[i:end]. Otherwise ok is false and the caller decodes
// the string with decodeString, which also reports any problem.
//
// Eight bytes are checked at a time for a quote, a backslash, a control
// character or a non-ASCII byte; non-ASCII sequences are validated as
// UTF-8 and skipped.
func scanString(b []byte, i int) (end int, ok bool) {
	for {
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			q := w ^ ('"' * ones)
			s := w ^ ('\\' * ones)
			m := ((q - ones) &^ q) | ((s - ones) &^ s) | ((w - 0x20*ones) &^ w) | w
			m &= highs
			if m == 0 {
				i += 8
				continue
			}
			// The lowest flagged byte is exact: borrows only move up.
			i += bits.TrailingZeros64(m) >> 3
			break
		}
		if i >= len(b) {
			return i, false
		}
		c := b[i]
		switch {
		case c == '"':
			return i, true
		case c == '\\' || c < 0x20:
			return i, false
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return i, false
			}
			i += n
		default:
			i++
		}
	}
}

// decodeString decodes the JSON string whose content starts at b[i] (just
// after the opening quote), appending its UTF-8 bytes to buf. It returns
// the index after the closing quote. It rejects control characters,
// invalid escapes, lone UTF-16 surrogates (escaped or not) and invalid
// UTF-8, always with ErrSyntax.
func decodeString(b []byte, i int, buf []byte) ([]byte, int, *Error) {
	for {
		if i >= len(b) {
			return buf, i, newError(ErrSyntax, i, "unexpected end of body in a string")
		}
		c := b[i]
		switch {
		case c == '"':
			return buf, i + 1, nil
		case c < 0x20:
			return buf, i, newError(ErrSyntax, i, "control character "+hexByte(c)+" in a string (escape it)")
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return buf, i, newError(ErrSyntax, i, "invalid UTF-8 in a string")
			}
			buf = append(buf, b[i:i+n]...)
			i += n
		case c != '\\':
			buf = append(buf, c)
			i++
		default:
			if i+1 >= len(b) {
				return buf, i, newError(ErrSyntax, i, "unexpected end of body in a string escape")
			}
			e := b[i+1]
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := hex4(b, i+2)
				if !ok {
					return buf, i, newError(ErrSyntax, i, "invalid escape "+escSnippet(b, i)+" (want \\u and 4 hex digits)")
				}
				switch {
				case r >= 0xD800 && r < 0xDC00:
					lo, ok := rune(0), false
					if i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
						lo, ok = hex4(b, i+8)
					}
					if !ok || lo < 0xDC00 || lo >= 0xE000 {
						return buf, i, newError(ErrSyntax, i, "lone UTF-16 surrogate "+string(b[i:i+6])+" in a string")
					}
					buf = utf8.AppendRune(buf, 0x10000+(r-0xD800)<<10+(lo-0xDC00))
					i += 6
				case r >= 0xDC00 && r < 0xE000:
					return buf, i, newError(ErrSyntax, i, "lone UTF-16 surrogate "+string(b[i:i+6])+" in a string")
				default:
					buf = utf8.AppendRune(buf, r)
				}
				i += 4
			default:
				return buf, i, newError(ErrSyntax, i, "invalid escape "+escSnippet(b, i)+" in a string")
			}
			i += 2
		}
	}
}

// hex4 decodes the four hex digits at b[i:i+4].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c-'0' < 10:
			r = r<<4 | rune(c-'0')
		case c|0x20-'a' < 6:
			r = r<<4 | rune(c|0x20-'a'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

func hexByte(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{'0', 'x', digits[c>>4], digits[c&15]})
}

// escSnippet shows the escape at b[i] (a backslash) as sent: at most six
// printable ASCII bytes, stopping at a quote.
func escSnippet(b []byte, i int) string {
	j := i + 1
	for j < len(b) && j-i < 6 && b[j] > ' ' && b[j] < 0x7f && b[j] != '"' && b[j] != '\\' {
		j++
	}
	if j == i+1 {
		if j < len(b) {
			return "\\ followed by byte " + hexByte(b[j])
		}
		return "\\ at the end of the body"
	}
	return string(b[i:j])
}
