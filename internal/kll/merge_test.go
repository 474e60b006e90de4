package kll

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMergeWithinRankError merges sketches of parts of a stream, of
// different k, into one and checks it against the whole stream's truth.
func TestMergeWithinRankError(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var all []float64
	u, _ := New[float64](200)
	for part, k := range []int{200, 400, 200, 100, 200, 200, 300, 200} {
		s, _ := New[float64](k)
		for range 20_000 + part*10_000 {
			v := r.NormFloat64() * float64(part+1)
			s.Update(v)
			all = append(all, v)
		}
		// A decoded copy, as a store would hand it over.
		d, err := Decode[float64](s.AppendBinary(nil))
		if err != nil {
			t.Fatal(err)
		}
		u.Merge(d)
	}
	slices.Sort(all)
	if u.N() != uint64(len(all)) || u.Min() != all[0] || u.Max() != all[len(all)-1] || u.MinK() != 100 || u.K() != 200 {
		t.Fatalf("merged: n %d min %v max %v k %d min k %d", u.N(), u.Min(), u.Max(), u.K(), u.MinK())
	}
	v := u.View()
	worst := 0.0
	for i := 0; i <= 1000; i++ {
		q := float64(i) / 1000
		x, _ := v.Quantile(q, true)
		worst = max(worst, rankDistance(all, x, q))
	}
	t.Logf("worst rank error %.5f, stated %.5f (min k 100)", worst, u.NormalizedRankError(false))
	if worst > u.NormalizedRankError(false) {
		t.Errorf("merged rank error %v above %v", worst, u.NormalizedRankError(false))
	}
	if _, err := Decode[float64](u.AppendBinary(nil)); err != nil {
		t.Fatal(err)
	}
}

// TestMergeEdges: merging into an empty sketch gives the other's min and
// max; merging an empty one changes nothing; exact sketches merge
// exactly.
func TestMergeEdges(t *testing.T) {
	a, _ := New[int64](50)
	b, _ := New[int64](50)
	empty, _ := New[int64](50)
	for v := range int64(30) {
		b.Update(v * 3)
	}
	before := a.AppendBinary(nil)
	a.Merge(empty)
	if !slices.Equal(a.AppendBinary(nil), before) {
		t.Error("merging an empty sketch changed the receiver")
	}
	a.Merge(b)
	if a.N() != 30 || a.Min() != 0 || a.Max() != 87 || a.IsEstimationMode() {
		t.Errorf("merged into empty: %v", a)
	}
	v := a.View()
	for q := 0.0; q <= 1; q += 0.05 {
		x, _ := v.Quantile(q, true)
		want := int64(math.Max(0, math.Ceil(math.Round(q*30*1e7)/1e7)-1)) * 3
		if x != want {
			t.Errorf("exact quantile %v = %d, want %d", q, x, want)
		}
	}
	if _, err := empty.View().Quantile(0.5, true); err == nil {
		t.Error("a quantile of an empty sketch answered")
	}
}

// TestReplayIsExact: the same values added to the same state give the
// same bytes, in one batch or many, to a sketch or to its decoded copy: a
// log of values replays exactly.
func TestReplayIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	vals := make([]float64, 50_000)
	for i := range vals {
		vals[i] = r.ExpFloat64()
	}
	a, _ := New[float64](64)
	for _, v := range vals[:20_000] {
		a.Update(v)
	}
	b, err := Decode[float64](a.AppendBinary(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vals[20_000:] {
		a.Update(v)
		b.Update(v)
	}
	if !slices.Equal(a.AppendBinary(nil), b.AppendBinary(nil)) {
		t.Error("the decoded copy diverged from the original under the same values")
	}
}
