package ingest

import (
	"encoding/binary"
	"slices"
	"strconv"
	"unsafe"

	"github.com/sketchd/sketchd/internal/murmur"
)

// keys are the two top-level keys a body may use (exactly one of them).
type keys struct{ a, b string }

func (k keys) name(which int) string {
	if which == 0 {
		return k.a
	}
	return k.b
}

func (k keys) want() string {
	if k.a == k.b {
		return `want {"` + k.a + `":[…]}`
	}
	return `want {"` + k.a + `":[…]} or {"` + k.b + `":[…]}`
}

// AppendJSONHashes parses a JSON add body and appends one 64-bit hash per
// id to dst, in order. The body must be exactly one JSON object with
// exactly one key (case-sensitive):
//
//   - "ids": an array of ids, each a JSON integer in int64 (hashed as
//     postgresql-hll's hll_hash_bigint) or a JSON string (its UTF-8 bytes
//     after unescaping, hashed as hll_hash_text);
//   - "hashes": an array of JSON integers in int64, already hashed, used
//     as is (uint64(v)).
//
// JSON whitespace may surround any token; an empty array is fine. The
// rules the body must follow, and the sentinel each violation wraps, are in
// the package documentation. At most maxIDs ids are taken (maxIDs < 0: no
// limit); one more is ErrTooMany, detected before it is appended.
//
// On success dst is returned with the hashes appended. Nothing is
// allocated if dst has room, except one scratch buffer for the whole call
// if some string has an escape. On error dst is returned unchanged (same
// length; elements past its length may have been written) with an *Error.
func AppendJSONHashes(dst []uint64, body []byte, maxIDs int) ([]uint64, error) {
	k := keys{"ids", "hashes"}
	which, i, e := openBody(body, k)
	if e != nil {
		return dst, e
	}
	out, i, e := appendArrayHashes(dst, body, i, maxIDs, which == 0)
	if e == nil {
		e = closeBody(body, i, k, which)
	}
	if e != nil {
		return dst, e
	}
	return out, nil
}

