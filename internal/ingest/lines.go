package ingest

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"unicode/utf8"

	"github.com/sketchd/sketchd/internal/murmur"
)

// LineFormat says how a line-oriented body (one id a line) is read. The
// rules shared by all of them:
//
//   - lines end with "\n"; a "\r" right before it (or before the end of the
//     body) is dropped, so CRLF bodies read like LF bodies;
//   - the last line may lack its "\n";
//   - empty lines (after dropping "\r"; for NDJSON also lines of JSON
//     whitespace only) are skipped: they are not ids and do not count
//     towards the limit. (So the empty text cannot be sent in text/plain;
//     send "" in JSON or NDJSON.)
//   - line numbers in errors are 1-based and count every line, empty or
//     not; a UTF-8 byte order mark at the start is refused (ErrSyntax).
type LineFormat uint8

// The line formats. The zero LineFormat is invalid.
const (
	// NDJSON (application/x-ndjson): each line is one JSON integer (int64)
	// or one JSON string, optionally surrounded by JSON whitespace; the
	// values follow the JSON rules of the package (no floats, no leading
	// zeros, valid escapes and UTF-8, ...).
	NDJSON LineFormat = iota + 1
	// NDJSONInts is NDJSON where every id must be an integer
	// (?id_type=int): a string is ErrType.
	NDJSONInts
	// NDJSONTexts is NDJSON where every id must be a string
	// (?id_type=text): a number is ErrType.
	NDJSONTexts
	// TextInts (text/plain, ?id_type=int): each line is a decimal int64
	// with the JSON integer grammar: an optional '-', no '+', no leading
	// zeros, no surrounding whitespace. Floats are ErrType, values beyond
	// int64 ErrRange, anything else ErrSyntax.
	TextInts
	// TextTexts (text/plain, ?id_type=text): each line's bytes are the id,
	// exactly as sent (no trimming, no unescaping). The line must be valid
	// UTF-8 without control characters (bytes below 0x20; "\r" is allowed
	// only as the line end): a text id with a tab or other control
	// character must be sent as JSON.
	TextTexts
)

// String names the format.
func (f LineFormat) String() string {
	switch f {
	case NDJSON:
		return "ndjson"
	case NDJSONInts:
		return "ndjson/int"
	case NDJSONTexts:
		return "ndjson/text"
	case TextInts:
		return "text/int"
	case TextTexts:
		return "text/text"
	}
	return fmt.Sprintf("LineFormat(%d)", uint8(f))
}

// AppendLineHashes parses a line-oriented body in format f (see
// LineFormat) and appends one hash per id to dst, in order: an integer
// hashed as hll_hash_bigint, a text as hll_hash_text of its UTF-8 bytes. At
// most maxIDs ids are taken (maxIDs < 0: no limit). Errors are *Error
// with Line set; on error dst is returned unchanged. An invalid f is a
// programming error and returns a plain error.
func AppendLineHashes(dst []uint64, body []byte, f LineFormat, maxIDs int) ([]uint64, error) {
	sc, err := newLineScanner(body, f)
	if err != nil {
		return dst, err
	}
	out := dst
	ints := f == NDJSON || f == NDJSONInts || f == TextInts
	for n := 0; ; n++ {
		// Runs of lines that are an integer and nothing else take a loop
		// of their own that makes no call (lineIntRun), their values hashed
		// a block at a time; any other line takes the scanner, which
		// decides as before.
		if ints {
			if len(out) == cap(out) {
				out = slices.Grow(out, 1)
			}
			k := len(out)
			out, sc.i = lineIntRun(out, body, sc.i, maxIDs-n)
			if m := len(out) - k; m > 0 {
				murmur.Int64Hashes(out[k:])
				n += m
				// Each id took one line, ended by its '\n'; the scanner's
				// line is the last token's, and needNL moves it on.
				sc.line += m
				if !sc.needNL {
					sc.line--
				}
				sc.needNL = true
			}
		}
		kind, e := sc.next()
		if e == nil && kind != tokEnd && n == maxIDs {
			e = tooMany(sc.at, "", maxIDs)
		}
		if e != nil {
			e.Line = sc.line
			return dst, e
		}
		var h uint64
		switch kind {
		case tokEnd:
			return out, nil
		case tokInt:
			h, _ = murmur.Int64(sc.v, 0)
		case tokText:
			h, _ = murmur.Bytes(body[sc.start:sc.end], 0)
		case tokDecoded:
			h, _ = murmur.Bytes(sc.buf, 0)
		}
		out = append(out, h)
	}
}

