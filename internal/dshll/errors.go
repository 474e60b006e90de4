package dshll

import "errors"

// Sentinel errors; every error the package returns wraps exactly one.
var (
	// ErrTooShort: the input ends before its preamble or declared data.
	ErrTooShort = errors.New("input too short")
	// ErrVersion: the serialization version is not 1.
	ErrVersion = errors.New("unsupported serialization version")
	// ErrParams: lg_k or the target type is out of range.
	ErrParams = errors.New("parameters out of range")
	// ErrCorrupt: the bytes cannot be a DataSketches HLL sketch.
	ErrCorrupt = errors.New("corrupt sketch")
)
