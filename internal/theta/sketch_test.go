package theta

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sketchd/sketchd/internal/theta/internal/equiv"
)

// TestEquivTablesGenerated: the committed tables are what the generator
// computes (go generate was run after any change to it).
func TestEquivTablesGenerated(t *testing.T) {
	lb, ub := equiv.Tables()
	if lb != lbEquiv || ub != ubEquiv {
		t.Error("equiv_table.go differs from internal/equiv.Tables(); run go generate ./internal/theta")
	}
}

func TestParams(t *testing.T) {
	for lgK := -1; lgK <= 28; lgK++ {
		_, err := New(Params{LgK: lgK})
		if ok := lgK >= MinLgK && lgK <= MaxLgK; ok != (err == nil) || (err != nil && !errors.Is(err, ErrParams)) {
			t.Errorf("New(lg_k %d) = %v", lgK, err)
		}
	}
}

// TestExactMode: below k distinct values the sketch counts exactly, ignores
// repeats and empty strings, and its bounds are the count.
func TestExactMode(t *testing.T) {
	s := mustNew(t, DefaultParams())
	s.AddString("")
	s.AddBytes(nil)
	if !s.IsEmpty() {
		t.Fatal("an empty string made the sketch non-empty")
	}
	for round := range 3 {
		for i := range 1000 {
			s.AddInt(int64(i))
			s.AddString("id-" + string(rune('a'+i%26)))
		}
		if s.Estimate() != 1026 || s.IsEstimationMode() {
			t.Fatalf("round %d: estimate %v, want exactly 1026", round, s.Estimate())
		}
	}
	for sd := 1; sd <= 3; sd++ {
		lb, _ := s.LowerBound(sd)
		ub, _ := s.UpperBound(sd)
		if lb != 1026 || ub != 1026 {
			t.Errorf("bounds at %d sd = %v, %v, want 1026", sd, lb, ub)
		}
	}
	if _, err := s.LowerBound(4); !errors.Is(err, ErrParams) {
		t.Errorf("LowerBound(4) = %v, want ErrParams", err)
	}
}

// TestQuickSelect: past 15/16 of the table the sketch keeps exactly the k
// smallest hashes and theta is the (k+1)-th, whatever the order of updates.
func TestQuickSelect(t *testing.T) {
	for _, lgK := range []int{4, 5, 8, 12} {
		p := Params{LgK: lgK}
		r := rand.New(rand.NewPCG(uint64(lgK), 1))
		ids := r.Perm(20 * p.K())
		s := mustNew(t, p)
		all := make([]uint64, 0, len(ids))
		for i, v := range ids {
			s.AddInt(int64(v))
			all = append(all, HashInt(int64(v)))
			if i+1 == p.MaxRetained()+1 { // the first rebuild
				sorted := slices.Sorted(slices.Values(all))
				if s.Retained() != p.K() || s.Theta64() != sorted[p.K()] {
					t.Fatalf("lg_k %d after the first rebuild: %v, want k retained and theta %#x", lgK, s, sorted[p.K()])
				}
				if got := s.Hashes(nil); !slices.Equal(got, sorted[:p.K()]) {
					t.Fatalf("lg_k %d: retained hashes are not the k smallest", lgK)
				}
			}
		}
		if s.Retained() < p.K() || s.Retained() > p.MaxRetained() {
			t.Errorf("lg_k %d: %d retained, want k..%d", lgK, s.Retained(), p.MaxRetained())
		}
		slices.Sort(all)
		if got := s.Hashes(nil); !slices.Equal(got, all[:len(got)]) || s.Theta64() <= all[len(got)-1] {
			t.Errorf("lg_k %d: retained hashes are not the smallest below theta", lgK)
		}
	}
}

