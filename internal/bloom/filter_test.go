package bloom

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// TestRateAndNoFalseNegatives fills filters made for n items at rate p
// with n random items and checks, against the truth of what was added:
// every added item is found (no false negatives), re-adding one never
// reports it new, and a million items never added are found at a
// measured rate within the stated p.
func TestRateAndNoFalseNegatives(t *testing.T) {
	for _, c := range []struct {
		n int64
		p float64
	}{{1_000_000, 0.01}, {100_000, 0.001}, {20_000, 0.05}, {300_000, 0.1}, {1_000, 0.01}, {50_000, 0.0001}} {
		p, err := ParamsFor(c.n, c.p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := New(p)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(uint64(c.n), 1))
		added := make([]uint64, c.n)
		seenFirst := 0 // first adds reported not new: false positives
		for i := range added {
			added[i] = r.Uint64()
			if !f.Add(added[i]) {
				seenFirst++
			}
		}
		for i, h := range added {
			if !f.Contains(h) {
				t.Fatalf("n=%d p=%v: item %d (%#x) was added but is not found", c.n, c.p, i, h)
			}
			if f.Add(h) {
				t.Fatalf("n=%d p=%v: item %d (%#x) added again is reported new", c.n, c.p, i, h)
			}
		}
		absent := rand.New(rand.NewPCG(uint64(c.n), 2))
		const checks = 1_000_000
		fp := 0
		for range checks {
			if f.Contains(absent.Uint64()) {
				fp++
			}
		}
		measured := float64(fp) / checks
		t.Logf("n=%d p=%v: %d bits, %d hashes; measured rate %.6g, the filter's own %.6g, first adds seen %d", c.n, c.p, p.Bits, p.Hashes, measured, f.Rate(), seenFirst)
		if measured > c.p {
			t.Errorf("n=%d p=%v: measured false-positive rate %v over %d checks, above the stated %v", c.n, c.p, measured, checks, c.p)
		}
		if f.Rate() > c.p {
			t.Errorf("n=%d p=%v: the filter's rate (X/m)^k = %v, above the stated %v", c.n, c.p, f.Rate(), c.p)
		}
		// A first add reported "seen" is a false positive against the
		// filter as it was then, whose rate was at most the final one.
		if limit := f.Rate()*float64(c.n) + 4*math.Sqrt(f.Rate()*float64(c.n)) + 1; float64(seenFirst) > limit {
			t.Errorf("n=%d p=%v: %d first adds reported seen, more than %v", c.n, c.p, seenFirst, limit)
		}
		if est := f.EstimatedItems(); math.Abs(est-float64(c.n)) > 0.03*float64(c.n)+10 {
			t.Errorf("n=%d p=%v: estimated items %v", c.n, c.p, est)
		}
	}
}

