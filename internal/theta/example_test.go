package theta_test

import (
	"fmt"

	"github.com/sketchd/sketchd/internal/theta"
)

func Example() {
	a, _ := theta.New(theta.DefaultParams())
	b, _ := theta.New(theta.DefaultParams())
	for v := range int64(1000) {
		a.AddInt(v)
		b.AddInt(v + 900)
	}
	both, _ := theta.Intersect(a, b)
	raw, _ := both.MarshalBinary()
	fmt.Println(a.Estimate(), both.Estimate(), len(raw), theta.Jaccard(a, b).Estimate)
	// Output: 1000 100 816 0.05263157894736842
}