// TestBoundsOrdered: for many counts and rates the bounds nest around the
// estimate and never go below the count.
func TestBoundsOrdered(t *testing.T) {
	for _, n := range []uint64{0, 1, 2, 3, 10, 50, 119, 120, 121, 500, 4096, 100000} {
		for _, theta := range []float64{1e-6, 1e-4, 0.001, 0.01, 0.02, 0.1, 0.3, 0.5, 0.9, 0.99999, 0.999999, 1} {
			est := float64(n) / theta
			prevLo, prevHi := est, est
			for sd := 1; sd <= 3; sd++ {
				lo, err := LowerBound(n, theta, sd)
				if err != nil {
					t.Fatal(err)
				}
				hi, _ := UpperBound(n, theta, sd)
				if lo > prevLo || hi < prevHi || lo < float64(n) {
					t.Errorf("n %d theta %v sd %d: bounds [%v, %v] do not nest in [%v, %v] above n", n, theta, sd, lo, hi, prevLo, prevHi)
				}
				prevLo, prevHi = lo, hi
			}
		}
	}
	for _, theta := range []float64{0, -1, 1.5} {
		if _, err := LowerBound(1, theta, 2); !errors.Is(err, ErrParams) {
			t.Errorf("LowerBound(theta %v) = %v, want ErrParams", theta, err)
		}
	}
}

func buildRange(tb testing.TB, lgK int, lo, hi int) *Sketch {
	s := mustNew(tb, Params{LgK: lgK})
	for v := lo; v < hi; v++ {
		s.AddInt(int64(v))
	}
	return s
}

// TestUnionProperties: the union is commutative, associative and
// idempotent, and equals the union of one sketch built from all the ids.
func TestUnionProperties(t *testing.T) {
	a := buildRange(t, 10, 0, 30000)
	b := buildRange(t, 12, 20000, 25000)
	c := buildRange(t, 10, 100000, 100500)
	union := func(xs ...*Sketch) []byte {
		u, _ := NewUnion(Params{LgK: 10})
		for _, x := range xs {
			u.Add(x)
		}
		return encode(t, u.Result())
	}
	want := union(buildRange(t, 10, 0, 30000), c)
	if all, _ := UnionAll(Params{LgK: 10}, c, b, a, c); !bytes.Equal(encode(t, all), want) {
		t.Error("UnionAll differs from Union")
	}
	for name, got := range map[string][]byte{
		"a b c":     union(a, b, c),
		"c b a":     union(c, b, a),
		"a a b c c": union(a, a, b, c, c),
		"(a b) c": func() []byte {
			ab := a.Clone()
			ab.Union(b)
			ab.Union(c)
			return encode(t, ab)
		}(),
		"a (b c)": func() []byte {
			bc := b.Clone()
			bc.Union(c)
			u, _ := NewUnion(Params{LgK: 10})
			u.Add(a)
			u.Add(bc)
			return encode(t, u.Result())
		}(),
	} {
		if !bytes.Equal(got, want) {
			t.Errorf("union %s differs from the union of one sketch of all ids", name)
		}
	}
	// In place, the receiver keeps its lg_k and the argument is unchanged.
	before := encode(t, c)
	x := buildRange(t, 12, 0, 100)
	x.Union(c)
	if x.Params().LgK != 12 || x.Estimate() != 600 || !bytes.Equal(encode(t, c), before) {
		t.Errorf("in-place union: %v, argument changed %t", x, !bytes.Equal(encode(t, c), before))
	}
}

// TestSetOperationsExact: in exact mode, intersection, A-not-B and Jaccard
// give the exact answers.
func TestSetOperationsExact(t *testing.T) {
	a := buildRange(t, 12, 0, 1000)
	b := buildRange(t, 12, 900, 1500)
	c := buildRange(t, 12, 950, 5000)
	in, err := Intersect(a, b, c)
	if err != nil || in.Estimate() != 50 || in.IsEstimationMode() {
		t.Errorf("Intersect(a, b, c) = %v, %v, want 50 exactly", in, err)
	}
	if d := AnotB(a, b); d.Estimate() != 900 {
		t.Errorf("AnotB(a, b) = %v, want 900", d.Estimate())
	}
	if d := AnotB(a, a.Clone()); !d.IsEmpty() {
		t.Errorf("AnotB(a, a) = %v, want empty", d)
	}
	if j := Jaccard(a, b); j.Estimate != 100.0/1500 || j.Lower != j.Estimate || j.Upper != j.Estimate {
		t.Errorf("Jaccard(a, b) = %+v, want exactly 1/15", j)
	}
	empty := mustNew(t, DefaultParams())
	if in, _ := Intersect(a, empty); !in.IsEmpty() {
		t.Errorf("Intersect with an empty sketch = %v, want empty", in)
	}
	if _, err := Intersect(); !errors.Is(err, ErrParams) {
		t.Errorf("Intersect() = %v, want ErrParams", err)
	}
}

