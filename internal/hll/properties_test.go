package hll

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// randomSketch builds a sketch at p from a log-uniform number of random
// hashes, so every representation occurs.
func randomSketch(tb testing.TB, r *rand.Rand, p Params) (*Sketch, []uint64) {
	tb.Helper()
	s := mustNew(tb, p)
	n := 0
	if r.IntN(10) != 0 {
		n = int(math.Exp(r.Float64() * math.Log(4*float64(p.NumRegisters()))))
	}
	hs := make([]uint64, n)
	for i := range hs {
		hs[i] = r.Uint64()
		s.AddHash(hs[i])
	}
	return s, hs
}

func randomTestParams(r *rand.Rand) Params {
	p := Params{
		Log2m:    MinLog2m + r.IntN(12), // up to 15 keeps the tests quick
		Regwidth: MinRegwidth + r.IntN(MaxRegwidth),
		Sparse:   r.IntN(2) == 0,
	}
	switch r.IntN(3) {
	case 0:
		p.Expthresh = AutoExpthresh
	case 1:
		p.Expthresh = 0
	default:
		p.Expthresh = 1 << r.IntN(14)
	}
	return p
}

func bytesOf(tb testing.TB, s *Sketch) []byte {
	tb.Helper()
	b, err := s.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func union(tb testing.TB, ss ...*Sketch) *Sketch {
	tb.Helper()
	u, err := Union(ss...)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

func TestUnionProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for i := range 300 {
		p := randomTestParams(r)
		a, ha := randomSketch(t, r, p)
		b, hb := randomSketch(t, r, p)
		c, hc := randomSketch(t, r, p)
		where := fmt.Sprintf("case %d (%v; %v %v %v)", i, p, a.Representation(), b.Representation(), c.Representation())
		ab, ba := bytesOf(t, union(t, a, b)), bytesOf(t, union(t, b, a))
		if !bytes.Equal(ab, ba) {
			t.Fatalf("%s: a∪b = %x, b∪a = %x", where, ab, ba)
		}
		left := bytesOf(t, union(t, union(t, a, b), c))
		right := bytesOf(t, union(t, a, union(t, b, c)))
		if !bytes.Equal(left, right) {
			t.Fatalf("%s: (a∪b)∪c = %x, a∪(b∪c) = %x", where, left, right)
		}
		if aa := bytesOf(t, union(t, a, a)); !bytes.Equal(aa, bytesOf(t, a)) {
			t.Fatalf("%s: a∪a = %x, a = %x", where, aa, bytesOf(t, a))
		}
		// The union equals the sketch of all the hashes, and the in-place
		// Union agrees with the function.
		all := mustNew(t, p)
		for _, h := range append(append(ha, hb...), hc...) {
			all.AddHash(h)
		}
		if !bytes.Equal(left, bytesOf(t, all)) {
			t.Fatalf("%s: union = %x, sketch of all hashes = %x", where, left, bytesOf(t, all))
		}
		// A union of three in one call: its registers, and the histogram
		// its estimate reads, are those of the sketch of all the hashes.
		if three := union(t, a, b, c); !bytes.Equal(bytesOf(t, three), left) || three.Estimate() != all.Estimate() {
			t.Fatalf("%s: Union(a, b, c) = %x estimating %v, want %x estimating %v", where, bytesOf(t, three), three.Estimate(), left, all.Estimate())
		}
		inPlace := a.Clone()
		for _, o := range []*Sketch{b, c} {
			if err := inPlace.Union(o); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(left, bytesOf(t, inPlace)) {
			t.Fatalf("%s: in-place union = %x, want %x", where, bytesOf(t, inPlace), left)
		}
	}
}

// TestFoldEqualsBuiltAtSmallerLog2m: folding p -> q gives the registers of
// the sketch built at q from the same hashes (regwidth 5 never saturates
// here), for every representation.
func TestFoldEqualsBuiltAtSmallerLog2m(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for i := range 300 {
		p := randomTestParams(r)
		p.Regwidth = 5
		q := MinLog2m + r.IntN(p.Log2m-MinLog2m+1)
		s, hs := randomSketch(t, r, p)
		pq := p
		pq.Log2m = q
		want := mustNew(t, pq)
		for _, h := range hs {
			want.AddHash(h)
		}
		got, err := s.Fold(q, 5)
		if err != nil {
			t.Fatal(err)
		}
		where := fmt.Sprintf("case %d: %v (%v, %d hashes) folded to %d", i, p, s.Representation(), len(hs), q)
		// The state is a function of the set of hashes, and EXPLICIT
		// sketches keep theirs, so the bytes agree, not just the registers.
		if g, w := bytesOf(t, got), bytesOf(t, want); !bytes.Equal(g, w) {
			t.Fatalf("%s:\n got %x\nwant %x", where, g, w)
		}
	}
}

// TestFoldRules checks the documented register arithmetic on single hashes.
func TestFoldRules(t *testing.T) {
	tests := []struct {
		name       string
		hash       uint64
		p, q, rw   int
		wantIndex  int
		wantValue  uint8
		foldedFrom uint8
	}{
		// index 0b10_1011 at p=6 with value 5; folded to q=4 it keeps
		// 0b1011 and the dropped bits 0b10 give value 1 + tz(0b10) = 2.
		{"dropped bits hold a one", 1<<10 | 0b10_1011, 6, 4, 5, 0b1011, 2, 5},
		// index 0b00_1011: dropped bits 0b00, so value 5 + (6-4).
		{"dropped bits zero", 1<<10 | 0b00_1011, 6, 4, 5, 0b1011, 7, 5},
		// value capped by the new regwidth.
		{"capped", 1 << 40, 4, 4, 2, 0, 3, 31},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNew(t, Params{Log2m: tt.p, Regwidth: 5, Expthresh: 0, Sparse: true})
			s.AddHash(tt.hash)
			if got := s.Registers(nil); got[tt.hash&(1<<tt.p-1)] != tt.foldedFrom {
				t.Fatalf("register before folding = %d, want %d", got[tt.hash&(1<<tt.p-1)], tt.foldedFrom)
			}
			f, err := s.Fold(tt.q, tt.rw)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Registers(nil)[tt.wantIndex]; got != tt.wantValue {
				t.Errorf("folded register %d = %d, want %d", tt.wantIndex, got, tt.wantValue)
			}
		})
	}
	s := mustNew(t, DefaultParams())
	if _, err := s.Fold(15, 5); err == nil {
		t.Error("Fold to a larger log2m succeeded")
	}
	if _, err := s.Fold(10, 8); err == nil {
		t.Error("Fold to regwidth 8 succeeded")
	}
}

