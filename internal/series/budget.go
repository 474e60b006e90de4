package series

import (
	"fmt"
	"time"

	"github.com/sketchd/sketchd/internal/sketch"
)

// DefaultMaxBuckets is the default of Budget.MaxBuckets: eleven years of
// hours, or 270 years of days, in one request.
const DefaultMaxBuckets = 100_000

// Budget bounds the planning of one request, so that what a read costs
// does not grow with the span it names: MaxBuckets bounds the buckets its
// plans consider, summed over every range of the request (a union of
// many series ranges shares one budget), and MaxPoints the points of a
// line. Planning past either is Unprocessable (422), before any bucket is
// read.
//
// What a plan considers: for a range, every unexpired bucket inside it at
// every kept level (the shortest-path cover looks at each); for a line,
// the buckets of the level it is made of, from its first window's start
// to its end. The buckets a read then loads are those of the plan that
// exist, never more.
type Budget struct {
	MaxBuckets int
	MaxPoints  int
	used       int
}

// NewBudget returns a budget of maxBuckets buckets and maxPoints points;
// a value below 1 takes the default (DefaultMaxBuckets, MaxPoints).
func NewBudget(maxBuckets, maxPoints int) *Budget {
	if maxBuckets < 1 {
		maxBuckets = DefaultMaxBuckets
	}
	if maxPoints < 1 {
		maxPoints = MaxPoints
	}
	return &Budget{MaxBuckets: maxBuckets, MaxPoints: maxPoints}
}

// Used is how many buckets the request's plans have considered so far.
func (b *Budget) Used() int { return b.used }

// spend takes one bucket; false once the request has considered more
// than MaxBuckets.
func (b *Budget) spend() bool {
	b.used++
	return b.used <= b.MaxBuckets
}

// tooManyBuckets is the refusal of a plan past the budget: what was asked,
// the limit and how to narrow. before is what the request's earlier plans
// had considered; noun names the buckets ("buckets", "hour buckets").
func (b *Budget) tooManyBuckets(before int, what, noun string) error {
	together := ""
	if before > 0 {
		together = fmt.Sprintf(" (with the %d of this request's other series ranges)", before)
	}
	return sketch.Errorf(sketch.Unprocessable, "%s more than %d %s%s; a request may plan at most %d buckets (the server's -max-series-buckets): %s",
		what, b.MaxBuckets-before, noun, together, b.MaxBuckets, narrow)
}

const narrow = "ask for a shorter range (or window), or read a series that also keeps a coarser level (day, week, month) for long spans"

// Run is Count consecutive buckets of one level: the first starts at
// First, the last at Last. A plan is a few runs in time order (months
// inside, then days and hours towards the edges), so it is described,
// and its buckets found, by range instead of one by one.
type Run struct {
	Level       Level
	First, Last time.Time
	Count       int
}

// Contains reports whether a bucket of level l starting at start lies in
// the run.
func (r Run) Contains(l Level, start time.Time) bool {
	return l == r.Level && !start.Before(r.First) && !start.After(r.Last)
}

// runsOf groups a cover's keys (adjacent in time) into runs.
func runsOf(keys []Key) []Run {
	var runs []Run
	for _, k := range keys {
		if n := len(runs); n > 0 && runs[n-1].Level == k.Level {
			runs[n-1].Last = k.Start
			runs[n-1].Count++
			continue
		}
		runs = append(runs, Run{Level: k.Level, First: k.Start, Last: k.Start, Count: 1})
	}
	return runs
}

// Bucket is a stored bucket a read found: its key and its sketch.
type Bucket struct {
	Key
	Sketch sketch.Sketch
}
