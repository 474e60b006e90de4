package cms

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"unicode/utf8"
	"unsafe"

	"github.com/sketchd/sketchd/internal/murmur"
)

// maxTotal is the largest total count N: every count stays representable
// as a JSON number read into an int64.
const maxTotal = math.MaxInt64

// Sketch is a Count-Min sketch with optional conservative update and
// heavy-hitter candidates. Create one with New or Decode; the zero Sketch
// only serves as the target of UnmarshalBinary (other methods report
// ErrParams or answer as if empty).
//
// A Sketch is not safe for concurrent use: methods that only read
// (Estimate*, Top, Total, Params, Clone, AppendBinary, SizeBytes) may run
// together, but not alongside a method that adds or unions.
type Sketch struct {
	width        int
	depth        int
	conservative bool
	// exact holds while every row sums to exactly n: the sketch has only
	// ever used plain update, itself and in everything unioned into it.
	exact    bool
	n        uint64
	counters []uint64 // depth rows of width counters, row after row
	top      topK
	// bits is the value domain's size in bits (Params.DomainBits), 0
	// without range queries; upper[j-1] holds level j = 1..bits-1 of the
	// dyadic levels (dyadic.go), level 0 being counters.
	bits  int
	upper [][]uint64
}

// New returns an empty sketch with parameters p (see Params.Validate).
func New(p Params) (*Sketch, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return newSketch(p, make([]uint64, p.Width*p.Depth)), nil
}

// newSketch returns an empty sketch of p whose level-0 counters are
// counters; the upper levels of a ranged sketch are allocated here.
func newSketch(p Params, counters []uint64) *Sketch {
	s := &Sketch{
		width:        p.Width,
		depth:        p.Depth,
		conservative: p.Conservative,
		exact:        !p.Conservative,
		counters:     counters,
		top:          newTopK(p.TopK),
		bits:         p.DomainBits,
	}
	if p.DomainBits > 1 {
		s.upper = make([][]uint64, p.DomainBits-1)
		for j := 1; j < p.DomainBits; j++ {
			s.upper[j-1] = make([]uint64, p.levelSize(j))
		}
	}
	return s
}

// Params returns the sketch's parameters.
func (s *Sketch) Params() Params {
	return Params{Width: s.width, Depth: s.depth, Conservative: s.conservative, TopK: s.top.k, DomainBits: s.bits}
}

// Epsilon returns e/width: see Params.Epsilon.
func (s *Sketch) Epsilon() float64 { return s.Params().Epsilon() }

// Delta returns e^-depth: see Params.Delta.
func (s *Sketch) Delta() float64 { return s.Params().Delta() }

// Total returns N, the sum of all counts added (and unioned) so far. It is
// at most math.MaxInt64.
func (s *Sketch) Total() uint64 { return s.n }

// ErrorBound returns ε·N: with probability at least Confidence an estimate
// exceeds the true count by at most this much.
func (s *Sketch) ErrorBound() float64 { return s.Epsilon() * float64(s.n) }

// Confidence returns 1-δ, the probability that one estimate is within
// ErrorBound of the true count.
func (s *Sketch) Confidence() float64 { return 1 - s.Delta() }

// CheckAdd reports whether counts summing to sum can be added without N
// exceeding math.MaxInt64; the error wraps ErrOverflow (or ErrParams for
// the zero Sketch). Callers that add to several sketches all or nothing
// check each first: an Add of a valid id and a positive count then cannot
// fail.
func (s *Sketch) CheckAdd(sum uint64) error {
	if s.depth == 0 {
		return fmt.Errorf("cms: sketch not initialised: %w", ErrParams)
	}
	if sum > maxTotal-s.n {
		return fmt.Errorf("cms: total %d + %d exceeds %d: %w", s.n, sum, uint64(maxTotal), ErrOverflow)
	}
	return nil
}

func (s *Sketch) checkCount(count uint64) error {
	if count == 0 {
		return fmt.Errorf("cms: count 0: %w", ErrItem)
	}
	return s.CheckAdd(count)
}

// AddInt adds count occurrences of the int id v. It fails, changing
// nothing, if count is 0 (ErrItem) or N would exceed math.MaxInt64
// (ErrOverflow).
func (s *Sketch) AddInt(v int64, count uint64) error {
	if err := s.checkValue(v); err != nil {
		return fmt.Errorf("cms: %w", err)
	}
	if err := s.checkCount(count); err != nil {
		return err
	}
	h1, h2 := murmur.Int64(v, 0)
	est := s.update(h1, h2, count)
	s.addUpper(v, count)
	if s.top.k > 0 {
		s.top.observe(ID{num: v}, est)
	}
	return nil
}