// appendArrayHashes parses the array at b[i] ("ids" if ids, else "hashes")
// and returns the index after it.
func appendArrayHashes(dst []uint64, b []byte, i, maxIDs int, ids bool) ([]uint64, int, *Error) {
	field := "hashes"
	if ids {
		field = "ids"
	}
	if i >= len(b) || b[i] != '[' {
		return dst, i, notArray(b, i, field)
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return dst, i + 1, nil
	}
	// Unescaped strings. A stack buffer would not help: the hash function
	// lets its argument escape. So the first string with an escape in a
	// call allocates it, and later ones reuse it.
	var scratch []byte
	// Integer ids are collected as their values from dst[raw:] on and
	// hashed together a block at a time (murmur.Int64Hashes) once the array
	// ends, or once a string id comes (then raw < 0: each later run of
	// integers is hashed as a block when it ends, any other integer id as
	// it is read).
	raw := -1
	if ids {
		raw = len(dst)
	}
	for n := 0; ; n++ {
		// Runs of integers followed by a comma (any int64, JSON whitespace
		// around the comma) take a loop of their own that makes no call
		// (intRun); the element after a run takes the general path below,
		// which decides as before. After a string id, the run's values are
		// hashed as soon as it ends.
		// A string cannot start a run: string ids skip the call.
		if i < len(b) && b[i] != '"' {
			k := len(dst)
			dst, i = takeRun(dst, b, i, maxIDs-n, intRun)
			n += len(dst) - k
			if ids && raw < 0 {
				murmur.Int64Hashes(dst[k:])
			}
		}
		// Runs of clean strings take a vector loop of their own too
		// (textRun): their spans, hashed together once the run ends.
		if ids && i < len(b) && b[i] == '"' {
			if raw >= 0 {
				murmur.Int64Hashes(dst[raw:])
				raw = -1
			}
			k := len(dst)
			dst, i = takeRun(dst, b, i, maxIDs-n, textRun)
			n += len(dst) - k
			murmur.SpanHashes(dst[k:], b)
		}
		if n == maxIDs {
			return dst, i, tooMany(i, pathIndex(field, n), maxIDs)
		}
		if i >= len(b) {
			return dst, i, newError(ErrSyntax, i, "unexpected end of body, want an id")
		}
		if c := b[i]; c-'0' < 10 || c == '-' {
			v, j, ok := parseInt(b, i)
			if !ok {
				return dst, i, at(intError(b, i, field), pathIndex(field, n))
			}
			if ids && raw < 0 {
				h, _ := murmur.Int64(v, 0)
				dst = append(dst, h)
			} else {
				dst = append(dst, uint64(v))
			}
			i = j
		} else if c == '"' && ids {
			if raw >= 0 {
				murmur.Int64Hashes(dst[raw:])
				raw = -1
			}
			end, ok := scanString(b, i+1)
			var h uint64
			if ok {
				h, _ = murmur.Bytes(b[i+1:end], 0)
				i = end + 1
			} else {
				if scratch == nil {
					scratch = make([]byte, 0, 256)
				}
				var e *Error
				if scratch, i, e = decodeString(b, i+1, scratch[:0]); e != nil {
					return dst, i, at(e, pathIndex(field, n))
				}
				h, _ = murmur.Bytes(scratch, 0)
			}
			dst = append(dst, h)
		} else {
			return dst, i, at(elemError(b, i, field, n), pathIndex(field, n))
		}
		if i < len(b) && b[i] <= ' ' {
			i = skipSpace(b, i)
		}
		if i < len(b) {
			switch b[i] {
			case ',':
				i++
				if i < len(b) && b[i] <= ' ' {
					i = skipSpace(b, i)
				}
				continue
			case ']':
				if raw >= 0 {
					murmur.Int64Hashes(dst[raw:])
				}
				return dst, i + 1, nil
			}
		}
		return dst, i, afterElem(b, i, pathIndex(field, n))
	}
}

// takeRun appends to dst what run (intRun or textRun) takes from b[i]
// on, at most room ids, with room in dst for one at least, and returns
// dst and the index after the run and any whitespace after its last
// comma.
func takeRun(dst []uint64, b []byte, i, room int, run func([]uint64, []byte, int, int) ([]uint64, int)) ([]uint64, int) {
	if len(dst) == cap(dst) {
		dst = slices.Grow(dst, 1)
	}
	dst, i = run(dst, b, i, room)
	if i < len(b) && b[i] <= ' ' {
		i = skipSpace(b, i)
	}
	return dst, i
}

// runMargin is how many bytes intRun needs from an id's start: a sign, three
// words of digits and the byte after them.
const runMargin = 1 + 24 + 1

// intRun appends to dst, from b[i] on, the values (as uint64) of the JSON
// integers in int64 that are followed by a comma, with JSON whitespace
// allowed before and after the comma, and returns dst and the index after
// the last comma taken (whitespace after it may be left). It stops at the
// start of an element it does not take: a string, a float, a leading
// zero, a value out of int64, the last element of the array (no comma
// after it), anything else; and where fewer than runMargin bytes are left,
// after room ids (room < 0: no limit) or once dst is full: it never grows
// dst. What it stops at goes to the general path, which accepts or
// explains it exactly as parseInt and intError do; what it takes, parseInt
// would take with the same value.
//
// Where the processor has AVX2, the vector kernel (intsVector) takes what
// it can; intWords takes the rest.
func intRun(dst []uint64, b []byte, i, room int) ([]uint64, int) {
	return vectorRun(dst, b, i, room, jsonSeps, intWords)
}

