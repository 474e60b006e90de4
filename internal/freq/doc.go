// Package freq implements frequency sketches: Apache DataSketches tuple
// sketches whose summary is an integer count, summed on update and on
// union (Java's IntegerSketch in mode Sum; the C++ and Python tuple sketch
// with AccumulatorPolicy). Every addition of a user id is one impression;
// the sketch keeps, for a sample of users chosen exactly as a theta sketch
// chooses them (package theta's hashing, QuickSelect rule and bounds), each
// one's exact number of impressions. That answers the frequency report of
// an advertising campaign (how many users saw it exactly k times, and how
// many impressions they account for) from a sketch that merges across days
// and servers.
//
// The package is separate from theta because its entries carry a count,
// its format is the tuple family's, and its report is its own; it reuses
// theta's hashing, constants and binomial bounds, so a user id lands on
// the same hash in both and the bounds are the same functions.
//
// # Format
//
// The compact tuple sketch (serial version 3, family 9, type 1): the theta
// preamble, then per entry the 8-byte key and its summary. The summary is
// 4 bytes (a little-endian int32) as the C++ library writes it with an
// int32 serde and Python's PyIntsSerDe; Java's IntegerSummary writes 5
// (the int32 and its mode byte, 0 = sum). MarshalBinary writes the 4-byte
// form, AppendJava the 5-byte one, and the decoders read both, telling
// them apart by length; DecodeParams documents exactly what it accepts.
// The format records no lg_k: AppendStored keeps it in the unused byte 4,
// from which Decode restores it (else lg_k 12, or more if the entries need
// it).
//
// # Report
//
// FrequencyReport documents its estimators and bounds. Counts saturate at
// MaxCount (2^31-1), the largest the format's int32 holds.
//
// # Errors
//
// Every error wraps one of ErrTooShort, ErrVersion, ErrParams or
// ErrCorrupt and says where. Decode checks lengths before allocating, a
// failed UnmarshalBinary leaves the receiver unchanged, and no input makes
// the package panic.
package freq
