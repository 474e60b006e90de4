// Package kll implements KLL quantile sketches (Karnin, Lang and Liberty)
// of doubles or longs as Apache DataSketches does, in its compact binary
// format, which its Java, C++ and Python libraries read and write.
//
// # The sketch
//
// A sketch with parameter k (MinK 8 to MaxK 65535, DefaultK 200) keeps
// its items in levels; an item of level h stands for 2^h values. New
// values go to level 0. When the array is full, the lowest level at or
// over its capacity (k·(2/3)^(depth from the top), at least 8) is sorted
// and compacted: every other item is kept, one level up, the pair's other
// item dropped by a coin (an odd item out stays). Merging adds the other
// sketch's level 0 value by value and merges the levels above pairwise,
// compacting as needed; the merged sketch keeps its k, and its MinK
// becomes the smaller k of the two when the other had compacted.
//
// The coin is not random: it is a hash of the sketch's count and the
// level compacted, so the same values added to the same state give the
// same sketch, as a write-ahead log replaying values needs. The error
// guarantee assumes values that do not depend on the coins; an adversary
// who knows the scheme could choose values that defeat it.
//
// # Error
//
// A quantile's rank, a value's rank and a CDF value are within
// NormalizedRankError(MinK, false) = 2.296/k^0.9723 of the truth, and a
// PMF mass within NormalizedRankError(MinK, true) = 2.446/k^0.9433, with
// probability 99% (DataSketches' empirical fit; 1.33% and 1.65% at
// k = 200). The tests check a million simulated values against both.
//
// # Queries
//
// A View sorts the retained items with their weights and answers as
// DataSketches' Java library does (view.go): the min and max are in the
// view (quantile 0 is the min and 1 the max), ranks are searched inclusive
// (the weight at most x) or exclusive (below x), and ⌈rank·n⌉ is taken
// after rounding rank·n to 7 decimals when n ≤ 10^7. Split points of a CDF
// or PMF must increase strictly.
//
// # Encoding (DataSketches' compact KLL format)
//
// Little-endian. The preamble is 8 bytes; what follows depends on it.
//
//	offset  size  field
//	0       1     preamble ints: 2 (empty or single item) or 5 (full)
//	1       1     serial version: 1 (empty or full) or 2 (single item)
//	2       1     family: 15 (KLL)
//	3       1     flags: 1 empty, 2 level 0 sorted, 4 single item;
//	              8 a sketch of doubles, as DataSketches' Java library
//	              3.2 to 4.0 wrote it (read, never written; see Declared)
//	4       2     k, 8..65535
//	6       1     m, the smallest level capacity: 8
//	7       1     the item type in sketchd's bytes: 0 doubles, 1 longs.
//	              The libraries write 0 here and ignore it; they do not
//	              say what the items are (but for flag 8 above), so the
//	              reader says it: the bytes of a library's sketch of
//	              longs are taken as longs by marking them (MarkLongs)
//	(empty: nothing more)
//	(single item)
//	8       8     the item: an IEEE 754 double or a two's-complement int64
//	(full)
//	8       8     n, the number of values, at least 2
//	16      2     min k, 8..k
//	18      1     L, the number of levels, 1..61
//	19      1     zero
//	20      4·L   where each level starts in an array of capacity
//	              C = Σ_h max(8, k·(2/3)^(L−h−1)) (the end of the last is
//	              C, not written), non-decreasing
//	20+4L   8     the min
//	28+4L   8     the max
//	36+4L   8·R   the R = C − (start of level 0) items kept, level 0 first
//
// Nothing follows the last item. Levels above 0 are sorted, and so is
// level 0 when flagged; Σ_h 2^h·(items of level h) = n; every item is in
// [min, max], doubles finite; with one level (nothing compacted) the min
// and max are among the items.
//
// # Errors
//
// Every error wraps one of ErrParams, ErrTooShort, ErrVersion, ErrCorrupt
// or ErrEmpty, with the offset or value involved; Decode's doc lists which
// violation gives which. Decode checks the length against the preamble
// before allocating and a decoded sketch holds only its R items (its
// array grows to C on the first update), so memory stays within a small
// multiple of the input; no input panics. Decoding then encoding gives
// back the same bytes (but for flag 8, which is not written).
package kll
