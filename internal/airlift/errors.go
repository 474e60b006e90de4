package airlift

import "errors"

// Sentinels; every error wraps one, with the position or field.
var (
	// ErrCorrupt: the bytes are not a well-formed HyperLogLog.
	ErrCorrupt = errors.New("corrupt")
	// ErrVersion: a format tag sketchd does not read.
	ErrVersion = errors.New("unsupported format")
	// ErrParams: index bits outside 4..16.
	ErrParams = errors.New("invalid parameters")
	// ErrPrecision: a merge that airlift refuses, of dense sketches (or a
	// dense and a sparse one) with different index bits.
	ErrPrecision = errors.New("different index bits")
)