// intWords is intRun a word at a time: what the vector kernel leaves, and
// every id where there is no kernel. Digits are read eight to a word
// (nonDigits, eight): the second word only if the first is all digits and
// a digit follows, the third only if the second is all digits too, so an
// id below 10^9 costs one word and an int64 of 17 to 19 digits three. The
// commonest id, up to eight digits and a comma, is tested first and alone
// (adding the other cases' tests to it measured 16% slower on such ids).
// Its loop makes no call and keeps its state in registers (a call in the
// loop would spill it on every id).
func intWords(dst []uint64, b []byte, i, room int) ([]uint64, int) {
	n := len(dst)
	buf := dst[:cap(dst)]
	end := len(buf)
	if room >= 0 && n+room < end {
		end = n + room
	}
	for n < end && i+runMargin <= len(b) {
		// The commonest id, up to eight digits and a comma, first: one
		// word, and no other test.
		nd, d := nonDigits(binary.LittleEndian.Uint64(b[i:]))
		if nd != 0 && b[i+nd] == ',' && (nd == 1 || b[i] != '0') {
			buf[n] = eight(d, nd)
			n++
			i += nd + 1
			continue
		}
		// Whitespace after the comma, a sign, more than eight digits, or
		// whitespace before the comma.
		j := i
		if nd == 0 {
			if isSpace(b[i]) {
				for i < len(b) && isSpace(b[i]) {
					i++
				}
				continue
			}
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
				if n3 > 3 { // more than 19 digits
					break
				}
				acc = (acc*1e8+eight(d2, 8))*pow10[n3] + eight(d3, n3)
				nd = 16 + n3
				// acc < 10^19 < 2^64; int64 takes up to 2^63-1, or
				// 2^63 negated.
				if acc > 1<<63-1+uint64(j-i) {
					break
				}
			}
		}
		k := j + nd
		if c := b[k]; c != ',' {
			if c > ' ' {
				break
			}
			for k < len(b) && isSpace(b[k]) {
				k++
			}
			if k == len(b) || b[k] != ',' {
				break
			}
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

// AppendJSONItems parses a JSON body of ids to keep (Count-Min adds,
// frequency queries) and appends one Item per id to dst, in order. The body
// must be exactly one JSON object with exactly one key (case-sensitive):
//
//   - "ids": an array of ids (JSON integers in int64 or JSON strings, as
//     for AppendJSONHashes), each with Count 1;
//   - "items": an array of objects {"id": <id>, "count": <n>}, keys in any
//     order, both required, no other key; n a JSON integer from 1 to
//     2^63-1 (0, negative numbers, floats, strings, null are refused).
//
// "hashes" is refused (ErrField): hashed values cannot be echoed back or
// kept as heavy hitters. Everything else follows the package rules; at most
// maxIDs items are taken (maxIDs < 0: no limit).
//
// The Text of the returned IDs is a copy (one allocation shared by all
// texts of the call), never an alias of body. On error dst is returned
// unchanged with an *Error.
func AppendJSONItems(dst []Item, body []byte, maxIDs int) ([]Item, error) {
	k := keys{"ids", "items"}
	which, i, e := openBody(body, k)
	if e != nil {
		return dst, e
	}
	n0 := len(dst)
	var arena []byte
	out := dst
	if which == 0 {
		out, arena, i, e = appendArrayIDs(out, body, i, maxIDs, arena)
	} else {
		out, arena, i, e = appendArrayItems(out, body, i, maxIDs, arena)
	}
	if e == nil {
		e = closeBody(body, i, k, which)
	}
	if e != nil {
		return dst, e
	}
	fixTexts(out[n0:], arena)
	return out, nil
}

// fixTexts points the Text of the text ids in items into arena. While
// parsing, a text id's Int holds the end of its bytes in arena (arena may
// move as it grows); each text starts where the previous one ended.
func fixTexts(items []Item, arena []byte) {
	// arena is never written again, so the string may share its bytes
	// (with no text bytes at all it is nil and s is "").
	s := unsafe.String(unsafe.SliceData(arena), len(arena))
	prev := 0
	for i := range items {
		id := &items[i].ID
		if id.IsText {
			end := int(id.Int)
			id.Text, id.Int = s[prev:end], 0
			prev = end
		}
	}
}

// parseID parses the id at b[i] (i < len(b)). A text id's bytes are
// appended to arena and its Int is set to the new length of arena (see
// fixTexts).
func parseID(b []byte, i int, arena []byte, field string, n int) (ID, []byte, int, *Error) {
	switch c := b[i]; {
	case c-'0' < 10 || c == '-':
		v, j, ok := parseInt(b, i)
		if !ok {
			return ID{}, arena, i, intError(b, i, "ids")
		}
		return ID{Int: v}, arena, j, nil
	case c == '"':
		end, ok := scanString(b, i+1)
		if ok {
			arena = append(arena, b[i+1:end]...)
			return ID{Int: int64(len(arena)), IsText: true}, arena, end + 1, nil
		}
		arena, j, e := decodeString(b, i+1, arena)
		if e != nil {
			return ID{}, arena, j, e
		}
		return ID{Int: int64(len(arena)), IsText: true}, arena, j, nil
	}
	return ID{}, arena, i, elemError(b, i, field, n)
}

// appendArrayIDs parses the "ids" array at b[i] into items of count 1.
func appendArrayIDs(dst []Item, b []byte, i, maxIDs int, arena []byte) ([]Item, []byte, int, *Error) {
	const field = "ids"
	if i >= len(b) || b[i] != '[' {
		return dst, arena, i, notArray(b, i, field)
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return dst, arena, i + 1, nil
	}
	for n := 0; ; n++ {
		if n == maxIDs {
			return dst, arena, i, tooMany(i, pathIndex(field, n), maxIDs)
		}
		if i >= len(b) {
			return dst, arena, i, newError(ErrSyntax, i, "unexpected end of body, want an id")
		}
		var id ID
		var e *Error
		if id, arena, i, e = parseID(b, i, arena, field, n); e != nil {
			return dst, arena, i, at(e, pathIndex(field, n))
		}
		dst = append(dst, Item{ID: id, Count: 1})
		i = skipSpace(b, i)
		if i < len(b) {
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
				continue
			case ']':
				return dst, arena, i + 1, nil
			}
		}
		return dst, arena, i, afterElem(b, i, pathIndex(field, n))
	}
}

// appendArrayItems parses the "items" array at b[i].
func appendArrayItems(dst []Item, b []byte, i, maxIDs int, arena []byte) ([]Item, []byte, int, *Error) {
	const field = "items"
	if i >= len(b) || b[i] != '[' {
		return dst, arena, i, notArray(b, i, field)
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return dst, arena, i + 1, nil
	}
	for n := 0; ; n++ {
		if n == maxIDs {
			return dst, arena, i, tooMany(i, pathIndex(field, n), maxIDs)
		}
		var it Item
		var e *Error
		if it, arena, i, e = parseItem(b, i, arena, n); e != nil {
			return dst, arena, i, e
		}
		dst = append(dst, it)
		i = skipSpace(b, i)
		if i < len(b) {
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
				continue
			case ']':
				return dst, arena, i + 1, nil
			}
		}
		return dst, arena, i, afterElem(b, i, pathIndex(field, n))
	}
}

