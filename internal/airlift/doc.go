// Package airlift is airlift's HyperLogLog (io.airlift.stats.cardinality),
// the sketch behind Trino's and Presto's approx_set and HyperLogLog type
// (and Athena's), written from its Java sources and checked against the
// library in both directions.
//
// # Hashing
//
// approx_set hashes a BIGINT with airlift's Murmur3Hash128.hash64(long)
// and a VARCHAR with hash64 of its UTF-8 bytes: both are the first 64
// bits of MurmurHash3_x64_128 with seed 0 of the value's bytes (a long's
// eight little-endian bytes), the same function postgresql-hll's
// hll_hash_bigint and hll_hash_text compute (HashInt, HashString).
//
// # Representations
//
// A sketch has 2^p buckets, p (index bits) 4..16 (approx_set: 12). It
// starts sparse: entries bucket<<6 | zeros, where bucket is the top 26
// bits of the hash and zeros the number of leading zeros of the 38 bits
// below (0..38), sorted by bucket, one per bucket (the larger count
// kept). It turns dense when its entries would take more memory than the
// dense registers, as airlift decides on the JVM: a sparse sketch of 24
// bytes with an int array of 16 + 4·capacity bytes against a dense one of
// 40 bytes with 16 + 2^p/2, the sizes of a 64-bit JVM with compressed
// pointers (the default below a 32 GiB heap; a larger heap changes them,
// and with them where airlift switches). The array's capacity grows by 10
// when full; a new sketch's holds 1, a decoded one's its entries, and
// every batch sketchd adds (AddHashes) starts from the stored state as a
// decoded one does, so that the bytes depend only on the bytes before.
// Dense registers hold 1 + the leading zeros of the 64−p bits below the
// top p (at most 65−p).
//
// # Bytes (little-endian, as airlift's Slice writes them)
//
// SPARSE_V2:
//
//	offset  width  field                                   refused with
//	0       1      format tag 2                             ErrVersion for 0 (SPARSE_V1), 1 (DENSE_V1), others
//	1       1      index bits p, 4..16                      ErrParams
//	2       2      n, entries (at most 32767)               ErrCorrupt
//	4       4·n    entries, bucket<<6 | zeros               ErrCorrupt: not ascending by bucket, zeros > 38, length ≠ 4+4n
//
// DENSE_V2:
//
//	offset          width    field                          refused with
//	0               1        format tag 3
//	1               1        index bits p, 4..16            ErrParams
//	2               1        baseline: the smallest register ErrCorrupt if above 65−p, or if no bucket is at it
//	3               2^p/2    4-bit deltas from the baseline, bucket 2i in the high nibble of byte i, 2i+1 in the low;
//	                         15 means 15 or more
//	3+2^p/2         2        k, overflows                   ErrCorrupt if the length is not 3+2^p/2+2+3k
//	5+2^p/2         2·k      the overflows' buckets         ErrCorrupt: not ascending, ≥ 2^p, or a delta other than 15
//	5+2^p/2+2k      k        what each adds to 15           ErrCorrupt: 0, or a register above 65−p
//
// airlift writes the overflows sorted by bucket; Decode refuses anything
// airlift would not write (it reads some of it), so an upload keeps its
// bytes only where they differ from sketchd's in ways both read alike.
//
// # Estimates
//
// Estimate follows airlift's cardinality() (see its doc): linear counting
// while sparse (over 2^26 buckets) and while dense with more than 40% of
// the buckets empty, exactly as airlift computes it; above the bias range
// (about 5·2^p) the raw HyperLogLog estimate, exactly; in between the raw
// estimate less a bias interpolated linearly, as airlift does, from
// sketchd's own simulation (package hllbias) instead of airlift's table:
// within 0.5% (or one) of airlift's.
//
// # Unions
//
// Merge and Union are airlift's mergeWith: two sparse sketches merge
// their entries whatever their index bits (the receiver keeps its own,
// and may turn dense); a dense sketch merges only with one of the same
// index bits (ErrPrecision), as Trino's merge refuses sketches of
// different precision.
package airlift
