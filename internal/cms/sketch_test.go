package cms

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/murmur"
)

func mustNew(tb testing.TB, p Params) *Sketch {
	tb.Helper()
	s, err := New(p)
	if err != nil {
		tb.Fatalf("New(%+v): %v", p, err)
	}
	return s
}

func mustEncode(tb testing.TB, s *Sketch) []byte {
	tb.Helper()
	b, err := s.MarshalBinary()
	if err != nil {
		tb.Fatalf("MarshalBinary: %v", err)
	}
	return b
}

// exactCounts is the ground truth the sketches are checked against.
type exactCounts map[ID]uint64

func TestAddAndEstimate(t *testing.T) {
	for _, cons := range []bool{false, true} {
		s := mustNew(t, Params{Width: 1000, Depth: 4, Conservative: cons})
		if err := s.AddInt(7, 3); err != nil {
			t.Fatal(err)
		}
		if err := s.AddText([]byte("alice"), 2); err != nil {
			t.Fatal(err)
		}
		if err := s.Add(TextID("alice"), 1); err != nil {
			t.Fatal(err)
		}
		if err := s.Add(IntID(7), 1); err != nil {
			t.Fatal(err)
		}
		if got := s.EstimateInt(7); got != 4 {
			t.Errorf("conservative %v: EstimateInt(7) = %d, want 4", cons, got)
		}
		if got := s.Estimate(TextID("alice")); got != 3 {
			t.Errorf("conservative %v: Estimate(alice) = %d, want 3", cons, got)
		}
		if got := s.EstimateText([]byte("alice")); got != 3 {
			t.Errorf("conservative %v: EstimateText(alice) = %d, want 3", cons, got)
		}
		// The int 7 and the text "7" are different ids.
		if got := s.Estimate(TextID("7")); got != 0 {
			t.Errorf("conservative %v: Estimate(\"7\") = %d, want 0", cons, got)
		}
		if got := s.Total(); got != 7 {
			t.Errorf("conservative %v: Total() = %d, want 7", cons, got)
		}
		if got, want := s.ErrorBound(), 7*math.E/1000; math.Abs(got-want) > 1e-12 {
			t.Errorf("ErrorBound() = %v, want %v", got, want)
		}
		if got, want := s.Confidence(), 1-math.Exp(-4); got != want {
			t.Errorf("Confidence() = %v, want %v", got, want)
		}
	}
}

