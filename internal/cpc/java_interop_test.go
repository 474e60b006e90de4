package cpc

import (
	"bytes"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/javatest"
)

// These tests check cpc sketches against Apache DataSketches' Java
// library, both ways, in one JVM per package run: the same ids give
// equal bytes, estimates and bounds; each side reads the other's bytes;
// unions agree. Without a JDK and the jars they skip, unless
// SKETCHD_REQUIRE_JAVA=1 (set in CI).

var java javatest.Shared

type javaCPC struct {
	bytes        []byte
	estimate     float64
	lower, upper [3]float64
	lgK          int
}

func parseJavaCPC(tb testing.TB, f []string) javaCPC {
	tb.Helper()
	if len(f) != 9 {
		tb.Fatalf("cpc answer of %d fields: %q", len(f), f)
	}
	num := func(s string) float64 {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			tb.Fatal(err)
		}
		return math.Float64frombits(uint64(v))
	}
	b, err := hex.DecodeString(f[0])
	if err != nil {
		tb.Fatal(err)
	}
	j := javaCPC{bytes: b, estimate: num(f[1])}
	for i := range 3 {
		j.lower[i], j.upper[i] = num(f[2+i]), num(f[5+i])
	}
	j.lgK, _ = strconv.Atoi(f[8])
	return j
}

func sameAsJavaCPC(tb testing.TB, what string, s *Sketch, j javaCPC) {
	tb.Helper()
	if got, _ := s.MarshalBinary(); !bytes.Equal(got, j.bytes) {
		tb.Errorf("%s: bytes\n got %.96x\nwant %.96x", what, got, j.bytes)
	}
	if s.Estimate() != j.estimate || s.Params().LgK != j.lgK {
		tb.Errorf("%s: estimate %v lg_k %d, Java %v %d", what, s.Estimate(), s.Params().LgK, j.estimate, j.lgK)
	}
	for sd := 1; sd <= 3; sd++ {
		lb, _ := s.LowerBound(sd)
		ub, _ := s.UpperBound(sd)
		if lb != j.lower[sd-1] || !upperAsJava(s.Params().LgK, ub, j.upper[sd-1]) {
			tb.Errorf("%s: bounds at %d sd [%v, %v], Java [%v, %v]", what, sd, lb, ub, j.lower[sd-1], j.upper[sd-1])
		}
	}
}

// upperAsJava says whether an upper bound is Java's: equal above lg_k 14,
// where both libraries use the analytic error constant. At lg_k 14 and
// below, Java takes the upper bound's error quantile from an empirical
// table of its own, which datasketches-go v0.2.0 does not have: it uses
// the lower bound's table for both, so its upper bound there is not
// Java's (a known defect of the library, docs/formats.md; measured from
// 0.05% below to 43% above Java's at lg_k 4, 16% above at lg_k 5, under
// 0.3% from lg_k 10). Until it is fixed, the test holds the deviation to
// what was measured, so that it cannot grow unnoticed, and an upgrade that
// fixes it keeps passing. Both libraries divide the same estimate by one
// minus their table's error and round up: before rounding the ratio of
// the two lies in [0.9995, 1.432] (lg_k 4, 1 and 3 sd; the tables give
// it exactly), within [0.999, 1.5]; rounding up moves each bound by less
// than one, so sketchd's bound is at least 0.999·(Java's − 1) and at most
// ⌈1.5·Java's⌉. Held to 0.999·Java's unrounded, a bound of a few hundred
// failed about one random lg_k 4 build in twenty (52 for Java's 53).
func upperAsJava(lgK int, ub, java float64) bool {
	if lgK > 14 {
		return ub == java
	}
	return ub >= 0.999*(java-1) && ub <= math.Ceil(1.5*java)
}

type cpcBuild struct {
	lgK    int
	lo, hi int64
	strs   []string
}

func (b cpcBuild) name() string {
	return "lg_k " + strconv.Itoa(b.lgK) + " ids " + strconv.FormatInt(b.hi-b.lo, 10)
}

func (b cpcBuild) sketch(tb testing.TB) *Sketch {
	s, err := New(Params{LgK: b.lgK})
	if err != nil {
		tb.Fatal(err)
	}
	for v := b.lo; v < b.hi; v++ {
		s.AddInt(v)
	}
	for _, v := range b.strs {
		s.AddString(v)
	}
	return s
}

