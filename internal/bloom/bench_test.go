package bloom

import (
	"math/rand/v2"
	"testing"

	dsfilters "github.com/apache/datasketches-go/filters"
)

// The peer is Apache DataSketches' Go Bloom filter (datasketches-go
// v0.2.0), at the same bits and hashes, fed the same 64-bit values (it
// hashes them with XXH64 first; sketchd's values are already hashes).

func benchValues() []uint64 {
	r := rand.New(rand.NewPCG(1, 2))
	vs := make([]uint64, 1<<20)
	for i := range vs {
		vs[i] = r.Uint64()
	}
	return vs
}

// BenchmarkAddNew is a check-and-add (what ?report=new does per id) into
// a filter for a million ids at 1%, half full.
func BenchmarkAddNew(b *testing.B) {
	p, _ := ParamsFor(1_000_000, 0.01)
	vs := benchValues()
	b.Run("sketchd", func(b *testing.B) {
		f, _ := New(p)
		for _, v := range vs[:500_000] {
			f.Add(v)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			f.Add(vs[i&(1<<20-1)])
			i++
		}
	})
	b.Run("datasketches-go", func(b *testing.B) {
		f, err := dsfilters.NewBloomFilterBySize(uint64(p.Bits), uint16(p.Hashes))
		if err != nil {
			b.Fatal(err)
		}
		for _, v := range vs[:500_000] {
			f.UpdateUInt64(v)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			f.QueryAndUpdateUInt64(vs[i&(1<<20-1)])
			i++
		}
	})
}

// BenchmarkContains checks ids against a full filter.
func BenchmarkContains(b *testing.B) {
	p, _ := ParamsFor(1_000_000, 0.01)
	vs := benchValues()
	b.Run("sketchd", func(b *testing.B) {
		f, _ := New(p)
		for _, v := range vs[:1_000_000] {
			f.Add(v)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			f.Contains(vs[i&(1<<20-1)])
			i++
		}
	})
	b.Run("datasketches-go", func(b *testing.B) {
		f, _ := dsfilters.NewBloomFilterBySize(uint64(p.Bits), uint16(p.Hashes))
		for _, v := range vs[:1_000_000] {
			f.UpdateUInt64(v)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			f.QueryUInt64(vs[i&(1<<20-1)])
			i++
		}
	})
}
