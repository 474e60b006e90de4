package airlift

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

	"github.com/sketchd/sketchd/internal/javatest"
)

// These tests check airlift_hll sketches against airlift's stats library
// (javatest pins the version) both ways, in one JVM per package run: the
// same ids give equal bytes, sparse and dense; each side reads the other's
// bytes to the same state (decoded here and written again, airlift's bytes
// come back byte for byte); estimates are equal wherever airlift's
// estimator is a closed form and within estimateTolerance in its
// bias-corrected range; unions agree, and refuse what airlift refuses.
// Without a JDK and the jars they skip, unless SKETCHD_REQUIRE_JAVA=1 (set
// in CI).

var java javatest.Shared

// estimateTolerance bounds |sketchd − airlift| / airlift's estimate where
// both correct the raw estimate's bias from their own simulated tables
// (docs/formats.md publishes the measured maximum).
const estimateTolerance = 0.005

type javaHLL struct {
	bytes    []byte
	estimate int64
}

func parseJava(tb testing.TB, f []string) javaHLL {
	tb.Helper()
	if len(f) != 2 {
		tb.Fatalf("airlift answer of %d fields: %.200q", len(f), f)
	}
	b, err := hex.DecodeString(f[0])
	if err != nil {
		tb.Fatal(err)
	}
	e, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		tb.Fatal(err)
	}
	return javaHLL{b, e}
}

// exactRange reports whether airlift's estimate of s is a closed form
// that sketchd computes the same way: sparse, linear counting, or a raw
// estimate above both libraries' bias tables (airlift's end between 5m
// and 5.13m, sketchd's at 5m; neither corrects past 5.2m).
func exactRange(s *Sketch) bool {
	if !s.dense {
		return true
	}
	m := 1 << s.p
	zeros, base, sum := 0, uint8(255), 0.0
	for _, v := range s.regs {
		base = min(base, v)
		if v == 0 {
			zeros++
		}
		sum += inversePowers[v]
	}
	if base == 0 && float64(zeros) > 0.4*float64(m) {
		return true
	}
	return alpha(s.p)*float64(m)*float64(m)/sum > 5.2*float64(m)
}

var estimateErr float64

// withinTolerance: estimates of the bias-corrected range agree within
// estimateTolerance, or differ by one (the rounding of two nearly equal
// estimates, which at a few dozen values is more than the tolerance).
func withinTolerance(got, lib int64) bool {
	diff := math.Abs(float64(got - lib))
	return diff <= 1 || diff <= estimateTolerance*float64(lib)
}

func sameAsJava(tb testing.TB, what string, s *Sketch, j javaHLL) {
	tb.Helper()
	if got := s.AppendBinary(nil); !bytes.Equal(got, j.bytes) {
		tb.Errorf("%s: bytes\n got %.120x (%d)\nwant %.120x (%d)", what, got, len(got), j.bytes, len(j.bytes))
	}
	if s.SizeBytes() != len(j.bytes) {
		tb.Errorf("%s: SizeBytes %d, airlift's bytes %d", what, s.SizeBytes(), len(j.bytes))
	}
	got := s.Estimate()
	if exactRange(s) {
		if got != j.estimate {
			tb.Errorf("%s: estimate %d, airlift %d (%s, closed form)", what, got, j.estimate, s.Representation())
		}
		return
	}
	d := math.Abs(float64(got-j.estimate)) / float64(j.estimate)
	estimateErr = max(estimateErr, d)
	if !withinTolerance(got, j.estimate) {
		tb.Errorf("%s: estimate %d, airlift %d: %.3g%% apart, more than %.3g%%", what, got, j.estimate, 100*d, 100*estimateTolerance)
	}
}

type build struct {
	p      int
	lo, hi int64
	strs   []string
}

func (b build) name() string {
	return "index bits " + strconv.Itoa(b.p) + ", ids " + strconv.FormatInt(b.hi-b.lo, 10) + ", strings " + strconv.Itoa(len(b.strs))
}

