package ingest

// A run of string ids (textRun) is first a run of spans, each string's
// place in the body packed into a uint64 (start << 32 | length, as
// murmur.SpanHashes takes them), then, once the run ends, their hashes in
// place: the strings are scanned with vector compares a window each, and
// hashed eight at a time.

// maxRunText is the longest string a run takes (a UUID is 36 bytes): its
// quotes and the comma after it fill a 64-byte window.
const maxRunText = 61

// maxSpanBody is the largest body whose offsets fit a span's 32 bits.
const maxSpanBody = 1<<32 - 1

// textRun appends to dst, from b[i] on (a string's opening quote), the
// spans of the JSON strings followed by a comma (then any JSON
// whitespace) whose content is at most maxRunText bytes with no quote,
// no backslash, no control character and nothing from 0x80 up: valid
// JSON strings, whose UTF-8 is their bytes as they stand. It returns dst
// and the index of the element after the last string taken (or
// whitespace before it), or of the string it stopped at: one it does not
// take, the array's last, or one within 64 bytes of the body's end,
// after room strings (room < 0: no limit) or once dst is full: it never
// grows dst. What it stops at goes to the general path, which takes or
// refuses it as scanString and decodeString do; what it takes, scanString
// would take with the same bytes.
func textRun(dst []uint64, b []byte, i, room int) ([]uint64, int) {
	return textsVector(dst, b, i, room)
}
