package hllbias

import (
	"math"
	"testing"
)

// TestTableReproduces regenerates the smallest precisions' grids and
// compares them with the committed table bit for bit: the table is what
// the documented simulation gives.
func TestTableReproduces(t *testing.T) {
	for _, p := range []int{MinPrecision} {
		got := Simulate(p, Trials(p))
		want := table[p-MinPrecision]
		if len(got) != len(want) {
			t.Fatalf("precision %d: %d points, table has %d", p, len(got), len(want))
		}
		for k := range got {
			if got[k] != want[k] {
				t.Errorf("precision %d, point %d: simulated %+v, table %+v", p, k, got[k], want[k])
			}
		}
	}
}

// TestSimulationIsUnbiasedFarOut checks the table against what
// HyperLogLog's analysis says of the raw estimate: far from the small
// range (at 5m) its bias is within the simulation's noise of zero, and
// at 0 values H is m exactly; the grid rises.
func TestSimulationIsUnbiasedFarOut(t *testing.T) {
	for p := MinPrecision; p <= MaxPrecision; p++ {
		pts := table[p-MinPrecision]
		m := float64(int(1) << p)
		if pts[0].N != 0 || pts[0].H != m {
			t.Errorf("precision %d: first point %+v, want {0 %v}", p, pts[0], m)
		}
		last := pts[len(pts)-1]
		a := 0.7213 / (1 + 1.079/m)
		if p < 7 {
			// Below 128 registers the libraries take tabulated α, not
			// the approximation.
			continue
		}
		rel := a*last.H/float64(last.N) - 1
		// 4 standard errors of the mean, plus the small bias α's
		// approximation leaves.
		if tol := 4*1.04/math.Sqrt(m*float64(Trials(p))) + 2e-4; math.Abs(rel) > tol {
			t.Errorf("precision %d: raw estimate at 5m is %+.4g%% off, more than %.3g%%", p, 100*rel, 100*tol)
		}
	}
	for p := MinPrecision; p <= MaxPrecision; p++ {
		pts := table[p-MinPrecision]
		for k := 1; k < len(pts); k++ {
			if pts[k].H <= pts[k-1].H || pts[k].N <= pts[k-1].N {
				t.Errorf("precision %d: point %d %+v does not increase from %+v", p, k, pts[k], pts[k-1])
			}
		}
	}
}

// TestBiasInterpolates checks both interpolations on the grid and
// between points, and that they refuse what is outside the table.
func TestBiasInterpolates(t *testing.T) {
	const p, a = 12, 0.72
	pts := table[p-MinPrecision]
	for _, f := range []func(int, float64, float64) (float64, bool){Bias, BiasKNN} {
		for _, k := range []int{0, 1, 100, len(pts) - 1} {
			x := a * pts[k].H
			if b, ok := f(p, a, x); !ok || b != x-float64(pts[k].N) {
				t.Errorf("bias at grid point %d = %v, %v; want %v", k, b, ok, x-float64(pts[k].N))
			}
		}
		lo, hi := a*pts[50].H, a*pts[51].H
		b, ok := f(p, a, (lo+hi)/2)
		b0, b1 := lo-float64(pts[50].N), hi-float64(pts[51].N)
		if !ok || b > max(b0, b1)+1 || b < min(b0, b1)-1 {
			t.Errorf("bias between points 50 and 51 = %v, %v; want within [%v, %v]", b, ok, min(b0, b1), max(b0, b1))
		}
		for _, e := range []float64{a*pts[0].H - 1, a*pts[len(pts)-1].H + 1, math.NaN()} {
			if b, ok := f(p, a, e); ok || b != 0 {
				t.Errorf("bias at %v = %v, %v; want none", e, b, ok)
			}
		}
		if _, ok := f(MaxPrecision+1, a, 1e6); ok {
			t.Errorf("bias at precision %d found", MaxPrecision+1)
		}
	}
}