// The row columns are part of the stored format. Check them against the
// documented formula computed with big integers, and pin the values so a
// change of hash or scheme cannot go unnoticed.
func TestRowIndexes(t *testing.T) {
	const width, depth = 1000, 3
	s := mustNew(t, Params{Width: width, Depth: depth})
	if err := s.AddInt(42, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.AddText([]byte("user-42@example.com"), 2); err != nil {
		t.Fatal(err)
	}
	columns := func(h1, h2 uint64) []int {
		mod := new(big.Int).Lsh(big.NewInt(1), 64)
		var cols []int
		for i := range depth {
			x := new(big.Int).Mul(big.NewInt(int64(i)), new(big.Int).SetUint64(h2))
			x.Add(x, new(big.Int).SetUint64(h1))
			x.Mod(x, mod)
			x.Mul(x, big.NewInt(width))
			x.Div(x, mod)
			cols = append(cols, int(x.Int64()))
		}
		return cols
	}
	intCols := columns(murmur.Int64(42, 0))
	textCols := columns(murmur.String("user-42@example.com", 0))
	if want := []int{pinnedInt42[0], pinnedInt42[1], pinnedInt42[2]}; !slices.Equal(intCols, want) {
		t.Errorf("columns of 42 = %v, pinned %v", intCols, want)
	}
	if want := []int{pinnedText[0], pinnedText[1], pinnedText[2]}; !slices.Equal(textCols, want) {
		t.Errorf("columns of user-42@example.com = %v, pinned %v", textCols, want)
	}
	for i := range depth {
		want := make([]uint64, width)
		want[intCols[i]] += 1
		want[textCols[i]] += 2
		if got := s.counters[i*width : (i+1)*width]; !slices.Equal(got, want) {
			t.Errorf("row %d differs from the formula's columns %d and %d", i, intCols[i], textCols[i])
		}
	}
}

var (
	pinnedInt42 = [3]int{713, 857, 0}
	pinnedText  = [3]int{823, 548, 273}
)

func TestAddRejects(t *testing.T) {
	long := strings.Repeat("x", MaxTextLen+1)
	tests := []struct {
		name string
		add  func(s *Sketch) error
		want error
	}{
		{"int count 0", func(s *Sketch) error { return s.AddInt(1, 0) }, ErrItem},
		{"text count 0", func(s *Sketch) error { return s.AddText([]byte("a"), 0) }, ErrItem},
		{"id count 0", func(s *Sketch) error { return s.Add(IntID(1), 0) }, ErrItem},
		{"text too long", func(s *Sketch) error { return s.AddText([]byte(long), 1) }, ErrItem},
		{"id text too long", func(s *Sketch) error { return s.Add(TextID(long), 1) }, ErrItem},
		{"text not UTF-8", func(s *Sketch) error { return s.AddText([]byte{'a', 0xff}, 1) }, ErrItem},
		{"id text not UTF-8", func(s *Sketch) error { return s.Add(TextID("\xc3"), 1) }, ErrItem},
		{"int overflow", func(s *Sketch) error { return s.AddInt(1, math.MaxInt64-99) }, ErrOverflow},
		{"int count above MaxInt64", func(s *Sketch) error { return s.AddInt(1, math.MaxUint64) }, ErrOverflow},
		{"text overflow", func(s *Sketch) error { return s.AddText([]byte("a"), 1<<63) }, ErrOverflow},
		{"id overflow", func(s *Sketch) error { return s.Add(TextID("a"), 1<<63) }, ErrOverflow},
		{"batch count 0", func(s *Sketch) error {
			return s.AddBatch([]Item{{IntID(1), 1}, {TextID("b"), 0}})
		}, ErrItem},
		{"batch bad text", func(s *Sketch) error {
			return s.AddBatch([]Item{{IntID(1), 1}, {TextID(long), 1}})
		}, ErrItem},
		{"batch sum overflows N", func(s *Sketch) error {
			return s.AddBatch([]Item{{IntID(1), 1}, {IntID(2), math.MaxInt64 - 100}})
		}, ErrOverflow},
		{"batch sum overflows uint64", func(s *Sketch) error {
			return s.AddBatch([]Item{{IntID(1), 1 << 63}, {IntID(2), 1 << 63}, {IntID(3), 5}})
		}, ErrOverflow},
		{"check add", func(s *Sketch) error { return s.CheckAdd(math.MaxInt64 - 99) }, ErrOverflow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, cons := range []bool{false, true} {
				s := mustNew(t, Params{Width: 50, Depth: 3, Conservative: cons, TopK: 3})
				if err := s.AddBatch([]Item{{IntID(5), 60}, {TextID("z"), 40}}); err != nil {
					t.Fatal(err)
				}
				before := mustEncode(t, s)
				err := tc.add(s)
				if !errors.Is(err, tc.want) {
					t.Fatalf("conservative %v: error %v, want %v", cons, err, tc.want)
				}
				if after := mustEncode(t, s); !bytes.Equal(after, before) {
					t.Fatalf("conservative %v: sketch changed by a failed add", cons)
				}
			}
		})
	}
}

