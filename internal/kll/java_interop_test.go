package kll

import (
	"encoding/binary"
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

// bitsList writes items as Interop.java reads them: 16-digit hex bit
// patterns (a double's IEEE 754 bits, a long's two's complement).
func bitsList[T Item](vs []T) string {
	if len(vs) == 0 {
		return "-"
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("%016x", itemBits(v))
	}
	return strings.Join(parts, ",")
}

func itemBits[T Item](v T) uint64 {
	switch x := any(v).(type) {
	case float64:
		return math.Float64bits(x)
	case int64:
		return uint64(x)
	}
	panic("unreachable")
}

// parseList reads a list of bit patterns as items of type T, exactly.
func parseList[T Item](tb testing.TB, s string) []T {
	tb.Helper()
	if s == "-" {
		return nil
	}
	var out []T
	for _, p := range strings.Split(s, ",") {
		u, err := strconv.ParseUint(p, 16, 64)
		if err != nil {
			tb.Fatal(err)
		}
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], u)
		out = append(out, readItem[T](b[:]))
	}
	return out
}

// javaAnswer is the library's reply, fields as Interop.java lists them:
// items (min, max, quantiles and their bounds) of T, exactly, and
// fractions (ranks, CDF, PMF) as doubles.
type javaAnswer[T Item] struct {
	bytes      []byte
	n          uint64
	retained   int
	estimation bool
	min, max   T
	eps        [2]float64
	items      [4][]T       // qIncl qExcl qLo qHi
	fractions  [6][]float64 // rIncl rExcl cdfIncl cdfExcl pmfIncl pmfExcl
}

func parseJava[T Item](tb testing.TB, f []string) javaAnswer[T] {
	tb.Helper()
	var a javaAnswer[T]
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
	a.min, a.max = parseList[T](tb, f[4])[0], parseList[T](tb, f[5])[0]
	a.eps = [2]float64{parseList[float64](tb, f[6])[0], parseList[float64](tb, f[7])[0]}
	for i := range a.items {
		a.items[i] = parseList[T](tb, f[8+i])
	}
	for i := range a.fractions {
		a.fractions[i] = parseList[float64](tb, f[12+i])
	}
	return a
}

var itemNames = [4]string{"quantiles incl", "quantiles excl", "quantile lower bounds", "quantile upper bounds"}
var fractionNames = [6]string{"ranks incl", "ranks excl", "cdf incl", "cdf excl", "pmf incl", "pmf excl"}

// javaCompare checks sketchd's answers against the library's: items
// exactly (a long as the int64 it is), fractions within 1e-12.
func javaCompare[T Item](tb testing.TB, what string, s *Sketch[T], q questions[T], want javaAnswer[T]) {
	tb.Helper()
	if s.N() != want.n || s.Retained() != want.retained || s.IsEstimationMode() != want.estimation {
		tb.Errorf("%s: n %d retained %d estimation %t; Java %d %d %t", what, s.N(), s.Retained(), s.IsEstimationMode(), want.n, want.retained, want.estimation)
	}
	if s.IsEmpty() {
		return
	}
	if s.Min() != want.min || s.Max() != want.max || s.NormalizedRankError(false) != want.eps[0] || s.NormalizedRankError(true) != want.eps[1] {
		tb.Errorf("%s: min %v max %v eps %v %v; Java %v %v %v", what, s.Min(), s.Max(), s.NormalizedRankError(false), s.NormalizedRankError(true), want.min, want.max, want.eps)
	}
	a := answer(tb, s, q)
	var items [4][]T
	items[0], items[1] = a.qIncl, a.qExcl
	v := s.View()
	for _, r := range q.ranks {
		lo, hi, err := v.QuantileBounds(r, s.NormalizedRankError(false))
		if err != nil {
			tb.Fatal(err)
		}
		items[2], items[3] = append(items[2], lo), append(items[3], hi)
	}
	for i := range items {
		if !slices.Equal(items[i], want.items[i]) {
			tb.Errorf("%s: %s = %v, Java %v", what, itemNames[i], items[i], want.items[i])
		}
	}
	fractions := [6][]float64{a.rIncl, a.rExcl, a.cdfIncl, a.cdfExcl, a.pmfIncl, a.pmfExcl}
	for i := range fractions {
		for j := range fractions[i] {
			if j >= len(want.fractions[i]) || math.Abs(fractions[i][j]-want.fractions[i][j]) > 1e-12 {
				tb.Errorf("%s: %s[%d] = %v, Java %v", what, fractionNames[i], j, fractions[i][j], want.fractions[i])
				break
			}
		}
	}
}

