package theta

import "errors"

// Sentinel errors. Every error the package returns wraps exactly one of
// them, with the position or parameter that caused it.
var (
	// ErrTooShort: the input ends before its preamble or declared entries do.
	ErrTooShort = errors.New("input too short")
	// ErrVersion: the serial version byte is neither 3 (the compact and
	// update formats) nor 4 (the compressed compact format).
	ErrVersion = errors.New("unsupported serial version")
	// ErrParams: a parameter is outside the ranges the package accepts
	// (lg_k, a count of sketches, a number of standard deviations), the
	// bytes were hashed with another seed, or they hold more entries than
	// the sketch's lg_k keeps.
	ErrParams = errors.New("parameters out of range")
	// ErrCorrupt: the bytes cannot be a theta sketch: another
	// family, unknown flags, a preamble size that does not fit the flags,
	// entries out of order, duplicated, zero or not below theta, a wrong
	// length.
	ErrCorrupt = errors.New("corrupt sketch")
)
