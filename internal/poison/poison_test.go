package poison_test

import (
	"testing"

	"github.com/sketchd/sketchd/internal/poison"
)

// TestRelease: in a poisoning build Release overwrites a buffer to its
// capacity; otherwise it leaves it alone.
func TestRelease(t *testing.T) {
	b := make([]byte, 3, 8)
	copy(b, "abc")
	poison.Release(b)
	full := b[:cap(b)]
	for i, c := range full {
		want := byte(0)
		if i < 3 {
			want = "abc"[i]
		}
		if poison.Enabled {
			want = poison.Byte
		}
		if c != want {
			t.Fatalf("byte %d after Release = %#x, want %#x (Enabled %v)", i, c, want, poison.Enabled)
		}
	}
	h := make([]uint64, 1, 2)
	h[0] = 7
	poison.ReleaseUint64(h)
	if got := h[:2][1]; poison.Enabled && got != 0xdbdbdbdbdbdbdbdb || !poison.Enabled && (got != 0 || h[0] != 7) {
		t.Fatalf("ReleaseUint64 left %#x %#x (Enabled %v)", h[0], got, poison.Enabled)
	}
}