// lineIntRun is intRun for lines: it appends to dst, from b[i] (the start of
// a line) on, the values (as uint64) of the lines that are a JSON integer in
// int64 and nothing else, ended by "\n" or "\r\n" (the grammar of TextInts,
// and the commonest NDJSON line), and returns dst and the start of the line
// after the last one taken. It stops at any other line (empty, with other
// whitespace, a string, a float, a leading zero, out of int64, the last
// line of the body), leaving it to the scanner, where fewer than runMargin
// bytes are left, after room ids (room < 0: no limit) or once dst is full.
// Where the processor has AVX2 the vector kernel (intsVector) takes the
// lines ended by "\n" alone; lineWords, which makes no call, the rest.
func lineIntRun(dst []uint64, b []byte, i, room int) ([]uint64, int) {
	return vectorRun(dst, b, i, room, lineSeps, lineWords)
}

// lineWords is lineIntRun a word at a time: what the vector kernel leaves,
// and every id where there is no kernel.
func lineWords(dst []uint64, b []byte, i, room int) ([]uint64, int) {
	n := len(dst)
	buf := dst[:cap(dst)]
	end := len(buf)
	if room >= 0 && n+room < end {
		end = n + room
	}
	for n < end && i+runMargin <= len(b) {
		nd, d := nonDigits(binary.LittleEndian.Uint64(b[i:]))
		if nd != 0 && b[i+nd] == '\n' && (nd == 1 || b[i] != '0') {
			buf[n] = eight(d, nd)
			n++
			i += nd + 1
			continue
		}
		j := i
		if nd == 0 {
			if b[i] != '-' {
				break
			}
			j++
			nd, d = nonDigits(binary.LittleEndian.Uint64(b[j:]))
			if nd == 0 {
				break
			}
		}
		if nd > 1 && b[j] == '0' {
			break
		}
		acc := eight(d, nd)
		if nd == 8 && b[j+8]-'0' < 10 {
			n2, d2 := nonDigits(binary.LittleEndian.Uint64(b[j+8:]))
			if n2 < 8 {
				acc = acc*pow10[n2&7] + eight(d2, n2)
				nd = 8 + n2
			} else {
				n3, d3 := nonDigits(binary.LittleEndian.Uint64(b[j+16:]))
				if n3 > 3 {
					break
				}
				acc = (acc*1e8+eight(d2, 8))*pow10[n3] + eight(d3, n3)
				nd = 16 + n3
				if acc > 1<<63-1+uint64(j-i) {
					break
				}
			}
		}
		k := j + nd
		if b[k] != '\n' {
			if b[k] != '\r' || b[k+1] != '\n' {
				break
			}
			k++
		}
		if j > i {
			acc = -acc
		}
		buf[n] = acc
		n++
		i = k + 1
	}
	return buf[:n], i
}

