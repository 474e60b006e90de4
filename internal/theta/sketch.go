package theta

import (
	"fmt"
	"slices"
)

// Sketch is a theta sketch in DataSketches' QuickSelect form: the distinct
// hashes below theta, at most 15/16 of a 2^(lg_k+1)-slot table; when that
// fills, theta drops to the (k+1)-th smallest hash and only the k smallest
// stay. The zero value is not usable; call New or Decode.
//
// A sketch is held in one of two forms with the same contents: compact (a
// sorted slice, as decoded or produced by a set operation; cheap to merge
// and encode) or a hash table (after the first update; cheap to update).
// The form never shows in results or bytes.
type Sketch struct {
	lgK   uint8
	empty bool
	theta uint64

	// sorted holds the retained hashes in ascending order while table is nil.
	sorted []uint64

	// table is an open-addressing table of 2^lgSize slots, 0 meaning free;
	// n counts the filled ones.
	table  []uint64
	lgSize uint8
	n      int
}

const minLgSize = 5

// New returns an empty sketch.
func New(p Params) (*Sketch, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Sketch{lgK: uint8(p.LgK), empty: true, theta: MaxTheta}, nil
}

// Params returns the sketch's parameters.
func (s *Sketch) Params() Params { return Params{LgK: int(s.lgK)} }

// IsEmpty reports whether the sketch has never been updated with a value
// (an empty string does not count, as in DataSketches).
func (s *Sketch) IsEmpty() bool { return s.empty }

// IsEstimationMode reports whether theta is below 1, so that the estimate
// is not exact.
func (s *Sketch) IsEstimationMode() bool { return s.theta < MaxTheta && !s.empty }

// Theta64 returns theta as DataSketches stores it: a hash is retained when
// it is below Theta64. It is MaxTheta while the sketch is exact.
func (s *Sketch) Theta64() uint64 {
	if s.empty {
		return MaxTheta
	}
	return s.theta
}

// Theta returns the sampling rate Theta64/MaxTheta, in (0, 1].
func (s *Sketch) Theta() float64 { return float64(s.Theta64()) / MaxTheta }

// Retained returns the number of hashes the sketch holds.
func (s *Sketch) Retained() int {
	if s.table == nil {
		return len(s.sorted)
	}
	return s.n
}

// Estimate returns the estimated number of distinct values: retained/theta.
func (s *Sketch) Estimate() float64 { return float64(s.Retained()) / s.Theta() }

// LowerBound returns the lower bound on the number of distinct values at sd
// standard deviations (1, 2 or 3; about 68%, 95% and 99.7% confidence), as
// DataSketches computes it; the retained count while the sketch is exact.
func (s *Sketch) LowerBound(sd int) (float64, error) {
	if !s.IsEstimationMode() {
		if err := checkBoundArgs(1, sd); err != nil {
			return 0, err
		}
		return float64(s.Retained()), nil
	}
	return LowerBound(uint64(s.Retained()), s.Theta(), sd)
}

// UpperBound returns the upper bound at sd standard deviations.
func (s *Sketch) UpperBound(sd int) (float64, error) {
	if !s.IsEstimationMode() {
		if err := checkBoundArgs(1, sd); err != nil {
			return 0, err
		}
		return float64(s.Retained()), nil
	}
	return UpperBound(uint64(s.Retained()), s.Theta(), sd)
}

// AddInt adds v as DataSketches' update(long) does.
func (s *Sketch) AddInt(v int64) { s.AddHash(HashInt(v)) }

// AddString adds s as DataSketches' update(String) does: its bytes (UTF-8)
// hashed; an empty string is ignored and leaves the sketch as it was.
func (s *Sketch) AddString(v string) {
	if v == "" {
		return
	}
	s.AddHash(HashString(v))
}

// AddBytes adds b as update(byte[]) does; an empty slice is ignored.
func (s *Sketch) AddBytes(b []byte) {
	if len(b) == 0 {
		return
	}
	s.AddHash(HashBytes(b))
}

// AddHash adds a hash as HashInt, HashString and HashBytes return it (63
// bits). The sketch stops being empty; the hash is kept if it is below
// theta and not zero (zero marks a free slot, as in DataSketches).
func (s *Sketch) AddHash(h uint64) {
	s.empty = false
	if h >= s.theta || h == 0 {
		return
	}
	if s.table == nil {
		s.toTable()
	}
	s.insert(h)
}

// insert adds h (0 < h < theta) to the table unless it is there, growing
// the table or rebuilding it at a lower theta when it fills.
func (s *Sketch) insert(h uint64) {
	i, found := Slot(s.table, s.lgSize, h)
	if found {
		return
	}
	s.table[i] = h
	s.n++
	if s.n > s.capacity() {
		s.grow()
	}
}

// contains reports whether the table holds h (h != 0).
func (s *Sketch) contains(h uint64) bool {
	_, found := Slot(s.table, s.lgSize, h)
	return found
}

// fill returns a table of 2^lgSize slots holding e (distinct, non-zero),
// reusing table when it has that size.
func fill(table []uint64, lgSize uint8, e []uint64) []uint64 {
	if len(table) == 1<<lgSize {
		clear(table)
	} else {
		table = make([]uint64, 1<<lgSize)
	}
	for _, h := range e {
		i, _ := Slot(table, lgSize, h)
		table[i] = h
	}
	return table
}

