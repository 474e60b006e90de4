package bloom_test

import (
	"fmt"

	"github.com/sketchd/sketchd/internal/bloom"
)

func Example() {
	p, _ := bloom.ParamsFor(1000, 0.01)
	f, _ := bloom.New(p)
	fmt.Println(p.Bits, p.Hashes)
	fmt.Println(f.Add(12345), f.Add(12345)) // new, then seen
	fmt.Println(f.Contains(12345), f.BitsSet())
	// Output:
	// 9920 6
	// true false
	// true 6
}
