package poison

import "testing"

// TestFillEveryLength: fill sets every element, at every length across
// the doublings, and nothing past the slice.
func TestFillEveryLength(t *testing.T) {
	for n := range 70 {
		buf := make([]uint16, n+1)
		fill(buf[:n], 0xdbdb)
		for i, c := range buf[:n] {
			if c != 0xdbdb {
				t.Fatalf("length %d: element %d = %#x, want 0xdbdb", n, i, c)
			}
		}
		if buf[n] != 0 {
			t.Fatalf("length %d: the element past the slice = %#x, want 0", n, buf[n])
		}
	}
}
