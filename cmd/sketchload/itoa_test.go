package main

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestAppendID(t *testing.T) {
	check := func(v int64) {
		if got, want := string(appendID(nil, v)), strconv.FormatInt(v, 10); got != want {
			t.Fatalf("appendID(%d) = %q, want %q", v, got, want)
		}
	}
	for p := int64(1); p <= 1e18; p *= 10 {
		for d := int64(-2); d <= 2; d++ {
			if p+d >= 0 {
				check(p + d)
			}
		}
	}
	for _, v := range []int64{0, 9, 99_999_999, 100_000_000, 1<<63 - 1} {
		check(v)
	}
	r := rand.New(rand.NewPCG(1, 1))
	for range 1_000_000 {
		check(r.Int64N(100_000_000))
	}
	for range 10_000 {
		check(r.Int64())
	}
}

func FuzzAppendID(f *testing.F) {
	f.Add(int64(12345678))
	f.Fuzz(func(t *testing.T, v int64) {
		if v < 0 {
			v = -(v + 1)
		}
		if got, want := string(appendID(nil, v)), strconv.FormatInt(v, 10); got != want {
			t.Fatalf("appendID(%d) = %q, want %q", v, got, want)
		}
	})
}

func BenchmarkAppendID(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	ids := make([]int64, 10000)
	for i := range ids {
		ids[i] = r.Int64N(100_000_000)
	}
	buf := make([]byte, 0, 10*len(ids))
	b.Run("impl=appendID", func(b *testing.B) {
		for b.Loop() {
			buf = buf[:0]
			for _, v := range ids {
				buf = appendID(buf, v)
			}
		}
	})
	b.Run("impl=strconv", func(b *testing.B) {
		for b.Loop() {
			buf = buf[:0]
			for _, v := range ids {
				buf = strconv.AppendInt(buf, v, 10)
			}
		}
	})
}