func TestUnionParameters(t *testing.T) {
	a := mustNew(t, Params{Log2m: 12, Regwidth: 4, Expthresh: -1, Sparse: true})
	b := mustNew(t, Params{Log2m: 14, Regwidth: 6, Expthresh: 0, Sparse: false})
	r := rand.New(rand.NewPCG(3, 3))
	for range 5000 {
		a.AddHash(r.Uint64())
		b.AddHash(r.Uint64())
	}
	u := union(t, b, a)
	if got := u.Params(); got.Log2m != 12 || got.Regwidth != 6 || got.Expthresh != 0 || got.Sparse {
		t.Errorf("Union params = %v, want log2m 12, regwidth 6 and the first sketch's expthresh 0, sparse false", got)
	}
	// Widening loses nothing: every register of a survives unchanged.
	ua, ra := u.Registers(nil), a.Registers(nil)
	for i := range ra {
		if ua[i] < ra[i] {
			t.Fatalf("register %d = %d after widening, below %d", i, ua[i], ra[i])
		}
	}
	// In place, the receiver keeps its parameters and refuses to lose registers.
	if err := a.Union(b); err != nil {
		t.Fatalf("a.Union(larger log2m) = %v", err)
	}
	if a.Params().Log2m != 12 || a.Params().Regwidth != 4 {
		t.Errorf("in-place union changed params to %v", a.Params())
	}
	c := mustNew(t, Params{Log2m: 10, Regwidth: 5, Expthresh: -1, Sparse: true})
	c.AddHash(12345)
	snapshot := bytesOf(t, a)
	if err := a.Union(c); err == nil {
		t.Error("in-place union with fewer registers succeeded")
	}
	if !bytes.Equal(bytesOf(t, a), snapshot) {
		t.Error("failed union changed the receiver")
	}
	if _, err := Union(); err == nil {
		t.Error("Union() of nothing succeeded")
	}
}

