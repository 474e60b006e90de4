package kll

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/javatest"
)

// These tests check sketchd's KLL sketches against Apache DataSketches'
// Java library (the kll_* requests of internal/javatest's Interop.java):
// bytes both ways and every answer, the ends included (the Java library's
// sorted view is sketchd's). Without a JDK or the jars they skip, unless
// SKETCHD_REQUIRE_JAVA=1 (set in CI) turns the skip into a failure.

var java javatest.Shared

func bitsList(vs []float64, asLongs bool) string {
	if len(vs) == 0 {
		return "-"
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		u := math.Float64bits(v)
		if asLongs {
			u = uint64(int64(v))
		}
		parts[i] = fmt.Sprintf("%016x", u)
	}
	return strings.Join(parts, ",")
}

func parseList(tb testing.TB, s string, asLongs bool) []float64 {
	tb.Helper()
	if s == "-" {
		return nil
	}
	var out []float64
	for _, p := range strings.Split(s, ",") {
		u, err := strconv.ParseUint(p, 16, 64)
		if err != nil {
			tb.Fatal(err)
		}
		if asLongs {
			out = append(out, float64(int64(u)))
		} else {
			out = append(out, math.Float64frombits(u))
		}
	}
	return out
}

// javaAnswer is the library's reply, fields as Interop.java lists them.
type javaAnswer struct {
	bytes      []byte
	n          uint64
	retained   int
	estimation bool
	min, max   float64
	eps        [2]float64
	lists      [10][]float64 // qIncl qExcl qLo qHi rIncl rExcl cdfIncl cdfExcl pmfIncl pmfExcl
}

func parseJava(tb testing.TB, f []string, asLongs bool) javaAnswer {
	tb.Helper()
	var a javaAnswer
	var err error
	if a.bytes, err = hex.DecodeString(f[0]); err != nil {
		tb.Fatal(err)
	}
	a.n, _ = strconv.ParseUint(f[1], 10, 64)
	a.retained, _ = strconv.Atoi(f[2])
	a.estimation = f[3] == "1"
	if f[4] == "-" {
		return a
	}
	a.min, a.max = parseList(tb, f[4], asLongs)[0], parseList(tb, f[5], asLongs)[0]
	a.eps = [2]float64{parseList(tb, f[6], false)[0], parseList(tb, f[7], false)[0]}
	for i := range a.lists {
		a.lists[i] = parseList(tb, f[8+i], asLongs && i < 4)
	}
	return a
}

// ourAnswers are sketchd's answers in the order javaAnswer lists them.
func ourAnswers[T Item](tb testing.TB, s *Sketch[T], q questions) [10][]float64 {
	tb.Helper()
	var out [10][]float64
	a := answer(tb, s, q)
	out[0], out[1], out[4], out[5] = a.qIncl, a.qExcl, a.rIncl, a.rExcl
	out[6], out[7], out[8], out[9] = a.cdfIncl, a.cdfExcl, a.pmfIncl, a.pmfExcl
	v := s.View()
	for _, r := range q.ranks {
		lo, hi, err := v.QuantileBounds(r, s.NormalizedRankError(false))
		if err != nil {
			tb.Fatal(err)
		}
		out[2], out[3] = append(out[2], float64(lo)), append(out[3], float64(hi))
	}
	return out
}

var listNames = [10]string{"quantiles incl", "quantiles excl", "quantile lower bounds", "quantile upper bounds",
	"ranks incl", "ranks excl", "cdf incl", "cdf excl", "pmf incl", "pmf excl"}

