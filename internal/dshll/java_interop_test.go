package dshll

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/javatest"
)

// These tests check ds_hll sketches against Apache DataSketches' Java
// library (javatest pins the version), both ways, in one JVM per package
// run: sketches of the same ids have equal bytes (compact images; the
// HIP estimator makes them depend on the order, which both sides keep),
// estimates and bounds; each side reads the other's compact and
// updatable images to the same sketch; unions agree. Without a JDK and
// the jars they skip, unless SKETCHD_REQUIRE_JAVA=1 (set in CI).

var java javatest.Shared

type javaHLL struct {
	compact, updatable []byte
	estimate           float64
	lower, upper       [3]float64
	lgK                int
	mode               string
}

func parseJavaHLL(tb testing.TB, f []string, images int) javaHLL {
	tb.Helper()
	if len(f) != images+9 {
		tb.Fatalf("hll answer of %d fields: %q", len(f), f)
	}
	b := func(s string) []byte {
		if s == "-" {
			return nil
		}
		v, err := hex.DecodeString(s)
		if err != nil {
			tb.Fatal(err)
		}
		return v
	}
	num := func(s string) float64 {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			tb.Fatal(err)
		}
		return math.Float64frombits(uint64(v))
	}
	j := javaHLL{compact: b(f[0])}
	if images == 2 {
		j.updatable = b(f[1])
	}
	f = f[images:]
	j.estimate = num(f[0])
	for i := range 3 {
		j.lower[i], j.upper[i] = num(f[1+i]), num(f[4+i])
	}
	lg, err := strconv.Atoi(f[7])
	if err != nil {
		tb.Fatal(err)
	}
	j.lgK, j.mode = lg, f[8]
	return j
}

// setOrder sorts the coupons of a compact SET image, and the aux entries
// of a compact HLL_4 image: a hash table's slot order depends on how it
// was built (growing while updated, or filled from an image), in Java as
// here, so only built the same way are its images equal byte for byte;
// the entries are always the same.
func setOrder(img []byte) []byte {
	if len(img) < 8 || img[5]&flagCompact == 0 {
		return img
	}
	start := 0
	switch {
	case img[7]&3 == modeSet && len(img) >= setStart:
		start = setStart
	case img[7]&3 == modeHLL && img[7]>>2&3 == byte(HLL4) && len(img) >= hllStart:
		lgK := int(img[3])
		start = hllStart + 1<<lgK/2
		if start > len(img) {
			return img
		}
	default:
		return img
	}
	c := bytes.Clone(img)
	n := (len(c) - start) / 4
	v := make([]uint32, n)
	for i := range v {
		v[i] = binary.LittleEndian.Uint32(c[start+4*i:])
	}
	slices.Sort(v)
	for i, x := range v {
		binary.LittleEndian.PutUint32(c[start+4*i:], x)
	}
	return c
}

func sameAsJavaHLL(tb testing.TB, what string, s *Sketch, j javaHLL) {
	tb.Helper()
	if got, _ := s.MarshalBinary(); !bytes.Equal(setOrder(got), setOrder(j.compact)) {
		tb.Errorf("%s: compact image\n got %.96x\nwant %.96x", what, got, j.compact)
	}
	if s.Estimate() != j.estimate || s.Params().LgK != j.lgK || s.Mode() != j.mode {
		tb.Errorf("%s: estimate %v lg_k %d mode %s, Java %v %d %s", what, s.Estimate(), s.Params().LgK, s.Mode(), j.estimate, j.lgK, j.mode)
	}
	for sd := 1; sd <= 3; sd++ {
		lb, _ := s.LowerBound(sd)
		ub, _ := s.UpperBound(sd)
		if lb != j.lower[sd-1] || ub != j.upper[sd-1] {
			tb.Errorf("%s: bounds at %d sd [%v, %v], Java [%v, %v]", what, sd, lb, ub, j.lower[sd-1], j.upper[sd-1])
		}
	}
}

type hllBuild struct {
	p      Params
	lo, hi int64
	strs   []string
}

func (b hllBuild) name() string {
	return b.p.String() + " ids " + strconv.FormatInt(b.hi-b.lo, 10)
}

