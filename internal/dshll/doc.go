// Package dshll holds Apache DataSketches' HLL sketches (what Spark 3.5's
// hll_sketch_agg, Druid, Hive, Impala, BigQuery's DataSketches UDFs,
// StarRocks, Doris and the datasketches PostgreSQL extension read and
// write), as a thin, strict wrapper over github.com/apache/datasketches-go
// v0.2.0's hll package: that library does the updates, unions, estimates
// and bounds; this package validates every byte it is given before the
// library sees it (the library trusts the lengths and counts it reads),
// so that no input panics it or makes it allocate more than the input
// implies, and turns its errors into this package's sentinels.
//
// # Hashing
//
// An int64 id is hashed with MurmurHash3_x64_128, seed 9001, over its 8
// little-endian bytes (Java's update(long)); a string over its UTF-8
// bytes (update(String)); the empty string is ignored. The low 64 bits
// choose the register (their low lg_k bits) and the coupon, the high 64
// bits' leading zeros plus one its value.
//
// # Sketch
//
// lg_k 4 to 21 (K = 2^lg_k registers); target type HLL_4, HLL_6 or HLL_8
// (register width, the same estimates). A sketch starts in LIST mode
// (coupons, exact up to a few ids), moves to SET (a hash set of coupons)
// and then to HLL (registers). The estimate uses the HIP estimator while
// the sketch was only updated, the composite estimator after a union
// (out of order); relative standard error about 0.836/√K (HIP) or
// 1.04/√K (composite); LowerBound and UpperBound at 1 to 3 standard
// deviations are the library's.
//
// # Format (serialization version 1, little-endian)
//
//	byte 0      preamble ints: 2 (LIST), 3 (SET), 10 (HLL)
//	byte 1      serialization version, 1
//	byte 2      family, 7 (HLL)
//	byte 3      lg_k, 4..21
//	byte 4      lg_arr: log2 of the coupon array (LIST, SET) or of the
//	            aux array (HLL_4), in updatable images
//	byte 5      flags: 1 big-endian (never), 2 read-only, 4 empty,
//	            8 compact, 16 out of order, 32 rebuild cur_min/KxQ
//	byte 6      LIST: coupon count; HLL: cur_min (HLL_4's offset)
//	byte 7      mode: bits 0-1 current mode (0 LIST, 1 SET, 2 HLL),
//	            bits 2-3 target type (0 HLL_4, 1 HLL_6, 2 HLL_8)
//	LIST        from byte 8: count coupons (compact) or 2^lg_arr slots
//	SET         bytes 8-11 coupon count; from byte 12: count coupons
//	            (compact) or 2^lg_arr slots (0 free)
//	HLL         bytes 8-15 HIP accumulator, 16-23 KxQ0, 24-31 KxQ1
//	            (float64s), 32-35 number of registers at cur_min, 36-39
//	            aux count; from byte 40 the registers: K/2 bytes (HLL_4,
//	            4-bit values above cur_min, 15 meaning "in the aux map"),
//	            3K/4+1 bytes (HLL_6, 6-bit values packed), K bytes
//	            (HLL_8); then, for HLL_4, the aux map: aux count ints
//	            (compact) or 2^lg_arr slots, each (value << 26 | register)
//	A coupon is (value << 26 | low 26 bits of the hash); 0 is a free slot.
//
// Decode accepts compact and updatable images in every mode, as the Java,
// C++, Python and Go libraries write them. AppendBinary writes the compact
// image (Java's toCompactByteArray, C++'s serialize_compact).
//
// # Errors
//
// Every error wraps one of ErrTooShort, ErrVersion, ErrParams or
// ErrCorrupt and says where: fewer bytes than the preamble or the data it
// declares: ErrTooShort; serialization version other than 1: ErrVersion;
// lg_k outside 4..21: ErrParams; another family, an unknown mode, target
// type, flag or preamble size, a length other than the declared data's, a
// count the data cannot hold, a free (zero) coupon among a compact image's
// coupons, a non-finite accumulator (or a negative HIP or KxQ0), a
// register value above 63, aux entries that are not exactly the HLL_4
// registers holding the aux token, aux entries in an HLL_6
// or HLL_8 image, or anything the library refuses: ErrCorrupt. Nothing is
// decoded before the length is checked, so allocation is bounded by the
// input; a failed UnmarshalBinary leaves the receiver unchanged.
package dshll
