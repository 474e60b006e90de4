package cms

import (
	"errors"
	"math"
	"testing"
)

func TestParamsFromError(t *testing.T) {
	tests := []struct {
		eps, delta   float64
		width, depth int
	}{
		{0.001, 0.01, 2719, 5},
		{0.01, 0.05, 272, 3},
		{0.5, 0.5, 6, 1},
		{0.999, 0.999, 3, 1},
		{1e-4, 1e-3, 27183, 7},
		{math.E / (1 << 17), math.Exp(-32), 1 << 17, 32},
		{math.E / (1 << 22), 0.5, 1 << 22, 1},
	}
	for _, tc := range tests {
		p, err := ParamsFromError(tc.eps, tc.delta)
		if err != nil {
			t.Errorf("ParamsFromError(%v, %v) error %v", tc.eps, tc.delta, err)
			continue
		}
		if p.Width != tc.width || p.Depth != tc.depth {
			t.Errorf("ParamsFromError(%v, %v) = width %d depth %d, want %d %d", tc.eps, tc.delta, p.Width, p.Depth, tc.width, tc.depth)
		}
		if p.Epsilon() > tc.eps || p.Delta() > tc.delta*(1+1e-9) {
			t.Errorf("ParamsFromError(%v, %v) gives ε %v δ %v, looser than asked", tc.eps, tc.delta, p.Epsilon(), p.Delta())
		}
	}
}

// Epsilon and Delta go back to the same width and depth.
func TestParamsFromErrorInverts(t *testing.T) {
	for _, d := range []int{1, 2, 5, 7, 16, 32} {
		for _, w := range []int{1, 2, 3, 10, 271, 2719, 27183, 99991, MaxCounters / 32} {
			p := Params{Width: w, Depth: d}
			if w <= 2 {
				// e/w >= 1: not an epsilon ParamsFromError accepts.
				continue
			}
			got, err := ParamsFromError(p.Epsilon(), p.Delta())
			if err != nil {
				t.Fatalf("ParamsFromError(%v, %v) error %v", p.Epsilon(), p.Delta(), err)
			}
			if got.Width != w || got.Depth != d {
				t.Errorf("ParamsFromError(Epsilon, Delta of %d×%d) = %d×%d", w, d, got.Width, got.Depth)
			}
		}
	}
}

func TestParamsFromErrorRejects(t *testing.T) {
	bad := []float64{0, 1, -0.1, -1, 1.5, math.NaN(), math.Inf(1), math.Inf(-1)}
	for _, v := range bad {
		if _, err := ParamsFromError(v, 0.01); !errors.Is(err, ErrParams) {
			t.Errorf("ParamsFromError(%v, 0.01) error %v, want ErrParams", v, err)
		}
		if _, err := ParamsFromError(0.01, v); !errors.Is(err, ErrParams) {
			t.Errorf("ParamsFromError(0.01, %v) error %v, want ErrParams", v, err)
		}
	}
	tooBig := []struct{ eps, delta float64 }{
		{1e-7, 0.01},                     // 27M counters a row
		{math.E / (1 << 22), 0.2},        // 2 rows of 4M
		{5e-324, 0.5},                    // width overflows to +Inf
		{0.01, 1e-15},                    // depth 35
		{0.01, 5e-324},                   // depth 745
		{math.E / 131073, math.Exp(-32)}, // 32 rows of 131073
	}
	for _, tc := range tooBig {
		if p, err := ParamsFromError(tc.eps, tc.delta); !errors.Is(err, ErrParams) {
			t.Errorf("ParamsFromError(%v, %v) = %+v, %v, want ErrParams", tc.eps, tc.delta, p, err)
		}
	}
}

func TestParamsValidate(t *testing.T) {
	tests := []struct {
		name string
		p    Params
		ok   bool
	}{
		{"default", DefaultParams(), true},
		{"smallest", Params{Width: 1, Depth: 1}, true},
		{"widest", Params{Width: MaxCounters, Depth: 1}, true},
		{"deepest", Params{Width: MaxCounters / MaxDepth, Depth: MaxDepth, TopK: MaxTopK, Conservative: true}, true},
		{"depth 0", Params{Width: 10, Depth: 0}, false},
		{"depth 33", Params{Width: 10, Depth: 33}, false},
		{"depth negative", Params{Width: 10, Depth: -1}, false},
		{"width 0", Params{Width: 0, Depth: 5}, false},
		{"width negative", Params{Width: -5, Depth: 5}, false},
		{"too many counters", Params{Width: MaxCounters/5 + 1, Depth: 5}, false},
		{"width huge", Params{Width: math.MaxInt, Depth: 1}, false},
		{"topk negative", Params{Width: 10, Depth: 5, TopK: -1}, false},
		{"topk 1001", Params{Width: 10, Depth: 5, TopK: MaxTopK + 1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrParams)) {
				t.Fatalf("Validate(%+v) = %v, want ok %v or ErrParams", tc.p, err, tc.ok)
			}
			s, err := New(tc.p)
			if tc.ok != (err == nil) {
				t.Fatalf("New(%+v) error %v, want ok %v", tc.p, err, tc.ok)
			}
			if tc.ok && s.Params() != tc.p {
				t.Fatalf("New(%+v).Params() = %+v", tc.p, s.Params())
			}
		})
	}
}

func TestDefaultParamsMatchesError(t *testing.T) {
	p, err := ParamsFromError(0.001, 0.01)
	if err != nil || p != DefaultParams() {
		t.Fatalf("ParamsFromError(0.001, 0.01) = %+v, %v, want %+v", p, err, DefaultParams())
	}
}