func (b hllBuild) sketch(tb testing.TB) *Sketch {
	s, err := New(b.p)
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

func (b hllBuild) args() []string {
	strs := "-"
	if len(b.strs) > 0 {
		h := make([]string, len(b.strs))
		for i, s := range b.strs {
			h[i] = "x" + hex.EncodeToString([]byte(s))
		}
		strs = strings.Join(h, ",")
	}
	return []string{"hll_build", strconv.Itoa(b.p.LgK), b.p.Type.String(), strconv.FormatInt(b.lo, 10), strconv.FormatInt(b.hi, 10), strs}
}

// hllBuilds are fixed cases through every mode and type, and random ones
// (lg_k 4 to 21, empty to a million ids) from a logged seed.
func hllBuilds(t *testing.T) []hllBuild {
	seed := time.Now().UnixNano()
	t.Logf("random cases from seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 21))
	var out []hllBuild
	for typ := HLL4; typ <= HLL8; typ++ {
		for _, n := range []int64{0, 1, 5, 40, 300, 5000, 100_000} {
			out = append(out, hllBuild{p: Params{LgK: 10, Type: typ}, lo: 0, hi: n})
		}
	}
	// The sketches TestPinnedBytes pins.
	out = append(out,
		hllBuild{p: Params{LgK: 12, Type: HLL4}, lo: 0, hi: 5},
		hllBuild{p: Params{LgK: 12, Type: HLL6}, lo: 0, hi: 200},
		hllBuild{p: Params{LgK: 10, Type: HLL4}, lo: 0, hi: 50_000},
		hllBuild{p: Params{LgK: 14, Type: HLL8}, lo: 0, hi: 100_000},
	)
	out = append(out,
		hllBuild{p: Params{LgK: 12, Type: HLL4}, lo: -50, hi: 50, strs: []string{"", "é", "日本語", "user-1", "user-1"}},
		hllBuild{p: Params{LgK: 21, Type: HLL8}, lo: 0, hi: 1_000_000},
		hllBuild{p: Params{LgK: 4, Type: HLL4}, lo: 0, hi: 1_000_000},
		// Aux entries whose slot order differs once an image is read
		// back (the table is rebuilt, not grown).
		hllBuild{p: Params{LgK: 12, Type: HLL4}, lo: 3_000_000, hi: 3_100_000},
	)
	for range 8 {
		n := int64(math.Pow(10, rng.Float64()*6))
		lo := rng.Int64N(1<<40) - 1<<39
		out = append(out, hllBuild{p: Params{LgK: MinLgK + rng.IntN(MaxLgK-MinLgK+1), Type: Type(rng.IntN(3))}, lo: lo, hi: lo + n})
	}
	return out
}

// TestJavaInterop: equal sketches from the same ids; each side reads the
// other's images.
func TestJavaInterop(t *testing.T) {
	jvm := java.Get(t)
	for _, b := range hllBuilds(t) {
		ours := b.sketch(t)
		j := parseJavaHLL(t, jvm.Call(t, b.args()...), 2)
		sameAsJavaHLL(t, b.name()+": built here vs Java", ours, j)
		// Built the same way, the images are equal byte for byte, SET
		// mode's slot order included.
		if got, _ := ours.MarshalBinary(); !bytes.Equal(got, j.compact) {
			t.Errorf("%s: compact image\n got %.96x\nwant %.96x", b.name(), got, j.compact)
		}
		if got, _ := ours.AppendUpdatable(nil); !bytes.Equal(got, j.updatable) {
			t.Errorf("%s: updatable image\n got %.96x\nwant %.96x", b.name(), got, j.updatable)
		}
		for _, img := range [][]byte{j.compact, j.updatable} {
			d, err := Decode(img)
			if err != nil {
				t.Errorf("%s: Decode(Java's image %.48x): %v", b.name(), img, err)
				continue
			}
			sameAsJavaHLL(t, b.name()+": Java's image decoded here", d, j)
		}
		up, err := ours.AppendUpdatable(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, img := range [][]byte{j.compact, up} {
			r := parseJavaHLL(t, jvm.Call(t, "hll_read", hex.EncodeToString(img)), 1)
			sameAsJavaHLL(t, b.name()+": our image read by Java", ours, r)
		}
	}
}

// TestJavaUnion: Java's unions of our images equal ours, mixed lg_k and
// types included.
func TestJavaUnion(t *testing.T) {
	jvm := java.Get(t)
	parts := []hllBuild{
		{p: Params{LgK: 12, Type: HLL4}, lo: 0, hi: 50_000},
		{p: Params{LgK: 12, Type: HLL8}, lo: 40_000, hi: 90_000},
		{p: Params{LgK: 10, Type: HLL6}, lo: 0, hi: 5000},
		{p: Params{LgK: 14, Type: HLL4}, lo: 0, hi: 3},
		{p: Params{LgK: 12, Type: HLL4}},
	}
	sk := make([]*Sketch, len(parts))
	img := make([]string, len(parts))
	for i, b := range parts {
		sk[i] = b.sketch(t)
		c, _ := sk[i].MarshalBinary()
		img[i] = hex.EncodeToString(c)
	}
	for _, c := range []struct {
		p   Params
		idx []int
	}{
		{Params{12, HLL4}, []int{0, 1}},
		{Params{12, HLL8}, []int{0, 1, 2}},
		{Params{14, HLL6}, []int{3, 4}},
		{Params{12, HLL4}, []int{3, 0}},
		{Params{11, HLL8}, []int{0, 1, 2, 3, 4}},
	} {
		args := []string{"hll_union", strconv.Itoa(c.p.LgK), c.p.Type.String()}
		var in []*Sketch
		for _, i := range c.idx {
			args = append(args, img[i])
			in = append(in, sk[i])
		}
		u, err := Union(c.p, in...)
		if err != nil {
			t.Fatal(err)
		}
		sameAsJavaHLL(t, "union at "+c.p.String()+" of "+strconv.Itoa(len(in)), u, parseJavaHLL(t, jvm.Call(t, args...), 1))
	}
}
