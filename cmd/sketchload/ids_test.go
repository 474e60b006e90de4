package main

import (
	"slices"
	"testing"
)

func TestIDGen(t *testing.T) {
	t.Parallel()
	t.Run("sequential batches tile the space", func(t *testing.T) {
		t.Parallel()
		g := newIDGen(distSequential, 25, 0, 1, 1)
		ids := make([]int64, 10)
		var got []int64
		for b := range uint64(3) {
			g.fill(ids, b)
			got = append(got, ids...)
		}
		want := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 0, 1, 2, 3, 4}
		if !slices.Equal(got, want) {
			t.Errorf("ids = %v, want %v", got, want)
		}
	})
	t.Run("sequential huge batch index does not overflow", func(t *testing.T) {
		t.Parallel()
		g := newIDGen(distSequential, 1000, 0, 1, 1)
		ids := make([]int64, 7)
		g.fill(ids, 1<<62) // (2^62·7) mod 1000 = 328 (2^62 mod 1000 = 904; 904·7 = 6328)
		if ids[0] != 328 || ids[6] != 334 {
			t.Errorf("ids = %v, want 328…334", ids)
		}
	})
	for _, d := range []dist{distUniform, distZipf} {
		t.Run(d.String()+" stays in range and repeats by seed", func(t *testing.T) {
			t.Parallel()
			a, b := make([]int64, 5000), make([]int64, 5000)
			newIDGen(d, 1000, 1.5, 7, 3).fill(a, 0)
			newIDGen(d, 1000, 1.5, 7, 3).fill(b, 99)
			if !slices.Equal(a, b) {
				t.Errorf("same seed and stream gave different ids")
			}
			for _, id := range a {
				if id < 0 || id >= 1000 {
					t.Fatalf("id %d outside [0, 1000)", id)
				}
			}
			newIDGen(d, 1000, 1.5, 7, 4).fill(b, 0)
			if slices.Equal(a, b) {
				t.Errorf("different streams gave the same ids")
			}
		})
	}
	t.Run("zipf favours small ids", func(t *testing.T) {
		t.Parallel()
		ids := make([]int64, 10000)
		newIDGen(distZipf, 1_000_000, 1.5, 1, 1).fill(ids, 0)
		zeros := 0
		for _, id := range ids {
			if id == 0 {
				zeros++
			}
		}
		// P(0) = 1/ζ(1.5) ≈ 0.38; uniform would give ~0.
		if zeros < 3000 {
			t.Errorf("id 0 drawn %d times in 10000, want about 3800", zeros)
		}
	})
	for _, s := range []string{"uniform", "zipf", "sequential"} {
		d, err := parseDist(s)
		if err != nil || d.String() != s {
			t.Errorf("parseDist(%q) = %v, %v", s, d, err)
		}
	}
	if _, err := parseDist("normal"); err == nil {
		t.Errorf("parseDist(normal) succeeded, want an error")
	}
}
