package kll

import (
	"fmt"
	"math/bits"
	"slices"
)

// Item is what a sketch keeps: doubles or longs.
type Item interface{ float64 | int64 }

// Sketch is a KLL sketch of items of type T (DataSketches' KllDoublesSketch
// or KllLongsSketch): an approximation of the rank of every value from a
// few hundred retained items. Create one with New or Decode.
//
// The retained items live in one array, level 0 at its top end and each
// higher level above the one below; levels[h] is where level h starts and
// levels[numLevels] the array's capacity. Free space is below levels[0],
// where updates go. A decoded sketch holds only its retained items (off is
// the position of items[0]); it grows to its capacity on its first update
// or merge, so that decoding allocates no more than the input holds.
//
// A Sketch is not safe for concurrent use: methods that only read may run
// together, but not alongside Update or Merge.
type Sketch[T Item] struct {
	k, minK      int
	n            uint64
	levels       []int // numLevels+1 boundaries
	items        []T   // positions off..levels[numLevels]-1
	off          int
	min, max     T
	level0Sorted bool
}

// New returns an empty sketch with parameter k (CheckK).
func New[T Item](k int) (*Sketch[T], error) {
	if err := CheckK(k); err != nil {
		return nil, err
	}
	return &Sketch[T]{k: k, minK: k, levels: []int{k, k}, items: make([]T, k)}, nil
}

func (s *Sketch[T]) numLevels() int { return len(s.levels) - 1 }

// at returns the item at position i of the array.
func (s *Sketch[T]) at(i int) T { return s.items[i-s.off] }

// level returns the items of level h.
func (s *Sketch[T]) level(h int) []T { return s.items[s.levels[h]-s.off : s.levels[h+1]-s.off] }

// K returns the sketch's k; MinK the smallest k of the sketches merged
// into it, which governs its error.
func (s *Sketch[T]) K() int    { return s.k }
func (s *Sketch[T]) MinK() int { return s.minK }

// N returns the number of values added (and merged).
func (s *Sketch[T]) N() uint64 { return s.n }

// IsEmpty reports whether no value was added.
func (s *Sketch[T]) IsEmpty() bool { return s.n == 0 }

// IsEstimationMode reports whether the sketch has compacted: more than one
// level. Before that it holds every value and answers exactly.
func (s *Sketch[T]) IsEstimationMode() bool { return s.numLevels() > 1 }

// Retained returns the number of items kept.
func (s *Sketch[T]) Retained() int { return s.levels[s.numLevels()] - s.levels[0] }

// Min and Max return the smallest and largest values added (zero for an
// empty sketch).
func (s *Sketch[T]) Min() T { return s.min }
func (s *Sketch[T]) Max() T { return s.max }

// NormalizedRankError is the sketch's rank error at its MinK.
func (s *Sketch[T]) NormalizedRankError(pmf bool) float64 { return NormalizedRankError(s.minK, pmf) }

// Clone returns a deep copy.
func (s *Sketch[T]) Clone() *Sketch[T] {
	c := *s
	c.levels = slices.Clone(s.levels)
	c.items = slices.Clone(s.items)
	return &c
}

// MemoryBytes approximates the heap the sketch holds.
func (s *Sketch[T]) MemoryBytes() int { return 8*cap(s.items) + 8*cap(s.levels) + 96 }

// grow gives a decoded sketch its whole array, so that updates have room.
func (s *Sketch[T]) grow() {
	if s.off == 0 {
		return
	}
	full := make([]T, s.levels[s.numLevels()])
	copy(full[s.off:], s.items)
	s.items, s.off = full, 0
}

// Update adds v. The caller keeps NaN out of a sketch of doubles (the
// libraries ignore it; sketchd refuses it at the door).
func (s *Sketch[T]) Update(v T) {
	s.grow()
	if s.n == 0 {
		s.min, s.max = v, v
	} else {
		s.min, s.max = min(s.min, v), max(s.max, v)
	}
	if s.levels[0] == 0 {
		s.compressWhileUpdating()
	}
	s.n++
	s.level0Sorted = false
	s.levels[0]--
	s.items[s.levels[0]] = v
}