func TestAddUpToMaxTotal(t *testing.T) {
	s := mustNew(t, Params{Width: 8, Depth: 2, TopK: 2})
	if err := s.AddInt(1, math.MaxInt64-1); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckAdd(1); err != nil {
		t.Fatalf("CheckAdd(1) at N=MaxInt64-1: %v", err)
	}
	if err := s.AddText([]byte("last"), 1); err != nil {
		t.Fatal(err)
	}
	if s.Total() != math.MaxInt64 {
		t.Fatalf("Total() = %d, want %d", s.Total(), int64(math.MaxInt64))
	}
	if err := s.AddInt(2, 1); !errors.Is(err, ErrOverflow) {
		t.Fatalf("AddInt at N=MaxInt64 error %v, want ErrOverflow", err)
	}
	if err := s.CheckAdd(0); err != nil {
		t.Fatalf("CheckAdd(0) at N=MaxInt64: %v", err)
	}
	// It still encodes and decodes: the largest counters are valid.
	roundTrip(t, mustEncode(t, s))
}

func TestZeroSketch(t *testing.T) {
	var s Sketch
	if err := s.AddInt(1, 1); !errors.Is(err, ErrParams) {
		t.Errorf("AddInt on zero Sketch error %v, want ErrParams", err)
	}
	if err := s.AddBatch([]Item{{IntID(1), 1}}); !errors.Is(err, ErrParams) {
		t.Errorf("AddBatch on zero Sketch error %v, want ErrParams", err)
	}
	if got := s.EstimateInt(1); got != 0 {
		t.Errorf("EstimateInt on zero Sketch = %d, want 0", got)
	}
	if got := s.Top(0); got != nil {
		t.Errorf("Top on zero Sketch = %v, want nil", got)
	}
	if _, err := s.MarshalBinary(); !errors.Is(err, ErrParams) {
		t.Errorf("MarshalBinary of zero Sketch error %v, want ErrParams", err)
	}
	o := mustNew(t, Params{Width: 4, Depth: 1})
	if err := o.Union(&s); !errors.Is(err, ErrParams) {
		t.Errorf("Union with zero Sketch error %v, want ErrParams", err)
	}
}

// Weighted conservative update must raise every counter to min+count: the
// rule "increment only the counters equal to the minimum" would leave a
// counter at min+1 and undercount. Small widths force such collisions.
func TestConservativeWeightedNeverUndercounts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	plain := mustNew(t, Params{Width: 7, Depth: 4})
	cons := mustNew(t, Params{Width: 7, Depth: 4, Conservative: true})
	truth := exactCounts{}
	for range 5000 {
		id := IntID(int64(r.IntN(60)))
		c := uint64(1 + r.IntN(20))
		truth[id] += c
		if err := plain.Add(id, c); err != nil {
			t.Fatal(err)
		}
		if err := cons.Add(id, c); err != nil {
			t.Fatal(err)
		}
		if got := cons.Estimate(id); got < truth[id] {
			t.Fatalf("conservative Estimate(%v) = %d below true count %d", id, got, truth[id])
		}
	}
	for id, n := range truth {
		if got := cons.Estimate(id); got < n {
			t.Errorf("conservative Estimate(%v) = %d below true count %d", id, got, n)
		}
		if c, p := cons.Estimate(id), plain.Estimate(id); c > p {
			t.Errorf("Estimate(%v): conservative %d above plain %d", id, c, p)
		}
	}
	for i := range cons.counters {
		if cons.counters[i] > plain.counters[i] {
			t.Fatalf("counter %d: conservative %d above plain %d", i, cons.counters[i], plain.counters[i])
		}
	}
	roundTrip(t, mustEncode(t, cons))
}

