package zeta

import "fmt"

// Precision ranges. BigQuery's HLL_COUNT.INIT takes normal precisions
// 10..24 (ZetaSketch's library also 4..9, which BigQuery refuses), and
// writes a sparse precision of precision+5, at most 25.
const (
	MinPrecision       = 10
	MaxPrecision       = 24
	MaxSparsePrecision = 25
	DefaultPrecision   = 15
	// SparseDelta is what a sparse precision left unsaid adds to the
	// normal one (ZetaSketch's DEFAULT_SPARSE_PRECISION_DELTA).
	SparseDelta = 5
)

// Params are a sketch's precisions: Precision (p, 2^p registers in the
// normal representation) and SparsePrecision (sp, the precision of the
// sparse representation's indices, p..25; 0 starts in the normal
// representation, as ZetaSketch's noSparseMode does).
type Params struct {
	Precision       int
	SparsePrecision int
}

// DefaultParams are BigQuery's defaults: precision 15, sparse 20.
func DefaultParams() Params { return ParamsFor(DefaultPrecision) }

// ParamsFor returns precision p with the sparse precision BigQuery
// writes for it.
func ParamsFor(p int) Params { return Params{p, min(p+SparseDelta, MaxSparsePrecision)} }

// Validate checks the ranges; errors wrap ErrParams.
func (p Params) Validate() error {
	if p.Precision < MinPrecision || p.Precision > MaxPrecision {
		return fmt.Errorf("zeta: precision %d is outside %d..%d: %w", p.Precision, MinPrecision, MaxPrecision, ErrParams)
	}
	if p.SparsePrecision != 0 && (p.SparsePrecision < p.Precision || p.SparsePrecision > MaxSparsePrecision) {
		return fmt.Errorf("zeta: sparse precision %d is outside %d..%d (or 0 for none): %w", p.SparsePrecision, p.Precision, MaxSparsePrecision, ErrParams)
	}
	return nil
}

// String describes the parameters.
func (p Params) String() string {
	return fmt.Sprintf("precision=%d sparse_precision=%d", p.Precision, p.SparsePrecision)
}

// ValueType is the proto's value_type: the type of the values a sketch
// counts, which ZetaSketch refuses to mix.
type ValueType int32

// The value types sketchd reads and writes (DefaultOpsType.Id).
const (
	// TypeUnknown: no value added yet; the first add sets the type.
	TypeUnknown ValueType = 0
	// TypeLong: 64-bit integers (UINT64 in the proto's enum), what
	// buildForLongs and BigQuery's INT64 input write.
	TypeLong ValueType = 8
	// TypeString: UTF-8 strings and bytes (BYTES_OR_UTF8_STRING).
	TypeString ValueType = 11
)

// String names the type as the API shows it.
func (t ValueType) String() string {
	switch t {
	case TypeLong:
		return "int64"
	case TypeString:
		return "string"
	case TypeUnknown:
		return "unknown"
	}
	return fmt.Sprintf("value type %d", int32(t))
}
