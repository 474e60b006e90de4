package ingest

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// pow10 holds 10^k for the k digits of a partial 8-digit chunk.
var pow10 = [9]uint64{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000}

// parseInt parses a JSON integer (-?(0|[1-9][0-9]*)) that starts at b[i],
// which the caller has checked is '-' or a digit. It returns the value and
// the index after it. ok is false if the token is malformed, is a float
// (followed by '.', 'e' or 'E') or does not fit int64; intError then
// explains why. What follows the integer is not checked otherwise.
//
// Digits are consumed eight at a time: one unaligned load, a check that
// the bytes are digits, and three multiplies that combine them.
func parseInt(b []byte, i int) (v int64, next int, ok bool) {
	neg := false
	if b[i] == '-' {
		neg = true
		i++
	}
	start := i
	var acc uint64
	for i+8 <= len(b) {
		w := binary.LittleEndian.Uint64(b[i:])
		// A byte is a digit iff its high nibble is 3 and adding 6 keeps it
		// so; the lowest non-digit byte is exact (carries only move up).
		t := (w & 0xF0F0F0F0F0F0F0F0) | ((w+0x0606060606060606)&0xF0F0F0F0F0F0F0F0)>>4
		k := uint(bits.TrailingZeros64(t^0x3333333333333333)) >> 3
		if k == 0 {
			break
		}
		// Keep the k digits, moved to the top so that the bytes below act
		// as leading zeros; the first digit is the most significant.
		w = (w << ((8 - k) * 8)) & 0x0F0F0F0F0F0F0F0F
		w = (w * (10<<8 + 1)) >> 8 & 0x00FF00FF00FF00FF
		w = (w * (100<<16 + 1)) >> 16 & 0x0000FFFF0000FFFF
		w = (w * (10000<<32 + 1)) >> 32
		acc = acc*pow10[k] + w
		i += int(k)
		if k < 8 {
			goto done
		}
	}
	for i < len(b) {
		d := b[i] - '0'
		if d > 9 {
			break
		}
		acc = acc*10 + uint64(d)
		i++
	}
done:
	nd := i - start
	if nd == 0 || nd > 19 || (b[start] == '0' && nd > 1) {
		return 0, i, false
	}
	if i < len(b) && (b[i] == '.' || b[i]|0x20 == 'e') {
		return 0, i, false
	}
	if neg {
		if acc > 1<<63 {
			return 0, i, false
		}
		return int64(-acc), i, true
	}
	if acc > math.MaxInt64 {
		return 0, i, false
	}
	return int64(acc), i, true
}

// intError explains why parseInt refused the token at b[i]; what names the
// values expected there ("ids", "hashes", "counts").
func intError(b []byte, i int, what string) *Error {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	start := j
	for j < len(b) && b[j]-'0' < 10 {
		j++
	}
	nd := j - start
	if nd == 0 {
		if start == len(b) {
			return newError(ErrSyntax, i, "unexpected end of body in a number")
		}
		return newError(ErrSyntax, i, "malformed number "+token(b, i)+" ('-' must be followed by a digit)")
	}
	if b[start] == '0' && nd > 1 {
		return newError(ErrSyntax, i, "malformed number "+token(b, i)+" (leading zeros are not allowed)")
	}
	if j < len(b) && (b[j] == '.' || b[j]|0x20 == 'e') {
		if end, ok := floatEnd(b, j); ok {
			return newError(ErrType, i, string(b[i:min(end, i+snippetMax)])+cut(end-i)+" is not an integer (floats are not "+what+")")
		}
		return newError(ErrSyntax, i, "malformed number "+token(b, i))
	}
	return newError(ErrRange, i, token(b, i)+" is out of the int64 range")
}

func cut(n int) string {
	if n > snippetMax {
		return "…"
	}
	return ""
}

// floatEnd checks the JSON fraction/exponent starting at b[j] ('.', 'e' or
// 'E') and returns the index after the number.
func floatEnd(b []byte, j int) (int, bool) {
	if b[j] == '.' {
		j++
		s := j
		for j < len(b) && b[j]-'0' < 10 {
			j++
		}
		if j == s {
			return j, false
		}
	}
	if j < len(b) && b[j]|0x20 == 'e' {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		s := j
		for j < len(b) && b[j]-'0' < 10 {
			j++
		}
		if j == s {
			return j, false
		}
	}
	return j, true
}
