package freq

import (
	"fmt"
	"math"

	"github.com/sketchd/sketchd/internal/theta"
)

// MaxClasses is the largest max a frequency report accepts.
const MaxClasses = 1000

// Interval is an estimate with lower and upper bounds at the report's
// number of standard deviations.
type Interval struct {
	Estimate, Lower, Upper float64
}

// Class is one frequency class of a report: the users who were added
// exactly K times (or at least K times when OrMore), and their impressions.
type Class struct {
	K           int
	OrMore      bool
	Users       Interval
	Impressions Interval
}

// Report is a frequency report: how many distinct users (reach), how many
// impressions in all, and, per frequency class, how many users and
// impressions.
type Report struct {
	// StdDevs is the number of standard deviations of every bound: 1, 2 or
	// 3 (about 68%, 95%, 99.7% confidence).
	StdDevs int
	// Theta is the sketch's sampling rate; Retained its number of users.
	Theta    float64
	Retained int
	// Reach is the number of distinct users.
	Reach Interval
	// Impressions is the number of additions.
	Impressions Interval
	// Classes are k = 1..max-1, then "max or more".
	Classes []Class
}

// FrequencyReport answers, from the retained users and their exact counts:
//
//   - reach: the sketch's estimate, with DataSketches' binomial bounds;
//   - users in class k: the n_k retained users with count k (k >= max for
//     the last class), estimated as n_k/θ with the binomial bounds of n_k
//     samples at rate θ (the bounds DataSketches gives a filtered tuple
//     sketch);
//   - impressions in class k < max: exactly k times the users, bounds
//     included;
//   - impressions in "max or more", and in all: the Horvitz–Thompson sum
//     S/θ of the retained counts, with bounds S/θ ∓ s·σ, σ² = (1−θ)/θ² ·
//     Σc², widened to at least the users' bounds times the mean count, and
//     never below S (impressions certainly seen).
//
// While the sketch is exact (θ = 1) every figure is exact and its bounds
// equal it. maxClass must be in 2..MaxClasses and sd in 1..3, else ErrParams.
func (s *Sketch) FrequencyReport(maxClass, sd int) (Report, error) {
	if maxClass < 2 || maxClass > MaxClasses {
		return Report{}, fmt.Errorf("freq: report max %d not in [2, %d]: %w", maxClass, MaxClasses, ErrParams)
	}
	if sd < 1 || sd > 3 {
		return Report{}, fmt.Errorf("freq: %d standard deviations, want 1, 2 or 3: %w", sd, ErrParams)
	}
	th := s.Theta()
	users := make([]uint64, maxClass+1)  // users[k] retained users with count k; users[maxClass] those with more
	sums := make([]float64, maxClass+1)  // their summed counts
	sumSq := make([]float64, maxClass+1) // and squared counts
	var total, totalSq float64
	for i, h := range s.keys {
		if h == 0 {
			continue
		}
		c := float64(s.counts[i])
		k := min(int(s.counts[i]), maxClass)
		users[k]++
		sums[k] += c
		sumSq[k] += c * c
		total += c
		totalSq += c * c
	}
	r := Report{StdDevs: sd, Theta: th, Retained: s.n, Classes: make([]Class, 0, maxClass)}
	r.Reach = usersInterval(uint64(s.n), th, sd)
	r.Impressions = impressionsInterval(uint64(s.n), total, totalSq, th, sd)
	for k := 1; k <= maxClass; k++ {
		c := Class{K: k, OrMore: k == maxClass, Users: usersInterval(users[k], th, sd)}
		if c.OrMore {
			c.Impressions = impressionsInterval(users[k], sums[k], sumSq[k], th, sd)
		} else {
			f := float64(k)
			c.Impressions = Interval{f * c.Users.Estimate, f * c.Users.Lower, f * c.Users.Upper}
		}
		r.Classes = append(r.Classes, c)
	}
	return r, nil
}

// usersInterval is n samples at rate th with the binomial bounds.
func usersInterval(n uint64, th float64, sd int) Interval {
	est := float64(n) / th
	if th == 1 {
		return Interval{est, est, est}
	}
	lo, _ := theta.LowerBound(n, th, sd)
	hi, _ := theta.UpperBound(n, th, sd)
	return Interval{est, lo, hi}
}

// impressionsInterval bounds the sum of counts behind n sampled users whose
// counts sum to sum (squares to sumSq).
func impressionsInterval(n uint64, sum, sumSq, th float64, sd int) Interval {
	est := sum / th
	if th == 1 {
		return Interval{est, est, est}
	}
	sigma := math.Sqrt((1 - th) / (th * th) * sumSq)
	lo, hi := est-float64(sd)*sigma, est+float64(sd)*sigma
	u := usersInterval(n, th, sd)
	if n > 0 {
		mean := sum / float64(n)
		lo, hi = math.Min(lo, u.Lower*mean), math.Max(hi, u.Upper*mean)
	} else {
		// No sampled user: nothing is known of their counts; at least one
		// impression each, as the users' upper bound says.
		hi = math.Max(hi, u.Upper)
	}
	return Interval{est, math.Max(lo, sum), hi}
}
