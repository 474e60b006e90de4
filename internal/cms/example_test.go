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
