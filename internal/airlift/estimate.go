package airlift

import (
	"math"

	"github.com/sketchd/sketchd/internal/hllbias"
)

// Estimate is the cardinality estimate as airlift's cardinality()
// computes it (and Trino's cardinality(hll)):
//
//   - sparse: linear counting over the 2^26 buckets of the entries,
//     round(2^26·ln(2^26/(2^26 − entries))), exactly airlift's;
//   - dense, with the smallest register 0 in more than 40% of the
//     buckets: linear counting, round(m·ln(m/V)), exactly airlift's;
//   - otherwise the raw estimate E = α·m²/Σ2^-register (α 0.673, 0.697,
//     0.709 at 4, 5, 6 index bits, else 0.7213/(1+1.079/m); summed in
//     bucket order as airlift does) less its simulated bias (package
//     hllbias, interpolated linearly as airlift does) while E is within
//     that table (up to about 5m): close to airlift's, whose own table
//     differs (docs/formats.md gives by how much); above, round(E),
//     exactly airlift's.
func (s *Sketch) Estimate() int64 {
	e, _ := s.Describe()
	return e
}

// Describe returns the estimate and its relative standard error: linear
// counting's (√(m(e^t − t − 1))/n at t = n/m, m the 2^26 sparse or the
// 2^p dense buckets) while the estimate is a linear count, else
// HyperLogLog's 1.04/√(2^p); 0 for an empty sketch.
func (s *Sketch) Describe() (estimate int64, stdError float64) {
	if !s.dense {
		if len(s.entries) == 0 {
			return 0, 0
		}
		const buckets = 1 << prefixBits
		n := math.Round(linearCount(buckets, buckets-len(s.entries)))
		return int64(n), lcError(buckets, n)
	}
	m := 1 << s.p
	zeros, base := 0, uint8(255)
	for _, v := range s.regs {
		base = min(base, v)
		if v == 0 {
			zeros++
		}
	}
	if base == 0 && float64(zeros) > 0.4*float64(m) {
		n := math.Round(linearCount(m, zeros))
		if n == 0 {
			return 0, 0
		}
		return int64(n), lcError(m, n)
	}
	sum := 0.0
	for _, v := range s.regs {
		sum += inversePowers[v]
	}
	a := alpha(s.p)
	e := a * float64(m) * float64(m) / sum
	b, _ := hllbias.Bias(s.p, a, e)
	return int64(math.Round(e - b)), 1.04 / math.Sqrt(float64(m))
}

// StdError is Describe's relative standard error.
func (s *Sketch) StdError() float64 {
	_, se := s.Describe()
	return se
}

// inversePowers[v] is 2^-v.
var inversePowers = func() (t [66]float64) {
	for v := range t {
		t[v] = 1 / float64(uint64(1)<<v)
	}
	return t
}()

// alpha is airlift's HyperLogLog constant for 2^p buckets.
func alpha(p int) float64 {
	switch p {
	case 4:
		return 0.673
	case 5:
		return 0.697
	case 6:
		return 0.709
	}
	return 0.7213 / (1 + 1.079/float64(int(1)<<p))
}

func linearCount(m, zeros int) float64 {
	return float64(m) * math.Log(float64(m)*1.0/float64(zeros))
}

func lcError(m int, n float64) float64 {
	t := n / float64(m)
	return math.Sqrt(float64(m)*(math.Exp(t)-t-1)) / n
}
