package zeta

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/hllbias"
	"github.com/sketchd/sketchd/internal/javatest"
)

// These tests check zeta sketches against ZetaSketch's Java library
// (javatest pins 0.1.0), both ways, in one JVM per package run: the same
// values give equal bytes; each side reads the other's bytes to the same
// state (decoded here and written again, Java's bytes come back byte for
// byte); estimates are equal wherever ZetaSketch's estimator is a closed
// form and within estimateTolerance in its bias-corrected range; unions
// agree, and refuse what ZetaSketch refuses. Without a JDK and the jars
// they skip, unless SKETCHD_REQUIRE_JAVA=1 (set in CI).

var java javatest.Shared

// estimateTolerance bounds |sketchd − ZetaSketch| / ZetaSketch's estimate
// where both correct the raw estimate's bias from their own simulated
// tables (docs/formats.md publishes the measured maximum).
const estimateTolerance = 0.005

type javaZeta struct {
	bytes     []byte
	estimate  int64
	numValues int64
	p, sp     int
}

func parseJavaZeta(tb testing.TB, f []string) javaZeta {
	tb.Helper()
	if len(f) != 5 {
		tb.Fatalf("zeta answer of %d fields: %.200q", len(f), f)
	}
	var j javaZeta
	if f[0] != "-" {
		b, err := hex.DecodeString(f[0])
		if err != nil {
			tb.Fatal(err)
		}
		j.bytes = b
	}
	n := func(s string) int64 {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			tb.Fatal(err)
		}
		return v
	}
	j.estimate, j.numValues, j.p, j.sp = n(f[1]), n(f[2]), int(n(f[3])), int(n(f[4]))
	return j
}

// exactRange reports whether ZetaSketch's estimate of s is a closed form
// that sketchd computes the same way: sparse, linear counting, or a raw
// estimate outside both libraries' bias tables (ZetaSketch's ends at
// about 5m, sketchd's at 5m; above 5.2m neither corrects).
func exactRange(s *Sketch) bool {
	s.Compact()
	if !s.normal || s.data == nil {
		return true
	}
	if _, lc := s.estimate(); lc || s.p > hllbias.MaxPrecision {
		return true
	}
	zeros, sum := 0, 0.0
	for _, r := range s.data {
		sum += 1 / float64(uint64(1)<<r)
		if r == 0 {
			zeros++
		}
	}
	m := float64(int(1) << s.p)
	return alpha(s.p)*m*m/sum > 5.2*m
}

// estimateErr is the largest relative difference seen in the
// bias-corrected range, reported by the tests that compare estimates.
var estimateErr float64

// withinTolerance: estimates of the bias-corrected range agree within
// estimateTolerance, or differ by one (the rounding of two nearly equal
// estimates, which at a few dozen values is more than the tolerance).
func withinTolerance(got, lib int64) bool {
	diff := math.Abs(float64(got - lib))
	return diff <= 1 || diff <= estimateTolerance*float64(lib)
}

func sameAsJava(tb testing.TB, what string, s *Sketch, j javaZeta) {
	tb.Helper()
	if got := s.AppendBinary(nil); !bytes.Equal(got, j.bytes) {
		tb.Errorf("%s: bytes\n got %.120x (%d)\nwant %.120x (%d)", what, got, len(got), j.bytes, len(j.bytes))
	}
	if s.NumValues() != j.numValues || s.p != j.p || s.sp != j.sp {
		tb.Errorf("%s: num_values %d p %d sp %d, Java %d %d %d", what, s.NumValues(), s.p, s.sp, j.numValues, j.p, j.sp)
	}
	got := s.Estimate()
	if exactRange(s) {
		if got != j.estimate {
			tb.Errorf("%s: estimate %d, Java %d (%s, closed form)", what, got, j.estimate, s.Representation())
		}
		return
	}
	d := math.Abs(float64(got-j.estimate)) / float64(j.estimate)
	estimateErr = max(estimateErr, d)
	if !withinTolerance(got, j.estimate) {
		tb.Errorf("%s: estimate %d, Java %d: %.3g%% apart, more than %.3g%%", what, got, j.estimate, 100*d, 100*estimateTolerance)
	}
}

