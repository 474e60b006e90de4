package ingest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/cpuid/cpuidtest"
)

// intKernels lists the kernels for integer ids this machine runs, the
// word loops first (cpuidtest.Kernels).
func intKernels(tb testing.TB) []intKernel {
	return cpuidtest.Kernels(tb, widestIntKernel(), "the vector kernel for integer ids", "AVX2, BMI1 and BMI2")
}

// withIntKernel runs f with the kernels for integer ids up to k. Tests
// that change it do not run in parallel.
func withIntKernel[T any](k intKernel, f func() (T, error)) (T, error) {
	was := intsKernel
	intsKernel = k
	defer func() { intsKernel = was }()
	return f()
}

// sameParse says whether two parses agree: the same values, or the same
// error, byte for byte.
func sameParse(a []uint64, aerr error, b []uint64, berr error) bool {
	if aerr != nil || berr != nil {
		return aerr != nil && berr != nil && aerr.Error() == berr.Error()
	}
	return slices.Equal(a, b)
}

// idToken is one element of a generated body: an integer of any width and
// sign, int64's bounds and their neighbours, or something the kernel must
// refuse and leave to the word loop (leading zeros, floats, a lone or
// doubled sign, a sign inside, strings, an empty one, more than 19
// digits).
func idToken(r *rand.Rand) string {
	switch r.IntN(14) {
	case 0:
		return []string{"9223372036854775807", "-9223372036854775808", "9223372036854775808",
			"-9223372036854775809", "9999999999999999999", "-9999999999999999999", "10000000000000000000",
			"1000000000000000000", "-1000000000000000000", "0", "-0", "99999999", "100000000",
			"9999999999999999", "10000000000000000", "99999999999999999"}[r.IntN(16)]
	case 1:
		bad := []string{"00", "01", "-01", "-00", "0123456789", "1.5", "12345678901234567e3", "-", "--1", "1-2", "1-", "-1-", "-a",
			`"abc"`, `"12"`, "+1", "1e5", "123456789012345678901", "", "18446744073709551615",
			// 20 digits and more, some of which wrap to small values
			// mod 2^64 (3 * 2^64 is 55340232221128654848).
			"99999999999999999999", "55340232221128654848", "55340232221128654849", "12345678901234567890123"}
		return bad[r.IntN(len(bad))]
	default:
		v := int64(r.Uint64() >> 1) // 19 digits, mostly
		if w := 1 + r.IntN(19); w < 19 {
			v = r.Int64N(int64(math.Pow10(w)))
		}
		s := strconv.FormatInt(v, 10)
		if r.IntN(3) == 0 {
			s = "-" + s
		}
		return s
	}
}

// validInt says whether tok is a JSON integer in int64.
func validInt(tok string) bool {
	_, err := strconv.ParseInt(tok, 10, 64)
	return err == nil && jsonIntToken.MatchString(tok)
}

// jsonSep is what goes between two elements: mostly ",", then the
// whitespace JSON writers put after it, and sometimes whitespace before it
// (which the kernel leaves to the word loop).
func jsonSep(r *rand.Rand) string {
	return []string{",", ",", ",", ", ", ",\n  ", ",\n\t\t", ",\r\n", " ,", "\t,  ", ",                                                                     "}[r.IntN(10)]
}

