package cms_test

import (
	"fmt"

	"github.com/sketchd/sketchd/internal/cms"
)

func Example() {
	p, err := cms.ParamsFromError(0.001, 0.01)
	if err != nil {
		panic(err)
	}
	p.TopK = 2
	s, err := cms.New(p)
	if err != nil {
		panic(err)
	}
	_ = s.AddInt(42, 5)
	_ = s.AddText([]byte("alice"), 3)
	_ = s.AddBatch([]cms.Item{{ID: cms.IntID(7), Count: 1}, {ID: cms.TextID("alice"), Count: 1}})

	fmt.Printf("width %d depth %d ε %.5f δ %.4f\n", p.Width, p.Depth, s.Epsilon(), s.Delta())
	fmt.Printf("alice: estimate %d, error bound %.4f, confidence %.4f\n",
		s.Estimate(cms.TextID("alice")), s.ErrorBound(), s.Confidence())
	for _, it := range s.Top(0) {
		fmt.Println(it.ID, it.Count)
	}

	b, _ := s.MarshalBinary()
	d, err := cms.Decode(b)
	fmt.Println(len(b), d.Total(), err)
	// Output:
	// width 2719 depth 5 ε 0.00100 δ 0.0067
	// alice: estimate 4, error bound 0.0100, confidence 0.9933
	// 42 5
	// "alice" 4
	// 13633 10 <nil>
}

// A Count-Min over a value domain answers range counts and quantiles.
func Example_ranges() {
	s, _ := cms.New(cms.Params{Width: 2719, Depth: 5, DomainBits: 16})
	for v := range int64(1000) {
		_ = s.AddInt(v, 1) // the values 0..999
	}
	r, _ := s.Range(100, 199)
	q, _, _ := s.Quantile(0.5)
	fmt.Printf("[100, 199]: %d, at most %.1f over, %d intervals\n", r.Estimate, r.ErrorBound, r.Intervals)
	fmt.Printf("median: %d, rank error %.4f\n", q.Value, q.RankError)
	// Output:
	// [100, 199]: 100, at most 1.0 over, 5 intervals
	// median: 499, rank error 0.0030
}