type zetaBuild struct {
	p      Params
	sp     int // as the Java builder takes it: -1 default, 0 none
	lo, hi int64
	reps   int
	strs   []string
}

func (b zetaBuild) name() string {
	kind := "longs " + strconv.FormatInt(b.hi-b.lo, 10)
	if b.strs != nil {
		kind = "strings " + strconv.Itoa(len(b.strs))
	}
	return b.p.String() + " " + kind + " x" + strconv.Itoa(b.reps)
}

func (b zetaBuild) sketch(tb testing.TB) *Sketch {
	s, err := New(b.p)
	if err != nil {
		tb.Fatal(err)
	}
	if b.strs != nil {
		s.SetType(TypeString)
	} else {
		s.SetType(TypeLong)
	}
	for range b.reps {
		for v := b.lo; v < b.hi; v++ {
			if err := s.AddInt(v); err != nil {
				tb.Fatal(err)
			}
		}
		for _, v := range b.strs {
			if err := s.AddString(v); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return s
}

func (b zetaBuild) args() []string {
	kind, strs := "longs", "-"
	if b.strs != nil {
		kind = "strings"
		if len(b.strs) > 0 {
			h := make([]string, len(b.strs))
			for i, s := range b.strs {
				h[i] = "x" + hex.EncodeToString([]byte(s))
			}
			strs = strings.Join(h, ",")
		}
	}
	sp := b.sp
	if sp == -1 && b.p.Precision+SparseDelta > MaxSparsePrecision {
		// ZetaSketch 0.1.0's builder does not cap the default at 25.
		sp = MaxSparsePrecision
	}
	return []string{"zeta_build", strconv.Itoa(b.p.Precision), strconv.Itoa(sp), kind,
		strconv.FormatInt(b.lo, 10), strconv.FormatInt(b.hi, 10), strconv.Itoa(b.reps), strs}
}

func randomStrings(rng *rand.Rand, n int) []string {
	out := make([]string, n)
	alphabet := []rune("abcxyz019-_éß日本語🙂")
	for i := range out {
		r := make([]rune, rng.IntN(40))
		for k := range r {
			r[k] = alphabet[rng.IntN(len(alphabet))]
		}
		out[i] = string(r)
	}
	return out
}

// zetaBuilds are fixed cases through both representations, value types
// and sparse precisions, and random ones (precision 10 to 20, empty to a
// million values) from a logged seed.
func zetaBuilds(t *testing.T) []zetaBuild {
	seed := time.Now().UnixNano()
	t.Logf("random cases from seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 24))
	var out []zetaBuild
	for _, n := range []int64{0, 1, 5, 300, 3000, 20_000, 100_000, 1_000_000} {
		out = append(out, zetaBuild{p: DefaultParams(), sp: -1, hi: n, reps: 1})
	}
	out = append(out,
		zetaBuild{p: Params{10, 0}, sp: 0, hi: 500, reps: 1},
		zetaBuild{p: Params{10, 0}, sp: 0, hi: 0, reps: 1},
		zetaBuild{p: Params{12, 12}, sp: 12, hi: 2000, reps: 1},
		zetaBuild{p: Params{12, 25}, sp: 25, hi: 2000, reps: 1},
		zetaBuild{p: ParamsFor(24), sp: -1, hi: 100_000, reps: 1},
		zetaBuild{p: ParamsFor(14), sp: -1, lo: -1000, hi: 1000, reps: 3},
		zetaBuild{p: ParamsFor(11), sp: -1, reps: 2, strs: []string{"", "é", "日本語", "user-1", "user-1", strings.Repeat("x", 33), strings.Repeat("y", 65), strings.Repeat("z", 200)}},
		zetaBuild{p: ParamsFor(10), sp: -1, reps: 1, strs: randomStrings(rng, 3000)},
		zetaBuild{p: ParamsFor(15), sp: -1, reps: 1, strs: []string{}},
	)
	for range 10 {
		p := MinPrecision + rng.IntN(11)
		sp := -1
		params := ParamsFor(p)
		if rng.IntN(3) == 0 {
			sp = p + rng.IntN(MaxSparsePrecision-p+1)
			params.SparsePrecision = sp
		}
		n := int64(math.Pow(10, rng.Float64()*6))
		lo := rng.Int64N(1<<40) - 1<<39
		out = append(out, zetaBuild{p: params, sp: sp, lo: lo, hi: lo + n, reps: 1 + rng.IntN(2)})
	}
	return out
}

// TestJavaInterop: equal bytes from the same values; each side reads the
// other's bytes.
func TestJavaInterop(t *testing.T) {
	jvm := java.Get(t)
	for _, b := range zetaBuilds(t) {
		ours := b.sketch(t)
		j := parseJavaZeta(t, jvm.Call(t, b.args()...))
		sameAsJava(t, b.name()+": built here vs Java", ours, j)
		d, err := Decode(j.bytes)
		if err != nil {
			t.Errorf("%s: Decode(Java's %.48x): %v", b.name(), j.bytes, err)
			continue
		}
		sameAsJava(t, b.name()+": Java's bytes decoded here", d, j)
		r := parseJavaZeta(t, jvm.Call(t, "zeta_read", hex.EncodeToString(ours.AppendBinary(nil))))
		sameAsJava(t, b.name()+": our bytes read by Java", ours, r)
	}
	t.Logf("largest estimate difference in the bias-corrected range: %.3g%%", 100*estimateErr)
}

// TestJavaHash: Fingerprint2011 equals ZetaSketch's hash for every length
// through each of its three branches (0-32, 33-64, longer).
func TestJavaHash(t *testing.T) {
	jvm := java.Get(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for n := range 300 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		arg := "-"
		if n > 0 {
			arg = hex.EncodeToString(b)
		}
		want, err := strconv.ParseInt(jvm.Call(t, "zeta_hash", arg)[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := Fingerprint2011(b); got != uint64(want) {
			t.Errorf("Fingerprint2011(%x) = %#x, Java %#x", b, got, uint64(want))
		}
	}
}

// TestJavaUnion: ZetaSketch's unions of our bytes equal ours, mixed
// precisions and representations included, and both refuse the same
// unions.
func TestJavaUnion(t *testing.T) {
	jvm := java.Get(t)
	parts := []zetaBuild{
		{p: ParamsFor(15), sp: -1, lo: 0, hi: 50_000, reps: 1},
		{p: ParamsFor(15), sp: -1, lo: 40_000, hi: 41_000, reps: 1},
		{p: ParamsFor(12), sp: -1, lo: 0, hi: 800, reps: 1},
		{p: ParamsFor(14), sp: -1, lo: 0, hi: 3, reps: 2},
		{p: Params{13, 0}, sp: 0, lo: 500, hi: 20_000, reps: 1},
		{p: Params{16, 18}, sp: 18, lo: 7, hi: 900, reps: 1},
		{p: ParamsFor(15), sp: -1, reps: 1, strs: []string{"a", "b"}},
		{p: ParamsFor(12), sp: -1, lo: 0, hi: 0, reps: 1},
	}
	sk := make([]*Sketch, len(parts))
	img := make([]string, len(parts))
	for i, b := range parts {
		sk[i] = b.sketch(t)
		img[i] = hex.EncodeToString(sk[i].AppendBinary(nil))
	}
	for _, idx := range [][]int{{0, 1}, {1, 0}, {0, 2}, {2, 0}, {0, 1, 2, 3}, {3, 2}, {4, 0}, {0, 4}, {1, 4, 2}, {5, 1}, {1, 5}, {2, 5}, {7, 0}, {0, 6}, {6, 0}} {
		args := []string{"zeta_union"}
		var in []*Sketch
		for _, i := range idx {
			args = append(args, img[i])
			in = append(in, sk[i])
		}
		u, err := Union(in...)
		f, jerr := jvm.Try(args...)
		if jerr != nil && strings.Contains(jerr.Error(), "ArrayIndexOutOfBounds") {
			// ZetaSketch's normal sketch merging a sparse one of lower
			// precision keeps its old precision's encoding for the next
			// merge; the state it writes is right, so merging through
			// bytes, one pair at a time, gives the union it means.
			t.Logf("%s: ZetaSketch fails (%v); comparing with its merges one pair at a time", fmtInts(idx), jerr)
			acc := img[idx[0]]
			for _, i := range idx[1:] {
				f = jvm.Call(t, "zeta_union", acc, img[i])
				acc = f[0]
			}
			jerr = nil
		}
		name := "union of " + strconv.Itoa(len(in)) + " " + strings.Trim(strings.Join(strings.Fields(strings.Trim(strconv.Quote(strings.Trim(fmtInts(idx), "[]")), `"`)), ","), ",")
		switch {
		case err != nil && jerr != nil:
			if !errors.Is(err, ErrValueType) && !errors.Is(err, ErrPrecision) {
				t.Errorf("%s: %v (Java: %v)", name, err, jerr)
			}
			continue
		case err != nil || jerr != nil:
			t.Errorf("%s: error %v here, %v in Java", name, err, jerr)
			continue
		}
		sameAsJava(t, name, u, parseJavaZeta(t, f))
	}
}

func fmtInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, " ")
}

// TestJavaBiasRange measures sketchd's estimate against ZetaSketch's
// over the whole bias-corrected range of the precisions that have one
// (10..15 and one of 16..18 in each run): one sketch per precision, filled with random values up to
// 5.2·2^p, both estimators read the same bytes at every 2^p/8 values
// (equal registers, so only the estimators differ). Both must agree
// within estimateTolerance; the largest difference per precision is
// logged (docs/formats.md publishes it).
func TestJavaBiasRange(t *testing.T) {
	jvm := java.Get(t)
	seed := time.Now().UnixNano()
	t.Logf("values from seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 18))
	// Every precision to 15, and one of 16..18 (their sketches take
	// longest to fill; under the race detector, which slows the register
	// loops tenfold, read at a quarter of the points); docs/formats.md's
	// table ran them all.
	big := 16 + rng.IntN(hllbias.MaxPrecision-15)
	for p := MinPrecision; p <= hllbias.MaxPrecision; p++ {
		if p > 15 && p != big {
			continue
		}
		stride := 1 << p / 8
		if p > 15 && raceEnabled {
			stride *= 4
		}
		s, _ := New(Params{p, 0})
		s.SetType(TypeLong)
		m := 1 << p
		worst, worstN := 0.0, 0
		for n := 1; n <= m*52/10; n++ {
			s.AddHash(HashInt(rng.Int64()))
			if n%stride != 0 || n < m/2 {
				continue
			}
			j := parseJavaZeta(t, jvm.Call(t, "zeta_read", hex.EncodeToString(s.AppendBinary(nil))))
			got := s.Estimate()
			if exactRange(s) {
				if got != j.estimate {
					t.Errorf("p %d, %d values: estimate %d, Java %d (closed form)", p, n, got, j.estimate)
				}
				continue
			}
			d := math.Abs(float64(got-j.estimate)) / float64(j.estimate)
			if d > worst {
				worst, worstN = d, n
			}
			if !withinTolerance(got, j.estimate) {
				t.Errorf("%d values: estimate %d, %s %d: more than %.3g%% and one apart", n, got, "ZetaSketch", j.estimate, 100*estimateTolerance)
			}
		}
		t.Logf("precision %d: largest difference %.3g%% (at %d values, %.2f·2^p)", p, 100*worst, worstN, float64(worstN)/float64(m))
	}
}
