package hll

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// registerKernels lists the register kernels this machine runs: the
// portable loop always, the AVX-512 kernel where the processor has it.
func registerKernels(tb testing.TB) []registerKernel {
	tb.Helper()
	ks := []registerKernel{registersPortable}
	if widestRegisters() >= registersAVX512 {
		ks = append(ks, registersAVX512)
	} else {
		tb.Logf("the AVX-512 register kernel does not run here (no AVX-512 F, DQ and CD, another GOARCH, or the purego tag): the portable loop only")
	}
	return ks
}

// withRegisterKernel runs f with k as the register kernel.
func withRegisterKernel(k registerKernel, f func()) {
	defer func(old registerKernel) { quietKernel = old }(quietKernel)
	quietKernel = k
	f()
}

// quietReference is what quietVector returns with the AVX-512 kernel,
// worked out one hash at a time: the start of the first step of eight
// that holds a hash raising a register, else the whole steps of hs.
func quietReference(regs []uint8, hs []uint64, shift, top uint8) int {
	steps := len(hs) &^ 7
	for i := 0; i < steps; i++ {
		h := hs[i]
		w := h >> (shift & 63)
		if w == 0 {
			continue
		}
		v := min(uint8(bits.TrailingZeros64(w))+1, top)
		if v > regs[int(h)&(len(regs)-1)] {
			return i &^ 7
		}
	}
	return steps
}

// registerHashes returns n hashes for a sketch of log2m shift, mixing
// uniform ones with ones whose bits above the index are zero (they set
// nothing), and ones with long runs of trailing zeros there (they reach
// the cap of narrow registers).
func registerHashes(r *rand.Rand, n int, shift uint8) []uint64 {
	hs := make([]uint64, n)
	for i := range hs {
		h := r.Uint64()
		switch r.IntN(8) {
		case 0:
			h &= uint64(1)<<shift - 1
		case 1:
			h &^= (uint64(1)<<r.IntN(64-int(shift)) - 1) << shift
		}
		hs[i] = h
	}
	return hs
}

