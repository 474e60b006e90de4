package theta

import (
	"math/rand/v2"
	"testing"

	"github.com/sketchd/sketchd/internal/hll"
)

// hashes returns 2^20 random 64-bit hashes.
func benchHashes() []uint64 {
	r := rand.New(rand.NewPCG(1, 2))
	hs := make([]uint64, 1<<20)
	for i := range hs {
		hs[i] = r.Uint64()
	}
	return hs
}

// BenchmarkAddHash compares adding a hashed value to a theta sketch (lg_k
// 12) and to an HLL sketch (hll.DefaultParams, FULL), both warmed with the
// stream so that they are in their steady state (theta estimating, HLL
// registers filled), over the same stream of random hashes.
func BenchmarkAddHash(b *testing.B) {
	hs := benchHashes()
	b.Run("kind=theta", func(b *testing.B) {
		s := mustNew(b, DefaultParams())
		for _, h := range hs {
			s.AddHash(h >> 1)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s.AddHash(hs[i&(len(hs)-1)] >> 1)
			i++
		}
	})
	b.Run("kind=hll", func(b *testing.B) {
		s, err := hll.New(hll.DefaultParams())
		if err != nil {
			b.Fatal(err)
		}
		for _, h := range hs {
			s.AddHash(h)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s.AddHash(hs[i&(len(hs)-1)])
			i++
		}
	})
}

// BenchmarkAddHashFresh is the theta update while the sketch is still
// filling (every hash kept until the first rebuild, then rebuilds): the
// worst case, a new sketch per 64k distinct values.
func BenchmarkAddHashFresh(b *testing.B) {
	hs := benchHashes()
	s := mustNew(b, DefaultParams())
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i&(1<<16-1) == 0 {
			s = mustNew(b, DefaultParams())
		}
		s.AddHash(hs[i&(len(hs)-1)] >> 1)
		i++
	}
}

// BenchmarkAddInt includes hashing the id, for both kinds, each warmed
// with a million ids first (theta estimating, HLL FULL); the ids keep
// increasing, so every one is new.
func BenchmarkAddInt(b *testing.B) {
	const warm = 1 << 20
	b.Run("kind=theta", func(b *testing.B) {
		s := mustNew(b, DefaultParams())
		for v := range int64(warm) {
			s.AddInt(v)
		}
		b.ReportAllocs()
		v := int64(warm)
		for b.Loop() {
			s.AddInt(v)
			v++
		}
	})
	b.Run("kind=hll", func(b *testing.B) {
		s, _ := hll.New(hll.DefaultParams())
		for v := range int64(warm) {
			s.AddInt64(v)
		}
		b.ReportAllocs()
		v := int64(warm)
		for b.Loop() {
			s.AddInt64(v)
			v++
		}
	})
}

// BenchmarkUnion100 unions 100 sketches of lg_k 12, each of 100,000
// random hashes, as decoded from bytes (sorted) or as left by updates
// (hash tables), with the k-way merge (UnionAll) and the incremental
// Union.
func BenchmarkUnion100(b *testing.B) {
	for _, form := range []string{"decoded", "updated"} {
		b.Run("form="+form, func(b *testing.B) {
			r := rand.New(rand.NewPCG(3, 4))
			in := make([]*Sketch, 100)
			for i := range in {
				s := mustNew(b, DefaultParams())
				for range 100_000 {
					s.AddHash(r.Uint64() >> 1)
				}
				if form == "decoded" {
					raw, _ := s.MarshalBinary()
					var err error
					if s, err = DecodeParams(raw, DefaultParams()); err != nil {
						b.Fatal(err)
					}
				}
				in[i] = s
			}
			b.Run("op=UnionAll", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := UnionAll(DefaultParams(), in...); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("op=Union", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					u, _ := NewUnion(DefaultParams())
					for _, s := range in {
						u.Add(s)
					}
					_ = u.Result()
				}
			})
		})
	}
}

// BenchmarkIntersect2 intersects two estimating lg_k 12 sketches sharing
// half their ids, as left by updates (hash tables) or decoded (sorted).
func BenchmarkIntersect2(b *testing.B) {
	for _, form := range []string{"updated", "decoded"} {
		b.Run("form="+form, func(b *testing.B) {
			a, c := mustNew(b, DefaultParams()), mustNew(b, DefaultParams())
			for v := range int64(200_000) {
				a.AddInt(v)
				c.AddInt(v + 100_000)
			}
			if form == "decoded" {
				a.compact()
				c.compact()
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Intersect(a, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecode decodes an estimating lg_k 12 sketch.
func BenchmarkDecode(b *testing.B) {
	s := mustNew(b, DefaultParams())
	for v := range int64(100_000) {
		s.AddInt(v)
	}
	raw, _ := s.MarshalBinary()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeParams(raw, DefaultParams()); err != nil {
			b.Fatal(err)
		}
	}
}
