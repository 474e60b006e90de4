package kll

import (
	"math/rand/v2"
	"testing"

	dscommon "github.com/apache/datasketches-go/common"
	dskll "github.com/apache/datasketches-go/kll"
)

// The peer is Apache DataSketches' Go library (v0.2.0), whose KLL items
// sketch sketchd does not use: its coins come from math/rand (a log of
// values would not replay exactly) and it panics on some truncated
// inputs. These benchmarks measure it beside sketchd's in the same run.

func dsLess(a, b float64) bool { return a < b }

func randomValues(n int) []float64 {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]float64, n)
	for i := range out {
		out[i] = r.ExpFloat64()
	}
	return out
}

func BenchmarkUpdate(b *testing.B) {
	vals := randomValues(1 << 20)
	b.Run("sketchd", func(b *testing.B) {
		s, _ := New[float64](200)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s.Update(vals[i&(1<<20-1)])
			i++
		}
	})
	b.Run("datasketches-go", func(b *testing.B) {
		s, err := dskll.NewKllItemsSketch[float64](200, 8, dsLess, dscommon.ItemSketchDoubleSerDe{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s.Update(vals[i&(1<<20-1)])
			i++
		}
	})
}

// BenchmarkQuantiles asks a 10-million-value sketch for p50, p90 and p99,
// sorting its items once per ask (as a request does).
func BenchmarkQuantiles(b *testing.B) {
	vals := randomValues(10_000_000)
	ranks := []float64{0.5, 0.9, 0.99}
	b.Run("sketchd", func(b *testing.B) {
		s, _ := New[float64](200)
		for _, v := range vals {
			s.Update(v)
		}
		b.ReportAllocs()
		for b.Loop() {
			v := s.View()
			for _, r := range ranks {
				if _, err := v.Quantile(r, true); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("datasketches-go", func(b *testing.B) {
		s, _ := dskll.NewKllItemsSketch[float64](200, 8, dsLess, dscommon.ItemSketchDoubleSerDe{})
		for _, v := range vals {
			s.Update(v)
		}
		enc, _ := s.ToSlice()
		b.ReportAllocs()
		for b.Loop() {
			// A fresh sketch each time, as a request decodes one: the
			// library caches its sorted view inside the sketch.
			t, err := dskll.NewKllItemsSketchFromSlice[float64](enc, dsLess, dscommon.ItemSketchDoubleSerDe{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := t.GetQuantiles(ranks, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sketchd-with-decode", func(b *testing.B) {
		s, _ := New[float64](200)
		for _, v := range vals {
			s.Update(v)
		}
		enc := s.AppendBinary(nil)
		b.ReportAllocs()
		for b.Loop() {
			t, err := Decode[float64](enc)
			if err != nil {
				b.Fatal(err)
			}
			v := t.View()
			for _, r := range ranks {
				if _, err := v.Quantile(r, true); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkMerge merges two sketches of a million values each into a
// copy of the first.
func BenchmarkMerge(b *testing.B) {
	vals := randomValues(2_000_000)
	b.Run("sketchd", func(b *testing.B) {
		x, _ := New[float64](200)
		y, _ := New[float64](200)
		for i, v := range vals {
			if i%2 == 0 {
				x.Update(v)
			} else {
				y.Update(v)
			}
		}
		b.ReportAllocs()
		for b.Loop() {
			c := x.Clone()
			c.Merge(y)
		}
	})
	b.Run("datasketches-go", func(b *testing.B) {
		x, _ := dskll.NewKllItemsSketch[float64](200, 8, dsLess, dscommon.ItemSketchDoubleSerDe{})
		y, _ := dskll.NewKllItemsSketch[float64](200, 8, dsLess, dscommon.ItemSketchDoubleSerDe{})
		for i, v := range vals {
			if i%2 == 0 {
				x.Update(v)
			} else {
				y.Update(v)
			}
		}
		enc, _ := x.ToSlice()
		b.ReportAllocs()
		for b.Loop() {
			c, _ := dskll.NewKllItemsSketchFromSlice[float64](enc, dsLess, dscommon.ItemSketchDoubleSerDe{})
			c.Merge(y)
		}
	})
}
