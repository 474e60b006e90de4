// Package cpc holds Apache DataSketches' CPC (Compressed Probabilistic
// Counting) sketches, what Pinot, Hive, Impala, BigQuery's DataSketches
// UDFs and the datasketches PostgreSQL extension read: about 40% smaller
// than an HLL of the same accuracy when serialized. It is a thin, strict
// wrapper over github.com/apache/datasketches-go v0.2.0's cpc package,
// which does the updates, unions, estimates, bounds and the compression;
// this package checks every preamble field the library relies on before
// it reads an image (the library trusts the lengths and counts it reads,
// and its NewCpcSketchFromSlice does not check the seed), bounds what an
// image can make it allocate, and turns a failure of the library's
// decompression into ErrCorrupt.
//
// # Hashing
//
// As every DataSketches sketch: MurmurHash3_x64_128, seed 9001, of an
// int64's 8 little-endian bytes (update(long)) or a string's UTF-8 bytes
// (update(String)); the empty string is ignored.
//
// # Sketch
//
// lg_k 4 to 26 (K = 2^lg_k). The estimate is the HIP estimator while the
// sketch was only updated, the ICON estimator after a union (merged);
// relative standard error about 0.59/√K (HIP) or 0.69/√K (ICON); bounds
// at 1 to 3 standard deviations (kappa) are the library's. A union's
// lg_k is the smallest of its inputs'.
//
// # Format (serialization version 1, little-endian, 32-bit words)
//
//	byte 0      preamble ints, fixed by the format: 2, 2, 4, 8, 4, 8, 6, 10
//	byte 1      serialization version, 1
//	byte 2      family, 16 (CPC)
//	byte 3      lg_k, 4..26
//	byte 4      first interesting column, 0..63
//	byte 5      flags: 1 big-endian (never), 2 compressed (always),
//	            4 HIP, 8 surprising values present, 16 window present;
//	            bits 2-4 are also the format, 0..7 (empty, sparse/hybrid,
//	            pinned/sliding without surprising values, pinned/sliding;
//	            each merged (even) or HIP (odd))
//	bytes 6-7   seed hash (of 9001: 0x93cc)
//	then, by format: the number of coupons (uint32), the number of
//	surprising values, KxP and the HIP accumulator (float64s, HIP formats),
//	the lengths in words of the compressed surprising values and window,
//	then those streams.
//
// # Errors
//
// Every error wraps one of ErrTooShort, ErrVersion, ErrParams or
// ErrCorrupt: fewer bytes than the preamble or its streams: ErrTooShort;
// a serialization version other than 1: ErrVersion; lg_k outside 4..26 or
// another seed's hash: ErrParams; another family, a preamble size other
// than the format's, big-endian or uncompressed flags, flags that
// disagree with the format, a column above 63, more coupons than K rows of
// 64 columns hold, a coupon count that does not fit the format (none in an
// empty one), surprising values the stream cannot hold (at least two bits
// each; the libraries spend more than 4.6), a window the image is too
// short to have compressed (K bytes from fewer than K/8; the libraries'
// take at least K/3), a non-finite or negative KxP or
// accumulator, trailing bytes, or a stream the library cannot decompress:
// ErrCorrupt. So what an image makes Decode allocate is bounded by a
// small multiple of its length (the window: 8 times its words' bytes; the
// surprising values: 8-byte pairs, 32 times theirs); a failed
// UnmarshalBinary leaves the receiver unchanged.
//
// # Known deviation
//
// Estimates, lower bounds, bytes and unions equal Java's bit for bit
// (java_interop_test.go). Upper bounds at lg_k 14 and below do not:
// datasketches-go v0.2.0 lacks the empirical table Java uses for them and
// takes the lower bound's, so they differ from Java's (measured from 0.05%
// below to 43% above at lg_k 4, under 0.3% from lg_k 10); above lg_k 14
// both use the analytic constant and agree.
package cpc
