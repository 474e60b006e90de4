// Package ingest parses the id bodies product backends POST to
// /v1/sketches/{name}/add (and frequency queries): JSON, NDJSON, text/plain
// and big-endian octet streams. It is built for throughput and strictness:
//
//   - the Append*Hashes functions fuse parsing and hashing and append one
//     uint64 per id to a caller-owned slice, with no allocation per id (none
//     at all when dst has room and strings need no long unescaping), no
//     reflection; runs of integer ids are read 64 bytes at a time in AVX2
//     registers where the processor has them (the separators, digits and
//     signs of the window found at once, each id's digits weighed in one
//     vector), eight digits to a 64-bit word elsewhere;
//   - the Append*Items functions keep the ids as given (ID, Item) for
//     Count-Min adds and frequency queries, whose ids are echoed back or
//     kept as heavy hitters.
//
// # Identity and hashing
//
// An integer id v is hashed as postgresql-hll's hll_hash_bigint(v)
// (murmur.Int64(v, 0), first half); a text id as hll_hash_text, MurmurHash3
// of its UTF-8 bytes after JSON unescaping (murmur.Bytes, seed 0; the empty
// text hashes to 0); a value under "hashes" is used as is (uint64(v)).
// The int 7 and the text "7" are different ids.
//
// # JSON rules
//
// Everything the service refuses is refused here, before anything is
// taken; each violation returns an *Error wrapping the sentinel named:
//
//   - the body is exactly one JSON object (RFC 8259) and nothing but JSON
//     whitespace (space, tab, LF, CR) after it; an empty body, a truncated
//     or malformed one, or trailing data is ErrSyntax; a UTF-8 byte order
//     mark is ErrSyntax with its own message;
//   - the object has exactly one key, matched case-sensitively after
//     unescaping: "ids" or "hashes" (AppendJSONHashes), "ids" or "items"
//     (AppendJSONItems); an unknown key, a duplicate key, both keys, or no
//     key is ErrField (encoding/json would match keys case-insensitively
//     and let the last duplicate win: both are refused here);
//   - the value is an array ("ids": null or any non-array is ErrType);
//   - an integer id is -?(0|[1-9][0-9]*) within int64: leading zeros,
//     "+1", "-" alone are ErrSyntax; floats (1.0, 1e3, -0.5) are ErrType,
//     not integers, even when integral; 9223372036854775808 or
//     -9223372036854775809 is ErrRange. "-0" is accepted and is the id 0
//     (JSON allows it; PostgreSQL reads '-0'::bigint as 0);
//   - a text id is a JSON string: raw control characters (< 0x20), invalid
//     escapes, malformed \u escapes, lone UTF-16 surrogates (a \uD800-\uDBFF
//     not followed by a \uDC00-\uDFFF escape, or a \uDC00-\uDFFF alone) and
//     invalid UTF-8 are ErrSyntax (encoding/json would replace the last two
//     by U+FFFD and so hash something the client did not send); escaped
//     surrogate pairs are decoded; "\u0000" is allowed;
//   - booleans, null, objects and arrays as ids are ErrType; a string under
//     "hashes" is ErrType;
//   - more than maxIDs ids is ErrTooMany, found while parsing, before the
//     extra id is stored.
//
// Items ({"items":[{"id":…,"count":n}]}, AppendJSONItems): both keys are
// required, in any order, no other key; a count is a JSON integer from 1 to
// 2^63-1: 0 or negative is ErrRange, a float, string or null is ErrType.
// There is no default count: an item without "count" is ErrField (send
// {"ids":[…]} for counts of 1).
//
// Line formats (NDJSON, text/plain) and octet streams are described on
// LineFormat and AppendOctetHashes.
//
// # Limits
//
// Every function takes maxIDs, the most ids (or items) one body may carry:
// one more is ErrTooMany, reported before the extra id is appended, so
// memory stays bounded by the caller's slice plus at most maxIDs elements.
// maxIDs < 0 means no limit beyond the body's size; 0 accepts only bodies
// without ids. Bodies are taken whole ([]byte): the caller bounds their
// size (http.MaxBytesReader) before reading them.
//
// # Errors
//
// Every refusal of input is an *Error: its Detail, e.g.
// "ids[3] at offset 27: 1.5 is not an integer (floats are not ids)" or
// "line 4 at offset 31: ...", names the value, the byte offset and the
// problem, quotes at most about 40 bytes of input, and suits a problem+json
// detail. On error the Append functions return dst unchanged. No input
// panics.
package ingest