// coin is the random bit of a compaction: which of each pair of items
// survives. DataSketches draws it from a random generator; sketchd derives
// it from the sketch's state (its count and the level compacted), so that
// replaying the same values onto the same state gives the same sketch,
// which a write-ahead log of values needs.
func coin(n uint64, level, salt int) int {
	x := n ^ uint64(level)<<56 ^ uint64(salt)<<40 ^ 0x9E3779B97F4A7C15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return int(x >> 63)
}

// compressWhileUpdating makes room at the bottom of a full array by
// compacting the lowest level at or over its capacity, first adding a
// level (and room) when that is the top one.
func (s *Sketch[T]) compressWhileUpdating() {
	h := s.findLevelToCompact()
	if h == s.numLevels()-1 {
		s.addEmptyTopLevel()
	}
	rawBeg, rawEnd := s.levels[h], s.levels[h+1]
	popAbove := s.levels[h+2] - rawEnd
	rawPop := rawEnd - rawBeg
	odd := rawPop & 1
	adjBeg, adjPop := rawBeg+odd, rawPop-odd
	half := adjPop / 2
	if h == 0 {
		slices.Sort(s.items[adjBeg : adjBeg+adjPop])
	}
	c := coin(s.n, h, 0)
	if popAbove == 0 {
		halveUp(s.items, adjBeg, adjPop, c)
	} else {
		halveDown(s.items, adjBeg, adjPop, c)
		mergeInto(s.items[adjBeg+half:adjBeg+half+half+popAbove], s.items[adjBeg:adjBeg+half], s.items[rawEnd:rawEnd+popAbove])
	}
	s.levels[h+1] -= half
	if odd == 1 {
		s.levels[h] = s.levels[h+1] - 1
		s.items[s.levels[h]] = s.items[rawBeg]
	} else {
		s.levels[h] = s.levels[h+1]
	}
	if h > 0 {
		// Shift the levels below up into the space freed, making room at
		// the bottom.
		amount := rawBeg - s.levels[0]
		copy(s.items[s.levels[0]+half:], s.items[s.levels[0]:s.levels[0]+amount])
		for l := range h {
			s.levels[l] += half
		}
	}
}

// findLevelToCompact returns the lowest level at or over its capacity.
func (s *Sketch[T]) findLevelToCompact() int {
	nl := s.numLevels()
	for h := 0; ; h++ {
		if h == nl-1 || s.levels[h+1]-s.levels[h] >= levelCapacity(s.k, nl, h) {
			return h
		}
	}
}

// addEmptyTopLevel grows a full array by the capacity of a new bottom
// level, shifting every item up, and adds an empty top level.
func (s *Sketch[T]) addEmptyTopLevel() {
	nl := s.numLevels()
	cur := s.levels[nl]
	delta := levelCapacity(s.k, nl+1, 0)
	items := make([]T, cur+delta)
	copy(items[delta:], s.items)
	levels := make([]int, nl+2)
	for i := range nl + 1 {
		levels[i] = s.levels[i] + delta
	}
	levels[nl+1] = cur + delta
	s.items, s.levels = items, levels
}

// halveDown keeps every other item of buf[start:start+length] (even
// length, sorted), starting with the one coin picks, in the lower half.
func halveDown[T Item](buf []T, start, length, coin int) {
	j := start + coin
	for i := start; i < start+length/2; i++ {
		buf[i] = buf[j]
		j += 2
	}
}

// halveUp keeps every other item, in the upper half.
func halveUp[T Item](buf []T, start, length, coin int) {
	j := start + length - 1 - coin
	for i := start + length - 1; i >= start+length/2; i-- {
		buf[i] = buf[j]
		j -= 2
	}
}

// Merge adds the values of o, keeping s's k: o's level 0 is added value
// by value, then the higher levels are merged level by level and
// compacted until they fit (DataSketches' merge). s's MinK becomes the
// smaller of the two when o has compacted.
func (s *Sketch[T]) Merge(o *Sketch[T]) {
	if o.IsEmpty() {
		return
	}
	s.grow()
	finalN := s.n + o.n
	wasEmpty := s.n == 0
	smin, smax := s.min, s.max
	for _, v := range o.level(0) {
		s.Update(v)
	}
	if o.numLevels() > 1 {
		s.mergeHigherLevels(o, finalN)
	}
	if wasEmpty {
		s.min, s.max = o.min, o.max
	} else {
		s.min, s.max = min(smin, o.min), max(smax, o.max)
	}
	s.n = finalN
	if o.IsEstimationMode() {
		s.minK = min(s.minK, o.minK)
	}
}

