package main

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// format is the request body encoding of an add.
type format int

const (
	formatJSON     format = iota // {"ids":[12,34]}
	formatJSONText               // {"ids":["u12","u34"]}
	formatNDJSON                 // 12\n34\n
	formatText                   // 12\n34\n as text/plain with ?id_type=int
	formatOctet                  // big-endian int64, 8 bytes an id
)

// textIDPrefix turns an int id into the string id of formatJSONText, so the
// text ids are as distinct as the int ids they come from.
const textIDPrefix = "u"

// parseFormat maps a -format value to a format.
func parseFormat(s string) (format, error) {
	switch s {
	case "json":
		return formatJSON, nil
	case "json-text":
		return formatJSONText, nil
	case "ndjson":
		return formatNDJSON, nil
	case "text":
		return formatText, nil
	case "octet":
		return formatOctet, nil
	}
	return 0, fmt.Errorf("-format %q: want json, json-text, ndjson, text or octet", s)
}

func (f format) String() string {
	switch f {
	case formatJSONText:
		return "json-text"
	case formatNDJSON:
		return "ndjson"
	case formatText:
		return "text"
	case formatOctet:
		return "octet"
	}
	return "json"
}

// contentType is the Content-Type header sent with a body of format f.
func (f format) contentType() string {
	switch f {
	case formatNDJSON:
		return "application/x-ndjson"
	case formatText:
		return "text/plain; charset=utf-8"
	case formatOctet:
		return "application/octet-stream"
	}
	return "application/json"
}

// query is the query string the add URL needs for format f ("" or "?…").
func (f format) query() string {
	if f == formatText {
		return "?id_type=int"
	}
	return ""
}

// maxIDBytes is an upper bound on the bytes one id takes in any format: a
// 19-digit int64 plus quotes, prefix and separator, or as a RESP bulk
// string "$19\r\n…\r\n" (26). Buffers are sized with it once so appending
// a batch never grows them.
const maxIDBytes = 26

// bodyCap returns a capacity that holds any body of n ids.
func bodyCap(n int) int { return 16 + n*maxIDBytes }

// appendBody appends the body carrying ids in format f to dst and returns
// the extended slice. Ids are non-negative. With enough capacity in dst it
// does not allocate.
func appendBody(dst []byte, f format, ids []int64) []byte {
	switch f {
	case formatJSON, formatJSONText:
		dst = append(dst, `{"ids":[`...)
		for i, id := range ids {
			if i > 0 {
				dst = append(dst, ',')
			}
			if f == formatJSONText {
				dst = append(dst, '"')
				dst = append(dst, textIDPrefix...)
				dst = appendID(dst, id)
				dst = append(dst, '"')
			} else {
				dst = appendID(dst, id)
			}
		}
		dst = append(dst, "]}"...)
	case formatNDJSON, formatText:
		for _, id := range ids {
			dst = appendID(dst, id)
			dst = append(dst, '\n')
		}
	case formatOctet:
		for _, id := range ids {
			dst = binary.BigEndian.AppendUint64(dst, uint64(id))
		}
	}
	return dst
}

// appendRESPHeader appends the start of a PFADD command for key carrying n
// elements: the array header, the command name and the key. The elements
// follow as written by appendRESPArgs.
func appendRESPHeader(dst []byte, key string, n int) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(n+2), 10)
	dst = append(dst, "\r\n$5\r\nPFADD\r\n$"...)
	dst = strconv.AppendInt(dst, int64(len(key)), 10)
	dst = append(dst, "\r\n"...)
	dst = append(dst, key...)
	return append(dst, "\r\n"...)
}

// appendRESPArgs appends each id as a RESP bulk string of its decimal digits
// (what redis-benchmark's __rand_int__ sends, without the zero padding).
func appendRESPArgs(dst []byte, ids []int64) []byte {
	var digits [24]byte
	for _, id := range ids {
		d := appendID(digits[:0], id)
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(d)), 10)
		dst = append(dst, "\r\n"...)
		dst = append(dst, d...)
		dst = append(dst, "\r\n"...)
	}
	return dst
}

// buildPool encodes n batches of ids (batch j drawn by g.fill with index j)
// with enc and returns them as slices of one arena: one allocation, and
// bodies that sit next to each other in memory.
func buildPool(n, batch int, g *idGen, enc func(dst []byte, ids []int64) []byte) [][]byte {
	if n <= 0 {
		return nil
	}
	ids := make([]int64, batch)
	g.fill(ids, 0)
	first := enc(nil, ids)
	arena := make([]byte, 0, len(first)*n+len(first)*n/16+64)
	arena = append(arena, first...)
	ends := make([]int, n)
	ends[0] = len(arena)
	for j := 1; j < n; j++ {
		g.fill(ids, uint64(j))
		arena = enc(arena, ids)
		ends[j] = len(arena)
	}
	pool := make([][]byte, n)
	start := 0
	for j, end := range ends {
		pool[j] = arena[start:end:end]
		start = end
	}
	return pool
}