// TestIntersectionBoundsCover: over repeated trials with different ids,
// the 2-sd bounds of a small-overlap intersection cover the truth in at
// least 90% of trials (they are nominally 95%).
func TestIntersectionBoundsCover(t *testing.T) {
	const trials = 200
	covered := 0
	for trial := range trials {
		off := trial * 1_000_000
		a := buildRange(t, 10, off, off+50000)
		b := buildRange(t, 10, off+45000, off+100000) // 5000 in common
		in, _ := Intersect(a, b)
		lo, _ := in.LowerBound(2)
		hi, _ := in.UpperBound(2)
		if lo <= 5000 && 5000 <= hi {
			covered++
		}
	}
	if covered < trials*90/100 {
		t.Errorf("2-sd bounds covered the truth in %d of %d trials", covered, trials)
	}
}

// TestCloneIndependent: updating a clone leaves the original alone, in both
// forms.
func TestCloneIndependent(t *testing.T) {
	s := buildRange(t, 8, 0, 5000)
	for _, form := range []*Sketch{s, func() *Sketch { d, _ := DecodeParams(encode(t, s), s.Params()); return d }()} {
		before := encode(t, form)
		c := form.Clone()
		for i := range 10000 {
			c.AddInt(int64(-i))
		}
		if !bytes.Equal(encode(t, form), before) {
			t.Error("updating a clone changed the original")
		}
	}
}

// TestUnionAllMatchesUnion: on random mixes of sketch sizes, forms and
// lg_k, the k-way merge gives the same sketch as the incremental union.
func TestUnionAllMatchesUnion(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 50 {
		lgK := 4 + r.IntN(8)
		in := make([]*Sketch, 1+r.IntN(12))
		for i := range in {
			s := mustNew(t, Params{LgK: 4 + r.IntN(10)})
			off := r.IntN(50000)
			for v := range r.IntN(30000) {
				s.AddInt(int64(off + v))
			}
			if r.IntN(2) == 0 {
				s.compact()
			}
			in[i] = s
		}
		u, _ := NewUnion(Params{LgK: lgK})
		for _, s := range in {
			u.Add(s)
		}
		all, err := UnionAll(Params{LgK: lgK}, in...)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(encode(t, all), encode(t, u.Result())) {
			t.Fatalf("trial %d: UnionAll %v, Union %v", trial, all, u.Result())
		}
	}
}

// TestSetOperationsFormIndependent: intersections and A-not-B give the same
// bytes whichever form (table or sorted) each operand is in.
func TestSetOperationsFormIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 30 {
		in := make([]*Sketch, 2+r.IntN(5))
		for i := range in {
			off := r.IntN(20000)
			in[i] = buildRange(t, 5+r.IntN(8), off, off+r.IntN(40000))
		}
		compact := make([]*Sketch, len(in))
		mixed := make([]*Sketch, len(in))
		for i, s := range in {
			compact[i] = s.Clone()
			compact[i].compact()
			mixed[i] = s
			if r.IntN(2) == 0 {
				mixed[i] = compact[i]
			}
		}
		want, _ := Intersect(compact...)
		got, _ := Intersect(mixed...)
		if !bytes.Equal(encode(t, got), encode(t, want)) {
			t.Fatalf("trial %d: Intersect differs between forms: %v vs %v", trial, got, want)
		}
		if !bytes.Equal(encode(t, AnotB(mixed[0], mixed[1])), encode(t, AnotB(compact[0], compact[1]))) {
			t.Fatalf("trial %d: AnotB differs between forms", trial)
		}
	}
}