func (b cpcBuild) args() []string {
	strs := "-"
	if len(b.strs) > 0 {
		h := make([]string, len(b.strs))
		for i, s := range b.strs {
			h[i] = "x" + hex.EncodeToString([]byte(s))
		}
		strs = strings.Join(h, ",")
	}
	return []string{"cpc_build", strconv.Itoa(b.lgK), strconv.FormatInt(b.lo, 10), strconv.FormatInt(b.hi, 10), strs}
}

// cpcBuilds go through every flavor (empty, sparse, hybrid, pinned,
// sliding) and add random ones (lg_k 4 to 20, up to a million ids) from a
// logged seed.
func cpcBuilds(t *testing.T) []cpcBuild {
	seed := time.Now().UnixNano()
	t.Logf("random cases from seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 16))
	var out []cpcBuild
	for _, n := range []int64{0, 1, 10, 100, 500, 1000, 3000, 10_000, 100_000} {
		out = append(out, cpcBuild{lgK: 10, lo: 0, hi: n})
	}
	// The sketches TestPinnedBytes pins.
	for _, n := range []int64{0, 5, 300, 5000, 100_000} {
		out = append(out, cpcBuild{lgK: 11, lo: 0, hi: n})
	}
	out = append(out,
		cpcBuild{lgK: 11, lo: -50, hi: 50, strs: []string{"", "é", "日本語", "user-1", "user-1"}},
		cpcBuild{lgK: 4, lo: 0, hi: 1_000_000},
		cpcBuild{lgK: 20, lo: 0, hi: 1_000_000},
	)
	for range 8 {
		n := int64(math.Pow(10, rng.Float64()*6))
		lo := rng.Int64N(1<<40) - 1<<39
		out = append(out, cpcBuild{lgK: MinLgK + rng.IntN(17), lo: lo, hi: lo + n})
	}
	return out
}

// TestJavaInterop: equal sketches from the same ids; each side reads the
// other's bytes.
func TestJavaInterop(t *testing.T) {
	jvm := java.Get(t)
	for _, b := range cpcBuilds(t) {
		ours := b.sketch(t)
		j := parseJavaCPC(t, jvm.Call(t, b.args()...))
		sameAsJavaCPC(t, b.name()+": built here vs Java", ours, j)
		d, err := Decode(j.bytes)
		if err != nil {
			t.Errorf("%s: Decode(Java's bytes %.48x): %v", b.name(), j.bytes, err)
		} else {
			sameAsJavaCPC(t, b.name()+": Java's bytes decoded here", d, j)
		}
		img, _ := ours.MarshalBinary()
		sameAsJavaCPC(t, b.name()+": our bytes read by Java", ours, parseJavaCPC(t, jvm.Call(t, "cpc_read", hex.EncodeToString(img))))
	}
}

// TestJavaUnion: Java's unions of our bytes equal ours, mixed lg_k
// included.
func TestJavaUnion(t *testing.T) {
	jvm := java.Get(t)
	parts := []cpcBuild{
		{lgK: 12, lo: 0, hi: 50_000},
		{lgK: 12, lo: 40_000, hi: 90_000},
		{lgK: 10, lo: 0, hi: 5000},
		{lgK: 14, lo: 0, hi: 3},
		{lgK: 12},
		{lgK: 11, lo: 100, hi: 400},
	}
	sk := make([]*Sketch, len(parts))
	img := make([]string, len(parts))
	for i, b := range parts {
		sk[i] = b.sketch(t)
		c, _ := sk[i].MarshalBinary()
		img[i] = hex.EncodeToString(c)
	}
	for _, c := range []struct {
		lgK int
		idx []int
	}{{12, []int{0, 1}}, {12, []int{0, 1, 2}}, {14, []int{3, 4}}, {12, []int{3, 0}}, {11, []int{0, 1, 2, 3, 4, 5}}, {12, []int{5, 3}}} {
		args := []string{"cpc_union", strconv.Itoa(c.lgK)}
		var in []*Sketch
		for _, i := range c.idx {
			args = append(args, img[i])
			in = append(in, sk[i])
		}
		u, err := Union(Params{LgK: c.lgK}, in...)
		if err != nil {
			t.Fatal(err)
		}
		sameAsJavaCPC(t, "union at lg_k "+strconv.Itoa(c.lgK)+" of "+strconv.Itoa(len(in)), u, parseJavaCPC(t, jvm.Call(t, args...)))
	}
}
