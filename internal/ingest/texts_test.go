package ingest

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// spanText returns the content a span names in b.
func spanText(b []byte, span uint64) []byte {
	start := int(span >> 32)
	return b[start : start+int(uint32(span))]
}

// textKernel returns the widest integer kernel, with which the text run
// runs, or skips where the run does not (no AVX-512 F, BW, DQ, BMI1 and
// BMI2).
func textKernel(t *testing.T) intKernel {
	kernels := intKernels(t)
	if !textsAVX512OK || kernels[len(kernels)-1] < kernelAVX2 {
		t.Skip("no AVX-512 (F, BW and DQ) with BMI1 and BMI2 here: the text run takes nothing")
	}
	return kernels[len(kernels)-1]
}

// textToken is a JSON string id (quotes included) for the text run's
// tests: mostly clean ones of every length around the run's limit, and
// now and then one the run must leave to the general path (an escape, a
// control character, UTF-8 valid or not, a stray quote) or an integer.
func textToken(r *rand.Rand) string {
	const clean = "0123456789abcdef-ABCXYZ _.@+~!#$%&'()*/:;<=>?[]^`{|}"
	n := r.IntN(maxRunText + 8)
	if r.IntN(3) == 0 {
		n = 36
	}
	b := make([]byte, n)
	for k := range b {
		b[k] = clean[r.IntN(len(clean))]
	}
	if n > 0 && r.IntN(6) == 0 {
		bad := []string{`\n`, `\"`, `\\`, `\u00e9`, `\ud800`, `\x`, "\x01", "\x1f", "\x7f", "é", "\xff", "\xe9", `"`, "\u2028"}
		k := r.IntN(n)
		return `"` + string(b[:k]) + bad[r.IntN(len(bad))] + string(b[k:]) + `"`
	}
	if r.IntN(15) == 0 {
		return idToken(r)
	}
	return `"` + string(b) + `"`
}

// TestVectorTextsAgree parses generated bodies of string ids with the
// text run and without it (the word loops, which take no string): every
// hash and every error must be the same, byte for byte. Without the run,
// strings go through scanString and decodeString, which FuzzJSONHashes
// checks against encoding/json and the reference hash.
func TestVectorTextsAgree(t *testing.T) {
	widest := textKernel(t)
	r := rand.New(rand.NewPCG(38, 3))
	for round := range 3000 {
		n := 1 + r.IntN(100)
		var js strings.Builder
		for k := range n {
			if k > 0 {
				js.WriteString(jsonSep(r))
			}
			js.WriteString(textToken(r))
		}
		body := []byte(`{"ids":[` + js.String() + `]}`)
		limit := -1
		if r.IntN(4) == 0 {
			limit = r.IntN(n + 1)
		}
		room := 0
		if r.IntN(2) == 0 {
			room = r.IntN(2 * n)
		}
		parse := func() ([]uint64, error) { return AppendJSONHashes(make([]uint64, 0, room), body, limit) }
		words, werr := withIntKernel(kernelWords, parse)
		vector, verr := withIntKernel(widest, parse)
		if !sameParse(vector, verr, words, werr) {
			t.Fatalf("round %d (limit %d), body %q:\nwith the text run %x, %v\nwithout           %x, %v", round, limit, body, vector, verr, words, werr)
		}
	}
}

// TestVectorTextsTakeRuns checks that the run takes the string ids users
// send (UUIDs, short names, the longest it takes, an empty one; compact,
// Python's ", ", indented) up to the body's last 64 bytes, with each
// span naming its string: without it the agreement test above would pass
// with a run that takes nothing.
func TestVectorTextsTakeRuns(t *testing.T) {
	withIntKernel(textKernel(t), func() (any, error) {
		r := rand.New(rand.NewPCG(38, 4))
		for _, w := range []struct {
			name string
			gen  func() string
		}{
			{"uuid", func() string {
				const hex = "0123456789abcdef"
				b := []byte("xxxxxxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx")
				for k := range b {
					if b[k] == 'x' {
						b[k] = hex[r.IntN(16)]
					}
				}
				return string(b)
			}},
			{"short", func() string { return strings.Repeat("u", 1+r.IntN(12)) }},
			{"longest", func() string { return strings.Repeat("L", maxRunText) }},
			{"every length", func() string { return strings.Repeat("e", r.IntN(maxRunText+1)) }},
		} {
			texts := make([]string, 300)
			for k := range texts {
				texts[k] = w.gen()
			}
			for _, sep := range []string{",", ", ", ",\n    ", ",\r\n\t"} {
				body := []byte(`["` + strings.Join(texts, `"`+sep+`"`) + `"]`)
				got, next := textRun(make([]uint64, 0, len(texts)), body, 1, -1)
				if len(body)-next >= 64+len(sep)+maxRunText+2 {
					t.Errorf("%s texts, separator %q: the run took %d of %d (stopped at %d of %d: %q)",
						w.name, sep, len(got), len(texts), next, len(body), body[next:min(next+30, len(body))])
					continue
				}
				for k, span := range got {
					if s := string(spanText(body, span)); s != texts[k] {
						t.Fatalf("%s texts, separator %q: span %d names %q, want %q", w.name, sep, k, s, texts[k])
					}
				}
				if rest := string(body[next:]); !strings.HasPrefix(strings.TrimLeft(rest, " \t\r\n"), `"`+texts[len(got)]+`"`) {
					t.Errorf("%s texts, separator %q: stopped at %q, want the start of string %d", w.name, sep, rest[:min(30, len(rest))], len(got))
				}
			}
		}
		// A string longer than the run takes, one with an escape, and one
		// not followed by a comma stop it where they start.
		for _, stop := range []string{`"` + strings.Repeat("x", maxRunText+1) + `"`, `"a\nb"`, `"é"`, `"ab" ,`, `"ab"]`} {
			body := []byte(`["abc", "def",` + stop + strings.Repeat(` "pad",`, 20) + `"z"]`)
			got, next := textRun(make([]uint64, 0, 30), body, 1, -1)
			if len(got) != 2 || string(body[next:next+len(stop)]) != stop {
				t.Errorf("%s: the run took %d strings and stopped at %q, want 2 and the string", stop, len(got), body[next:min(next+20, len(body))])
			}
		}
		return nil, nil
	})
}
