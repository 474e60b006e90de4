// Package bloom implements Bloom filters: set membership in a fixed
// number of bits, with no false negatives and a false-positive rate set
// at creation, and a strict, versioned binary encoding.
//
// # Parameters
//
// A filter has Bits bits (m) and Hashes bit positions per item (k). It is
// created either from that shape, or from the items it is meant to hold
// (ExpectedItems, n) and the false-positive rate it may reach with them
// (FPP, p). ParamsFor then picks k = ⌊ln(1/p)/ln 2⌋ or the next integer,
// whichever needs fewer bits, and the fewest bits, a multiple of 64, for
// which the rate with n items stays at most 0.97·p even when the filter's
// fill is three standard deviations above its expected fill. The n·k
// positions fall like balls into m bins: with λ = kn/m the clear bits
// have mean m·e^(−λ) and variance m·e^(−λ)·(1 − (1+λ)·e^(−λ)), and the
// rate of a fill f is f^k. So a filter holding its n items is below p
// with probability above 99.8%, and a million checks of absent items
// measure below p; the margin costs about 1% more bits than the textbook
// size m = −n·ln p / (ln 2)². A filter made that way keeps n and p (the
// stated rate) so that it can be described against them.
//
// Limits, checked by Params.Validate (ErrParams): Bits is a multiple of
// 64 from MinBits (64) to MaxBits (2^27, a 16 MiB bit array); Hashes is
// 1..MaxHashes (32); ExpectedItems and FPP are both zero (not stated) or
// both set, with FPP in [MinFPP, MaxFPP] = [1e-9, 0.5].
//
// # Hashing
//
// An item is a 64-bit hash h: sketchd adds ids hashed as postgresql-hll
// hashes them (hll_hash_bigint, hll_hash_text), or hashes given as they
// are. From h the k positions are, for i = 0..k−1,
//
//	pos_i = ⌊x_i · m / 2^64⌋,   x_i = (h + i·g) mod 2^64,
//	g     = mix(h ⊕ 0x9E3779B97F4A7C15) | 1
//
// where mix is MurmurHash3's 64-bit finalizer (fmix64): Kirsch and
// Mitzenmacher's double hashing, reduced by a multiply-high rather than a
// modulo. The scheme decides where every bit lives, so it is part of the
// encoding: it never changes within format version 1.
//
// # Estimates
//
// With X bits set, the current false-positive rate is (X/m)^k, and the
// number of distinct items added is estimated as −(m/k)·ln(1 − X/m)
// (Swamidass and Baldi); a filter with every bit set reports m items and
// rate 1.
//
// # Union
//
// Union ORs another filter's bits into the receiver: both must have the
// same Bits and Hashes (ErrIncompatible), hence the same positions for
// every item. The union of filters holds every item either held, and is
// the filter of the concatenated streams, bit for bit. The receiver keeps
// its own stated n and p.
//
// # Encoding (format version 1)
//
// All fixed-width integers are big-endian.
//
//	offset  size   field
//	0       1      version: 0xB1 (0xB marks a Bloom filter, 1 is the version)
//	1       1      flags: zero (no flag is defined)
//	2       1      hashes k, 1..32
//	3       1      zero
//	4       8      bits m, a multiple of 64 in 64..2^27
//	12      8      expected items n, 0 when not stated
//	20      8      stated false-positive rate p, IEEE 754 binary64 bits;
//	               0 exactly when n is 0, else in [1e-9, 0.5]
//	28      8      bits set X, the population count of the bit array
//	36      m/8    the bit array: position j is bit j mod 8 (least
//	               significant first) of byte 36 + ⌊j/8⌋
//
// Nothing follows the bit array: an encoding is exactly 36 + m/8 bytes.
// A filter for n = 10^6 items at p = 1% has 9,662,080 bits and 7 hashes
// and takes 1,207,796 bytes.
//
// # Errors
//
// Every error wraps one of ErrParams, ErrIncompatible, ErrTooShort,
// ErrVersion or ErrCorrupt, with the offset or parameter involved. Decode
// checks the header and that the input is exactly as long as the header
// says before allocating (memory is the input's length plus a constant),
// never panics, and a failed UnmarshalBinary leaves its receiver
// unchanged. Decoding then encoding gives back the same bytes.
package bloom