// TestParamsFor checks the sizing rule: the chosen bits meet the rule
// (rate at most 0.97·p at a fill three deviations high) and 64 bits fewer
// would not; the rate of an ideal filter with n items is below p; the
// limit is refused with a message that names it.
func TestParamsFor(t *testing.T) {
	for _, c := range []struct {
		n int64
		p float64
	}{{1, 0.5}, {10, 0.01}, {1000, 0.001}, {1_000_000, 0.01}, {3_000_000, 1e-6}, {123_456, 0.0314}} {
		p, err := ParamsFor(c.n, c.p)
		if err != nil {
			t.Fatalf("ParamsFor(%d, %v): %v", c.n, c.p, err)
		}
		if p.Bits%64 != 0 || p.ExpectedItems != c.n || p.FPP != c.p {
			t.Errorf("ParamsFor(%d, %v) = %+v", c.n, c.p, p)
		}
		if r := highRate(float64(p.Bits), float64(c.n), p.Hashes); r > margin*c.p {
			t.Errorf("ParamsFor(%d, %v) = %+v: high rate %v above %v", c.n, c.p, p, r, margin*c.p)
		}
		if fewer := float64(p.Bits - 64); fewer >= MinBits && highRate(fewer, float64(c.n), p.Hashes) <= margin*c.p {
			t.Errorf("ParamsFor(%d, %v) = %+v: %v bits would do", c.n, c.p, p, fewer)
		}
		if r := p.RateAt(float64(c.n)); r > c.p {
			t.Errorf("ParamsFor(%d, %v): rate at n %v", c.n, c.p, r)
		}
		kOpt := math.Log(1/c.p) / math.Ln2
		if float64(p.Hashes) < math.Floor(kOpt) || float64(p.Hashes) > math.Floor(kOpt)+1 {
			t.Errorf("ParamsFor(%d, %v): %d hashes, optimum %v", c.n, c.p, p.Hashes, kOpt)
		}
	}
	for _, c := range []struct {
		n    int64
		p    float64
		want string
	}{
		{0, 0.01, "expected items 0 less than 1"},
		{100, 0, "false-positive rate 0 not in"},
		{100, 0.6, "false-positive rate 0.6 not in"},
		{100, math.NaN(), "false-positive rate NaN not in"},
		{20_000_000, 0.01, "need at least 191701168 bits, more than the limit of 134217728 bits (16 MiB); at that rate a filter holds at most 13899145 items"},
		{math.MaxInt64, 0.5, "more than the limit of 134217728 bits"},
	} {
		_, err := ParamsFor(c.n, c.p)
		if !errors.Is(err, ErrParams) || !contains(err.Error(), c.want) {
			t.Errorf("ParamsFor(%d, %v) = %v, want ErrParams saying %q", c.n, c.p, err, c.want)
		}
	}
	// The limit's message is right: that many items fit, one more do not.
	if _, err := ParamsFor(13899145, 0.01); err != nil {
		t.Errorf("ParamsFor(13899145, 0.01): %v", err)
	}
	if _, err := ParamsFor(13899146, 0.01); err == nil {
		t.Errorf("ParamsFor(13899146, 0.01) fits")
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		p    Params
		want string
	}{
		{Params{Bits: 0, Hashes: 3}, "bits 0 not in 64..134217728"},
		{Params{Bits: MaxBits + 64, Hashes: 3}, "bits 134217792 not in"},
		{Params{Bits: 100, Hashes: 3}, "not a multiple of 64"},
		{Params{Bits: 64, Hashes: 0}, "hashes 0 not in 1..32"},
		{Params{Bits: 64, Hashes: 33}, "hashes 33 not in 1..32"},
		{Params{Bits: 64, Hashes: 3, FPP: 0.1}, "expected items 0 less than 1"},
		{Params{Bits: 64, Hashes: 3, ExpectedItems: 5}, "false-positive rate 0 not in"},
	} {
		if err := c.p.Validate(); !errors.Is(err, ErrParams) || !contains(err.Error(), c.want) {
			t.Errorf("%+v.Validate() = %v, want %q", c.p, err, c.want)
		}
		if _, err := New(c.p); err == nil {
			t.Errorf("New(%+v) succeeded", c.p)
		}
	}
	if err := (Params{Bits: 64, Hashes: 1}).Validate(); err != nil {
		t.Error(err)
	}
}

// TestUnion checks that the union of two filters is the filter of both
// streams bit for bit, commutes, and that other shapes are refused with
// the receiver unchanged.
func TestUnion(t *testing.T) {
	p, _ := ParamsFor(10_000, 0.01)
	a, _ := New(p)
	b, _ := New(Params{Bits: p.Bits, Hashes: p.Hashes})
	both, _ := New(p)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 20_000 {
		h := r.Uint64()
		if i%3 == 0 {
			a.Add(h)
		} else {
			b.Add(h)
		}
		both.Add(h)
	}
	ab, ba := a.Clone(), b.Clone()
	if err := ab.Union(b); err != nil {
		t.Fatal(err)
	}
	if err := ba.Union(a); err != nil {
		t.Fatal(err)
	}
	if string(ab.AppendBinary(nil)) != string(both.AppendBinary(nil)) {
		t.Error("a ∪ b differs from the filter of both streams")
	}
	if ab.BitsSet() != ba.BitsSet() || ab.Params() != p || ba.Params().Stated() {
		t.Errorf("a ∪ b: %d bits, %+v; b ∪ a: %d bits, %+v", ab.BitsSet(), ab.Params(), ba.BitsSet(), ba.Params())
	}
	other, _ := New(Params{Bits: p.Bits + 64, Hashes: p.Hashes})
	other.Add(1)
	before := a.AppendBinary(nil)
	if err := a.Union(other); !errors.Is(err, ErrIncompatible) {
		t.Errorf("union of other shapes: %v", err)
	}
	if string(a.AppendBinary(nil)) != string(before) {
		t.Error("a failed union changed the receiver")
	}
}
