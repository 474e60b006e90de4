package dshll

import (
	"testing"

	dshll "github.com/apache/datasketches-go/hll"

	"github.com/sketchd/sketchd/internal/hll"
)

// The benchmarks measure this package (the library behind its checks),
// the library called directly, and sketchd's own postgresql-hll engine at
// the same number of registers (lg_k 12 = log2m 12, HLL mode), in one
// run: add an int64 with its hash, union 100 sketches, estimate with
// bounds (what describe computes), decode.

const benchLgK = 12

func filled(b *testing.B, typ Type, lo int64) *Sketch {
	s, err := New(Params{LgK: benchLgK, Type: typ})
	if err != nil {
		b.Fatal(err)
	}
	for v := lo; v < lo+100_000; v++ {
		s.AddInt(v)
	}
	return s
}

func filledHLL(b *testing.B, lo int64) *hll.Sketch {
	p := hll.DefaultParams()
	p.Log2m = benchLgK
	s, err := hll.New(p)
	if err != nil {
		b.Fatal(err)
	}
	for v := lo; v < lo+100_000; v++ {
		s.AddInt64(v)
	}
	return s
}

func BenchmarkAddInt(b *testing.B) {
	for _, typ := range []Type{HLL4, HLL8} {
		b.Run("impl=dshll/type="+typ.String(), func(b *testing.B) {
			s := filled(b, typ, 0)
			b.ReportAllocs()
			v := int64(0)
			for b.Loop() {
				s.AddInt(v)
				v++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ids/s")
		})
		b.Run("impl=library/type="+typ.String(), func(b *testing.B) {
			s, _ := dshll.NewHllSketch(benchLgK, typ.lib())
			for v := range int64(100_000) {
				s.UpdateInt64(v)
			}
			b.ReportAllocs()
			v := int64(0)
			for b.Loop() {
				s.UpdateInt64(v)
				v++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ids/s")
		})
	}
	b.Run("impl=hll", func(b *testing.B) {
		s := filledHLL(b, 0)
		b.ReportAllocs()
		v := int64(0)
		for b.Loop() {
			s.AddInt64(v)
			v++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ids/s")
	})
}

func BenchmarkUnion100(b *testing.B) {
	ds := make([]*Sketch, 100)
	hs := make([]*hll.Sketch, 100)
	for i := range ds {
		ds[i] = filled(b, HLL4, int64(i)*50_000)
		hs[i] = filledHLL(b, int64(i)*50_000)
	}
	b.Run("impl=dshll", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Union(Params{LgK: benchLgK, Type: HLL4}, ds...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=library", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			u, _ := dshll.NewUnion(benchLgK)
			for _, s := range ds {
				u.UpdateSketch(s.lib)
			}
			if _, err := u.GetResult(dshll.TgtHllTypeHll4); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=hll", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := hll.Union(hs...); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkDescribe(b *testing.B) {
	s := filled(b, HLL4, 0)
	h := filledHLL(b, 0)
	b.Run("impl=dshll", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = s.Estimate()
			s.LowerBound(2)
			s.UpperBound(2)
		}
	})
	b.Run("impl=library", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.lib.GetEstimate()
			s.lib.GetLowerBound(2)
			s.lib.GetUpperBound(2)
		}
	})
	b.Run("impl=hll", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = h.Estimate()
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	img, _ := filled(b, HLL4, 0).MarshalBinary()
	hb, _ := filledHLL(b, 0).MarshalBinary()
	b.Run("impl=dshll", func(b *testing.B) {
		b.SetBytes(int64(len(img)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(img); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=library", func(b *testing.B) {
		b.SetBytes(int64(len(img)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := dshll.NewHllSketchFromSlice(img, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=hll", func(b *testing.B) {
		b.SetBytes(int64(len(hb)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := hll.Decode(hb); err != nil {
				b.Fatal(err)
			}
		}
	})
}
