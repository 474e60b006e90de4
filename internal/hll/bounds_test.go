package hll

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

var (
	sweep      = flag.Bool("hll.sweep", false, "TestBoundsCoverEveryN: 1,000 sketches a cell instead of 60, log2m 4 to -hll.sweep.max, and a table of the results")
	sweepLog2m = flag.Int("hll.sweep.max", 17, "the largest log2m -hll.sweep measures")
)

// boundsLoads are the cardinalities (in multiples of m) the bounds are
// checked at: the linear-counting range, densely around postgresql-hll's
// switch to the raw estimate (just past 2.5·m), and far beyond.
var boundsLoads = []float64{0.01, 0.1, 0.5, 1, 1.5, 1.9, 2.1, 2.3, 2.4, 2.45, 2.5, 2.55, 2.6, 2.7, 2.8, 3, 3.5, 4, 5, 6, 8, 12, 30}

// TestBoundsCoverEveryN: for every n (a grid of loads n/m) at log2m 10 to
// 16, the bounds of both estimators hold the true cardinality in sketches
// of random ids at their stated rate, 95%. With 60 sketches a cell in CI
// a cell at 95% can show fewer by chance, so the test asks for 80% in
// every cell (a cell at 95% falls under it once in about 10,000) and 93%
// pooled over the grid of one log2m (1,380 sketches: once in about
// 3,000); the seeds are fixed, so the run is the same every time, and
// -hll.sweep measures 1,000 sketches a cell (docs/hll.md has the table).
// Under the race detector it takes log2m 10 to 13; scripts/test runs it whole
// in a normal build.
// The improved estimator's mean error is within 4 of its own standard
// errors (4/√reps standard errors of one sketch) of zero at every n.
// With std_error fixed at 1.04/√m as before, postgresql-hll's estimate
// just past its switch from linear counting was covered in 17% of
// sketches at log2m 14.
func TestBoundsCoverEveryN(t *testing.T) {
	reps, lo, hi := 60, 10, 16
	if raceEnabled {
		hi = 13
	}
	if *sweep {
		reps, lo, hi = 1000, 4, *sweepLog2m
	}
	for log2m := lo; log2m <= hi; log2m++ {
		t.Run(fmt.Sprint("log2m=", log2m), func(t *testing.T) {
			p := Params{Log2m: log2m, Regwidth: 5, Expthresh: 0, Sparse: true}
			m := float64(p.NumRegisters())
			type cell struct {
				n       int
				covered [2]int
				bias    [2]float64
			}
			cells := make([]cell, len(boundsLoads))
			r := rand.New(rand.NewPCG(uint64(log2m), 7))
			for range reps {
				s, err := New(p)
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for i, load := range boundsLoads {
					for target := int(math.Round(load * m)); n < target; n++ {
						s.AddHash(r.Uint64())
					}
					if n == 0 {
						continue // a load below one id at this m
					}
					cells[i].n++
					for e := range 2 {
						a := s.Answer(Estimator(e))
						if a.LowerBound <= float64(n) && float64(n) <= a.UpperBound {
							cells[i].covered[e]++
						}
						cells[i].bias[e] += a.Estimate/float64(n) - 1
					}
				}
			}
			for e := range 2 {
				est := Estimator(e)
				covered, total := 0, 0
				for i, c := range cells {
					if c.n == 0 {
						continue
					}
					covered += c.covered[e]
					total += c.n
					rate := float64(c.covered[e]) / float64(c.n)
					bias := c.bias[e] / float64(c.n) * math.Sqrt(m) / 1.04 // in standard errors
					if *sweep {
						t.Logf("| %d | %s | %g | %.1f%% | %+.2f |", log2m, est, boundsLoads[i], 100*rate, bias)
					}
					if rate < 0.8 {
						t.Errorf("log2m %d, %s estimator at n = %g·m: bounds held the truth in %.0f%% of %d sketches, want at least 80%%", log2m, est, boundsLoads[i], 100*rate, c.n)
					}
					// Below log2m 8 the improved estimator leans high by a
					// tenth to a third of a standard error (docs/hll.md).
					if est == ImprovedEstimator && log2m >= 8 && math.Abs(bias) > 4/math.Sqrt(float64(c.n)) {
						t.Errorf("log2m %d, improved estimator at n = %g·m: mean error %+.2f standard errors", log2m, boundsLoads[i], bias)
					}
				}
				rate := float64(covered) / float64(total)
				if *sweep {
					t.Logf("| %d | %s | all | %.2f%% | |", log2m, est, 100*rate)
				}
				if rate < 0.93 {
					t.Errorf("log2m %d, %s estimator: bounds held the truth in %.2f%% of sketches over every n, want at least 93%%", log2m, est, 100*rate)
				}
			}
		})
	}
}

// TestAnswerExact: EMPTY and EXPLICIT sketches answer exactly, with no
// error, from both estimators.
func TestAnswerExact(t *testing.T) {
	s, err := New(DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	for n := range 3 {
		if n > 0 {
			s.AddInt64(int64(n))
		}
		for e := range 2 {
			a := s.Answer(Estimator(e))
			if a.Estimate != float64(n) || a.StdError != 0 || a.LowerBound != float64(n) || a.UpperBound != float64(n) {
				t.Errorf("%d ids, %s estimator: %+v", n, Estimator(e), a)
			}
		}
	}
}

// TestImprovedEstimateKnownRegisters: the improved estimate of registers
// whose histogram gives σ and τ closed forms. All registers at 0: 0.
// Every register at value 1 (x = 0 for σ, no saturated register):
// z = m·Σ_{k=1..q} 2^−k·… reduces to m·(1 − 2^−q)·… and the estimate to
// m/(2·ln 2·(1/2)) = m/ln 2 for large q; the raw estimator's α·m²/Σ2^−1
// = 2·α·m agrees to within 4% (α = 0.7213/(1+1.079/m)).
func TestImprovedEstimateKnownRegisters(t *testing.T) {
	p := Params{Log2m: 10, Regwidth: 5, Expthresh: 0, Sparse: false}
	m := p.NumRegisters()
	regs := make([]uint8, m)
	if got := RegisterAnswer(p, regs, nil, ImprovedEstimator).Estimate; got != 0 {
		t.Errorf("all registers 0: %v, want 0", got)
	}
	for i := range regs {
		regs[i] = 1
	}
	// z = m·τ(1) (= 0) halved once per k from q = 30 down to 2 (k ≥ 2 hold
	// no register), then at k = 1 z = (z + m)/2, so z ≈ m/2, plus σ(0) = 0.
	want := float64(m) * float64(m) / (2 * math.Ln2) / (float64(m) / 2)
	if got := RegisterAnswer(p, regs, nil, ImprovedEstimator).Estimate; math.Abs(got-want) > 1e-9*want {
		t.Errorf("all registers 1: %v, want m/ln 2 = %v", got, want)
	}
	raw := 2 * 0.7213 / (1 + 1.079/float64(m)) * float64(m)
	if got := RegisterAnswer(p, regs, nil, ImprovedEstimator).Estimate; math.Abs(got-raw) > 0.04*raw {
		t.Errorf("all registers 1: improved %v, raw estimator %v", got, raw)
	}
}
