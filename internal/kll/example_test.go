package kll_test

import (
	"fmt"

	"github.com/sketchd/sketchd/internal/kll"
)

func Example() {
	s, _ := kll.New[float64](200)
	for v := 1; v <= 1000; v++ {
		s.Update(float64(v)) // latencies of 1 to 1000 ms
	}
	v := s.View()
	p50, _ := v.Quantile(0.5, true)
	p99, _ := v.Quantile(0.99, true)
	r, _ := v.Rank(100, true)
	fmt.Printf("n=%d p50=%v p99=%v rank(100)=%.2f ±%.4f\n", s.N(), p50, p99, r, s.NormalizedRankError(false))
	b := s.AppendBinary(nil)
	fmt.Printf("%d bytes, %x\n", len(b), b[:8])
	// Output:
	// n=1000 p50=501 p99=990 rank(100)=0.10 ±0.0133
	// 2640 bytes, 05010f00c8000800
}
