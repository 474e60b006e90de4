package zeta

import (
	"strconv"
	"testing"

	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/javatest"
)

// The benchmarks measure this package, ZetaSketch's Java library (timed
// inside its JVM, with the optimizing compiler, the same operations
// after as many to warm up; its ns/op replaces the call's) and sketchd's
// own postgresql-hll engine at the same 2^15 registers, in one run: add
// an int64 with its hash to a normal sketch, build a sparse sketch of
// 5,000 values and encode it (ingest while sparse), union 100 normal
// sketches, estimate. Without Java the Java cases skip.

const benchP = 15

var javaBench = javatest.Shared{Optimize: true}

func benchFilled(b *testing.B, lo int64) *Sketch {
	s, err := New(ParamsFor(benchP))
	if err != nil {
		b.Fatal(err)
	}
	for v := lo; v < lo+100_000; v++ {
		s.AddInt(v)
	}
	s.Compact()
	return s
}

func benchHLL(b *testing.B, lo int64) *hll.Sketch {
	p := hll.DefaultParams()
	p.Log2m = benchP
	s, err := hll.New(p)
	if err != nil {
		b.Fatal(err)
	}
	for v := lo; v < lo+100_000; v++ {
		s.AddInt64(v)
	}
	return s
}

// javaTime runs op in the JVM at least least times (a call costs more
// than the framework's first guess of b.N assumes) and reports its time
// per operation as the benchmark's.
func javaTime(b *testing.B, op string, least int) {
	jvm := javaBench.Get(b)
	n := max(b.N, least)
	ns, err := strconv.ParseInt(jvm.Call(b, "zeta_time", op, strconv.Itoa(n))[0], 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(ns)/float64(n), "ns/op")
}

func BenchmarkAddInt(b *testing.B) {
	b.Run("impl=zeta", func(b *testing.B) {
		s := benchFilled(b, 0)
		b.ReportAllocs()
		v := int64(1 << 40)
		for b.Loop() {
			s.AddInt(v)
			v++
		}
	})
	b.Run("impl=java", func(b *testing.B) { javaTime(b, "add", 3_000_000) })
	b.Run("impl=hll", func(b *testing.B) {
		s := benchHLL(b, 0)
		v := int64(1 << 40)
		for b.Loop() {
			s.AddInt64(v)
			v++
		}
	})
}

func BenchmarkBuildSparse(b *testing.B) {
	b.Run("impl=zeta", func(b *testing.B) {
		b.ReportAllocs()
		v := int64(1 << 40)
		var out []byte
		for b.Loop() {
			s, _ := New(ParamsFor(benchP))
			for range 5000 {
				s.AddInt(v)
				v++
			}
			out = s.AppendBinary(out[:0])
		}
	})
	b.Run("impl=java", func(b *testing.B) { javaTime(b, "build", 300) })
}

func BenchmarkUnion100(b *testing.B) {
	b.Run("impl=zeta", func(b *testing.B) {
		in := make([]*Sketch, 100)
		for i := range in {
			in[i] = benchFilled(b, int64(i)*50_000)
		}
		empty, _ := New(ParamsFor(benchP))
		empty.SetType(TypeLong)
		in = append([]*Sketch{empty}, in...)
		b.ReportAllocs()
		for b.Loop() {
			u, err := Union(in...)
			if err != nil {
				b.Fatal(err)
			}
			u.Estimate()
		}
	})
	b.Run("impl=java", func(b *testing.B) { javaTime(b, "union", 20) })
	b.Run("impl=hll", func(b *testing.B) {
		in := make([]*hll.Sketch, 100)
		for i := range in {
			in[i] = benchHLL(b, int64(i)*50_000)
		}
		for b.Loop() {
			u := in[0].Clone()
			for _, s := range in[1:] {
				if err := u.Union(s); err != nil {
					b.Fatal(err)
				}
			}
			u.Estimate()
		}
	})
}

func BenchmarkEstimate(b *testing.B) {
	b.Run("impl=zeta", func(b *testing.B) {
		s := benchFilled(b, 0)
		for b.Loop() {
			s.Describe()
		}
	})
	b.Run("impl=java", func(b *testing.B) { javaTime(b, "estimate", 500) })
	b.Run("impl=hll", func(b *testing.B) {
		s := benchHLL(b, 0)
		for b.Loop() {
			s.Estimate()
		}
	})
}
