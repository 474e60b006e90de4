package cms

import (
	"fmt"
	"testing"
)

// Benchmarks use ε = 0.001, δ = 0.01 (width 2719, depth 5): 106 KiB of
// counters, so updates hit L2 rather than L1.

var sinkU64 uint64

func benchParams(cons bool, topk int) Params {
	p := DefaultParams()
	p.Conservative = cons
	p.TopK = topk
	return p
}

// benchIDs returns n Zipf-distributed int ids (and their decimal texts),
// so heavy hitters recur as in real traffic.
func benchIDs(n int) ([]int64, [][]byte) {
	ids := zipfStream(42, n, 1<<20)
	ints := make([]int64, n)
	texts := make([][]byte, n)
	for i, id := range ids {
		if id.IsText() {
			texts[i] = []byte(id.Text())
			ints[i] = int64(len(id.Text())) << 40
		} else {
			ints[i] = id.Int()
			texts[i] = fmt.Appendf(nil, "user-%d", id.Int()&0xffffff)
		}
	}
	return ints, texts
}

func BenchmarkAddInt(b *testing.B) {
	ints, _ := benchIDs(1 << 16)
	for _, bc := range []struct {
		name string
		p    Params
	}{
		{"plain", benchParams(false, 0)},
		{"conservative", benchParams(true, 0)},
		{"plain/topk=10", benchParams(false, 10)},
		{"conservative/topk=100", benchParams(true, 100)},
		{"plain/topk=1000", benchParams(false, 1000)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := mustNew(b, bc.p)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := s.AddInt(ints[i&(len(ints)-1)], 1); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/id")
		})
	}
}

func BenchmarkAddText(b *testing.B) {
	_, texts := benchIDs(1 << 16)
	for _, bc := range []struct {
		name string
		p    Params
	}{
		{"plain", benchParams(false, 0)},
		{"conservative", benchParams(true, 0)},
		{"plain/topk=100", benchParams(false, 100)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := mustNew(b, bc.p)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := s.AddText(texts[i&(len(texts)-1)], 1); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/id")
		})
	}
}

func BenchmarkAddBatch(b *testing.B) {
	ints, _ := benchIDs(1 << 16)
	items := make([]Item, 10_000)
	for i := range items {
		items[i] = Item{ID: IntID(ints[i]), Count: 1}
	}
	s := mustNew(b, benchParams(false, 0))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.AddBatch(items); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(items)), "ns/id")
}

func BenchmarkEstimate(b *testing.B) {
	ints, _ := benchIDs(1 << 16)
	s := mustNew(b, benchParams(false, 0))
	for _, v := range ints {
		if err := s.AddInt(v, 1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		sinkU64 += s.EstimateInt(ints[i&(len(ints)-1)])
		i++
	}
}

func BenchmarkTop(b *testing.B) {
	ints, _ := benchIDs(1 << 16)
	s := mustNew(b, benchParams(false, 100))
	for _, v := range ints {
		if err := s.AddInt(v, 1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		sinkU64 += uint64(len(s.Top(10)))
	}
}

func filled(b *testing.B, topk int) *Sketch {
	ints, texts := benchIDs(1 << 16)
	s := mustNew(b, benchParams(false, topk))
	for i := range ints {
		if err := s.AddInt(ints[i], 1); err != nil {
			b.Fatal(err)
		}
		if err := s.AddText(texts[i], 2); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

func BenchmarkUnion(b *testing.B) {
	for _, topk := range []int{0, 100} {
		b.Run(fmt.Sprintf("topk=%d", topk), func(b *testing.B) {
			src := filled(b, topk)
			dst := mustNew(b, benchParams(false, topk))
			b.SetBytes(int64(8 * len(src.counters)))
			b.ReportAllocs()
			for b.Loop() {
				if dst.Total() > 1<<60 {
					b.StopTimer()
					dst = mustNew(b, benchParams(false, topk))
					b.StartTimer()
				}
				if err := dst.Union(src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	s := filled(b, 100)
	buf, _ := s.AppendBinary(nil)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = s.AppendBinary(buf[:0])
	}
	b.ReportMetric(float64(len(buf)), "bytes")
}

func BenchmarkDecode(b *testing.B) {
	buf := mustEncode(b, filled(b, 100))
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClone(b *testing.B) {
	s := filled(b, 100)
	b.ReportAllocs()
	for b.Loop() {
		sinkU64 += s.Clone().n
	}
}
