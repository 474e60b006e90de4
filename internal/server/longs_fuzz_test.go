package server

import (
	"math/big"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseLong checks parseLong, which reads ?value= and ?split= of a
// sketch of longs, against math/big: it accepts exactly the decimal
// integers (an optional sign, digits) within the int64 range, with their
// value, and its refusal quotes the text and says which rule it broke.
func FuzzParseLong(f *testing.F) {
	for _, s := range []string{"0", "-0", "+7", "42", "007", "9007199254740993", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "-9223372036854775809", "18446744073709551616", "1.5", "5.0", "1e3", "0x10", "1_000", "", "-", "+", " 1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseLong(s)
		b, isInt := new(big.Int).SetString(s, 10)
		switch {
		case isInt && b.IsInt64():
			if err != nil || v != b.Int64() {
				t.Fatalf("parseLong(%q) = %d, %v; want %s", s, v, err, b)
			}
			if back, err := parseLong(strconv.FormatInt(v, 10)); err != nil || back != v {
				t.Fatalf("parseLong(FormatInt(%d)) = %d, %v", v, back, err)
			}
		case err == nil:
			t.Fatalf("parseLong(%q) = %d, want an error", s, v)
		case !strings.Contains(err.Error(), strconv.Quote(clip(s))):
			t.Fatalf("parseLong(%q): %q does not quote the text", s, err)
		case isInt && !strings.Contains(err.Error(), "out of the int64 range"):
			t.Fatalf("parseLong(%q): %q, want out of range", s, err)
		case !isInt && !strings.Contains(err.Error(), "is not an integer"):
			t.Fatalf("parseLong(%q): %q, want not an integer", s, err)
		}
	})
}