func (q questions[T]) javaTokens() []string {
	return []string{bitsList(q.ranks), bitsList(q.values), bitsList(q.splits)}
}

// TestJavaReadsOurs: sketches built here decode in the Java library, which
// writes back the same bytes and gives every answer sketchd gives.
func TestJavaReadsOurs(t *testing.T) {
	j := java.Get(t)
	r := rand.New(rand.NewPCG(21, 22))
	for _, c := range interopCases {
		if c.typ == "double" {
			javaReadsOurs(t, j, r, c, c.doubles(5))
		} else {
			javaReadsOurs(t, j, r, c, c.longs(5))
		}
	}
}

func javaReadsOurs[T Item](t *testing.T, j *javatest.JVM, r *rand.Rand, c interopCase, vals []T) {
	t.Helper()
	q := ask(r, vals)
	what := "java reads " + c.name()
	enc := build(t, c.k, vals).AppendBinary(nil)
	want := parseJava[T](t, j.Call(t, append([]string{"kll_read", c.typ, itoa(c.k), hex.EncodeToString(enc)}, q.javaTokens()...)...))
	if lib := libraryBytes(enc); hex.EncodeToString(want.bytes) != lib {
		t.Errorf("%s: Java writes back\n %x\nnot\n %s", what, want.bytes, lib)
	}
	s, err := Decode[T](enc)
	if err != nil {
		t.Fatal(err)
	}
	javaCompare(t, what, s, q, want)
	if ItemTypeOf[T]() != Doubles {
		return
	}
	// With flag 8, as Java 3.2 to 4.0 wrote a sketch of doubles: the
	// library reads the same sketch, and so does sketchd.
	old := slices.Clone(enc)
	old[3] |= flagDoubles
	want = parseJava[T](t, j.Call(t, append([]string{"kll_read", c.typ, itoa(c.k), hex.EncodeToString(old)}, q.javaTokens()...)...))
	if lib := libraryBytes(enc); hex.EncodeToString(want.bytes) != lib {
		t.Errorf("%s with flag 8: Java writes back\n %x\nnot\n %s", what, want.bytes, lib)
	}
	if s, err = Decode[T](old); err != nil {
		t.Fatalf("%s with flag 8: %v", what, err)
	}
	javaCompare(t, what+" with flag 8", s, q, want)
}

// TestWeReadJava: sketches the Java library builds and merges decode here,
// encode back to its bytes and give its answers.
func TestWeReadJava(t *testing.T) {
	j := java.Get(t)
	r := rand.New(rand.NewPCG(23, 24))
	for _, c := range interopCases {
		if c.typ == "double" {
			weReadJava(t, j, r, c, c.doubles(6))
		} else {
			weReadJava(t, j, r, c, c.longs(6))
		}
	}
}

func weReadJava[T Item](t *testing.T, j *javatest.JVM, r *rand.Rand, c interopCase, vals []T) {
	t.Helper()
	q := ask(r, vals)
	what := "java builds " + c.name()
	want := parseJava[T](t, j.Call(t, append([]string{"kll_build", c.typ, itoa(c.k), bitsList(vals)}, q.javaTokens()...)...))
	check := func(b []byte, what string, want javaAnswer[T]) {
		t.Helper()
		in := b
		if ItemTypeOf[T]() == Longs {
			in = MarkLongs(b)
		}
		s, err := Decode[T](in)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if libraryBytes(s.AppendBinary(nil)) != hex.EncodeToString(b) {
			t.Errorf("%s: decode then encode differs", what)
		}
		javaCompare(t, what, s, q, want)
	}
	check(want.bytes, what, want)
	if c.n > 1 {
		// The library's merge of its sketch with itself.
		h := hex.EncodeToString(want.bytes)
		m := parseJava[T](t, j.Call(t, append([]string{"kll_merge", c.typ, itoa(c.k), h + "," + h}, q.javaTokens()...)...))
		check(m.bytes, what+", merged", m)
	}
}
