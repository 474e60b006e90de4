package murmur

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/spaolacci/murmur3"
)

func reference(v int64, seed uint32) (uint64, uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	return murmur3.Sum128WithSeed(b[:], seed)
}

func TestInt64MatchesReference(t *testing.T) {
	t.Parallel()
	edge := []int64{0, 1, -1, 100, -100, 1<<63 - 1, -1 << 63, 1 << 32, 0x7f, 0x80}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10000; i++ {
		edge = append(edge, int64(r.Uint64()))
	}
	for _, seed := range []uint32{0, 1, 42, 0xffffffff} {
		for _, v := range edge {
			g1, g2 := Int64(v, seed)
			w1, w2 := reference(v, seed)
			if g1 != w1 || g2 != w2 {
				t.Fatalf("Int64(%d, %d) = %#x,%#x, want %#x,%#x", v, seed, g1, g2, w1, w2)
			}
		}
	}
}

// Values printed by postgresql-hll's regression tests (expected/hash.out).
func TestPostgreSQLValues(t *testing.T) {
	t.Parallel()
	ints := map[int64]int64{0: 2945182322382062539, 100: 8349353095166695771, -100: -886862857196634693, 1: 19144387141682250}
	for v, want := range ints {
		if got, _ := Int64(v, 0); int64(got) != want {
			t.Errorf("Int64(%d) = %d, want %d", v, int64(got), want)
		}
	}
	texts := map[string]int64{"": 0, "A": 243126998722523514, "AB": 5365230931951287672}
	for s, want := range texts {
		if got, _ := String(s, 0); int64(got) != want {
			t.Errorf("String(%q) = %d, want %d", s, int64(got), want)
		}
		if got, _ := Bytes([]byte(s), 0); int64(got) != want {
			t.Errorf("Bytes(%q) = %d, want %d", s, int64(got), want)
		}
	}
}

func TestNoAllocations(t *testing.T) {
	s := "user-42@example.com"
	b := []byte(s)
	if n := testing.AllocsPerRun(100, func() {
		h1, _ := Int64(42, 0)
		h2, _ := String(s, 0)
		h3, _ := Bytes(b, 0)
		sink += h1 + h2 + h3
	}); n != 0 {
		t.Errorf("allocations per run = %v, want 0", n)
	}
}

func FuzzInt64(f *testing.F) {
	f.Add(int64(0), uint32(0))
	f.Add(int64(-1), uint32(7))
	f.Add(int64(1<<63-1), uint32(0xffffffff))
	f.Fuzz(func(t *testing.T, v int64, seed uint32) {
		g1, g2 := Int64(v, seed)
		w1, w2 := reference(v, seed)
		if g1 != w1 || g2 != w2 {
			t.Fatalf("Int64(%d, %d) = %#x,%#x, want %#x,%#x", v, seed, g1, g2, w1, w2)
		}
	})
}

var sink uint64

func BenchmarkInt64(b *testing.B) {
	b.ReportAllocs()
	var v int64
	for b.Loop() {
		h, _ := Int64(v, 0)
		sink += h
		v++
	}
}

func BenchmarkInt64Reference(b *testing.B) {
	b.ReportAllocs()
	var v int64
	for b.Loop() {
		h, _ := reference(v, 0)
		sink += h
		v++
	}
}

func BenchmarkString(b *testing.B) {
	b.ReportAllocs()
	s := "user-1234567@example.com"
	for b.Loop() {
		h, _ := String(s, 0)
		sink += h
	}
}
