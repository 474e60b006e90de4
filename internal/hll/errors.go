package hll

import "errors"

// Sentinel errors. Every error the package returns wraps exactly one of
// them, with the position or parameter that caused it.
var (
	// ErrTooShort: the input ends before its header or declared body does.
	ErrTooShort = errors.New("input too short")
	// ErrVersion: the schema version nibble is not 1.
	ErrVersion = errors.New("unsupported schema version")
	// ErrParams: a parameter (log2m, regwidth, expthresh) is outside the
	// ranges sketchd accepts, or a fold asks for more registers or bits.
	ErrParams = errors.New("parameters out of range")
	// ErrCorrupt: the bytes cannot be a sketch of the declared type (bad
	// type nibble, wrong body length, unordered or duplicate elements).
	ErrCorrupt = errors.New("corrupt sketch")
	// ErrIncompatible: an in-place union cannot keep the receiver's
	// parameters (the other sketch has fewer registers).
	ErrIncompatible = errors.New("incompatible sketches")
)
