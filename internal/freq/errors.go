package freq

import "errors"

// Sentinel errors. Every error the package returns wraps exactly one of
// them, with the position or parameter that caused it.
var (
	// ErrTooShort: the input ends before its preamble or declared entries do.
	ErrTooShort = errors.New("input too short")
	// ErrVersion: the serial version byte is not 3.
	ErrVersion = errors.New("unsupported serial version")
	// ErrParams: a parameter is outside the ranges the package accepts
	// (lg_k, the report's max class, standard deviations), the bytes were
	// hashed with another seed, hold more entries than lg_k keeps, or carry
	// a Java summary in a mode other than sum.
	ErrParams = errors.New("parameters out of range")
	// ErrCorrupt: the bytes cannot be a compact tuple sketch with integer
	// count summaries: another family or type, unknown flags, a length that
	// fits neither summary width, keys out of order, repeated, zero or not
	// below theta, a count below 1.
	ErrCorrupt = errors.New("corrupt sketch")
)
