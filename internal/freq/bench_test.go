package freq

import (
	"testing"

	"github.com/sketchd/sketchd/internal/theta"
)

// BenchmarkAddInt adds user ids (hashing included) to a frequency sketch
// and to a theta sketch, both lg_k 12 and estimating, over the same ids:
// the cost of carrying a count.
func BenchmarkAddInt(b *testing.B) {
	ids := impressions(9, 200_000, 50)
	b.Run("kind=freq", func(b *testing.B) {
		s := mustNew(b, DefaultParams())
		for _, id := range ids {
			s.AddInt(id)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s.AddInt(ids[i%len(ids)])
			i++
		}
	})
	b.Run("kind=theta", func(b *testing.B) {
		s, _ := theta.New(theta.DefaultParams())
		for _, id := range ids {
			s.AddInt(id)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s.AddInt(ids[i%len(ids)])
			i++
		}
	})
}

// BenchmarkFrequencyReport computes a report with max 10 from an
// estimating lg_k 12 sketch (about 4,000 to 7,700 retained users).
func BenchmarkFrequencyReport(b *testing.B) {
	s := mustNew(b, DefaultParams())
	for _, id := range impressions(10, 200_000, 50) {
		s.AddInt(id)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.FrequencyReport(10, 2); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeAndReport is what a report from stored bytes costs:
// decode, then report.
func BenchmarkDecodeAndReport(b *testing.B) {
	s := mustNew(b, DefaultParams())
	for _, id := range impressions(10, 200_000, 50) {
		s.AddInt(id)
	}
	raw, _ := s.MarshalBinary()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := DecodeParams(raw, DefaultParams())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.FrequencyReport(10, 2); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnion merges two estimating lg_k 12 sketches in place.
func BenchmarkUnion(b *testing.B) {
	x, y := mustNew(b, DefaultParams()), mustNew(b, DefaultParams())
	for _, id := range impressions(12, 100_000, 50) {
		x.AddInt(id)
	}
	for _, id := range impressions(13, 100_000, 50) {
		y.AddInt(id)
	}
	b.ReportAllocs()
	for b.Loop() {
		c := x.Clone()
		c.Union(y)
	}
}