func TestUndefined(t *testing.T) {
	u, err := Decode([]byte{0x10, 0x8b, 0x49})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(u.Estimate()) || u.Representation() != Undefined {
		t.Fatalf("UNDEFINED: Estimate() = %v, Representation() = %v", u.Estimate(), u.Representation())
	}
	if u.AddHash(42) {
		t.Error("adding to UNDEFINED changed it")
	}
	s := mustNew(t, Params{Log2m: 11, Regwidth: 5, Expthresh: 256, Sparse: true})
	s.AddHash(7)
	if err := s.Union(u); err != nil || s.Representation() != Undefined {
		t.Errorf("union with UNDEFINED = %v, %v; want UNDEFINED", s.Representation(), err)
	}
	if got := bytesOf(t, s); !bytes.Equal(got, []byte{0x10, 0x8b, 0x49}) {
		t.Errorf("UNDEFINED encodes as %x", got)
	}
}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for i := range 300 {
		p := randomTestParams(r)
		s, _ := randomSketch(t, r, p)
		if r.IntN(3) == 0 {
			s.SetMaxSparse(r.IntN(2 * p.NumRegisters()))
		}
		b := bytesOf(t, s)
		d, err := Decode(b)
		if err != nil {
			t.Fatalf("case %d: Decode(encode(%v)): %v", i, s.Representation(), err)
		}
		d.SetMaxSparse(s.maxSparse)
		if got := bytesOf(t, d); !bytes.Equal(got, b) {
			t.Fatalf("case %d: encode(decode(x)) = %x, want %x", i, got, b)
		}
		if d.Params() != s.Params() || !bytes.Equal(d.Registers(nil), s.Registers(nil)) || d.Estimate() != s.Estimate() && !math.IsNaN(s.Estimate()) {
			t.Fatalf("case %d: decoded sketch differs from the original", i)
		}
		if d.SizeBytes() != len(b) {
			t.Fatalf("case %d: SizeBytes() = %d, encoding has %d", i, d.SizeBytes(), len(b))
		}
	}
}

// TestRepresentationSequence follows one sketch through every promotion
// at PostgreSQL's automatic thresholds for the defaults.
func TestRepresentationSequence(t *testing.T) {
	s := mustNew(t, DefaultParams())
	if s.Representation() != Empty {
		t.Fatalf("new sketch is %v", s.Representation())
	}
	r := rand.New(rand.NewPCG(5, 5))
	seen := []Representation{Empty}
	for range 100000 {
		s.AddHash(r.Uint64())
		if rep := s.Representation(); rep != seen[len(seen)-1] {
			seen = append(seen, rep)
		}
	}
	if want := []Representation{Empty, Explicit, Sparse, Full}; fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("representations %v, want %v", seen, want)
	}
	if got, want := DefaultParams().ExplicitCapacity(), 1280; got != want {
		t.Errorf("ExplicitCapacity() = %d, want %d", got, want)
	}
}

func TestParamsValidate(t *testing.T) {
	bad := []Params{
		{Log2m: 3, Regwidth: 5, Expthresh: -1},
		{Log2m: 18, Regwidth: 5, Expthresh: -1},
		{Log2m: 14, Regwidth: 0, Expthresh: -1},
		{Log2m: 14, Regwidth: 8, Expthresh: -1},
		{Log2m: 14, Regwidth: 5, Expthresh: -2},
		{Log2m: 14, Regwidth: 5, Expthresh: 3},
		{Log2m: 14, Regwidth: 5, Expthresh: 16384},
	}
	for _, p := range bad {
		if err := p.Validate(); err == nil {
			t.Errorf("%v: Validate() = nil, want an error", p)
		}
		if _, err := New(p); err == nil {
			t.Errorf("New(%v) succeeded", p)
		}
	}
	for _, p := range []Params{DefaultParams(), {4, 1, 0, false}, {17, 7, 8192, true}, {10, 4, 1, true}} {
		if err := p.Validate(); err != nil {
			t.Errorf("%v: Validate() = %v", p, err)
		}
	}
}

