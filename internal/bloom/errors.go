package bloom

import "errors"

// Sentinel errors. Every error the package returns wraps exactly one of
// them, with the offset or parameter that caused it.
var (
	// ErrParams: a parameter (bits, hashes, expected items, rate) is
	// outside the ranges the package accepts.
	ErrParams = errors.New("parameters out of range")
	// ErrIncompatible: a union of filters of different shapes (their bits
	// do not line up).
	ErrIncompatible = errors.New("incompatible filters")
	// ErrTooShort: the encoding ends before its header or bit array does.
	ErrTooShort = errors.New("input too short")
	// ErrVersion: the first byte is not this format's version byte.
	ErrVersion = errors.New("unsupported format version")
	// ErrCorrupt: the bytes cannot be a filter: unknown flags, non-zero
	// reserved bytes, a stated rate without items (or the reverse), a
	// bit count that does not match the array, trailing bytes.
	ErrCorrupt = errors.New("corrupt filter")
)
