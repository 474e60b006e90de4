package hllbias

//go:generate go run ./internal/genbias -o table.go

// Bias returns the bias of the raw estimate e = α·H of a sketch of
// precision p whose estimator uses the constant alpha, interpolated
// linearly in the table (see the package doc); ok is false, and the bias
// 0, when p or e is outside the table.
func Bias(p int, alpha, e float64) (bias float64, ok bool) {
	if p < MinPrecision || p > MaxPrecision {
		return 0, false
	}
	pts := table[p-MinPrecision]
	lo, hi := alpha*pts[0].H, alpha*pts[len(pts)-1].H
	if !(e >= lo && e <= hi) {
		return 0, false
	}
	// The first point whose mean raw estimate is at least e.
	i, j := 0, len(pts)-1
	for i < j {
		h := (i + j) / 2
		if alpha*pts[h].H < e {
			i = h + 1
		} else {
			j = h
		}
	}
	x1, y1 := alpha*pts[i].H, alpha*pts[i].H-float64(pts[i].N)
	if i == 0 || x1 == e {
		return y1, true
	}
	x0, y0 := alpha*pts[i-1].H, alpha*pts[i-1].H-float64(pts[i-1].N)
	return y0 + (e-x0)*(y1-y0)/(x1-x0), true
}

// BiasKNN is Bias interpolated as the HLL++ paper and ZetaSketch do: the
// mean of the biases of the six grid points whose mean raw estimates are
// nearest e, each weighted by the inverse of its squared distance (the
// point's own bias when e is on one).
func BiasKNN(p int, alpha, e float64) (bias float64, ok bool) {
	if p < MinPrecision || p > MaxPrecision {
		return 0, false
	}
	pts := table[p-MinPrecision]
	if !(e >= alpha*pts[0].H && e <= alpha*pts[len(pts)-1].H) {
		return 0, false
	}
	const k = 6
	// The first point at or above e, then widen to the k nearest.
	i := 0
	for i < len(pts) && alpha*pts[i].H < e {
		i++
	}
	lo, hi := i, i // candidates are pts[lo:hi]
	for hi-lo < k {
		switch {
		case lo == 0:
			hi++
		case hi == len(pts):
			lo--
		case e-alpha*pts[lo-1].H <= alpha*pts[hi].H-e:
			lo--
		default:
			hi++
		}
	}
	sum, weights := 0.0, 0.0
	for _, pt := range pts[lo:hi] {
		x := alpha * pt.H
		b := x - float64(pt.N)
		d := (x - e) * (x - e)
		if d == 0 {
			return b, true
		}
		sum += b / d
		weights += 1 / d
	}
	return sum / weights, true
}
