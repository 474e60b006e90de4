package murmur

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/spaolacci/murmur3"
)

// TestBytesMatchesReference checks Bytes and String against
// spaolacci/murmur3 on every length from 0 to 300 (every tail of every
// block count, keys shorter than a block), random bytes, at several offsets
// into a larger buffer (so the tail's loads that end at the key's last byte
// read inside the key only), and four seeds.
func TestBytesMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(38, 3))
	buf := make([]byte, 400)
	for n := 0; n <= 300; n++ {
		for _, off := range []int{0, 1, 7, 50} {
			for i := range buf {
				buf[i] = byte(r.Uint32())
			}
			key := buf[off : off+n : off+n]
			for _, seed := range []uint32{0, 1, 42, 0xffffffff} {
				w1, w2 := murmur3.Sum128WithSeed(key, seed)
				if g1, g2 := Bytes(key, seed); g1 != w1 || g2 != w2 {
					t.Fatalf("Bytes of %d bytes at %d, seed %d = %#x,%#x, want %#x,%#x", n, off, seed, g1, g2, w1, w2)
				}
				if g1, g2 := String(string(key), seed); g1 != w1 || g2 != w2 {
					t.Fatalf("String of %d bytes, seed %d = %#x,%#x, want %#x,%#x", n, seed, g1, g2, w1, w2)
				}
			}
		}
	}
}

func FuzzBytes(f *testing.F) {
	for _, s := range []string{"", "A", "AB", "user-42@example.com", "0123456789abcdef", "0123456789abcdef0",
		"a8098c1a-f86e-11da-bd1a-00112444be1e", "\x00\xff\x80"} {
		f.Add([]byte(s), uint32(0))
	}
	f.Add([]byte("0123456789abcdef0123456789abcde"), uint32(7))
	f.Fuzz(func(t *testing.T, key []byte, seed uint32) {
		w1, w2 := murmur3.Sum128WithSeed(key, seed)
		if g1, g2 := Bytes(key, seed); g1 != w1 || g2 != w2 {
			t.Fatalf("Bytes(%q, %d) = %#x,%#x, want %#x,%#x", key, seed, g1, g2, w1, w2)
		}
	})
}

// BenchmarkBytes hashes keys of the lengths text ids have (a short name, an
// e-mail address, a UUID, a long one) with Bytes and with the reference
// implementation, in the same run.
func BenchmarkBytes(b *testing.B) {
	for _, n := range []int{8, 24, 36, 100} {
		key := make([]byte, n)
		for i := range key {
			key[i] = byte('a' + i%26)
		}
		b.Run(fmt.Sprintf("len=%d/impl=murmur", n), func(b *testing.B) {
			for b.Loop() {
				h, _ := Bytes(key, 0)
				sink += h
			}
		})
		b.Run(fmt.Sprintf("len=%d/impl=reference", n), func(b *testing.B) {
			for b.Loop() {
				h, _ := murmur3.Sum128WithSeed(key, 0)
				sink += h
			}
		})
	}
}
