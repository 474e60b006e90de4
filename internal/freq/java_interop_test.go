package freq

import (
	"bytes"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/javatest"
	"github.com/sketchd/sketchd/internal/theta"
)

// These tests check frequency sketches against Apache DataSketches' Java
// library (IntegerSketch, mode Sum; the version javatest pins), both
// ways, in one JVM per package run: Java reads sketchd's Java-layout
// bytes (the default download) with equal estimate, bounds and counts,
// sketchd reads Java's bytes to the same, and unions agree. Without a JDK
// and the jars they skip, unless SKETCHD_REQUIRE_JAVA=1 (set in CI).

var java javatest.Shared

// javaFreq is Java's description of a tuple sketch.
type javaFreq struct {
	bytes              []byte
	estimate, lb2, ub2 float64
	retained           int
	theta64            uint64
	sum, digest        int64
}

func parseJavaFreq(tb testing.TB, f []string) javaFreq {
	tb.Helper()
	if len(f) != 8 {
		tb.Fatalf("freq answer of %d fields: %q", len(f), f)
	}
	num := func(s string) int64 {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			tb.Fatal(err)
		}
		return v
	}
	var b []byte
	if f[0] != "-" {
		var err error
		if b, err = hex.DecodeString(f[0]); err != nil {
			tb.Fatal(err)
		}
	}
	return javaFreq{
		bytes:    b,
		estimate: math.Float64frombits(uint64(num(f[1]))), lb2: math.Float64frombits(uint64(num(f[2]))), ub2: math.Float64frombits(uint64(num(f[3]))),
		retained: int(num(f[4])), theta64: uint64(num(f[5])), sum: num(f[6]), digest: num(f[7]),
	}
}

// digest is Interop.java's digest of the (key, count) pairs in key order.
func digest(s *Sketch) (sum, d int64) {
	keys, counts := s.sortedEntries()
	for i, k := range keys {
		sum += int64(counts[i])
		d = d*1000003 + (int64(k) ^ int64(counts[i])<<1)
	}
	return sum, d
}

func sameAsJavaFreq(tb testing.TB, what string, s *Sketch, j javaFreq) {
	tb.Helper()
	sum, d := digest(s)
	if s.Estimate() != j.estimate || s.Retained() != j.retained || s.Theta64() != j.theta64 || sum != j.sum || d != j.digest {
		tb.Errorf("%s: estimate %v retained %d theta %#x counts %d digest %d, Java %v %d %#x %d %d",
			what, s.Estimate(), s.Retained(), s.Theta64(), sum, d, j.estimate, j.retained, j.theta64, j.sum, j.digest)
	}
	r, err := s.FrequencyReport(2, 2)
	if err != nil {
		tb.Fatal(err)
	}
	for _, c := range [][2]float64{{r.Reach.Lower, j.lb2}, {r.Reach.Upper, j.ub2}} {
		if math.Abs(c[0]-c[1])/math.Max(1, math.Abs(c[1])) > 1e-6 {
			tb.Errorf("%s: reach bounds [%v, %v], Java [%v, %v]", what, r.Reach.Lower, r.Reach.Upper, j.lb2, j.ub2)
			break
		}
	}
}

type freqBuild struct {
	lgK              int
	lo, hi, xlo, xhi int64
	xcount           uint32
}

func (b freqBuild) name() string {
	return "lg_k " + strconv.Itoa(b.lgK) + " ids " + strconv.FormatInt(b.hi-b.lo, 10) + " extra " + strconv.FormatInt(b.xhi-b.xlo, 10) + "x" + strconv.Itoa(int(b.xcount))
}

func (b freqBuild) sketch(tb testing.TB) *Sketch {
	s, err := New(Params{LgK: b.lgK})
	if err != nil {
		tb.Fatal(err)
	}
	for v := b.lo; v < b.hi; v++ {
		s.AddHash(theta.HashInt(v), 1)
	}
	for v := b.xlo; v < b.xhi; v++ {
		s.AddHash(theta.HashInt(v), b.xcount)
	}
	return s
}

