package murmur

import (
	"fmt"
	"math/rand/v2"
	"slices"
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

// TestSpanHashes checks SpanHashes against Bytes for keys of every length
// up to and past the vector kernel's 63 bytes, at every offset into the
// body, in blocks of eight where lengths mix (blocks, tails of 0 to 15
// bytes); on a processor with AVX-512 it checks the kernel took them.
func TestSpanHashes(t *testing.T) {
	r := rand.New(rand.NewPCG(38, 5))
	b := make([]byte, 300)
	for k := range b {
		b[k] = byte(r.Uint32())
	}
	for round := range 2000 {
		spans := make([]uint64, 8*(1+r.IntN(4))+r.IntN(8))
		for k := range spans {
			size := r.IntN(maxSpanKey + 1)
			if round%2 == 0 {
				size = (k*7 + round) % (maxSpanKey + 1) // every length, lanes mixed
			}
			start := 8 + r.IntN(len(b)-8-size+1)
			spans[k] = uint64(start)<<32 | uint64(size)
		}
		for _, k := range []kernel{portable, vector} {
			got := slices.Clone(spans)
			withVector(k, func() { SpanHashes(got, b) })
			for i, span := range spans {
				start, size := int(span>>32), int(uint32(span))
				if want, _ := Bytes(b[start:start+size], 0); got[i] != want {
					t.Fatalf("%v, round %d: key %d (%d bytes at %d) hashed %#x, Bytes gives %#x", k, round, i, size, start, got[i], want)
				}
			}
		}
	}
	if vector >= avx512 {
		spans := []uint64{8<<32 | 63, 9<<32 | 0, 10<<32 | 17, 11<<32 | 8, 12<<32 | 9, 13<<32 | 16, 14<<32 | 1, 15<<32 | 36}
		if n := spanHashesVector(slices.Clone(spans), b); n != 8 {
			t.Errorf("the vector kernel took %d of 8 keys, want 8", n)
		}
		// A key it does not take (too long, or too near the start) sends
		// its block of eight to Bytes.
		for _, bad := range []uint64{8<<32 | 64, 7<<32 | 3} {
			s := append(slices.Clone(spans), spans...)
			s[10] = bad
			if n := spanHashesVector(s, b); n != 8 {
				t.Errorf("with %#x in the second block the kernel took %d keys, want 8", bad, n)
			}
		}
	}
}

func FuzzSpanHashes(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"), uint64(0x0102030405060708))
	f.Fuzz(func(t *testing.T, b []byte, seed uint64) {
		if len(b) < 9 {
			return
		}
		r := rand.New(rand.NewPCG(seed, 1))
		spans := make([]uint64, 16)
		for k := range spans {
			start := r.IntN(len(b))
			size := r.IntN(min(len(b)-start, maxSpanKey+2) + 1)
			spans[k] = uint64(start)<<32 | uint64(size)
		}
		got := slices.Clone(spans)
		SpanHashes(got, b)
		for i, span := range spans {
			start, size := int(span>>32), int(uint32(span))
			if want, _ := murmur3.Sum128WithSeed(b[start:start+size], 0); got[i] != want {
				t.Fatalf("key %d (%d bytes at %d): %#x, the reference gives %#x", i, size, start, got[i], want)
			}
		}
	})
}