// Slot returns where h (non-zero) is in an open-addressing table of
// 2^lgSize slots, 0 meaning free (found), or the free slot where it goes.
// The probe is DataSketches': the first slot from h's low bits, then
// steps of Stride. The table must have a free slot.
func Slot(table []uint64, lgSize uint8, h uint64) (i uint64, found bool) {
	mask := uint64(len(table) - 1)
	i = h & mask
	st := Stride(h, lgSize)
	for {
		switch table[i] {
		case h:
			return i, true
		case 0:
			return i, false
		}
		i = (i + st) & mask
	}
}

// Stride is odd, so probing visits every slot, and uses hash bits above the
// ones that chose the first slot.
func Stride(h uint64, lgSize uint8) uint64 { return 2*((h>>lgSize)&127) + 1 }

// capacity is how many entries the table holds before it grows (half full
// while it is at most 2^lgK slots) or is rebuilt (15/16 full at 2^(lgK+1)).
func (s *Sketch) capacity() int {
	if s.lgSize <= s.lgK {
		return 1 << (s.lgSize - 1)
	}
	return rebuildThreshold(int(s.lgK))
}

func (s *Sketch) grow() {
	if s.lgSize <= s.lgK {
		s.rehash(s.lgSize+1, s.entries(nil))
		return
	}
	s.rebuild()
}

// rebuild sets theta to the (k+1)-th smallest hash and keeps the k below it.
func (s *Sketch) rebuild() {
	e := s.entries(nil)
	k := 1 << s.lgK
	s.theta = NthSmallest(e, k)
	s.rehash(s.lgSize, e[:k])
}

// rehash refills a table of 2^lgSize slots with e (distinct, non-zero).
func (s *Sketch) rehash(lgSize uint8, e []uint64) {
	if lgSize < minLgSize {
		lgSize = minLgSize
	}
	s.table, s.lgSize, s.n = fill(s.table, lgSize, e), lgSize, len(e)
}

// toTable moves the sorted entries into a table sized as DataSketches would
// size one holding them.
func (s *Sketch) toTable() {
	e := s.sorted
	s.sorted = nil
	s.rehash(tableLgSize(len(e), int(s.lgK)), e)
}

// tableLgSize is the smallest table that holds n entries below its growth
// or rebuild point, at most 2^(lgK+1).
func tableLgSize(n, lgK int) uint8 {
	lg := minLgSize
	for lg <= lgK && n > 1<<(lg-1) {
		lg++
	}
	return uint8(lg)
}

// entries appends the retained hashes to dst, in no particular order.
func (s *Sketch) entries(dst []uint64) []uint64 {
	if s.table == nil {
		return append(dst, s.sorted...)
	}
	dst = slices.Grow(dst, s.n)
	for _, h := range s.table {
		if h != 0 {
			dst = append(dst, h)
		}
	}
	return dst
}

// Hashes appends the retained hashes to dst in ascending order.
func (s *Sketch) Hashes(dst []uint64) []uint64 {
	if s.table == nil {
		return append(dst, s.sorted...)
	}
	n := len(dst)
	dst = s.entries(dst)
	slices.Sort(dst[n:])
	return dst
}

// compact switches to the sorted form.
func (s *Sketch) compact() {
	if s.table == nil {
		return
	}
	s.sorted = s.Hashes(make([]uint64, 0, s.n))
	s.table, s.n, s.lgSize = nil, 0, 0
}

// Clone returns an independent copy.
func (s *Sketch) Clone() *Sketch {
	c := *s
	c.sorted = slices.Clone(s.sorted)
	c.table = slices.Clone(s.table)
	return &c
}

// MemoryBytes returns the heap the sketch holds, in bytes.
func (s *Sketch) MemoryBytes() int {
	return 64 + 8*(cap(s.sorted)+cap(s.table))
}

// SizeBytes returns the length of the sketch's encoding.
func (s *Sketch) SizeBytes() int {
	return 8*s.preambleLongs() + 8*s.Retained()
}

// MaxSizeBytes returns the longest encoding a sketch with parameters p can
// have: 3 preamble longs and p.MaxRetained() hashes.
func MaxSizeBytes(p Params) int { return 8 * (3 + p.MaxRetained()) }

// Union merges o into s, keeping s's lg_k: the result is what
// DataSketches' union of lg_k(s) returns for s and o (see UnionAll).
func (s *Sketch) Union(o *Sketch) {
	r, _ := UnionAll(s.Params(), s, o)
	*s = *r
}

// nthSmallest returns the element that would be at index k (0-based) if a
// were sorted, reordering a so that a[:k] holds the k smallest. The
// elements are distinct.
func NthSmallest(a []uint64, k int) uint64 {
	lo, hi := 0, len(a)-1
	for lo < hi {
		// median of three as the pivot
		mid := lo + (hi-lo)/2
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi] < a[lo] {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if a[hi] < a[mid] {
			a[hi], a[mid] = a[mid], a[hi]
		}
		pivot := a[mid]
		i, j := lo, hi
		for i <= j {
			for a[i] < pivot {
				i++
			}
			for a[j] > pivot {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return a[k]
		}
	}
	return a[k]
}

// String describes the sketch for tests and logs.
func (s *Sketch) String() string {
	return fmt.Sprintf("theta{lg_k %d, empty %t, theta %#x, retained %d}", s.lgK, s.empty, s.Theta64(), s.Retained())
}