func javaCompare[T Item](tb testing.TB, what string, s *Sketch[T], q questions, want javaAnswer) {
	tb.Helper()
	if s.N() != want.n || s.Retained() != want.retained || s.IsEstimationMode() != want.estimation {
		tb.Errorf("%s: n %d retained %d estimation %t; Java %d %d %t", what, s.N(), s.Retained(), s.IsEstimationMode(), want.n, want.retained, want.estimation)
	}
	if s.IsEmpty() {
		return
	}
	if float64(s.Min()) != want.min || float64(s.Max()) != want.max || s.NormalizedRankError(false) != want.eps[0] || s.NormalizedRankError(true) != want.eps[1] {
		tb.Errorf("%s: min %v max %v eps %v %v; Java %v %v %v", what, s.Min(), s.Max(), s.NormalizedRankError(false), s.NormalizedRankError(true), want.min, want.max, want.eps)
	}
	got := ourAnswers(tb, s, q)
	for i := range got {
		for j := range got[i] {
			if j >= len(want.lists[i]) || math.Abs(got[i][j]-want.lists[i][j]) > 1e-12 {
				tb.Errorf("%s: %s[%d] = %v, Java %v", what, listNames[i], j, got[i][j], want.lists[i])
				break
			}
		}
	}
}

func (q questions) javaTokens(asLongs bool) []string {
	return []string{bitsList(q.ranks, false), bitsList(q.values, asLongs), bitsList(q.splits, asLongs)}
}

// TestJavaReadsOurs: sketches built here decode in the Java library, which
// writes back the same bytes and gives every answer sketchd gives.
func TestJavaReadsOurs(t *testing.T) {
	t.Parallel()
	j := java.Get(t)
	r := rand.New(rand.NewPCG(21, 22))
	for _, c := range interopCases {
		vals := c.values(5)
		q := ask(r, vals)
		what := "java reads " + c.typ + " k=" + itoa(c.k) + " n=" + itoa(c.n)
		longs := c.typ == "long"
		var enc []byte
		if longs {
			enc = build[int64](t, c.k, vals).AppendBinary(nil)
		} else {
			enc = build[float64](t, c.k, vals).AppendBinary(nil)
		}
		want := parseJava(t, j.Call(t, append([]string{"kll_read", c.typ, itoa(c.k), hex.EncodeToString(enc)}, q.javaTokens(longs)...)...), longs)
		if lib := libraryBytes(enc); hex.EncodeToString(want.bytes) != lib {
			t.Errorf("%s: Java writes back\n %x\nnot\n %s", what, want.bytes, lib)
		}
		if longs {
			s, err := Decode[int64](enc)
			if err != nil {
				t.Fatal(err)
			}
			javaCompare(t, what, s, q, want)
		} else {
			s, err := Decode[float64](enc)
			if err != nil {
				t.Fatal(err)
			}
			javaCompare(t, what, s, q, want)
		}
	}
}

// TestWeReadJava: sketches the Java library builds and merges decode here,
// encode back to its bytes and give its answers.
func TestWeReadJava(t *testing.T) {
	t.Parallel()
	j := java.Get(t)
	r := rand.New(rand.NewPCG(23, 24))
	for _, c := range interopCases {
		vals := c.values(6)
		q := ask(r, vals)
		longs := c.typ == "long"
		what := "java builds " + c.typ + " k=" + itoa(c.k) + " n=" + itoa(c.n)
		want := parseJava(t, j.Call(t, append([]string{"kll_build", c.typ, itoa(c.k), bitsList(vals, longs)}, q.javaTokens(longs)...)...), longs)
		check := func(b []byte, what string, want javaAnswer) {
			t.Helper()
			if longs {
				s, err := Decode[int64](MarkLongs(b))
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if libraryBytes(s.AppendBinary(nil)) != hex.EncodeToString(b) {
					t.Errorf("%s: decode then encode differs", what)
				}
				javaCompare(t, what, s, q, want)
				return
			}
			s, err := Decode[float64](b)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if !slices.Equal(s.AppendBinary(nil), b) {
				t.Errorf("%s: decode then encode differs", what)
			}
			javaCompare(t, what, s, q, want)
		}
		check(want.bytes, what, want)
		if c.n > 1 {
			// The library's merge of its sketch with itself.
			h := hex.EncodeToString(want.bytes)
			m := parseJava(t, j.Call(t, append([]string{"kll_merge", c.typ, itoa(c.k), h + "," + h}, q.javaTokens(longs)...)...), longs)
			check(m.bytes, what+", merged", m)
		}
	}
}
