package freq_test

import (
	"fmt"

	"github.com/sketchd/sketchd/internal/freq"
)

func ExampleSketch_FrequencyReport() {
	s, _ := freq.New(freq.DefaultParams())
	// User u sees the campaign u times, for u = 1..5.
	for u := int64(1); u <= 5; u++ {
		for range u {
			s.AddInt(u)
		}
	}
	r, _ := s.FrequencyReport(4, 2)
	fmt.Println("reach", r.Reach.Estimate, "impressions", r.Impressions.Estimate)
	for _, c := range r.Classes {
		more := ""
		if c.OrMore {
			more = "+"
		}
		fmt.Printf("%d%s: %v users, %v impressions\n", c.K, more, c.Users.Estimate, c.Impressions.Estimate)
	}
	// Output:
	// reach 5 impressions 15
	// 1: 1 users, 1 impressions
	// 2: 1 users, 2 impressions
	// 3: 1 users, 3 impressions
	// 4+: 2 users, 9 impressions
}