// TestVectorIntsAgree parses generated bodies of integer ids with the vector
// kernel and with the word loops alone: every value and every error must be
// the same, byte for byte. The word loops are the ones FuzzJSONIntList and
// FuzzLines check against strconv.ParseInt and encoding/json.
func TestVectorIntsAgree(t *testing.T) {
	kernels := intKernels(t)
	if len(kernels) < 2 {
		t.Skip("no vector kernel here: the word loops are all there is")
	}
	r := rand.New(rand.NewPCG(38, 1))
	for round := range 3000 {
		n := 1 + r.IntN(120)
		clean := r.IntN(2) == 0 // only valid ids, so that the body is accepted
		// Bodies mostly of ids of up to 8 digits, which the AVX-512 path
		// takes eight at a time, with now and then any other token.
		short := r.IntN(2) == 0
		var js, ls strings.Builder
		for k := range n {
			tok := idToken(r)
			if short && r.IntN(20) != 0 {
				tok = strconv.FormatInt(r.Int64N(int64(math.Pow10(1+r.IntN(8)))), 10)
				if r.IntN(4) == 0 {
					tok = "-" + tok
				}
			}
			for clean && !validInt(tok) {
				tok = idToken(r)
			}
			if k > 0 {
				js.WriteString(jsonSep(r))
				ls.WriteString([]string{"\n", "\n", "\n", "\r\n"}[r.IntN(4)])
			}
			js.WriteString(tok)
			ls.WriteString(tok)
		}
		bodies := []struct {
			name  string
			parse func(limit int) ([]uint64, error)
		}{
			{"ids", func(limit int) ([]uint64, error) {
				return AppendJSONHashes(nil, []byte(`{"ids":[`+js.String()+`]}`), limit)
			}},
			{"hashes", func(limit int) ([]uint64, error) {
				return AppendJSONHashes(make([]uint64, 0, 4096), []byte(`{"hashes": [`+js.String()+"]}\n"), limit)
			}},
			{"text ints", func(limit int) ([]uint64, error) {
				return AppendLineHashes(nil, []byte(ls.String()+"\n"), TextInts, limit)
			}},
			{"ndjson", func(limit int) ([]uint64, error) {
				return AppendLineHashes(nil, []byte(ls.String()), NDJSON, limit)
			}},
		}
		for _, b := range bodies {
			limit := -1
			if r.IntN(4) == 0 {
				limit = r.IntN(n + 1)
			}
			parse := func() ([]uint64, error) { return b.parse(limit) }
			words, werr := withIntKernel(kernelWords, parse)
			for _, k := range kernels[1:] {
				vector, verr := withIntKernel(k, parse)
				if !sameParse(vector, verr, words, werr) {
					t.Fatalf("round %d, %s (limit %d), body %q:\n%v kernel %x, %v\nword loops    %x, %v",
						round, b.name, limit, js.String(), k, vector, verr, words, werr)
				}
			}
			if clean && limit < 0 && werr != nil {
				t.Fatalf("round %d, %s: a body of valid ids refused: %v", round, b.name, werr)
			}
		}
	}
}

// TestVectorIntsTakeRuns checks that the kernel takes the ids of the bodies
// users send (compact, Python's ", ", indented JSON, one id a line) and
// gives strconv.ParseInt's values: without it the agreement test above
// would pass with a kernel that takes nothing.
func TestVectorIntsTakeRuns(t *testing.T) {
	kernels := intKernels(t)
	if len(kernels) < 2 {
		t.Skip("no vector kernel here")
	}
	for _, k := range kernels[1:] {
		withIntKernel(k, func() (any, error) {
			t.Run(k.String(), takeRuns)
			return nil, nil
		})
	}
}

func takeRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(38, 2))
	for _, w := range []struct {
		name string
		gen  func() int64
	}{
		{"small", func() int64 { return r.Int64N(1e8) }},
		{"int64", func() int64 { return int64(r.Uint64() >> 1) }},
		{"negative", func() int64 { return int64(r.Uint64() | 1<<63) }},
		{"mixed", func() int64 { return int64(r.Uint64()|1<<63) >> r.IntN(63) }},
	} {
		name, gen := w.name, w.gen
		ids := make([]string, 1000)
		want := make([]uint64, len(ids))
		for k := range ids {
			v := gen()
			ids[k], want[k] = strconv.FormatInt(v, 10), uint64(v)
		}
		for _, f := range []struct {
			sep  string
			seps *separators
		}{{",", jsonSeps}, {", ", jsonSeps}, {",\n    ", jsonSeps}, {"\n", lineSeps}} {
			body := []byte("[" + strings.Join(ids, f.sep) + "]")
			// From the first id 31 bytes or more into the body: the
			// kernel leaves those before to the word loop.
			start, first := 1, 0
			for ; start < 31; first++ {
				start += len(ids[first]) + len(f.sep)
			}
			got, next := intsVector(make([]uint64, 0, len(ids)), body, start, -1, f.seps)
			// The kernel stops where fewer than 64 bytes are left.
			if len(body)-next >= 64 {
				t.Errorf("%s ids, separator %q: the kernel took %d of %d ids (stopped at %d of %d: %q)",
					name, f.sep, len(got), len(ids)-first, next, len(body), body[next:min(next+30, len(body))])
				continue
			}
			if !slices.Equal(got, want[first:first+len(got)]) {
				t.Errorf("%s ids, separator %q: values differ from strconv.ParseInt's", name, f.sep)
			}
			// It stops at the next id, or in the whitespace before it.
			rest := strings.TrimLeft(string(body[next:]), " \n")
			if !strings.HasPrefix(rest, ids[first+len(got)]) {
				t.Errorf("%s ids, separator %q: stopped at %q, want the start of id %d", name, f.sep, rest[:min(30, len(rest))], first+len(got))
			}
		}
	}
}

// TestVectorIntsBounds runs the kernel on int64's bounds and just beyond,
// at every alignment in the window.
func TestVectorIntsBounds(t *testing.T) {
	kernels := intKernels(t)
	if len(kernels) < 2 {
		t.Skip("no vector kernel here")
	}
	for _, k := range kernels[1:] {
		withIntKernel(k, func() (any, error) {
			t.Run(k.String(), intsBounds)
			return nil, nil
		})
	}
}

func intsBounds(t *testing.T) {
	for _, tc := range []struct {
		tok  string
		want int64
		ok   bool
	}{
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"9999999999999999999", 0, false},
		{"-0", 0, true},
		{"0", 0, true},
		{"00", 0, false},
		{"-", 0, false},
		{"1000000000000000000", 1e18, true},
	} {
		for pad := range 70 {
			// pad bytes of whitespace, then the token, in a body long
			// enough for the kernel: the token is the first one it reads.
			body := []byte(strings.Repeat("1,", 20) + strings.Repeat(" ", pad) + tc.tok + "," + strings.Repeat("2,", 40) + "3")
			got, next := intsVector(make([]uint64, 0, 100), body, 40+pad, 1, jsonSeps)
			if tc.ok != (len(got) == 1) {
				t.Fatalf("%s at %d: took %d ids, want ok=%v", tc.tok, 40+pad, len(got), tc.ok)
			}
			if tc.ok && (int64(got[0]) != tc.want || next != 40+pad+len(tc.tok)+1) {
				t.Fatalf("%s at %d: got %d, next %d", tc.tok, 40+pad, int64(got[0]), next)
			}
			if !tc.ok && next != 40+pad {
				t.Fatalf("%s at %d: refused but moved to %d", tc.tok, 40+pad, next)
			}
		}
	}
}

// TestVectorIntsErrorsName keeps the errors of bodies the kernel leaves
// half-taken exact: the word loop and the general path explain them.
func TestVectorIntsErrorsName(t *testing.T) {
	for _, k := range intKernels(t) {
		// Long ids before the bad one, and short ones the AVX-512 path
		// would take eight at a time.
		for _, before := range []string{"1234567890123,", "12345,"} {
			body := `{"ids":[` + strings.Repeat(before, 10) + "00012," + strings.Repeat("5,", 20) + "6]}"
			_, err := withIntKernel(k, func() ([]uint64, error) { return AppendJSONHashes(nil, []byte(body), -1) })
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(err.Error(), "ids[10]") || !strings.Contains(err.Error(), "leading zeros") {
				t.Errorf("%v kernel, %q before: %v, want the leading zeros of ids[10] named", k, before, err)
			}
			want := fmt.Sprint(strings.Index(body, "00012"))
			if e != nil && fmt.Sprint(e.Offset) != want {
				t.Errorf("%v kernel, %q before: offset %d, want %s", k, before, e.Offset, want)
			}
		}
	}
}