func (b freqBuild) args() []string {
	f := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []string{"freq_build", strconv.Itoa(b.lgK), f(b.lo), f(b.hi), f(b.xlo), f(b.xhi), strconv.Itoa(int(b.xcount))}
}

func javaFreqBuilds(t *testing.T) []freqBuild {
	seed := time.Now().UnixNano()
	t.Logf("random cases from seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 9))
	out := []freqBuild{
		{lgK: 12},
		{lgK: 12, lo: 7, hi: 8},
		{lgK: 12, lo: 0, hi: 3000, xlo: 0, xhi: 100, xcount: 4},
		{lgK: 5, lo: 0, hi: 1000, xlo: 500, xhi: 900, xcount: 2},
		{lgK: 12, lo: -500_000, hi: 500_000, xlo: 0, xhi: 10_000, xcount: 9},
	}
	for range 6 {
		n := int64(math.Pow(10, rng.Float64()*6))
		lo := rng.Int64N(1<<40) - 1<<39
		x := rng.Int64N(n + 1)
		out = append(out, freqBuild{lgK: 4 + rng.IntN(11), lo: lo, hi: lo + n, xlo: lo, xhi: lo + x, xcount: uint32(1 + rng.IntN(100))})
	}
	return out
}

// TestJavaInterop: Java's sketch of the same additions is ours; Java
// reads our Java-layout bytes (what a download gives by default) as the
// same, and we read Java's bytes as ours.
func TestJavaInterop(t *testing.T) {
	jvm := java.Get(t)
	for _, b := range javaFreqBuilds(t) {
		ours := b.sketch(t)
		j := parseJavaFreq(t, jvm.Call(t, b.args()...))
		sameAsJavaFreq(t, b.name()+": built here vs Java", ours, j)
		d, err := Decode(j.bytes)
		if err != nil {
			t.Fatalf("%s: Decode(Java's bytes %.48x): %v", b.name(), j.bytes, err)
		}
		if !bytes.Equal(d.AppendStored(nil)[5:], ours.AppendStored(nil)[5:]) {
			t.Errorf("%s: Java's bytes decoded as %v, want %v", b.name(), d, ours)
		}
		r := parseJavaFreq(t, jvm.Call(t, "freq_read", hex.EncodeToString(ours.AppendStoredWidth(nil, SummaryJava))))
		sameAsJavaFreq(t, b.name()+": our Java-layout download read by Java", ours, r)
	}
}

// TestJavaUnion: Java's union of our sketches equals ours.
func TestJavaUnion(t *testing.T) {
	jvm := java.Get(t)
	parts := []freqBuild{
		{lgK: 12, lo: 0, hi: 50_000, xlo: 0, xhi: 1000, xcount: 3},
		{lgK: 12, lo: 40_000, hi: 90_000},
		{lgK: 10, lo: 0, hi: 5000, xlo: 4000, xhi: 5000, xcount: 7},
		{lgK: 12},
	}
	sk := make([]*Sketch, len(parts))
	for i, b := range parts {
		sk[i] = b.sketch(t)
	}
	for _, c := range []struct {
		lgK int
		idx []int
	}{{12, []int{0, 1}}, {10, []int{0, 1, 2}}, {12, []int{2, 3}}, {11, []int{0, 1, 2, 3}}} {
		u, _ := New(Params{LgK: c.lgK})
		args := []string{"freq_union", strconv.Itoa(c.lgK)}
		for _, i := range c.idx {
			u.Union(sk[i])
			args = append(args, hex.EncodeToString(sk[i].AppendStoredWidth(nil, SummaryJava)))
		}
		sameAsJavaFreq(t, "union lg_k "+strconv.Itoa(c.lgK), u, parseJavaFreq(t, jvm.Call(t, args...)))
	}
}