// AppendLineItems is AppendLineHashes keeping the ids: it appends one Item
// of Count 1 per id. Text ids are copies sharing one allocation per call,
// as for AppendJSONItems.
func AppendLineItems(dst []Item, body []byte, f LineFormat, maxIDs int) ([]Item, error) {
	sc, err := newLineScanner(body, f)
	if err != nil {
		return dst, err
	}
	out := dst
	var arena []byte
	for n := 0; ; n++ {
		kind, e := sc.next()
		if e == nil && kind != tokEnd && n == maxIDs {
			e = tooMany(sc.at, "", maxIDs)
		}
		if e != nil {
			e.Line = sc.line
			return dst, e
		}
		var id ID
		switch kind {
		case tokEnd:
			fixTexts(out[len(dst):], arena)
			return out, nil
		case tokInt:
			id.Int = sc.v
		case tokText:
			arena = append(arena, body[sc.start:sc.end]...)
			id = ID{Int: int64(len(arena)), IsText: true}
		case tokDecoded:
			arena = append(arena, sc.buf...)
			id = ID{Int: int64(len(arena)), IsText: true}
		}
		out = append(out, Item{ID: id, Count: 1})
	}
}

// Token kinds returned by lineScanner.next.
const (
	tokEnd     = iota // no more ids
	tokInt            // the scanner's v
	tokText           // b[start:end]
	tokDecoded        // the scanner's buf (an NDJSON string with escapes)
)

// lineScanner walks a line-oriented body one id at a time. The token's
// data is left in the scanner (returning it as a struct measured slower).
type lineScanner struct {
	b      []byte
	i      int // where the next line starts
	line   int // 1-based line of the last token or error returned
	f      LineFormat
	needNL bool   // the last token's line ended with '\n': line++ on the next call
	buf    []byte // the last NDJSON string with escapes, unescaped; allocated on first use

	v          int64 // tokInt
	at         int   // offset of the last id, for errors
	start, end int   // tokText
}

// newLineScanner checks the format and the body's start and returns a
// scanner over body. An invalid f is a programming error and returns a
// plain error; a refused body an *Error. The id limit and line numbers on
// errors stay in the callers' loops: a method wrapping next per line
// measured 10-28% slower.
func newLineScanner(body []byte, f LineFormat) (lineScanner, error) {
	if f < NDJSON || f > TextTexts {
		return lineScanner{}, fmt.Errorf("ingest: invalid line format %d", uint8(f))
	}
	if e := bomError(body); e != nil {
		e.Line = 1
		return lineScanner{}, e
	}
	return lineScanner{b: body, f: f, line: 1}, nil
}

func (sc *lineScanner) next() (uint8, *Error) {
	b, i := sc.b, sc.i
	if sc.needNL {
		sc.line++
		sc.needNL = false
	}
	// Fast path: an integer alone on its line, the common int body.
	if i < len(b) && (b[i]-'0' < 10 || b[i] == '-') && sc.f != TextTexts && sc.f != NDJSONTexts {
		if v, j, ok := parseInt(b, i); ok && (j == len(b) || b[j] == '\n') {
			sc.v, sc.at = v, i
			sc.i, sc.needNL = min(j+1, len(b)), j < len(b)
			return tokInt, nil
		}
	}
	for i < len(b) {
		var kind uint8
		var e *Error
		switch sc.f {
		case TextTexts:
			kind, i, e = sc.textLine(i)
		case TextInts:
			kind, i, e = sc.intLine(i)
		default:
			kind, i, e = sc.jsonLine(i)
		}
		if e != nil {
			return tokEnd, e
		}
		// i is at the line's '\n' or the end of the body.
		nl := i < len(b)
		if nl {
			i++
		}
		if kind != tokEnd {
			sc.i, sc.needNL = i, nl
			return kind, nil
		}
		if nl {
			sc.line++
		}
	}
	sc.i = i
	return tokEnd, nil
}

