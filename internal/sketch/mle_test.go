package sketch

import (
	"math"
	"math/rand/v2"
	"testing"
)

// regsOf returns the registers of hashes at log2m/regwidth, built with the
// storage format's rule (independently of internal/hll).
func regsOf(log2m, regwidth int, hashes ...[]uint64) []uint8 {
	r := make([]uint8, 1<<log2m)
	for _, hs := range hashes {
		for _, h := range hs {
			if i, v := registerOf(h, log2m, regwidth); v > r[i] {
				r[i] = v
			}
		}
	}
	return r
}

// randomHashes returns n uniformly random 64-bit hashes.
func randomHashes(rng *rand.Rand, n int) []uint64 {
	hs := make([]uint64, n)
	for i := range hs {
		hs[i] = rng.Uint64()
	}
	return hs
}

func TestRegisterOf(t *testing.T) {
	tests := []struct {
		name            string
		h               uint64
		log2m, regwidth int
		idx             int
		val             uint8
	}{
		// Examples of the storage-format spec, section 5.
		{"pg hash of 1", 0x8895A3F5AF28CAFE, 12, 5, 0xAFE, 3},
		{"capped", 1 << 50, 11, 5, 0, 31},
		{"upper bits zero", 0x7ff, 11, 5, 0, 0},
		{"lowest upper bit", 1 << 11, 11, 5, 0, 1},
		{"regwidth 6 top bit", 1 << 63, 11, 6, 0, 53},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx, val := registerOf(tt.h, tt.log2m, tt.regwidth)
			if idx != tt.idx || val != tt.val {
				t.Errorf("registerOf(%#x, %d, %d) = (%d, %d), want (%d, %d)", tt.h, tt.log2m, tt.regwidth, idx, val, tt.idx, tt.val)
			}
		})
	}
}

func TestJointMLEInput(t *testing.T) {
	if _, err := jointMLE(make([]uint8, 16), make([]uint8, 32), 4, 5); err == nil {
		t.Error("jointMLE with 16 and 32 registers: nil error, want one")
	}
	if _, err := jointMLE(make([]uint8, 16), make([]uint8, 16), 5, 5); err == nil {
		t.Error("jointMLE with 16 registers at log2m 5: nil error, want one")
	}
}

// TestJointMLEGradient checks the analytic gradient and Hessian of the
// log-likelihood against central differences.
func TestJointMLEGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	a, b, x := randomHashes(rng, 3000), randomHashes(rng, 9000), randomHashes(rng, 2000)
	const log2m, regwidth = 10, 5
	s := newJointStats(regsOf(log2m, regwidth, a, x), regsOf(log2m, regwidth, b, x), newRegisterModel(log2m, regwidth))
	at := [3]float64{2500, 8000, 2500}
	_, g, h := s.eval(at)
	for i := range 3 {
		d := 1e-3 * at[i]
		up, dn := at, at
		up[i] += d
		dn[i] -= d
		fu, gu, _ := s.eval(up)
		fd, gd, _ := s.eval(dn)
		num := (fu - fd) / (2 * d)
		if math.Abs(num-g[i]) > 1e-5*math.Max(1, math.Abs(g[i])) {
			t.Errorf("gradient[%d] = %g, numeric %g", i, g[i], num)
		}
		for j := range 3 {
			numH := (gu[j] - gd[j]) / (2 * d)
			if math.Abs(numH-h[j][i]) > 1e-4*math.Max(1e-9, math.Abs(h[j][i])) {
				t.Errorf("hessian[%d][%d] = %g, numeric %g", j, i, h[j][i], numH)
			}
		}
	}
}

func TestJointMLEKnownSets(t *testing.T) {
	tests := []struct {
		name         string
		log2m        int
		regwidth     int
		na, nb, nx   int
		wantExactNil bool
	}{
		{"equal halves", 12, 5, 50000, 50000, 50000, false},
		{"small intersection", 12, 5, 100000, 100000, 5000, false},
		{"subset", 12, 5, 0, 100000, 20000, false},
		{"linear counting range", 12, 5, 500, 700, 300, false},
		{"disjoint tiny", 14, 5, 30, 40, 0, true},
		{"regwidth 6", 11, 6, 40000, 10000, 10000, false},
		{"regwidth 4", 11, 4, 40000, 10000, 10000, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			a, b, x := randomHashes(rng, tt.na), randomHashes(rng, tt.nb), randomHashes(rng, tt.nx)
			est, err := jointMLE(regsOf(tt.log2m, tt.regwidth, a, x), regsOf(tt.log2m, tt.regwidth, b, x), tt.log2m, tt.regwidth)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantExactNil {
				if !est.exactZero || est.x != 0 {
					t.Errorf("disjoint: x = %g, exactZero %v, want 0 and true", est.x, est.exactZero)
				}
				return
			}
			sd := math.Sqrt(est.cov[2][2])
			if !est.determined || math.IsNaN(sd) {
				t.Fatalf("undetermined estimate %+v", est)
			}
			if d := math.Abs(est.x - float64(tt.nx)); d > 4*sd {
				t.Errorf("x = %.0f ± %.0f, truth %d: off by %.1f sigma", est.x, sd, tt.nx, d/sd)
			}
			for _, c := range []struct {
				name string
				got  float64
				sd   float64
				want int
			}{{"a", est.a, math.Sqrt(est.cov[0][0]), tt.na}, {"b", est.b, math.Sqrt(est.cov[1][1]), tt.nb}} {
				if d := math.Abs(c.got - float64(c.want)); d > 4*c.sd+1 {
					t.Errorf("%s = %.0f ± %.0f, truth %d", c.name, c.got, c.sd, c.want)
				}
			}
		})
	}
}

func TestJointMLEIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	r := regsOf(12, 5, randomHashes(rng, 200000))
	est, err := jointMLE(r, r, 12, 5)
	if err != nil {
		t.Fatal(err)
	}
	if est.a > 1 || est.b > 1 {
		t.Errorf("identical sketches: a = %g, b = %g, want about 0", est.a, est.b)
	}
	if math.Abs(est.x-200000) > 4*0.0163*200000 {
		t.Errorf("identical sketches: x = %g, want about 200000", est.x)
	}
}

// TestPairCounts checks the branch-free register pair counts against
// their definition, register by register, on pairs of every relation,
// values above the cap included.
func TestPairCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, top := range []uint8{1, 7, 31, 50, 60} {
		a, b := make([]uint8, 4096), make([]uint8, 4096)
		for i := range a {
			a[i], b[i] = uint8(rng.IntN(64)), uint8(rng.IntN(64))
			if i%5 == 0 {
				b[i] = a[i]
			}
		}
		var want [5][256]int
		for i := range a {
			ka, kb := min(a[i], top), min(b[i], top)
			switch {
			case ka < kb:
				want[0][ka]++
				want[3][kb]++
			case ka > kb:
				want[1][ka]++
				want[2][kb]++
			default:
				want[4][ka]++
			}
		}
		if got := pairCounts(a, b, top); got != want {
			t.Errorf("top %d: pairCounts differs from counting register by register", top)
		}
	}
}