func (b build) sketch(tb testing.TB) *Sketch {
	s, err := New(Params{b.p})
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

func (b build) args() []string {
	strs := "-"
	if len(b.strs) > 0 {
		h := make([]string, len(b.strs))
		for i, s := range b.strs {
			h[i] = "x" + hex.EncodeToString([]byte(s))
		}
		strs = strings.Join(h, ",")
	}
	return []string{"airlift_build", strconv.Itoa(b.p), strconv.FormatInt(b.lo, 10), strconv.FormatInt(b.hi, 10), strs}
}

// builds are fixed cases through both representations, around the switch
// to dense, and random ones (4..16 index bits, empty to a million ids)
// from a logged seed.
func builds(t *testing.T) []build {
	seed := time.Now().UnixNano()
	t.Logf("random cases from seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 16))
	var out []build
	for _, n := range []int64{0, 1, 5, 300, 511, 512, 513, 600, 5000, 100_000, 1_000_000} {
		out = append(out, build{p: DefaultIndexBits, hi: n})
	}
	for p := MinIndexBits; p <= MaxIndexBits; p++ {
		// Just below and past where the sparse entries outgrow the dense
		// registers.
		n := int64(1<<(p-3)) + 4
		out = append(out, build{p: p, lo: -n, hi: n}, build{p: p, hi: n - 6})
	}
	out = append(out, build{p: 11, lo: -50, hi: 50, strs: []string{"", "é", "日本語", "user-1", "user-1", strings.Repeat("x", 100)}})
	for range 10 {
		n := int64(math.Pow(10, rng.Float64()*6))
		lo := rng.Int64N(1<<40) - 1<<39
		out = append(out, build{p: MinIndexBits + rng.IntN(MaxIndexBits-MinIndexBits+1), lo: lo, hi: lo + n})
	}
	return out
}

// TestJavaInterop: equal bytes from the same ids; each side reads the
// other's bytes.
func TestJavaInterop(t *testing.T) {
	jvm := java.Get(t)
	for _, b := range builds(t) {
		ours := b.sketch(t)
		j := parseJava(t, jvm.Call(t, b.args()...))
		sameAsJava(t, b.name()+": built here vs airlift", ours, j)
		d, err := Decode(j.bytes)
		if err != nil {
			t.Errorf("%s: Decode(airlift's %.48x): %v", b.name(), j.bytes, err)
			continue
		}
		sameAsJava(t, b.name()+": airlift's bytes decoded here", d, j)
		r := parseJava(t, jvm.Call(t, "airlift_read", hex.EncodeToString(ours.AppendBinary(nil))))
		sameAsJava(t, b.name()+": our bytes read by airlift", ours, r)
	}
	t.Logf("largest estimate difference in the bias-corrected range: %.3g%%", 100*estimateErr)
}

// TestJavaHash: HashInt and HashString equal airlift's Murmur3Hash128
// hash64 (what approx_set takes for BIGINT and VARCHAR).
func TestJavaHash(t *testing.T) {
	jvm := java.Get(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 8))
	num := func(s string) uint64 {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return uint64(v)
	}
	for _, v := range []int64{0, 1, -1, math.MaxInt64, math.MinInt64, rng.Int64()} {
		if got, want := HashInt(v), num(jvm.Call(t, "airlift_hash", "l"+strconv.FormatInt(v, 10))[0]); got != want {
			t.Errorf("HashInt(%d) = %#x, airlift %#x", v, got, want)
		}
	}
	for n := range 70 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		arg := "-"
		if n > 0 {
			arg = hex.EncodeToString(b)
		}
		if got, want := HashString(string(b)), num(jvm.Call(t, "airlift_hash", arg)[0]); got != want {
			t.Errorf("HashString(%x) = %#x, airlift %#x", b, got, want)
		}
	}
}