// TestAddHashesEqualsAddHash checks the batch paths (AddHashes, AddAll)
// against adding one hash at a time, from every representation: the same
// bytes, and the hashes AddHashes reports as changing the sketch replay
// onto the old state to the same sketch.
func TestAddHashesEqualsAddHash(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for i := range 300 {
		p := randomTestParams(r)
		base, _ := randomSketch(t, r, p)
		hs := make([]uint64, int(math.Exp(r.Float64()*math.Log(2*float64(p.NumRegisters())))))
		for j := range hs {
			hs[j] = r.Uint64()
			if j > 0 && r.IntN(8) == 0 {
				hs[j] = hs[r.IntN(j)] // repeats change nothing the second time
			}
		}
		one := base.Clone()
		for _, h := range hs {
			one.AddHash(h)
		}
		batch := base.Clone()
		changed := batch.AddHashes(hs, nil)
		want := bytesOf(t, one)
		if got := bytesOf(t, batch); !bytes.Equal(got, want) {
			t.Fatalf("case %d (%v, %d hashes onto %v): AddHashes gives %x…, one by one %x…",
				i, p, len(hs), base.Representation(), got[:min(16, len(got))], want[:min(16, len(want))])
		}
		quiet := base.Clone()
		quiet.AddAll(hs)
		if got := bytesOf(t, quiet); !bytes.Equal(got, want) {
			t.Fatalf("case %d (%v, %d hashes onto %v): AddAll differs from adding one by one", i, p, len(hs), base.Representation())
		}
		replay := base.Clone()
		for _, h := range changed {
			replay.AddHash(h)
		}
		if got := bytesOf(t, replay); !bytes.Equal(got, want) {
			t.Fatalf("case %d (%v onto %v): replaying the %d changed hashes does not give the same sketch",
				i, p, base.Representation(), len(changed))
		}
	}
}

