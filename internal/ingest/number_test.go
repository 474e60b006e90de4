package ingest

import (
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"
)

// jsonInt is the JSON integer grammar; parseInt must accept exactly the
// tokens that match it and fit int64 (and are not followed by '.', 'e', 'E').
var jsonInt = regexp.MustCompile(`^-?(0|[1-9][0-9]*)`)

// refParseInt is the straightforward byte-at-a-time parser, the reference
// for parseInt (and its benchmark baseline).
func refParseInt(b []byte, i int) (int64, int, bool) {
	m := jsonInt.Find(b[i:])
	if m == nil {
		return 0, i, false
	}
	j := i + len(m)
	if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j]-'0' < 10) {
		return 0, j, false
	}
	v, err := strconv.ParseInt(string(m), 10, 64)
	return v, j, err == nil
}

// scalarParseInt is parseInt without the eight-digit step, to measure what
// that step buys.
func scalarParseInt(b []byte, i int) (int64, int, bool) {
	neg := false
	if b[i] == '-' {
		neg = true
		i++
	}
	start := i
	var acc uint64
	for i < len(b) {
		d := b[i] - '0'
		if d > 9 {
			break
		}
		acc = acc*10 + uint64(d)
		i++
	}
	nd := i - start
	if nd == 0 || nd > 19 || (b[start] == '0' && nd > 1) || (i < len(b) && (b[i] == '.' || b[i]|0x20 == 'e')) {
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

func checkParseInt(t *testing.T, s string) {
	t.Helper()
	for pad := range 9 { // every alignment, and digits running to the end
		b := []byte(string(make([]byte, pad)) + s)
		for i := range pad {
			b[i] = ' '
		}
		if pad >= len(b) || (b[pad] != '-' && b[pad]-'0' > 9) {
			return
		}
		v, j, ok := parseInt(b, pad)
		rv, rj, rok := refParseInt(b, pad)
		if ok != rok || (ok && (v != rv || j != rj)) {
			t.Fatalf("parseInt(%q) = %d, %d, %v, want %d, %d, %v", b[pad:], v, j-pad, ok, rv, rj-pad, rok)
		}
		if !ok {
			if e := intError(b, pad, "ids"); e == nil || e.Offset != pad {
				t.Fatalf("intError(%q) = %v at the wrong place", b[pad:], e)
			}
		}
	}
}

func TestParseIntMatchesReference(t *testing.T) {
	cases := []string{
		"0", "-0", "1", "9", "10", "99999999", "100000000", "123456789", "1234567812345678",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"18446744073709551615", "18446744073709551616", "99999999999999999999", "00", "01", "-", "-a",
		"1.5", "1e5", "1E5", "12345678.5", "123456789e1", "0x10", "1,", "1]", "7\xff", "7\xfa",
	}
	r := rand.New(rand.NewPCG(3, 4))
	n := 20000
	if raceEnabled {
		// Each case runs in this goroutine alone: the race detector,
		// which slows it about tenfold, has nothing to find. .ci/run's
		// normal-build step runs all of them.
		n = 2000
	}
	for range n {
		v := int64(r.Uint64()) >> r.IntN(64)
		cases = append(cases, strconv.FormatInt(v, 10), strconv.FormatInt(v, 10)+",", strconv.FormatInt(v, 10)+"\xfe\xfe\xfe\xfe\xfe\xfe\xfe")
	}
	for _, s := range cases {
		checkParseInt(t, s)
		checkParseInt(t, s+"]}")
	}
}

func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "-9223372036854775808", "12345678]", "1.5", "0123", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkParseInt(t, s)
	})
}
