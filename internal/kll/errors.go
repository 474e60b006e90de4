package kll

import "errors"

// Sentinel errors. Every error the package returns wraps exactly one of
// them, with the offset or parameter that caused it.
var (
	// ErrParams: a parameter (k, a rank, split points) is out of range.
	ErrParams = errors.New("parameters out of range")
	// ErrTooShort: the encoding ends before its preamble or its items.
	ErrTooShort = errors.New("input too short")
	// ErrVersion: the bytes are not a compact KLL sketch of a version
	// this package reads (another family, preamble or serial version).
	ErrVersion = errors.New("unsupported format")
	// ErrCorrupt: the bytes cannot be a sketch: contradictory flags, levels
	// out of order, weights that do not sum to n, unsorted levels, items
	// outside [min, max], non-finite doubles, trailing bytes.
	ErrCorrupt = errors.New("corrupt sketch")
	// ErrEmpty: a quantile of a sketch with no values.
	ErrEmpty = errors.New("empty sketch")
)
