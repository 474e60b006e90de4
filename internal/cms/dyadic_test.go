package cms

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// latencies draws n values from a log-normal distribution (a latency in
// microseconds), clipped to [0, 2^bits).
func latencies(seed uint64, n, bits int) []int64 {
	r := rand.New(rand.NewPCG(seed, 99))
	out := make([]int64, n)
	for i := range out {
		v := math.Exp(8 + 1.5*r.NormFloat64())
		out[i] = min(int64(v), int64(1)<<bits-1)
	}
	return out
}

// TestRangesAgainstTruth adds simulated values and checks a thousand
// random ranges against the true counts: never below, and above by more
// than the stated bound no more often than the stated confidence allows
// (the expected number of misses, Σ(1 − confidence), bounds the observed).
func TestRangesAgainstTruth(t *testing.T) {
	for _, p := range []Params{
		{Width: 272, Depth: 5, DomainBits: 32},                      // ε = 0.01
		{Width: 2719, Depth: 3, DomainBits: 20, Conservative: true}, // ε = 0.001
		{Width: 100, Depth: 4, DomainBits: 16},
	} {
		s := mustNew(t, p)
		vals := latencies(uint64(p.Width), 200_000, p.DomainBits)
		for _, v := range vals {
			if err := s.AddInt(v, 1); err != nil {
				t.Fatal(err)
			}
		}
		sorted := slices.Clone(vals)
		slices.Sort(sorted)
		truth := func(lo, hi int64) uint64 {
			a := sort.Search(len(sorted), func(i int) bool { return sorted[i] >= lo })
			b := sort.Search(len(sorted), func(i int) bool { return sorted[i] > hi })
			return uint64(b - a)
		}
		r := rand.New(rand.NewPCG(1, 2))
		misses, expected := 0, 0.0
		for range 1000 {
			a, b := sorted[r.IntN(len(sorted))], sorted[r.IntN(len(sorted))]
			if r.IntN(4) == 0 {
				a = r.Int64N(int64(1) << p.DomainBits)
			}
			lo, hi := min(a, b), max(a, b)
			got, err := s.Range(uint64(lo), uint64(hi))
			if err != nil {
				t.Fatal(err)
			}
			want := truth(lo, hi)
			if got.Estimate < want {
				t.Fatalf("%+v: range [%d, %d] = %d, below the true %d", p, lo, hi, got.Estimate, want)
			}
			if float64(got.Estimate-want) > got.ErrorBound {
				misses++
			}
			expected += 1 - got.Confidence
			if got.Intervals > 2*p.DomainBits || got.Hashed > got.Intervals {
				t.Fatalf("%+v: range [%d, %d] summed %d intervals, %d hashed", p, lo, hi, got.Intervals, got.Hashed)
			}
		}
		t.Logf("%+v: %d of 1000 ranges over their bound, %.1f expected at most", p, misses, expected)
		if float64(misses) > expected {
			t.Errorf("%+v: %d ranges over their bound, more than the %.1f the confidence allows", p, misses, expected)
		}
		// The whole domain is N exactly, and a single value is its point
		// estimate.
		if all, _ := s.Range(0, uint64(1)<<p.DomainBits-1); all.Estimate != s.Total() || all.Hashed != 0 {
			t.Errorf("%+v: whole domain = %+v, want N = %d exactly", p, all, s.Total())
		}
		v := vals[0]
		if one, _ := s.Range(uint64(v), uint64(v)); one.Estimate != s.EstimateInt(v) || one.Intervals != 1 {
			t.Errorf("%+v: range [%d, %d] = %+v, point estimate %d", p, v, v, one, s.EstimateInt(v))
		}
	}
}

