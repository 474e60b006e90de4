package ingest

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// pow10 holds the powers of ten that weigh the digit chunks.
var pow10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16}

const (
	digitBias  = 0x3030303030303030 // '0' in every byte
	digitLimit = 0x7676767676767676 // adding it sets a byte's high bit iff the byte is >= 10
	highBits   = 0x8080808080808080
)

// nonDigits returns the number of leading digit bytes of the little-endian
// word w (8 if all are digits) and w with '0' subtracted from each byte.
// Bytes after the first non-digit may be misjudged (borrows and carries
// move up), which is harmless: only the first non-digit counts.
func nonDigits(w uint64) (int, uint64) {
	d := w - digitBias
	m := ((d + digitLimit) | d) & highBits
	return bits.TrailingZeros64(m) >> 3, d
}

// eight combines the k leading digit values of d (one per byte, first
// digit in the lowest byte) into their decimal value; k may be 0.
func eight(d uint64, k int) uint64 {
	d <<= uint(8-k) * 8 // drop the bytes after the digits; zeros before act as leading zeros
	d = (d * (10<<8 + 1)) >> 8 & 0x00FF00FF00FF00FF
	d = (d * (100<<16 + 1)) >> 16 & 0x0000FFFF0000FFFF
	return (d * (10000<<32 + 1)) >> 32
}

// parseInt parses a JSON integer (-?(0|[1-9][0-9]*)) that starts at b[i],
// which the caller has checked is '-' or a digit. It returns the value and
// the index after it. ok is false if the token is malformed, is a float
// (followed by '.', 'e' or 'E') or does not fit int64; intError then
// explains why. What follows the integer is not checked otherwise.
//
// With 24 bytes at hand (all but the last id of a body), it reads 8 bytes
// and, only while they are all digits, the next 8, then the 8 after: an
// 8-digit id (the commonest length below 10^8) costs two words, not three.
// Ids that mix short and 19-digit values parse faster than with a loop over
// digits, and ids below 10^8 too (BenchmarkParseInt).
func parseInt(b []byte, i int) (v int64, next int, ok bool) {
	neg := b[i] == '-'
	if neg {
		i++
	}
	start := i
	var acc uint64
	var n int
	if i+24 <= len(b) {
		n1, d1 := nonDigits(binary.LittleEndian.Uint64(b[i:]))
		if n1 < 8 {
			acc, n = eight(d1, n1), n1
		} else if n2, d2 := nonDigits(binary.LittleEndian.Uint64(b[i+8:])); n2 < 8 {
			// 8 to 15 digits: the third word is not needed.
			acc, n = eight(d1, 8)*pow10[n2]+eight(d2, n2), 8+n2
		} else {
			n3, d3 := nonDigits(binary.LittleEndian.Uint64(b[i+16:]))
			n = 16 + n3
			acc = (eight(d1, 8)*1e8+eight(d2, 8))*pow10[n3] + eight(d3, n3)
			if n == 24 { // more digits follow: out of range
				for i += n; i < len(b) && b[i]-'0' < 10; i++ {
				}
				return 0, i, false
			}
		}
		i += n
	} else {
		for i < len(b) {
			d := b[i] - '0'
			if d > 9 {
				break
			}
			acc = acc*10 + uint64(d)
			i++
		}
		n = i - start
	}
	if n == 0 || n > 19 || (b[start] == '0' && n > 1) {
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