// AddText adds count occurrences of the text id b (its UTF-8 bytes). It
// fails, changing nothing, if b is longer than MaxTextLen or not valid
// UTF-8 (ErrItem), count is 0 (ErrItem) or N would exceed math.MaxInt64
// (ErrOverflow). b is not retained: a heavy-hitter candidate keeps a copy.
func (s *Sketch) AddText(b []byte, count uint64) error {
	if s.bits > 0 {
		return fmt.Errorf("cms: %w", errTextRanged)
	}
	if err := checkText(len(b), utf8.Valid(b)); err != nil {
		return fmt.Errorf("cms: %w", err)
	}
	if err := s.checkCount(count); err != nil {
		return err
	}
	h1, h2 := murmur.Bytes(b, 0)
	est := s.update(h1, h2, count)
	if s.top.k > 0 {
		s.top.observe(borrowText(b), est)
	}
	return nil
}

// Add adds count occurrences of id, with the errors of AddInt and AddText.
func (s *Sketch) Add(id ID, count uint64) error {
	if err := s.CheckID(id); err != nil {
		return err
	}
	if err := s.checkCount(count); err != nil {
		return err
	}
	s.add(id, count)
	return nil
}

func (s *Sketch) add(id ID, count uint64) {
	h1, h2 := id.hash()
	est := s.update(h1, h2, count)
	s.addUpper(id.num, count)
	if s.top.k > 0 {
		s.top.observe(id, est)
	}
}

// AddBatch adds every item, or none: it first checks every id and count
// (ErrItem, naming the item's index) and that the counts' sum fits
// (ErrOverflow), and only then changes the sketch.
func (s *Sketch) AddBatch(items []Item) error {
	var sum uint64
	for i, it := range items {
		if it.Count == 0 {
			return fmt.Errorf("cms: item %d: count 0: %w", i, ErrItem)
		}
		if err := s.checkID(it.ID); err != nil {
			return fmt.Errorf("cms: item %d: %w", i, err)
		}
		if it.Count > maxTotal-sum {
			return fmt.Errorf("cms: item %d: counts sum past %d: %w", i, uint64(maxTotal), ErrOverflow)
		}
		sum += it.Count
	}
	if err := s.CheckAdd(sum); err != nil {
		return err
	}
	for _, it := range items {
		s.add(it.ID, it.Count)
	}
	return nil
}

// update adds count to the id hashed to (h1, h2) and returns its new
// estimate. Row i uses column ⌊((h1 + i·h2) mod 2^64) · width / 2^64⌋
// (doc.go). Plain update adds count in every row. Conservative update
// raises each of the id's counters to at least min+count, min being the
// smallest of them before the update.
func (s *Sketch) update(h1, h2, count uint64) uint64 {
	est := s.updateRows(s.counters, h1, h2, count)
	s.n += count
	return est
}

// updateRows is update on one level's rows c, leaving N alone.
func (s *Sketch) updateRows(c []uint64, h1, h2, count uint64) uint64 {
	w := uint64(s.width)
	if !s.conservative {
		est := uint64(math.MaxUint64)
		for row := 0; row < len(c); row += s.width {
			col, _ := bits.Mul64(h1, w)
			j := row + int(col)
			c[j] += count
			est = min(est, c[j])
			h1 += h2
		}
		return est
	}
	var idx [MaxDepth]int
	lo := uint64(math.MaxUint64)
	for i := range s.depth {
		col, _ := bits.Mul64(h1, w)
		j := i*s.width + int(col)
		idx[i] = j
		lo = min(lo, c[j])
		h1 += h2
	}
	target := lo + count
	for _, j := range idx[:s.depth] {
		c[j] = max(c[j], target)
	}
	return target
}

// estimate returns the smallest counter of the id hashed to (h1, h2).
func (s *Sketch) estimate(h1, h2 uint64) uint64 {
	if s.depth == 0 {
		return 0
	}
	return s.estimateRows(s.counters, h1, h2)
}

// estimateRows is estimate over one level's rows c.
func (s *Sketch) estimateRows(c []uint64, h1, h2 uint64) uint64 {
	w := uint64(s.width)
	est := uint64(math.MaxUint64)
	for row := 0; row < len(c); row += s.width {
		col, _ := bits.Mul64(h1, w)
		est = min(est, c[row+int(col)])
		h1 += h2
	}
	return est
}