func TestTopRanksAndBreaksTies(t *testing.T) {
	s := mustNew(t, Params{Width: 1 << 16, Depth: 4, TopK: 4})
	adds := []Item{
		{TextID("b"), 2}, {IntID(5), 2}, {TextID("a"), 2}, {IntID(-3), 2}, {IntID(9), 1},
	}
	if err := s.AddBatch(adds); err != nil {
		t.Fatal(err)
	}
	want := []Item{{IntID(-3), 2}, {IntID(5), 2}, {TextID("a"), 2}, {TextID("b"), 2}}
	if got := s.Top(0); !slices.Equal(got, want) {
		t.Fatalf("Top(0) = %v, want %v", got, want)
	}
	if got := s.Top(2); !slices.Equal(got, want[:2]) {
		t.Fatalf("Top(2) = %v, want %v", got, want[:2])
	}
	// 9 grows past the lightest (text "b") and evicts it.
	if err := s.AddInt(9, 5); err != nil {
		t.Fatal(err)
	}
	want = []Item{{IntID(9), 6}, {IntID(-3), 2}, {IntID(5), 2}, {TextID("a"), 2}}
	if got := s.Top(10); !slices.Equal(got, want) {
		t.Fatalf("Top(10) = %v, want %v", got, want)
	}
	if got := mustNew(t, Params{Width: 4, Depth: 1}).Top(3); got != nil {
		t.Fatalf("Top with TopK 0 = %v, want nil", got)
	}
}

// Text ids arrive in reusable buffers: a candidate must keep its own copy.
func TestTopCopiesText(t *testing.T) {
	s := mustNew(t, Params{Width: 1 << 10, Depth: 3, TopK: 2})
	buf := []byte("alice")
	if err := s.AddText(buf, 3); err != nil {
		t.Fatal(err)
	}
	copy(buf, "bobby")
	if err := s.AddText(buf, 1); err != nil {
		t.Fatal(err)
	}
	copy(buf, "xxxxx")
	want := []Item{{TextID("alice"), 3}, {TextID("bobby"), 1}}
	if got := s.Top(0); !slices.Equal(got, want) {
		t.Fatalf("Top(0) = %v, want %v", got, want)
	}
}

func TestUnionRejects(t *testing.T) {
	tests := []struct {
		name string
		a, b Params
		nb   uint64
		want error
	}{
		{"width differs", Params{Width: 100, Depth: 4}, Params{Width: 101, Depth: 4}, 1, ErrIncompatible},
		{"depth differs", Params{Width: 100, Depth: 4}, Params{Width: 100, Depth: 5}, 1, ErrIncompatible},
		{"both differ", Params{Width: 100, Depth: 4}, Params{Width: 50, Depth: 8}, 1, ErrIncompatible},
		{"total overflows", Params{Width: 100, Depth: 4, TopK: 3}, Params{Width: 100, Depth: 4, TopK: 3}, math.MaxInt64 - 10, ErrOverflow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := mustNew(t, tc.a), mustNew(t, tc.b)
			if err := a.AddInt(1, 20); err != nil {
				t.Fatal(err)
			}
			if err := b.AddInt(2, tc.nb); err != nil {
				t.Fatal(err)
			}
			before := mustEncode(t, a)
			if err := a.Union(b); !errors.Is(err, tc.want) {
				t.Fatalf("Union error %v, want %v", err, tc.want)
			}
			if after := mustEncode(t, a); !bytes.Equal(after, before) {
				t.Fatal("receiver changed by a failed union")
			}
		})
	}
}

func TestUnionCommutesAndAssociates(t *testing.T) {
	p := Params{Width: 64, Depth: 3, TopK: 5}
	r := rand.New(rand.NewPCG(5, 6))
	var parts [3]*Sketch
	for i := range parts {
		parts[i] = mustNew(t, p)
		for range 500 {
			if err := parts[i].AddInt(int64(r.IntN(40)), uint64(1+r.IntN(3))); err != nil {
				t.Fatal(err)
			}
		}
	}
	ab := parts[0].Clone()
	ba := parts[1].Clone()
	if err := ab.Union(parts[1]); err != nil {
		t.Fatal(err)
	}
	if err := ba.Union(parts[0]); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustEncode(t, ab), mustEncode(t, ba)) {
		t.Fatal("a∪b and b∪a encode differently")
	}
	abc := ab.Clone()
	bc := parts[1].Clone()
	if err := abc.Union(parts[2]); err != nil {
		t.Fatal(err)
	}
	if err := bc.Union(parts[2]); err != nil {
		t.Fatal(err)
	}
	a_bc := parts[0].Clone()
	if err := a_bc.Union(bc); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(abc.counters, a_bc.counters) || abc.Total() != a_bc.Total() {
		t.Fatal("(a∪b)∪c and a∪(b∪c) have different counters or totals")
	}
}

