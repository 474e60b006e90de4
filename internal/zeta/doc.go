// Package zeta is ZetaSketch's HyperLogLog++ (HLL++) sketch, the format
// BigQuery's HLL_COUNT.INIT writes and HLL_COUNT.MERGE / EXTRACT read
// (and Apache Beam's HllCount), written from ZetaSketch's format
// description (its proto files and Java sources, version 0.1.0) and
// checked against its Java library in both directions.
//
// # Hashing
//
// A value is hashed with Guava's Fingerprint2011 (Fingerprint2011), of
// the value's bytes as BigQuery and ZetaSketch feed them: an INT64's
// eight little-endian bytes (HashInt, ZetaSketch's add(long)), a
// STRING's UTF-8 bytes (HashString). A sketch counts one type of value
// (the proto's value_type: 8 for 64-bit integers, 11 for strings and
// bytes; 0 until the first value is added), as ZetaSketch and BigQuery
// refuse to mix them.
//
// # Representations
//
// A sketch has a normal precision p (2^p registers; 10..24, BigQuery's
// range, default 15) and a sparse precision sp (p..25, default p+5; 0
// for none). It starts sparse: a sorted list of sparse values, one per
// sparse index (the top sp bits of the hash). A value whose sparse index
// has a nonzero low sp−p bits is the index itself; otherwise it is
// 1<<max(sp, p+6) | normal index<<6 | ρ′, ρ′ being 1 + the leading zeros
// of the 64−sp bits below the sparse index. Once the list's difference
// encoding exceeds 3/4·2^p bytes (as ZetaSketch 0.1.0 decides; its
// later sources switch at 3/4·2^p) (checked when the buffer of added values
// is merged into it: past 2^p/4 values, and at the end of every write)
// the sketch turns normal: register[index] = max ρ, ρ being 1 + the
// leading zeros of the 64−p bits below the top p (at most 65−p).
//
// # Bytes (an AggregatorStateProto, protobuf wire format)
//
// Top level, in this order (ZetaSketch writes it so; Decode refuses any
// other field, a field out of order or repeated, and a varint not in its
// shortest form, each an ErrCorrupt naming the byte):
//
//	tag   field                 value                                    refused with
//	0x08  1 type                varint 112 (HYPERLOGLOG_PLUS_UNIQUE)     ErrVersion if absent or other
//	0x10  2 num_values          varint, values added (int64, ≥ 0)        ErrCorrupt if absent or negative
//	0x18  3 encoding_version    varint 2 (absent means 1)                ErrVersion if not 2
//	0x20  4 value_type          varint 8 or 11; absent: none yet         ErrValueType if other
//	0x82 0x07  112 state        length, then the message below           ErrCorrupt if absent
//
// The HyperLogLogPlusUniqueStateProto (field 112), in this order:
//
//	tag   field                 value                                    refused with
//	0x10  2 sparse_size         varint, values in sparse_data (absent 0) ErrCorrupt unless it counts them
//	0x18  3 precision           varint p, 10..24                         ErrParams
//	0x20  4 sparse_precision    varint sp, p..25; absent: 0 (no sparse)  ErrParams
//	0x2a  5 data                2^p bytes, register i at byte i (≤ 65−p) ErrCorrupt for another length or value
//	0x32  6 sparse_data         varint differences of the sorted values  ErrCorrupt (below)
//
// sparse_data's first varint is the first value, each next one the
// difference to the value before. Decode refuses a difference of 0, a
// value that is not one of the encoding's (padding bits set, the wrong
// form for its index, ρ′ outside 1..65−sp), two values for one sparse
// index, more values than sparse_size, more than 2^p bytes of it, sparse
// data without a sparse precision, and data with sparse data. A sparse
// sketch is written with sparse_data (empty when it has no values) and
// sparse_size when not 0; a normal one with data, unless it has never
// had a register (sparse precision 0, nothing added).
//
// # Estimates
//
// Estimate follows ZetaSketch (see its doc): linear counting while sparse
// or below the HLL++ paper's thresholds, exactly as ZetaSketch computes
// it; above the bias-corrected range (beyond about 5·2^p, or p > 18) the
// raw HyperLogLog estimate, exactly; in between the raw estimate less a
// bias from sketchd's own simulation (package hllbias), within a
// measured tolerance of ZetaSketch's.
//
// # Unions
//
// Merge and Union follow ZetaSketch's merge: the value types must agree
// (an unknown type agrees with any, and the receiver keeps its own), the
// value counts add, and the union has the smaller normal and sparse
// precisions, values of the other downgraded to them. ZetaSketch refuses
// to merge two sparse sketches when one has the higher normal precision
// and the other the higher sparse precision (ErrPrecision); Merge, which
// keeps the receiver's precisions, refuses a sketch of lower precision
// (ErrFewerRegisters).
//
// Bytes are deterministic: the same values give the same bytes as
// ZetaSketch's Java library writes (the Java tests check it), except in
// one rare case: when the sparse list's encoding is within a byte of the
// normal threshold at a buffer merge and a later value shrinks it (a
// larger ρ′ can shorten a difference's varint), ZetaSketch turns normal
// or not depending on when its buffer was merged.
package zeta