// Estimate returns the estimated count of id: the smallest of its
// counters. It is never below the true count, and with probability at
// least Confidence at most ErrorBound above it.
func (s *Sketch) Estimate(id ID) uint64 {
	return s.estimate(id.hash())
}

// EstimateInt is Estimate(IntID(v)).
func (s *Sketch) EstimateInt(v int64) uint64 {
	return s.estimate(murmur.Int64(v, 0))
}

// EstimateText is Estimate of the text id b, without copying b.
func (s *Sketch) EstimateText(b []byte) uint64 {
	return s.estimate(murmur.Bytes(b, 0))
}

// Top returns up to k heavy hitters, heaviest first, each with its current
// estimate (ties broken by id: ints before texts, ints ascending, texts
// bytewise ascending). k <= 0 returns all candidates. With TopK 0 it
// returns nil.
//
// The candidates are the TopK ids ranked heaviest by their estimate at
// their last addition. Estimates never undercount, and when the estimates
// involved are within ε·N (each is with probability 1-δ), every id whose
// true count exceeds N/TopK + ε·N is a candidate: otherwise, when it was
// last added or later evicted, TopK other ids had estimates at least its
// count, so true counts above N/TopK, summing to more than N.
func (s *Sketch) Top(k int) []Item {
	if len(s.top.slots) == 0 {
		return nil
	}
	cs := make([]candidate, len(s.top.slots))
	for i, c := range s.top.slots {
		cs[i] = candidate{id: c.id, est: s.Estimate(c.id)}
	}
	slices.SortFunc(cs, compareRank)
	if k > 0 && k < len(cs) {
		cs = cs[:k]
	}
	out := make([]Item, len(cs))
	for i, c := range cs {
		out[i] = Item{ID: c.id, Count: c.est}
	}
	return out
}

// Union adds o's counters and total into s. The sketches must have the
// same width and depth (ErrIncompatible otherwise) and the totals must sum
// to at most math.MaxInt64 (ErrOverflow); on error s is unchanged.
//
// s keeps its own Conservative and TopK settings. The heavy-hitter
// candidates become the s.TopK heaviest of both sides' candidates,
// re-estimated against the summed counters. Counters that went through
// conservative update on either side stay valid upper bounds when summed,
// but rows then no longer sum to N; the encoding records that (doc.go).
func (s *Sketch) Union(o *Sketch) error {
	if s.depth == 0 || o.depth == 0 {
		return fmt.Errorf("cms: union with a sketch not initialised: %w", ErrParams)
	}
	if s.width != o.width || s.depth != o.depth {
		return fmt.Errorf("cms: union of width %d depth %d with width %d depth %d: %w",
			s.width, s.depth, o.width, o.depth, ErrIncompatible)
	}
	if s.bits != o.bits {
		return fmt.Errorf("cms: union of domain bits %d with domain bits %d: %w", s.bits, o.bits, ErrIncompatible)
	}
	if o.n > maxTotal-s.n {
		return fmt.Errorf("cms: union total %d + %d exceeds %d: %w", s.n, o.n, uint64(maxTotal), ErrOverflow)
	}
	var cs []candidate
	if s.top.k > 0 {
		cs = make([]candidate, 0, len(s.top.slots)+len(o.top.slots))
		cs = append(cs, s.top.slots...)
		for _, c := range o.top.slots {
			if _, dup := s.top.lookup(c.id); !dup {
				cs = append(cs, c)
			}
		}
	}
	for i, v := range o.counters {
		s.counters[i] += v
	}
	for j, l := range o.upper {
		for i, v := range l {
			s.upper[j][i] += v
		}
	}
	s.n += o.n
	s.exact = s.exact && o.exact
	if s.top.k > 0 {
		for i := range cs {
			cs[i].est = s.Estimate(cs[i].id)
		}
		slices.SortFunc(cs, compareRank)
		s.top.reset(cs[:min(len(cs), s.top.k)])
	}
	return nil
}

// Clone returns a deep copy of s.
func (s *Sketch) Clone() *Sketch {
	c := *s
	c.counters = slices.Clone(s.counters)
	c.top = s.top.clone()
	if s.upper != nil {
		c.upper = make([][]uint64, len(s.upper))
		for j, l := range s.upper {
			c.upper[j] = slices.Clone(l)
		}
	}
	return &c
}

// SizeBytes approximates the memory s holds: the struct, 8 bytes a counter
// and the heavy-hitter candidates.
func (s *Sketch) SizeBytes() int {
	n := int(unsafe.Sizeof(*s)) + 8*cap(s.counters) + s.top.sizeBytes()
	for _, l := range s.upper {
		n += 24 + 8*cap(l)
	}
	return n
}