// parseItem parses {"id":…,"count":…} at b[i], the n-th item.
func parseItem(b []byte, i int, arena []byte, n int) (Item, []byte, int, *Error) {
	path := func(sub string) string { return pathIndex("items", n) + sub }
	var it Item
	if i >= len(b) {
		return it, arena, i, at(newError(ErrSyntax, i, "unexpected end of body, want an item"), path(""))
	}
	if b[i] != '{' {
		e := elemError(b, i, "items", n)
		if e.Err == ErrType {
			e.Reason = found(b, i) + ` is not an item (want {"id":…,"count":n})`
		}
		return it, arena, i, at(e, path(""))
	}
	start := i
	i = skipSpace(b, i+1)
	haveID, haveCount := false, false
	if i < len(b) && b[i] == '}' {
		i++
		goto missing
	}
	for {
		key, j, e := itemKey(b, i)
		if e != nil {
			return it, arena, j, at(e, path(""))
		}
		switch string(key) {
		case "id":
			if haveID {
				return it, arena, i, at(newError(ErrField, i, `duplicate field "id"`), path(""))
			}
			haveID = true
			if j >= len(b) {
				return it, arena, j, at(newError(ErrSyntax, j, "unexpected end of body, want an id"), path(".id"))
			}
			if it.ID, arena, j, e = parseID(b, j, arena, "id", 0); e != nil {
				return it, arena, j, at(e, path(".id"))
			}
		case "count":
			if haveCount {
				return it, arena, i, at(newError(ErrField, i, `duplicate field "count"`), path(""))
			}
			haveCount = true
			if j, e = parseCount(b, j, &it.Count); e != nil {
				return it, arena, j, at(e, path(".count"))
			}
		default:
			return it, arena, i, at(newError(ErrField, i, "unknown field "+quote(key)+` (want "id" and "count")`), path(""))
		}
		i = skipSpace(b, j)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			i++
			break
		}
		return it, arena, i, at(newError(ErrSyntax, i, "want ',' or '}' in an item, found "+found(b, i)), path(""))
	}