// TestQuietKernel checks the vector kernel's answer against one worked
// out a hash at a time, on registers at every fill, every log2m and
// register width, and batches of every length up to a few steps.
func TestQuietKernel(t *testing.T) {
	if widestRegisters() < registersAVX512 {
		t.Skip("the AVX-512 register kernel does not run here")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for log2m := MinLog2m; log2m <= 17; log2m++ {
		for regwidth := MinRegwidth; regwidth <= MaxRegwidth; regwidth++ {
			top := uint8(1)<<regwidth - 1
			regs := make([]uint8, 1<<log2m)
			for fill := range 4 {
				// fill 0: all zero; 1: a few; 2: most; 3: every one at top.
				for i := range regs {
					switch {
					case fill == 3:
						regs[i] = top
					case fill > 0 && r.IntN(4) < fill+fill/2:
						regs[i] = uint8(r.IntN(int(top) + 1))
					default:
						regs[i] = 0
					}
				}
				for n := range 40 {
					hs := registerHashes(r, n, uint8(log2m))
					got := quietVector(regs, hs, uint8(log2m), top)
					if want := quietReference(regs, hs, uint8(log2m), top); got != want {
						t.Fatalf("log2m %d regwidth %d fill %d, %d hashes %x: kernel says %d quiet, want %d", log2m, regwidth, fill, n, hs, got, want)
					}
				}
			}
		}
	}
}

// TestQuietKernelStopsAtEveryLane puts the one raising hash in each lane
// of each step, with the register it raises at each position of its
// quadword, so a kernel that reads the wrong byte or lane misses it.
func TestQuietKernelStopsAtEveryLane(t *testing.T) {
	if widestRegisters() < registersAVX512 {
		t.Skip("the AVX-512 register kernel does not run here")
	}
	const log2m, top = 11, 31
	regs := make([]uint8, 1<<log2m)
	for i := range regs {
		regs[i] = top
	}
	// A quiet hash sets 30 (below top) in a register other than the first
	// 16, which the raising hash takes.
	quiet := func(i int) uint64 { return uint64(16+i*37%(len(regs)-16)) | 1<<40 }
	for pos := range 24 {
		for idx := 0; idx < 16; idx++ {
			hs := make([]uint64, 24)
			for i := range hs {
				hs[i] = quiet(i)
			}
			regs[idx] = 3
			hs[pos] = uint64(idx) | 1<<(log2m+4) // sets 5 > 3
			got := quietVector(regs, hs, log2m, top)
			regs[idx] = top
			if want := pos &^ 7; got != want {
				t.Fatalf("raising hash at %d (register %d): kernel says %d quiet, want %d", pos, idx, got, want)
			}
		}
	}
}

// TestRegisterKernelsAgree adds the same batches to the same sketches
// with each kernel and compares the registers, the histogram and the
// hashes each add reports as changes (the log's delta), in order.
func TestRegisterKernelsAgree(t *testing.T) {
	kernels := registerKernels(t)
	for _, p := range []Params{
		DefaultParams(),
		{Log2m: 4, Regwidth: 5, Expthresh: 0, Sparse: false},
		{Log2m: 11, Regwidth: 1, Expthresh: 0, Sparse: false},
		{Log2m: 16, Regwidth: 3, Expthresh: 0, Sparse: true},
		{Log2m: 17, Regwidth: 7, Expthresh: AutoExpthresh, Sparse: true},
	} {
		t.Run(fmt.Sprintf("log2m=%d,regwidth=%d", p.Log2m, p.Regwidth), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(p.Log2m), uint64(p.Regwidth)))
			var batches [][]uint64
			// From empty through FULL to many more ids than registers, in
			// batches of every size, some repeating earlier hashes.
			for total := 0; total < 64<<p.Log2m; {
				n := r.IntN(3 << min(p.Log2m, 12))
				if r.IntN(4) == 0 {
					n = r.IntN(20)
				}
				b := registerHashes(r, n, uint8(p.Log2m))
				if len(batches) > 0 && r.IntN(3) == 0 {
					b = append(b, batches[r.IntN(len(batches))]...)
				}
				batches = append(batches, b)
				total += len(b)
			}
			type result struct {
				regs    []uint8
				hist    [128]int
				changes [][]uint64
			}
			var results []result
			for _, k := range kernels {
				withRegisterKernel(k, func() {
					s, err := New(p)
					if err != nil {
						t.Fatal(err)
					}
					var res result
					for _, b := range batches {
						res.changes = append(res.changes, s.AddHashes(b, nil))
					}
					if s.Representation() != Full {
						t.Fatalf("sketch is %v after %d batches, want FULL", s.Representation(), len(batches))
					}
					res.regs = s.Registers(nil)
					s.Histogram(&res.hist)
					results = append(results, res)
				})
			}
			for i, res := range results[1:] {
				k := kernels[i+1]
				if !slices.Equal(res.regs, results[0].regs) {
					t.Errorf("%v kernel: registers differ from the portable loop's", k)
				}
				if res.hist != results[0].hist {
					t.Errorf("%v kernel: histogram %v, portable %v", k, res.hist, results[0].hist)
				}
				for j := range res.changes {
					if !slices.Equal(res.changes[j], results[0].changes[j]) {
						t.Fatalf("%v kernel: batch %d of %d hashes reports changes %x, portable %x", k, j, len(batches[j]), res.changes[j], results[0].changes[j])
					}
				}
			}
		})
	}
}

// BenchmarkRegisterKernels adds 10,000 fresh hashes a request to a FULL
// log2m=14 sketch that has seen the given number of ids, with each kernel:
// the more ids it has seen, the fewer hashes raise a register.
func BenchmarkRegisterKernels(b *testing.B) {
	const batch = 10000
	for _, seen := range []int{1 << 20, 1 << 24} {
		r := rand.New(rand.NewPCG(3, uint64(seen)))
		base, err := New(DefaultParams())
		if err != nil {
			b.Fatal(err)
		}
		for range seen / batch {
			hs := make([]uint64, batch)
			for i := range hs {
				hs[i] = r.Uint64()
			}
			base.AddAll(hs)
		}
		// Fresh hashes: seen grows by a quarter over the pool.
		pool := make([]uint64, seen/4/batch*batch)
		for i := range pool {
			pool[i] = r.Uint64()
		}
		for _, k := range registerKernels(b) {
			b.Run(fmt.Sprintf("seen=%d/kernel=%v", seen, k), func(b *testing.B) {
				withRegisterKernel(k, func() {
					s := base.Clone()
					changed := make([]uint64, 0, batch)
					i := 0
					for b.Loop() {
						if i == len(pool) {
							b.StopTimer()
							s, i = base.Clone(), 0
							b.StartTimer()
						}
						changed = s.AddHashes(pool[i:i+batch], changed[:0])
						i += batch
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/batch, "ns/hash")
				})
			})
		}
	}
}
