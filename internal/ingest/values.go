package ingest

import (
	"encoding/binary"
	"math"
	"strconv"
	"unsafe"
)

// Values are the bodies of sketches that keep numbers rather than ids (a
// KLL sketch's doubles or longs), in the same four formats as ids, with
// the same limits (maxValues, as maxIDs) and errors:
//
//   - JSON: exactly one object with exactly one key, "values": an array
//     of JSON numbers (RFC 8259: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?);
//     strings, booleans, null, objects and arrays are ErrType; another key
//     is ErrField (the JSON rules of the package doc apply);
//   - lines (application/x-ndjson and text/plain, the line rules of
//     LineFormat): one JSON number a line; NDJSON allows JSON whitespace
//     around it, text/plain nothing;
//   - octet-stream: 8 bytes a value, IEEE 754 binary64 for doubles or
//     two's-complement int64 for longs, big-endian unless little is set; a
//     length that is not a multiple of 8 is ErrSyntax.
//
// Doubles must be finite: a JSON number beyond ±1.8e308 is ErrRange, and
// so are a NaN or an infinity in an octet body. Longs are integers within
// int64: a JSON float (1.5, 1e3) is ErrType, beyond int64 ErrRange. On
// error dst is returned unchanged with an *Error naming the value.

// numberEnd returns the end of the JSON number at b[i], or ok false when
// b[i:] does not start with one.
func numberEnd(b []byte, i int) (int, bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j >= len(b) || b[j]-'0' >= 10:
		return j, false
	case b[j] == '0':
		j++
		if j < len(b) && b[j]-'0' < 10 {
			return j, false // leading zero
		}
	default:
		for j < len(b) && b[j]-'0' < 10 {
			j++
		}
	}
	if j < len(b) && (b[j] == '.' || b[j]|0x20 == 'e') {
		return floatEnd(b, j)
	}
	return j, true
}

// parseFloat parses the JSON number at b[i] as a finite float64.
func parseFloat(b []byte, i int) (float64, int, *Error) {
	end, ok := numberEnd(b, i)
	if !ok {
		return 0, i, numberError(b, i)
	}
	if end < len(b) && !isDelim(b[end]) {
		return 0, i, newError(ErrSyntax, i, "malformed number "+token(b, i))
	}
	tok := b[i:end]
	v, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(tok), len(tok)), 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, i, newError(ErrRange, i, token(b, i)+" is out of the float64 range")
	}
	return v, end, nil
}

// parseLong parses the JSON integer at b[i] as an int64.
func parseLong(b []byte, i int) (int64, int, *Error) {
	if i >= len(b) || b[i] != '-' && b[i]-'0' >= 10 {
		return 0, i, numberError(b, i)
	}
	v, j, ok := parseInt(b, i)
	if !ok {
		return 0, i, intError(b, i, "values of a sketch of longs")
	}
	if j < len(b) && !isDelim(b[j]) {
		return 0, i, newError(ErrSyntax, i, "malformed number "+token(b, i))
	}
	return v, j, nil
}

// numberError explains why b[i] does not start a number.
func numberError(b []byte, i int) *Error {
	if i < len(b) && (b[i] == '-' || b[i]-'0' < 10) {
		return newError(ErrSyntax, i, "malformed number "+token(b, i))
	}
	d, value := describe(b, i)
	if !value {
		return newError(ErrSyntax, i, "unexpected "+d+", want a number")
	}
	return newError(ErrType, i, d+" is not a number")
}

// AppendJSONFloats parses a JSON values body ({"values":[…]}) into dst as
// float64s.
func AppendJSONFloats(dst []float64, body []byte, maxValues int) ([]float64, error) {
	return appendJSONValues(dst, body, maxValues, parseFloat)
}

// AppendJSONLongs parses a JSON values body into dst as int64s: every
// value must be an integer.
func AppendJSONLongs(dst []int64, body []byte, maxValues int) ([]int64, error) {
	return appendJSONValues(dst, body, maxValues, parseLong)
}

