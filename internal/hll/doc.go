// Package hll implements HyperLogLog sketches byte-compatible with the
// storage format v1 shared by postgresql-hll, java-hll and js-hll, with
// postgresql-hll's semantics: the same hashing (MurmurHash3 x64_128, seed
// 0, first half), the same register rule (index = low log2m bits of the
// hash, value = 1 + trailing zeros of the bits above, capped at
// 2^regwidth-1), the same EMPTY -> EXPLICIT -> registers promotion, the
// same SPARSE/FULL choice made each time a sketch is encoded, and the same
// estimator. A sketch built here from the same ids as
// hll_add_agg(hll_hash_bigint(id), log2m, regwidth, expthresh, sparse)
// encodes to the same bytes and estimates the same cardinality.
//
// # Format
//
// Three header bytes: (version 1 << 4 | type), ((regwidth-1) << 5 | log2m),
// (sparse << 6 | cutoff code: 0 no EXPLICIT, 63 automatic, else
// log2(expthresh)+1). Type 0 UNDEFINED and 1 EMPTY have no body; 2 EXPLICIT
// is big-endian int64 hashes in ascending signed order; 3 SPARSE is
// (index << regwidth | value) words of log2m+regwidth bits for each filled
// register, ascending; 4 FULL is m words of regwidth bits. Words are packed
// most significant bit first and padded with zero bits to a whole byte.
// Decode documents exactly what it accepts.
//
// # Representations
//
// A sketch is EMPTY until its first add, then EXPLICIT (an exact set) while
// it holds at most Params.ExplicitCapacity distinct hashes, then registers.
// Registers are written SPARSE while that is strictly smaller than FULL
// (PostgreSQL's automatic rule, not java-hll's power-of-two threshold), or
// under a fixed threshold set with SetMaxSparse, the counterpart of
// PostgreSQL's hll_set_max_sparse, which the reference vectors need. In
// memory, registers are sorted pairs while few are filled and one byte each
// otherwise; a histogram of register values makes Estimate O(values), not
// O(m).
//
// # Unions and folding
//
// Sketch.Union merges into the receiver keeping its parameters; the Union
// function accepts mixed parameters and folds to the smallest log2m and
// widest regwidth, which PostgreSQL's hll_union cannot do. Fold documents
// how registers fold.
//
// # Errors
//
// Every error wraps one of ErrTooShort, ErrVersion, ErrParams, ErrCorrupt
// or ErrIncompatible and says where the problem is. Decoders check lengths
// and parameters before allocating, and a failed UnmarshalBinary leaves the
// receiver unchanged. No input makes the package panic.
package hll