// mergeHigherLevels merges o's levels above 0 into s (whose level 0
// already holds o's).
func (s *Sketch[T]) mergeHigherLevels(o *Sketch[T], finalN uint64) {
	space := s.Retained() + (o.levels[o.numLevels()] - o.levels[1])
	work := make([]T, space)
	ub := 1 + bits.Len64(finalN) // more levels than the merge can need
	worklevels := make([]int, ub+2)
	outlevels := make([]int, ub+2)
	provisional := max(s.numLevels(), o.numLevels())

	// Level 0 is s's; each level above is s's and o's merged.
	copy(work, s.level(0))
	worklevels[1] = len(s.level(0))
	for h := 1; h < provisional; h++ {
		var mine, theirs []T
		if h < s.numLevels() {
			mine = s.level(h)
		}
		if h < o.numLevels() {
			theirs = o.level(h)
		}
		at := worklevels[h]
		worklevels[h+1] = at + len(mine) + len(theirs)
		mergeInto(work[at:worklevels[h+1]], mine, theirs)
	}
	numLevels, capacity, count := generalCompress(s.k, provisional, work, worklevels, outlevels, s.level0Sorted, finalN)
	items := make([]T, capacity)
	free := capacity - count
	copy(items[free:], work[outlevels[0]:outlevels[0]+count])
	shift := free - outlevels[0]
	levels := make([]int, numLevels+1)
	for h := range numLevels + 1 {
		levels[h] = outlevels[h] + shift
	}
	s.items, s.levels = items, levels
}

// mergeInto merges the sorted a and b into dst (len(a)+len(b) long),
// taking from b on ties. dst may share a buffer with a and b where no
// input is overwritten before it is read: the compactions pass a dst
// that starts where a ends and whose first len(a) slots end at or before
// b's start.
func mergeInto[T Item](dst, a, b []T) {
	i, j := 0, 0
	for k := range dst {
		if j == len(b) || i < len(a) && a[i] < b[j] {
			dst[k] = a[i]
			i++
		} else {
			dst[k] = b[j]
			j++
		}
	}
}

// generalCompress compacts the levels of buf (boundaries in levels) from
// the bottom up wherever the whole is over capacity and a level over its
// own, writing the result into buf itself with boundaries in out. It
// returns the final number of levels, the capacity of that many levels
// and the items kept.
func generalCompress[T Item](k, numLevels int, buf []T, levels, out []int, level0Sorted bool, n uint64) (int, int, int) {
	count := levels[numLevels] - levels[0]
	target := totalCapacity(k, numLevels)
	out[0] = 0
	for h := 0; ; h++ {
		if h == numLevels-1 {
			levels[h+2] = levels[h+1] // an empty level above the top
		}
		rawBeg, rawLim := levels[h], levels[h+1]
		rawPop := rawLim - rawBeg
		if count < target || rawPop < levelCapacity(k, numLevels, h) {
			copy(buf[out[h]:], buf[rawBeg:rawLim])
			out[h+1] = out[h] + rawPop
		} else {
			popAbove := levels[h+2] - rawLim
			odd := rawPop & 1
			adjBeg, adjPop := rawBeg+odd, rawPop-odd
			half := adjPop / 2
			if odd == 1 {
				buf[out[h]] = buf[rawBeg]
				out[h+1] = out[h] + 1
			} else {
				out[h+1] = out[h]
			}
			if h == 0 && !level0Sorted {
				slices.Sort(buf[adjBeg : adjBeg+adjPop])
			}
			c := coin(n, h, numLevels)
			if popAbove == 0 {
				halveUp(buf, adjBeg, adjPop, c)
			} else {
				halveDown(buf, adjBeg, adjPop, c)
				mergeInto(buf[adjBeg+half:adjBeg+half+half+popAbove], buf[adjBeg:adjBeg+half], buf[rawLim:rawLim+popAbove])
			}
			count -= half
			levels[h+1] -= half
			if h == numLevels-1 {
				numLevels++
				target += levelCapacity(k, numLevels, 0)
			}
		}
		if h == numLevels-1 {
			return numLevels, target, count
		}
	}
}

// String describes the sketch for logs and tests.
func (s *Sketch[T]) String() string {
	return fmt.Sprintf("kll k=%d minK=%d n=%d levels=%v retained=%d", s.k, s.minK, s.n, s.levels, s.Retained())
}