// textLine reads a TextTexts line starting at b[i]; it returns the index
// of its '\n' (or len(b)); kind is tokEnd for an empty line.
func (sc *lineScanner) textLine(i int) (uint8, int, *Error) {
	b := sc.b
	start := i
	for {
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			m := ((w-0x20*ones)&^w | w) & highs
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
			break
		}
		if i >= len(b) {
			return sc.text(start, i), i, nil
		}
		c := b[i]
		switch {
		case c == '\n':
			return sc.text(start, i), i, nil
		case c == '\r' && (i+1 == len(b) || b[i+1] == '\n'):
			return sc.text(start, i), i + 1, nil
		case c < 0x20:
			return tokEnd, i, newError(ErrSyntax, i, "control character "+hexByte(c)+" in a text id (send ids with control characters as JSON)")
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return tokEnd, i, newError(ErrSyntax, i, "invalid UTF-8 in a text id")
			}
			i += n
		default:
			i++
		}
	}
}

// text records the text id b[start:end], or none if it is empty.
func (sc *lineScanner) text(start, end int) uint8 {
	if start == end {
		return tokEnd
	}
	sc.at, sc.start, sc.end = start, start, end
	return tokText
}

// intLine reads a TextInts line starting at b[i].
func (sc *lineScanner) intLine(i int) (uint8, int, *Error) {
	b := sc.b
	switch c := b[i]; {
	case c == '\n':
		return tokEnd, i, nil
	case c == '\r' && (i+1 == len(b) || b[i+1] == '\n'):
		return tokEnd, i + 1, nil
	case c-'0' < 10 || c == '-':
		v, j, ok := parseInt(b, i)
		if !ok {
			return tokEnd, i, intError(b, i, "ids")
		}
		if j < len(b) && b[j] == '\r' {
			j++
		}
		if j < len(b) && b[j] != '\n' {
			return tokEnd, j, newError(ErrSyntax, j, "want the end of the line after an integer id, found "+lineSnippet(b, j))
		}
		sc.v, sc.at = v, i
		return tokInt, j, nil
	}
	return tokEnd, i, newError(ErrSyntax, i, "want a decimal integer (id_type=int), found "+lineSnippet(b, i))
}

// jsonLine reads an NDJSON line starting at b[i].
func (sc *lineScanner) jsonLine(i int) (uint8, int, *Error) {
	b := sc.b
	i = skipLineSpace(b, i)
	if i >= len(b) || b[i] == '\n' {
		return tokEnd, i, nil
	}
	var kind uint8
	switch c := b[i]; {
	case c-'0' < 10 || c == '-':
		if sc.f == NDJSONTexts {
			return tokEnd, i, newError(ErrType, i, "number "+token(b, i)+" is not a text id (id_type=text)")
		}
		v, j, ok := parseInt(b, i)
		if !ok {
			return tokEnd, i, intError(b, i, "ids")
		}
		kind, sc.v, sc.at, i = tokInt, v, i, j
	case c == '"':
		if sc.f == NDJSONInts {
			return tokEnd, i, newError(ErrType, i, "a string is not an integer id (id_type=int)")
		}
		sc.at = i
		if end, ok := scanString(b, i+1); ok {
			kind, sc.start, sc.end, i = tokText, i+1, end, end+1
			break
		}
		if sc.buf == nil {
			sc.buf = make([]byte, 0, 256)
		}
		var e *Error
		if sc.buf, i, e = decodeString(b, i+1, sc.buf[:0]); e != nil {
			return tokEnd, i, e
		}
		kind = tokDecoded
	default:
		return tokEnd, i, elemError(b, i, "ids", 0)
	}
	i = skipLineSpace(b, i)
	if i < len(b) && b[i] != '\n' {
		return tokEnd, i, newError(ErrSyntax, i, "want the end of the line after the id, found "+found(b, i))
	}
	return kind, i, nil
}

// skipLineSpace skips JSON whitespace other than '\n'.
func skipLineSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// lineSnippet quotes the rest of the line from b[i], cut short.
func lineSnippet(b []byte, i int) string {
	j := i
	for j < len(b) && b[j] != '\n' && j-i <= snippetMax {
		j++
	}
	return quote(b[i:j])
}