// TestJavaUnion: airlift's unions of our bytes equal ours, sparse and
// dense, and both refuse the same unions.
func TestJavaUnion(t *testing.T) {
	jvm := java.Get(t)
	parts := []build{
		{p: 12, lo: 0, hi: 50_000},
		{p: 12, lo: 40_000, hi: 40_300},
		{p: 12, lo: 0, hi: 200},
		{p: 10, lo: 0, hi: 100},
		{p: 10, lo: 0, hi: 20_000},
		{p: 12, lo: 150, hi: 480},
		{p: 12},
	}
	sk := make([]*Sketch, len(parts))
	img := make([]string, len(parts))
	for i, b := range parts {
		sk[i] = b.sketch(t)
		img[i] = hex.EncodeToString(sk[i].AppendBinary(nil))
	}
	compared := 0
	for _, idx := range [][]int{{0, 1}, {1, 0}, {1, 2}, {2, 5}, {5, 2, 1}, {2, 3}, {3, 2}, {0, 3}, {3, 4}, {4, 0}, {6, 0}, {0, 6}, {1, 2, 5, 0}} {
		args := []string{"airlift_union"}
		var in []*Sketch
		for _, i := range idx {
			args = append(args, img[i])
			in = append(in, sk[i])
		}
		name := "union of " + strings.Trim(strings.Join(strings.Fields(strings.Trim(strings.ReplaceAll(strconv.Quote(strings.Trim(strings.Join(strings.Fields(strings.Trim(fmtInts(idx), "[]")), " "), " ")), `"`, ""), " ")), ","), ",")
		u, err := Union(in...)
		f, jerr := jvm.Try(args...)
		switch {
		case err != nil && jerr != nil:
			if !errors.Is(err, ErrPrecision) {
				t.Errorf("%s: %v (airlift: %v)", name, err, jerr)
			}
			continue
		case err != nil || jerr != nil:
			t.Errorf("%s: error %v here, %v in airlift", name, err, jerr)
			continue
		}
		sameAsJava(t, name, u, parseJava(t, f))
		compared++
	}
	if compared < 9 {
		t.Errorf("only %d unions compared", compared)
	}
}

func fmtInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, " ")
}

// TestJavaBiasRange measures sketchd's estimate against airlift's over
// the whole bias-corrected range of every index bit count (4..16): one
// sketch each, filled with random values up to 5.2·2^p, both estimators
// read the same bytes at every 2^p/8 values (equal registers, so only the
// estimators differ). Both must agree within estimateTolerance; the
// largest difference per index bit count is logged (docs/formats.md
// publishes it).
func TestJavaBiasRange(t *testing.T) {
	jvm := java.Get(t)
	seed := time.Now().UnixNano()
	t.Logf("values from seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 18))
	for p := MinIndexBits; p <= MaxIndexBits; p++ {
		s, _ := New(Params{p})
		m := 1 << p
		step := max(m/8, 1)
		worst, worstN := 0.0, 0
		for n := 1; n <= m*52/10; n++ {
			s.AddHash(HashInt(rng.Int64()))
			if n%step != 0 || !s.dense {
				continue
			}
			j := parseJava(t, jvm.Call(t, "airlift_read", hex.EncodeToString(s.AppendBinary(nil))))
			got := s.Estimate()
			if exactRange(s) {
				if got != j.estimate {
					t.Errorf("index bits %d, %d values: estimate %d, airlift %d (closed form)", p, n, got, j.estimate)
				}
				continue
			}
			d := math.Abs(float64(got-j.estimate)) / float64(j.estimate)
			if d > worst {
				worst, worstN = d, n
			}
			if !withinTolerance(got, j.estimate) {
				t.Errorf("%d values: estimate %d, %s %d: more than %.3g%% and one apart", n, got, "airlift", j.estimate, 100*estimateTolerance)
			}
		}
		t.Logf("index bits %d: largest difference %.3g%% (at %d values, %.2f·2^p)", p, 100*worst, worstN, float64(worstN)/float64(m))
	}
}