// TestQuantilesAgainstTruth checks quantiles found by binary search
// against the true ranks of the values they return.
func TestQuantilesAgainstTruth(t *testing.T) {
	p := Params{Width: 544, Depth: 5, DomainBits: 32} // ε = 0.005
	s := mustNew(t, p)
	vals := latencies(3, 300_000, p.DomainBits)
	for _, v := range vals {
		if err := s.AddInt(v, 1); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(vals)
	n := float64(len(vals))
	misses, expected := 0, 0.0
	for _, q := range []float64{0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1} {
		est, ok, err := s.Quantile(q)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		// The value's true rank range: values below it, and up to it.
		below := float64(sort.Search(len(vals), func(i int) bool { return vals[i] >= int64(est.Value) }))
		upTo := float64(sort.Search(len(vals), func(i int) bool { return vals[i] > int64(est.Value) }))
		target := math.Max(1, math.Ceil(q*n))
		dist := 0.0
		switch {
		case target < below+1:
			dist = below + 1 - target
		case target > upTo:
			dist = target - upTo
		}
		t.Logf("q=%v: value %d, true ranks %v..%v, target %v, rank error %v (stated %v)", q, est.Value, below+1, upTo, target, dist/n, est.RankError)
		if dist/n > est.RankError {
			misses++
		}
		expected += 1 - est.Confidence
	}
	if float64(misses) > expected {
		t.Errorf("%d quantiles outside their rank error, more than the %.2f the confidence allows", misses, expected)
	}
	empty := mustNew(t, p)
	if _, ok, err := empty.Quantile(0.5); ok || err != nil {
		t.Errorf("quantile of an empty sketch: %v, %v", ok, err)
	}
	if _, _, err := s.Quantile(1.5); !errors.Is(err, ErrParams) {
		t.Errorf("quantile 1.5: %v", err)
	}
}

// TestRangedLevelZero: a ranged sketch's point estimates and heavy
// hitters are those of a plain sketch of the same shape; its values must
// be integers in the domain, refused otherwise with nothing changed.
func TestRangedLevelZero(t *testing.T) {
	ranged := mustNew(t, Params{Width: 64, Depth: 3, TopK: 3, DomainBits: 10})
	plain := mustNew(t, Params{Width: 64, Depth: 3, TopK: 3})
	for i := range 2000 {
		v := int64(i*i) % 1000
		if err := ranged.AddInt(v, uint64(i%3+1)); err != nil {
			t.Fatal(err)
		}
		_ = plain.AddInt(v, uint64(i%3+1))
	}
	for v := range int64(1024) {
		if ranged.EstimateInt(v) != plain.EstimateInt(v) {
			t.Fatalf("estimate of %d differs", v)
		}
	}
	if !slices.Equal(ranged.Top(0), plain.Top(0)) {
		t.Errorf("top %v, plain %v", ranged.Top(0), plain.Top(0))
	}
	before := mustEncode(t, ranged)
	for _, bad := range []error{
		ranged.AddInt(1024, 1), ranged.AddInt(-1, 1), ranged.AddText([]byte("a"), 1),
		ranged.Add(TextID("a"), 1), ranged.AddBatch([]Item{{IntID(5), 1}, {IntID(5000), 1}}),
		ranged.CheckID(IntID(1 << 40)),
	} {
		if !errors.Is(bad, ErrItem) {
			t.Errorf("out-of-domain add: %v, want ErrItem", bad)
		}
	}
	if string(mustEncode(t, ranged)) != string(before) {
		t.Error("refused adds changed the sketch")
	}
	if _, err := plain.Range(0, 5); err == nil {
		t.Error("a range of a plain sketch answered")
	}
	for _, c := range [][2]uint64{{5, 4}, {0, 1024}} {
		if _, err := ranged.Range(c[0], c[1]); !errors.Is(err, ErrParams) {
			t.Errorf("range %v: %v", c, err)
		}
	}
}

// TestRangedUnionAndCodec: the union of plain ranged sketches is the
// sketch of both streams, byte for byte; encodings round-trip; other
// domains do not unite.
func TestRangedUnionAndCodec(t *testing.T) {
	p := Params{Width: 50, Depth: 2, DomainBits: 12}
	a, b, both := mustNew(t, p), mustNew(t, p), mustNew(t, p)
	for i, v := range latencies(5, 5000, 12) {
		if i%2 == 0 {
			_ = a.AddInt(v, 1)
		} else {
			_ = b.AddInt(v, 1)
		}
		_ = both.AddInt(v, 1)
	}
	if err := a.Union(b); err != nil {
		t.Fatal(err)
	}
	enc := mustEncode(t, a)
	if string(enc) != string(mustEncode(t, both)) {
		t.Error("a ∪ b differs from the sketch of both streams")
	}
	if enc[0] != 0xC2 || enc[17] != 12 {
		t.Errorf("encoding starts % x", enc[:18])
	}
	d := roundTrip(t, enc)
	if d.Params() != p {
		t.Errorf("decoded params %+v", d.Params())
	}
	r1, _ := a.Range(100, 3000)
	r2, _ := d.Range(100, 3000)
	if r1 != r2 {
		t.Errorf("decoded range %+v, want %+v", r2, r1)
	}
	if err := a.Union(mustNew(t, Params{Width: 50, Depth: 2, DomainBits: 13})); !errors.Is(err, ErrIncompatible) {
		t.Errorf("union of other domains: %v", err)
	}
	if err := a.Union(mustNew(t, Params{Width: 50, Depth: 2})); !errors.Is(err, ErrIncompatible) {
		t.Errorf("union with a plain sketch: %v", err)
	}
	// A plain sketch still encodes as version 1.
	if b := mustEncode(t, mustNew(t, Params{Width: 3, Depth: 1})); b[0] != 0xC1 || len(b) != 17+3+2 {
		t.Errorf("plain encoding % x", b)
	}
}

// TestRangedLayout checks a small ranged encoding byte by byte against
// doc.go: domain bits 2, width 1, depth 1: level 0 (1 counter), level 1
// exact (2^1 = 2 counters, more than width·depth = 1? no: 2 > 1, so
// hashed: 1 counter).
func TestRangedLayout(t *testing.T) {
	s := mustNew(t, Params{Width: 2, Depth: 1, DomainBits: 2})
	_ = s.AddInt(3, 5)
	_ = s.AddInt(0, 1)
	// Level 1 has 2^(2-1) = 2 intervals, within width·depth = 2: exact,
	// value 3 in interval 1, value 0 in interval 0.
	b := mustEncode(t, s)
	col3, col0 := columnOf(3, 2), columnOf(0, 2)
	lvl0 := []uint64{0, 0}
	lvl0[col3] += 5
	lvl0[col0] += 1
	want := cat(header(versionRanged, 0, 1, 2, 0, 6), []byte{2}, uv(lvl0...), uv(1, 5), u16(0))
	if string(b) != string(want) {
		t.Errorf("encoding\n got % x\nwant % x", b, want)
	}
}

// columnOf is the level-0 column of an int id in a one-row sketch.
func columnOf(v int64, width int) int {
	s, _ := New(Params{Width: width, Depth: 1})
	_ = s.AddInt(v, 1)
	return slices.Index(s.counters, 1)
}

func rangedMalformed() []struct {
	name string
	b    []byte
	want error
} {
	// Domain bits 2, width 2, depth 1: level 1 exact with 2 counters.
	good := func(n uint64, l0, l1 []uint64) []byte {
		return cat(header(versionRanged, 0, 1, 2, 0, n), []byte{2}, uv(l0...), uv(l1...), u16(0))
	}
	return []struct {
		name string
		b    []byte
		want error
	}{
		{"v2 header cut", header(versionRanged, 0, 1, 2, 0, 0), ErrTooShort},
		{"v2 domain 0", cat(header(versionRanged, 0, 1, 2, 0, 0), []byte{0}, uv(0, 0), u16(0)), ErrParams},
		{"v2 domain 64", cat(header(versionRanged, 0, 1, 2, 0, 0), []byte{64}, uv(0, 0), u16(0)), ErrParams},
		{"v2 too many counters", cat(header(versionRanged, 0, 32, 1<<17, 0, 0), []byte{40}, u16(0)), ErrParams},
		{"v2 huge shape, tiny input", cat(header(versionRanged, 0, 1, 1<<16, 0, 0), []byte{40}, []byte{0, 0}), ErrTooShort},
		{"v2 exact level short of N", good(6, []uint64{5, 1}, []uint64{1, 4}), ErrCorrupt},
		{"v2 exact level above N", good(6, []uint64{5, 1}, []uint64{3, 5}), ErrCorrupt},
		{"v2 level cut", good(6, []uint64{5, 1}, []uint64{1, 5})[:18+2+1], ErrTooShort},
		{"v2 hashed level row short", cat(header(versionRanged, 0, 1, 1, 0, 6), []byte{3}, uv(6), uv(5), uv(6), u16(0)), ErrCorrupt},
	}
}

func TestRangedDecodeRejects(t *testing.T) {
	for _, tc := range rangedMalformed() {
		s, err := Decode(tc.b)
		if !errors.Is(err, tc.want) || s != nil {
			t.Errorf("%s: Decode(% x) = %v, want %v", tc.name, tc.b, err, tc.want)
		}
		if n := sentinels(err); n != 1 {
			t.Errorf("%s: error %q wraps %d sentinels", tc.name, err, n)
		}
	}
	// The good shape of those cases decodes.
	if _, err := Decode(cat(header(versionRanged, 0, 1, 2, 0, 6), []byte{2}, uv(5, 1), uv(1, 5), u16(0))); err != nil {
		t.Errorf("good ranged bytes: %v", err)
	}
}