func TestUnionWithItself(t *testing.T) {
	s := mustNew(t, Params{Width: 32, Depth: 2, TopK: 2})
	if err := s.AddBatch([]Item{{IntID(1), 3}, {TextID("t"), 2}, {IntID(2), 1}}); err != nil {
		t.Fatal(err)
	}
	want := s.Clone()
	if err := want.Union(s.Clone()); err != nil {
		t.Fatal(err)
	}
	if err := s.Union(s); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustEncode(t, s), mustEncode(t, want)) {
		t.Fatal("s.Union(s) differs from s.Union(s.Clone())")
	}
	if s.Total() != 12 || s.EstimateInt(1) < 6 {
		t.Fatalf("after s∪s: Total() = %d, EstimateInt(1) = %d, want 12 and >= 6", s.Total(), s.EstimateInt(1))
	}
}

// The receiver's settings win; conservative counters unioned into a plain
// sketch make it inexact, which its encoding records and decoding accepts.
func TestUnionMixedSettings(t *testing.T) {
	plain := mustNew(t, Params{Width: 5, Depth: 3, TopK: 1})
	cons := mustNew(t, Params{Width: 5, Depth: 3, Conservative: true, TopK: 4})
	truth := exactCounts{}
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 200 {
		id := IntID(int64(r.IntN(30)))
		s := plain
		if i%2 == 1 {
			s = cons
		}
		if err := s.Add(id, 1); err != nil {
			t.Fatal(err)
		}
		truth[id]++
	}
	if err := plain.Union(cons); err != nil {
		t.Fatal(err)
	}
	if got := plain.Params(); got != (Params{Width: 5, Depth: 3, TopK: 1}) {
		t.Fatalf("Params() after union = %+v, want the receiver's", got)
	}
	if got := len(plain.Top(0)); got != 1 {
		t.Fatalf("len(Top(0)) = %d, want the receiver's TopK 1", got)
	}
	for id, n := range truth {
		if got := plain.Estimate(id); got < n {
			t.Errorf("Estimate(%v) = %d below true count %d", id, got, n)
		}
	}
	b := mustEncode(t, plain)
	if b[1] != flagInexact {
		t.Fatalf("flags = %#x, want inexact %#x", b[1], flagInexact)
	}
	roundTrip(t, b)
	// Further plain additions keep it decodable.
	if err := plain.AddInt(99, 4); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, mustEncode(t, plain))
}

