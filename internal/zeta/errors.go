package zeta

import "errors"

// Sentinels; every error wraps one, with the position or field.
var (
	// ErrCorrupt: the bytes are not a well-formed HLL++ state.
	ErrCorrupt = errors.New("corrupt")
	// ErrVersion: another aggregator type or encoding version.
	ErrVersion = errors.New("unsupported version")
	// ErrParams: a precision outside what sketchd (and BigQuery) takes.
	ErrParams = errors.New("invalid parameters")
	// ErrValueType: a value type sketchd does not add ids as, or sketches
	// of two value types merged (ZetaSketch refuses both).
	ErrValueType = errors.New("value type")
	// ErrPrecision: precisions ZetaSketch cannot merge (one sketch's
	// normal precision is higher, the other's sparse precision is).
	ErrPrecision = errors.New("incompatible precisions")
	// ErrFewerRegisters: a merge into a sketch from one of lower
	// precision, which would lower the receiver's.
	ErrFewerRegisters = errors.New("fewer registers")
)
