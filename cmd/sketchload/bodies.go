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
	formatJSONUUID               // {"ids":["0f1e2d3c-…"]}: 36-character UUID-like strings
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
	case "json-uuid":
		return formatJSONUUID, nil
	}
	return 0, fmt.Errorf("-format %q: want json, json-text, json-uuid, ndjson, text or octet", s)
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
	case formatJSONUUID:
		return "json-uuid"
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
// UUID-like string with its quotes and separator (39), more than a negative
// 19-digit int64 with quotes, prefix and separator, or a RESP bulk string
// "$19\r\n…\r\n" (26). Buffers are sized with it once so appending a batch
// never grows them.
const maxIDBytes = 39

// bodyCap returns a capacity that holds any body of n ids.
func bodyCap(n int) int { return 16 + n*maxIDBytes }

// appendBody appends the body carrying ids in format f to dst and returns
// the extended slice. Ids are non-negative, or negative with -negative
// (not for octet-stream's caller: it sends any int64). With enough capacity in dst it
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
	case formatJSONUUID:
		dst = append(dst, `{"ids":[`...)
		for i, id := range ids {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendUUID(dst, id)
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

// appendUUID appends a quoted UUID-like string (8-4-4-4-12 lowercase hex
// digits, 36 characters) made of two bijective mixes of id, so distinct ids
// give distinct strings that look random, as UUIDs do.
func appendUUID(dst []byte, id int64) []byte {
	const hex = "0123456789abcdef"
	hi, lo := mix64(uint64(id)), mix64(uint64(id)^0x9e3779b97f4a7c15)
	dst = append(dst, '"')
	for k := range 32 {
		if k == 8 || k == 12 || k == 16 || k == 20 {
			dst = append(dst, '-')
		}
		w := hi
		if k >= 16 {
			w = lo
		}
		dst = append(dst, hex[w>>(60-4*uint(k&15))&15])
	}
	return append(dst, '"')
}

// mix64 is splitmix64's finalizer, a bijection of uint64.
func mix64(x uint64) uint64 {
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// negate turns the ids of a batch into negative ones (-1-id), for -negative.
func negate(ids []int64) {
	for i, v := range ids {
		ids[i] = -1 - v
	}
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
