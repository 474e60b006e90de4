package cms

import "errors"

// Sentinel errors. Every error the package returns wraps exactly one of
// them, with the position, item or parameter that caused it.
var (
	// ErrParams: a parameter (width, depth, topk, epsilon, delta) is outside
	// the ranges the package accepts, or the sketch is an unusable zero
	// value.
	ErrParams = errors.New("parameters out of range")
	// ErrItem: an item cannot be added: its count is zero, or its text id is
	// longer than MaxTextLen bytes or not valid UTF-8.
	ErrItem = errors.New("invalid item")
	// ErrOverflow: the total count N would exceed math.MaxInt64. Nothing was
	// changed.
	ErrOverflow = errors.New("count overflow")
	// ErrIncompatible: a union of sketches with different widths or depths
	// (their counters do not line up).
	ErrIncompatible = errors.New("incompatible sketches")
	// ErrTooShort: the encoding ends before its header or declared body does.
	ErrTooShort = errors.New("input too short")
	// ErrVersion: the first byte is not this format's version byte.
	ErrVersion = errors.New("unsupported format version")
	// ErrCorrupt: the bytes cannot be a sketch: unknown flags, non-canonical
	// varints, counters that break an invariant, bad or duplicate heavy-hitter
	// candidates, trailing bytes.
	ErrCorrupt = errors.New("corrupt sketch")
)