missing:
	if !haveID {
		return it, arena, i, at(newError(ErrField, start, `missing field "id"`), path(""))
	}
	if !haveCount {
		return it, arena, i, at(newError(ErrField, start, `missing field "count"`), path(""))
	}
	return it, arena, i, nil
}

// itemKey is parseKey with a shortcut for the usual `"id":` and
// `"count":`.
func itemKey(b []byte, i int) ([]byte, int, *Error) {
	if rest := b[i:]; len(rest) > 8 && rest[0] == '"' {
		if string(rest[:5]) == `"id":` {
			return rest[1:3], skipSpace(b, i+5), nil
		}
		if string(rest[:8]) == `"count":` {
			return rest[1:6], skipSpace(b, i+8), nil
		}
	}
	return parseKey(b, i)
}

// parseCount parses a count (an int64 >= 1) at b[i] into *c.
func parseCount(b []byte, i int, c *int64) (int, *Error) {
	if i >= len(b) {
		return i, newError(ErrSyntax, i, "unexpected end of body, want a count")
	}
	if ch := b[i]; ch-'0' < 10 || ch == '-' {
		v, j, ok := parseInt(b, i)
		if !ok {
			return i, intError(b, i, "counts")
		}
		if v <= 0 {
			return i, newError(ErrRange, i, "count "+token(b, i)+" is not positive")
		}
		*c = v
		return j, nil
	}
	e := elemError(b, i, "count", 0)
	if e.Err == ErrType {
		e.Reason = found(b, i) + " is not a count (want a JSON integer ≥ 1)"
	}
	return i, e
}

// openBody parses `{ "key" :` at the start of b and returns which of k the
// key is and the index of its value (whitespace skipped).
func openBody(b []byte, k keys) (which, i int, e *Error) {
	if e := bomError(b); e != nil {
		return 0, 0, e
	}
	i = skipSpace(b, 0)
	if i >= len(b) {
		return 0, i, newError(ErrSyntax, i, "empty body, "+k.want())
	}
	if b[i] != '{' {
		d, value := describe(b, i)
		err := ErrType
		if !value {
			err = ErrSyntax
		}
		return 0, i, newError(err, i, k.want()+", found "+d)
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return 0, i, newError(ErrField, i, "empty object, "+k.want())
	}
	key, j, e := parseKey(b, i)
	if e != nil {
		return 0, j, e
	}
	switch string(key) {
	case k.a:
		return 0, j, nil
	case k.b:
		return 1, j, nil
	}
	return 0, i, newError(ErrField, i, "unknown field "+quote(key)+", "+k.want())
}

