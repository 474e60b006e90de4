package murmur

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/spaolacci/murmur3"

	"github.com/sketchd/sketchd/internal/cpuid/cpuidtest"
)

func reference(v int64, seed uint32) (uint64, uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	return murmur3.Sum128WithSeed(b[:], seed)
}

func TestInt64MatchesReference(t *testing.T) {
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

// TestInt64Hashes checks the block hash against the reference
// implementation on every length up to a few blocks (so the four-wide
// steps and the tail both run) and a million random and edge values.
func TestInt64Hashes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	edges := []uint64{0, 1, 1 << 63, 1<<63 - 1, 1<<64 - 1, 8, 1<<64 - 8}
	vs := make([]uint64, 0, 1<<20)
	vs = append(vs, edges...)
	for len(vs) < cap(vs) {
		vs = append(vs, r.Uint64()>>(r.IntN(64)))
	}
	for n := range 35 {
		checkInt64Hashes(t, vs[:n])
	}
	checkInt64Hashes(t, vs)
}

// checkInt64Hashes checks Int64Hashes of vs, and Int64HashesBigEndian of
// their big-endian bytes, against the reference murmur3,
// through the vector kernel where the processor has one and through the
// portable loop alone.
func checkInt64Hashes(t *testing.T, vs []uint64) {
	t.Helper()
	var be []byte
	for _, v := range vs {
		be = binary.BigEndian.AppendUint64(be, v)
	}
	be = append(be, 0xa5) // a byte past the last id must not be read as one
	for _, vector := range kernels(t) {
		got := slices.Clone(vs)
		withVector(vector, func() { Int64Hashes(got) })
		fromBytes := make([]uint64, len(vs))
		withVector(vector, func() { Int64HashesBigEndian(fromBytes, be) })
		for i, v := range vs {
			want, _ := reference(int64(v), 0)
			if got[i] != want {
				t.Fatalf("Int64Hashes (vector kernel %v) of %d values: [%d] (%d) = %#x, want %#x", vector, len(vs), i, int64(v), got[i], want)
			}
			if fromBytes[i] != want {
				t.Fatalf("Int64HashesBigEndian (vector kernel %v) of %d values: [%d] (%d) = %#x, want %#x", vector, len(vs), i, int64(v), fromBytes[i], want)
			}
		}
	}
}

// kernels lists the kernels this machine runs, the portable loop first
// (cpuidtest.Kernels).
func kernels(tb testing.TB) []kernel {
	return cpuidtest.Kernels(tb, widest(), "the vector kernel", "AVX2")
}

// withVector runs f with the kernels up to k. Tests that change it do not
// run in parallel.
func withVector(k kernel, f func()) {
	was := vector
	vector = k
	defer func() { vector = was }()
	f()
}

func FuzzInt64Hashes(f *testing.F) {
	f.Add(int64(0), int64(-1), int64(1<<63-1), int64(-1<<63), int64(42))
	f.Add(int64(1<<32), int64(1<<32-1), int64(-1<<32), int64(0x7f), int64(8))
	f.Fuzz(func(t *testing.T, a, b, c, d, e int64) {
		vs := []uint64{uint64(a), uint64(b), uint64(c), uint64(d), uint64(e)}
		for n := range len(vs) + 1 {
			checkInt64Hashes(t, vs[:n])
		}
	})
}

var sink uint64

// BenchmarkInt64Hashes hashes 10,000 values in place through each kernel
// this machine runs (portable, AVX2, AVX-512: their block hashes), and
// with Int64 called on each (each, the peer), in turn every iteration;
// then Int64HashesBigEndian (an octet-stream body) through each kernel.
// cpu-ns/id is the CPU of the benchmark's thread (locked to it), which a
// loaded machine inflates far less than ns/op.
func BenchmarkInt64Hashes(b *testing.B) {
	r := rand.New(rand.NewPCG(6, 6))
	src := make([]uint64, 10000)
	var be []byte
	for i := range src {
		src[i] = r.Uint64() >> 20
		be = binary.BigEndian.AppendUint64(be, src[i])
	}
	vs := make([]uint64, len(src))
	ks := kernels(b)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	block := make([]time.Duration, len(ks))
	bigEndian := make([]time.Duration, len(ks))
	var each time.Duration
	for b.Loop() {
		for i, k := range ks {
			copy(vs, src)
			t0 := threadCPU(b)
			withVector(k, func() { Int64Hashes(vs) })
			t1 := threadCPU(b)
			withVector(k, func() { Int64HashesBigEndian(vs, be) })
			block[i], bigEndian[i] = block[i]+t1-t0, bigEndian[i]+threadCPU(b)-t1
		}
		copy(vs, src)
		t0 := threadCPU(b)
		for i, v := range vs {
			vs[i], _ = Int64(int64(v), 0)
		}
		each += threadCPU(b) - t0
	}
	n := float64(b.N) * float64(len(vs))
	for i, k := range ks {
		b.ReportMetric(float64(block[i].Nanoseconds())/n, k.String()+"-cpu-ns/id")
		b.ReportMetric(float64(bigEndian[i].Nanoseconds())/n, k.String()+"-bigendian-cpu-ns/id")
	}
	b.ReportMetric(float64(each.Nanoseconds())/n, "each-cpu-ns/id")
}

func threadCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil { // RUSAGE_THREAD
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

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
