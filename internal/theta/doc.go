// Package theta implements theta sketches compatible with Apache
// DataSketches: the same hashing, the same QuickSelect update, the same
// estimate and binomial bounds, the same set operations, and the compact
// sketch format (serial version 3) that its Java, C++ and Python libraries
// (and Druid, Pinot) read. A sketch built here from the same ids, in any
// order, as update_theta_sketch(lg_k) there encodes to the same bytes.
//
// # Hashing
//
// A value is hashed with MurmurHash3_x64_128, seed 9001; the first 64 bits
// shifted right one bit are the hash (63 bits, a non-negative Java long).
// An int64 is hashed over its 8 little-endian bytes (update(long)), a
// string over its UTF-8 bytes (update(String)); an empty string is
// ignored. This differs from package hll's hashing (seed 0, PostgreSQL's
// conventions) on purpose: each matches the ecosystem its bytes go to, so
// the two kinds' sketches of the same ids cannot be mixed.
//
// # Sketch
//
// A sketch keeps the distinct hashes below theta (initially 2^63-1, "1").
// When it holds more than 15/16 of 2^(lg_k+1), theta drops to the
// (k+1)-th smallest hash and the k = 2^lg_k smallest stay. The estimate is
// retained/theta; LowerBound and UpperBound are DataSketches'
// BinomialBoundsN at 1, 2 or 3 standard deviations. Their table of
// equivalent deviations for few samples at small theta is derived by
// internal/equiv (go generate) rather than copied; it matches the
// library's to about 1e-7, and every other path to the last bit or two.
//
// # Set operations
//
// Union (and Sketch.Union in place, keeping the receiver's lg_k), Intersect
// (whose result's bounds are the intersection's bounds: its error scales
// with the intersection, not the union), AnotB and Jaccard compute what
// the library's theta_union, theta_intersection, theta_a_not_b and
// theta_jaccard_similarity compute, empty-sketch rules included.
//
// # Format
//
// See codec.go for the byte layout; DecodeParams documents what it
// accepts. The format records neither lg_k nor the seed (only a 16-bit
// seed hash). MarshalBinary writes the ordered compact form exactly as C++
// and Python write it; AppendStored also keeps lg_k in the preamble byte
// the libraries' compact readers ignore, and Decode restores it from there
// (or picks lg_k 12, or more if the hashes need it).
//
// # Errors
//
// Every error wraps one of ErrTooShort, ErrVersion, ErrParams or
// ErrCorrupt and says where the problem is. Decode checks the length
// against the declared count before allocating, and a failed
// UnmarshalBinary leaves the receiver unchanged. No input makes the
// package panic.
package theta