// closeBody parses what follows the value of the only key: `}` and
// nothing but whitespace after it.
func closeBody(b []byte, i int, k keys, which int) *Error {
	i = skipSpace(b, i)
	if i >= len(b) {
		return newError(ErrSyntax, i, "unexpected end of body, want '}'")
	}
	switch b[i] {
	case '}':
		i = skipSpace(b, i+1)
		if i < len(b) {
			return newError(ErrSyntax, i, "unexpected "+token(b, i)+" after the JSON object")
		}
		return nil
	case ',':
		i = skipSpace(b, i+1)
		key, _, e := parseKey(b, i)
		if e != nil {
			return e
		}
		switch string(key) {
		case k.name(which):
			return newError(ErrField, i, "duplicate field "+quote(key))
		case k.name(1 - which):
			return newError(ErrField, i, `both "`+k.a+`" and "`+k.b+`" given; send one`)
		}
		return newError(ErrField, i, "unknown field "+quote(key)+", "+k.want())
	}
	return newError(ErrSyntax, i, "want '}' after \""+k.name(which)+"\", found "+found(b, i))
}

// parseKey parses `"key" :` at b[i] and returns the unescaped key and the
// index of the value (whitespace skipped).
func parseKey(b []byte, i int) ([]byte, int, *Error) {
	if i >= len(b) {
		return nil, i, newError(ErrSyntax, i, "unexpected end of body, want a field name")
	}
	if b[i] != '"' {
		return nil, i, newError(ErrSyntax, i, "want a field name, found "+found(b, i))
	}
	var key []byte
	end, ok := scanString(b, i+1)
	j := end + 1
	if ok {
		key = b[i+1 : end]
	} else {
		var e *Error
		if key, j, e = decodeString(b, i+1, nil); e != nil {
			return nil, j, e
		}
	}
	j = skipSpace(b, j)
	if j >= len(b) || b[j] != ':' {
		return nil, j, newError(ErrSyntax, j, "want ':' after field "+quote(key)+", found "+found(b, j))
	}
	return key, skipSpace(b, j+1), nil
}

func at(e *Error, path string) *Error {
	if e.Path == "" {
		e.Path = path
	}
	return e
}

func tooMany(i int, path string, maxIDs int) *Error {
	return &Error{Err: ErrTooMany, Offset: i, Path: path, Reason: "more than " + strconv.Itoa(maxIDs) + " ids in one request"}
}

func notArray(b []byte, i int, field string) *Error {
	if i >= len(b) {
		return newError(ErrSyntax, i, "unexpected end of body, want an array")
	}
	d, value := describe(b, i)
	err := ErrType
	if !value {
		err = ErrSyntax
	}
	return newError(err, i, `"`+field+`" must be an array, found `+d)
}

// elemError explains why b[i] cannot start the n-th element of field.
func elemError(b []byte, i int, field string, n int) *Error {
	c := b[i]
	if c == ']' && n > 0 {
		return newError(ErrSyntax, i, "trailing comma before ']'")
	}
	d, value := describe(b, i)
	if !value {
		return newError(ErrSyntax, i, "unexpected "+d+", want an id")
	}
	if field == "hashes" {
		return newError(ErrType, i, d+" is not a hash (hashes are JSON integers)")
	}
	return newError(ErrType, i, d+" is not an id (want a JSON integer or string)")
}

// afterElem explains why b[i] cannot follow an array element.
func afterElem(b []byte, i int, path string) *Error {
	if i >= len(b) {
		return &Error{Err: ErrSyntax, Offset: i, Path: path, Reason: "unexpected end of body, want ',' or ']'"}
	}
	return &Error{Err: ErrSyntax, Offset: i, Path: path, Reason: "want ',' or ']' after the value, found " + found(b, i)}
}

// FirstKey returns the first key of a JSON object body ("" when the body
// does not start as an object with a key), without parsing further: how
// a body of {"items":…} is told from one of {"ids":…} before either parse.
func FirstKey(body []byte) string {
	if bomError(body) != nil {
		return ""
	}
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return ""
	}
	key, _, e := parseKey(body, skipSpace(body, i+1))
	if e != nil {
		return ""
	}
	return string(key)
}
