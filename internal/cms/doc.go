// Package cms implements Count-Min sketches (Cormode and Muthukrishnan):
// approximate counts of ids in a stream, in fixed memory, with optional
// conservative update and a list of heavy-hitter candidates, and a strict,
// versioned binary encoding.
//
// # Parameters and guarantee
//
// A sketch has Depth rows of Width counters and a total N, the sum of all
// counts added. The estimate of an id is the smallest of its Depth
// counters: it is never below the id's true count, and with probability at
// least 1-δ it exceeds it by at most ε·N, where ε = e/Width and
// δ = e^-Depth. ParamsFromError goes the other way: width = ⌈e/ε⌉,
// depth = ⌈ln(1/δ)⌉.
//
// Limits, checked by Params.Validate (ErrParams): 1 <= Depth <= 32,
// 1 <= Width, Width·Depth <= 2^22 counters (32 MiB), 0 <= TopK <= 1000,
// 0 <= DomainBits <= 63 with every level's counters together at most
// 2^22. Text ids are valid UTF-8 of at most MaxTextLen (1024) bytes
// (ErrItem).
//
// # Value domains: range counts and quantiles
//
// With DomainBits = B > 0 a sketch counts integer values in [0, 2^B)
// (any other id is ErrItem) at B dyadic levels (Cormode and
// Muthukrishnan; dyadic.go): level 0 is the sketch itself, level j counts
// each value's prefix v >> j, exactly (2^(B−j) counters) when that is no
// more than Width·Depth counters, else in Depth hashed rows of Width
// counters whose ids are the prefixes hashed with seed j. Range(lo, hi)
// sums at most 2B dyadic intervals: never below the true count, and with
// probability at least 1 − h·δ at most h·ε·N above it, h the hashed
// intervals. Quantile(q) walks down the levels (binary search over prefix
// ranges) to a value whose rank is within L·ε·N of q·N with probability
// at least 1 − L·δ, L the hashed levels. Point estimates and heavy
// hitters are level 0's, as without a domain.
//
// # Ids and hashing
//
// An id is an int64 or a text, hashed as on the HLL side with
// MurmurHash3 x64_128, seed 0: an int64 over its 8 little-endian bytes
// (murmur.Int64, postgresql-hll's hll_hash_bigint), a text over its UTF-8
// bytes (murmur.Bytes, hll_hash_text). From the one 128-bit hash (h1, h2)
// row i (0-based) uses column
//
//	col_i = ⌊x_i · Width / 2^64⌋,   x_i = (h1 + i·h2) mod 2^64
//
// that is Kirsch–Mitzenmacher double hashing reduced to the width by a
// multiply-high (bits.Mul64) rather than a modulo. This scheme decides
// where every counter lives, so it is part of the encoding: it never
// changes within format version 1.
//
// # Updates
//
// Counts are positive (a count of 0 is ErrItem) and N never exceeds
// math.MaxInt64 (ErrOverflow, nothing changed), so every counter and
// estimate, all at most N, fits an int64 and a JSON number. AddBatch checks
// a whole batch before changing anything; CheckAdd lets a caller check a
// sum against several sketches first.
//
// Plain update adds the count to the id's counter in every row.
// Conservative update (Estan and Varghese) raises only what must rise:
// with m the smallest of the id's counters before the update, each of its
// counters becomes max(counter, m+count). For a count of 1 this is the
// familiar rule "increment only the counters equal to the minimum". For
// larger counts, incrementing only the minimal counters would undercount
// (a counter at m+1 left unchanged after adding 5 leaves the id's estimate
// at m+1, not m+5); raising to m+count keeps every counter an upper bound.
// Conservative counters are never above those plain update would give for
// the same stream, so its estimates are never worse.
//
// # Heavy hitters
//
// With TopK = K > 0 the sketch keeps the K ids ranked heaviest by their
// estimate at their last addition (a min-heap with an index on ids; ties
// ranked by id: ints before texts, ints ascending, texts bytewise
// ascending). Top re-estimates them against the current counters. When
// the estimates involved are within ε·N, every id whose true count exceeds
// N/K + ε·N is among the candidates. Reported counts are CMS estimates:
// never below the true count.
//
// # Union
//
// Union adds another sketch's counters and total into the receiver; both
// must have the same width and depth (ErrIncompatible), hence the same
// hashing, and the totals must fit (ErrOverflow); on error nothing
// changes. The receiver keeps its own Conservative and TopK settings; its
// candidates become the K heaviest of both sides' candidates re-estimated
// against the summed counters. Summing plain sketches gives exactly the
// sketch of the concatenated stream; summing conservative ones gives valid
// upper bounds, but not the counters conservative update of the whole
// stream would have produced (conservative update is not linear).
//
// # Encoding (format versions 1 and 2)
//
// All fixed-width integers are big-endian; varints are unsigned LEB128
// (encoding/binary's Uvarint) and must be minimal. A sketch without a
// value domain is written in version 1, as it always was; one with a
// domain in version 2, which is version 1 with the domain's size after
// the header and its levels after level 0's counters.
//
//	offset  size     field
//	0       1        version: 0xC1 (0xC marks Count-Min, 1 is the
//	                 version), or 0xC2 for version 2
//	1       1        flags: bit 0 conservative update; bit 1 "inexact":
//	                 plain update, but conservative counters were unioned in,
//	                 so rows may sum to less than N; other bits zero, and
//	                 bits 0 and 1 never both set
//	2       1        depth, 1..32
//	3       4        width, uint32, >= 1, width·depth <= 2^22
//	7       2        topk, uint16, 0..1000
//	9       8        N, uint64, <= 2^63-1
//	(version 2 only)
//	17      1        B, the domain bits, 1..63
//	(both)
//	17/18   varies   width·depth counters, varint each, row 0 first, each
//	                 row from column 0 (at least one byte per counter)
//	(version 2 only)
//	...     varies   levels 1..B−1 in order: 2^(B−j) exact counters when
//	                 that is at most width·depth, else width·depth
//	                 counters in rows as level 0's; varint each
//	(both)
//	...     2        c, the number of candidates, uint16, <= topk
//	...     varies   c candidates, heaviest first, strictly (by count, then
//	                 by id as for ties above), ids distinct:
//	                   varint   count: the estimate when last ranked, >= 1
//	                   1        kind: 0 int, 1 text
//	                   int:  8 bytes, the int64 in two's complement
//	                   text: 2 bytes length L <= 1024, then L bytes of UTF-8
//
// Nothing may follow the last candidate. An empty sketch of width 2719 and
// depth 5 (ε = 0.001, δ = 0.01) takes 17 + 13595 + 2 bytes.
//
// # Invariants checked when decoding
//
// Every counter is at most N. Under plain update without the inexact flag
// every row sums to exactly N (each addition adds its count once per row,
// and unions add rows). Otherwise every row sums to at most N, and all
// rows together to at least N (each conservative addition raises the
// minimal counter of some row by the full count). The same holds for the
// rows of every hashed level of a version 2 sketch; an exact level sums
// to exactly N. Each candidate's count
// is at most its id's estimate from the decoded counters (counters only
// grow after a candidate is ranked).
//
// # Errors
//
// Every error wraps one of ErrParams, ErrItem, ErrOverflow,
// ErrIncompatible, ErrTooShort, ErrVersion or ErrCorrupt, with the offset,
// item index or parameter involved. Union refuses sketches of other
// domains (ErrIncompatible). Decode refuses an input shorter than
// one byte per declared counter (of every level) before allocating (memory stays within a
// small multiple of the input's length), never panics, and a failed
// UnmarshalBinary leaves its receiver unchanged. Decoding then encoding
// gives back the same bytes.
package cms