func TestCloneIsDeep(t *testing.T) {
	s := mustNew(t, Params{Width: 16, Depth: 2, TopK: 3})
	if err := s.AddBatch([]Item{{IntID(1), 3}, {TextID("t"), 2}}); err != nil {
		t.Fatal(err)
	}
	before := mustEncode(t, s)
	c := s.Clone()
	if err := c.AddBatch([]Item{{IntID(1), 3}, {TextID("u"), 9}, {IntID(4), 9}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Union(c.Clone()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustEncode(t, s), before) {
		t.Fatal("changing a clone changed the original")
	}
	if c.Total() != 52 {
		t.Fatalf("clone Total() = %d, want 52", c.Total())
	}
}

func TestSizeBytes(t *testing.T) {
	s := mustNew(t, DefaultParams())
	if got, min := s.SizeBytes(), 8*2719*5; got < min || got > min+1024 {
		t.Fatalf("SizeBytes() = %d, want about %d", got, min)
	}
	k := mustNew(t, Params{Width: 2719, Depth: 5, TopK: 100})
	for i := range 200 {
		if err := k.Add(TextID(strings.Repeat("x", i)), 1); err != nil {
			t.Fatal(err)
		}
	}
	if got, min := k.SizeBytes(), s.SizeBytes()+100*(32+100); got < min {
		t.Fatalf("SizeBytes() with 100 text candidates = %d, want at least %d", got, min)
	}
}

func TestAddDoesNotAllocate(t *testing.T) {
	text := []byte("user-42@example.com")
	for _, p := range []Params{
		{Width: 2719, Depth: 5},
		{Width: 2719, Depth: 5, Conservative: true},
		{Width: 2719, Depth: 5, TopK: 10}, // ids already candidates
	} {
		s := mustNew(t, p)
		if err := s.AddText(text, 1); err != nil {
			t.Fatal(err)
		}
		if err := s.AddInt(42, 1); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(1000, func() {
			_ = s.AddInt(42, 1)
			_ = s.AddText(text, 1)
			_ = s.EstimateInt(42)
			_ = s.EstimateText(text)
		})
		if allocs != 0 {
			t.Errorf("%+v: allocations per add and estimate = %v, want 0", p, allocs)
		}
	}
}

// Every id whose true count exceeds N/K + ε·N is a candidate, whatever the
// order of arrivals: heavy ids first then a long tail of light ids that
// keeps challenging the heap, or all shuffled.
func TestHeavyHittersGuarantee(t *testing.T) {
	const k = 10
	p := Params{Width: 272, Depth: 4, TopK: k} // ε ≈ 0.01
	r := rand.New(rand.NewPCG(11, 12))
	var stream []ID
	for h := range 3 {
		for range 8000 + 1000*h {
			stream = append(stream, IntID(int64(1000+h)))
		}
	}
	for range 30000 {
		stream = append(stream, TextID("light-"+itoa(r.IntN(5000))))
	}
	truth := count(stream)
	shuffled := slices.Clone(stream)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, order := range [][]ID{stream, shuffled} {
		for _, cons := range []bool{false, true} {
			p.Conservative = cons
			s := mustNew(t, p)
			for _, id := range order {
				if err := s.Add(id, 1); err != nil {
					t.Fatal(err)
				}
			}
			threshold := float64(s.Total())/k + s.ErrorBound()
			top := s.Top(0)
			heavy := 0
			for id, n := range truth {
				if float64(n) <= threshold {
					continue
				}
				heavy++
				if !slices.ContainsFunc(top, func(it Item) bool { return it.ID == id }) {
					t.Errorf("conservative %v: %v with count %d > N/K + εN = %.0f is not in Top %v", cons, id, n, threshold, top)
				}
			}
			if heavy != 3 {
				t.Fatalf("%d ids above N/K + εN = %.0f, want the 3 heavy ones", heavy, threshold)
			}
		}
	}
}

func TestUnionMergesCandidates(t *testing.T) {
	p := Params{Width: 1 << 12, Depth: 4, TopK: 2}
	a, b := mustNew(t, p), mustNew(t, p)
	if err := a.AddBatch([]Item{{IntID(1), 50}, {TextID("x"), 40}, {IntID(3), 5}}); err != nil {
		t.Fatal(err)
	}
	// The candidates are a's {1, x} and b's {y, x}, re-estimated against
	// the sum: x (70) and y (60) outrank 1 (50). 3 (11) was no candidate.
	if err := b.AddBatch([]Item{{TextID("y"), 60}, {TextID("x"), 30}, {IntID(3), 6}}); err != nil {
		t.Fatal(err)
	}
	if err := a.Union(b); err != nil {
		t.Fatal(err)
	}
	want := []Item{{TextID("x"), 70}, {TextID("y"), 60}}
	if got := a.Top(0); !slices.Equal(got, want) {
		t.Fatalf("Top(0) after union = %v, want %v", got, want)
	}
	roundTrip(t, mustEncode(t, a))
}