// TestRegisterEstimate: RegisterEstimate of two sketches' registers gives
// exactly Union(a, b).Estimate() when the union is in register form,
// whether the sketches are held sparse or dense, and MaxRegisters gives
// the union's registers; RegisterHistogram and the sketch's own
// Histogram count them, and HistogramEstimate gives the same number from
// the counts.
func TestRegisterEstimate(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	checked := 0
	for i := range 300 {
		p := randomTestParams(r)
		a, _ := randomSketch(t, r, p)
		b, _ := randomSketch(t, r, p)
		for _, s := range []*Sketch{a, b} {
			if r.IntN(3) == 0 { // fill the registers: held dense
				for range s.p.NumRegisters() {
					s.AddHash(r.Uint64())
				}
			}
		}
		u := union(t, a, b)
		if rep := u.Representation(); rep != Sparse && rep != Full {
			continue
		}
		checked++
		ra, rb := a.Registers(nil), b.Registers(nil)
		if got, want := RegisterEstimate(p, ra, rb), u.Estimate(); got != want {
			t.Fatalf("case %d (%v, %v into %v): RegisterEstimate %v, Union(a, b).Estimate() %v",
				i, p, b.Representation(), a.Representation(), got, want)
		}
		MaxRegisters(ra, rb)
		if want := u.Registers(nil); !bytes.Equal(ra, want) {
			t.Fatalf("case %d (%v): MaxRegisters differs from the union's registers", i, p)
		}
		if got, want := RegisterEstimate(p, ra, nil), u.Estimate(); got != want {
			t.Fatalf("case %d (%v): RegisterEstimate of the union's registers %v, want %v", i, p, got, want)
		}
		// The histogram counts the registers, and gives the same number.
		var hist [128]int
		RegisterHistogram(&hist, ra, nil)
		var want [128]int
		for _, v := range ra {
			want[v&127]++
		}
		if hist != want {
			t.Fatalf("case %d (%v): RegisterHistogram differs from counting the registers", i, p)
		}
		if got, want := HistogramEstimate(p, &hist), u.Estimate(); got != want {
			t.Fatalf("case %d (%v): HistogramEstimate %v, want %v", i, p, got, want)
		}
		// A sketch in register form gives the same histogram itself.
		var own [128]int
		if !u.Histogram(&own) || own != want {
			t.Fatalf("case %d (%v, %v): the sketch's own histogram differs from counting its registers", i, p, u.Representation())
		}
		// The same registers summed one by one: dyadic sums this short
		// are exact, so the estimate is the same number.
		sum, zeros := 0.0, 0
		for _, v := range ra {
			sum += math.Ldexp(1, -int(v))
			if v == 0 {
				zeros++
			}
		}
		if got, want := SumEstimate(p, sum, zeros), u.Estimate(); got != want {
			t.Fatalf("case %d (%v): SumEstimate of the union's registers %v, want %v", i, p, got, want)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d of 300 cases had a union in register form", checked)
	}
}

// TestDenseUnionMatchesRegisters checks unions of 2, 3 and 4 FULL
// sketches (Union and Sketch.Union) against the register-wise maximum
// computed one register at a time, and their histograms (which the
// estimate reads) against a recount.
func TestDenseUnionMatchesRegisters(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	p := Params{Log2m: 11, Regwidth: 5, Expthresh: -1, Sparse: true}
	var ss []*Sketch
	for range 4 {
		s, _ := New(p)
		for range 20000 {
			s.AddHash(r.Uint64())
		}
		if s.kind != kindDense {
			t.Fatal("want FULL sketches")
		}
		ss = append(ss, s)
	}
	check := func(name string, got *Sketch, parts []*Sketch) {
		t.Helper()
		for i := range got.regs {
			var want uint8
			for _, s := range parts {
				want = max(want, s.regs[i])
			}
			if got.regs[i] != want {
				t.Fatalf("%s: register %d = %d, want %d", name, i, got.regs[i], want)
			}
		}
		var hist [128]int
		for _, v := range got.regs {
			hist[v]++
		}
		if *got.hist != hist {
			t.Fatalf("%s: histogram differs from a recount", name)
		}
	}
	for n := 2; n <= 4; n++ {
		u, err := Union(ss[:n]...)
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("Union of %d", n), u, ss[:n])
	}
	// Merged into in place: a first merge, the same again (nothing
	// grows), then the others, and one of the parts merged back into a
	// union that holds it.
	into := ss[0].Clone()
	for i, step := range []struct{ with, parts int }{{1, 2}, {1, 2}, {2, 3}, {3, 4}, {0, 4}, {2, 4}} {
		if err := into.Union(ss[step.with]); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("Sketch.Union, merge %d", i+1), into, ss[:step.parts])
	}
	// A sketch a few registers above the union: only they move.
	near := into.Clone()
	for range 100 {
		near.AddHash(r.Uint64())
	}
	grown := 0
	for i, v := range near.regs {
		if v > into.regs[i] {
			grown++
		}
	}
	if grown == 0 || grown*mergeDense > len(into.regs) {
		t.Fatalf("%d registers grew, want a few", grown)
	}
	if err := into.Union(near); err != nil {
		t.Fatal(err)
	}
	check("Sketch.Union of a sketch a few registers above", into, append(ss[:4:4], near))
}

// TestHistogramOnlyInRegisterForm: EMPTY and EXPLICIT sketches have no
// registers to count, and leave the histogram as it was.
func TestHistogramOnlyInRegisterForm(t *testing.T) {
	s, err := New(DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	hist := [128]int{7: 1}
	if s.Histogram(&hist) || hist != [128]int{7: 1} {
		t.Errorf("EMPTY: Histogram changed it or reported registers")
	}
	s.AddHash(12345)
	if s.Representation() != Explicit || s.Histogram(&hist) || hist != [128]int{7: 1} {
		t.Errorf("%v: Histogram changed it or reported registers", s.Representation())
	}
}