func appendJSONValues[T any](dst []T, body []byte, maxValues int, parse func([]byte, int) (T, int, *Error)) ([]T, error) {
	k := keys{"values", "values"}
	_, i, e := openBody(body, k)
	if e != nil {
		return dst, e
	}
	out := dst
	if i >= len(body) || body[i] != '[' {
		return dst, notArray(body, i, "values")
	}
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == ']' {
		i++
	} else {
		for n := 0; ; n++ {
			if n == maxValues {
				return dst, &Error{Err: ErrTooMany, Offset: i, Path: pathIndex("values", n), Reason: "more than " + strconv.Itoa(maxValues) + " values in one request"}
			}
			if i >= len(body) {
				return dst, newError(ErrSyntax, i, "unexpected end of body, want a number")
			}
			if body[i] == ']' && n > 0 {
				return dst, at(newError(ErrSyntax, i, "trailing comma before ']'"), pathIndex("values", n))
			}
			v, j, e := parse(body, i)
			if e != nil {
				return dst, at(e, pathIndex("values", n))
			}
			out = append(out, v)
			i = skipSpace(body, j)
			if i < len(body) && body[i] == ',' {
				i = skipSpace(body, i+1)
				continue
			}
			if i < len(body) && body[i] == ']' {
				i++
				break
			}
			return dst, afterElem(body, i, pathIndex("values", n))
		}
	}
	if e := closeBody(body, i, k, 0); e != nil {
		return dst, e
	}
	return out, nil
}

// AppendLineFloats parses a line body (NDJSON when ndjson, else
// text/plain) of one number a line into dst as float64s.
func AppendLineFloats(dst []float64, body []byte, ndjson bool, maxValues int) ([]float64, error) {
	return appendLineValues(dst, body, ndjson, maxValues, parseFloat)
}

// AppendLineLongs parses a line body of one integer a line into dst.
func AppendLineLongs(dst []int64, body []byte, ndjson bool, maxValues int) ([]int64, error) {
	return appendLineValues(dst, body, ndjson, maxValues, parseLong)
}

func appendLineValues[T any](dst []T, body []byte, ndjson bool, maxValues int, parse func([]byte, int) (T, int, *Error)) ([]T, error) {
	if e := bomError(body); e != nil {
		e.Line = 1
		return dst, e
	}
	out := dst
	n := 0
	for i, line := 0, 1; i < len(body); line++ {
		end := i
		for end < len(body) && body[end] != '\n' {
			end++
		}
		next := end + 1
		if end > i && body[end-1] == '\r' {
			end--
		}
		l := body[:end] // the line is body[i:end]; parse sees its end
		j := i
		if ndjson {
			j = skipLineSpace(l, j)
		}
		if j < end {
			if n == maxValues {
				return dst, &Error{Err: ErrTooMany, Offset: j, Line: line, Reason: "more than " + strconv.Itoa(maxValues) + " values in one request"}
			}
			v, k, e := parse(l, j)
			if e != nil {
				e.Line = line
				return dst, e
			}
			if ndjson {
				k = skipLineSpace(l, k)
			}
			if k < end {
				return dst, &Error{Err: ErrSyntax, Offset: k, Line: line, Reason: "want the end of the line after the number, found " + lineSnippet(body, k)}
			}
			out = append(out, v)
			n++
		}
		i = next
	}
	return out, nil
}

// AppendOctetFloats parses an octet body of IEEE 754 binary64 values,
// big-endian unless little, into dst; NaN and infinities are ErrRange.
func AppendOctetFloats(dst []float64, body []byte, little bool, maxValues int) ([]float64, error) {
	if e := octetValuesError(body, maxValues); e != nil {
		return dst, e
	}
	out := dst
	for i := 0; i < len(body); i += 8 {
		var v float64
		if little {
			v = math.Float64frombits(binary.LittleEndian.Uint64(body[i:]))
		} else {
			v = math.Float64frombits(binary.BigEndian.Uint64(body[i:]))
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return dst, &Error{Err: ErrRange, Offset: i, Path: pathIndex("values", i/8), Reason: strconv.FormatFloat(v, 'g', -1, 64) + " is not a finite number"}
		}
		out = append(out, v)
	}
	return out, nil
}

// AppendOctetLongs parses an octet body of two's-complement int64s,
// big-endian unless little, into dst.
func AppendOctetLongs(dst []int64, body []byte, little bool, maxValues int) ([]int64, error) {
	if e := octetValuesError(body, maxValues); e != nil {
		return dst, e
	}
	out := dst
	for i := 0; i < len(body); i += 8 {
		if little {
			out = append(out, int64(binary.LittleEndian.Uint64(body[i:])))
		} else {
			out = append(out, int64(binary.BigEndian.Uint64(body[i:])))
		}
	}
	return out, nil
}

func octetValuesError(body []byte, maxValues int) *Error {
	if r := len(body) % 8; r != 0 {
		return newError(ErrSyntax, len(body)-r, "body length "+strconv.Itoa(len(body))+" is not a multiple of 8 (values are 8 bytes each)")
	}
	if n := len(body) / 8; maxValues >= 0 && n > maxValues {
		return &Error{Err: ErrTooMany, Offset: maxValues * 8, Reason: "more than " + strconv.Itoa(maxValues) + " values in one request"}
	}
	return nil
}
