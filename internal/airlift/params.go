package airlift

import "fmt"

// Index bits: a sketch has 2^p buckets. Trino's approx_set takes 12 (4,096
// buckets, standard error 1.625%); approx_set(x, e) and approx_distinct
// take 4..16 (e from 0.26 down to 0.0040625).
const (
	MinIndexBits     = 4
	MaxIndexBits     = 16
	DefaultIndexBits = 12
)

// Params are a sketch's parameters: IndexBits (p, 2^p buckets).
type Params struct {
	IndexBits int
}

// DefaultParams are approx_set's: 12 index bits.
func DefaultParams() Params { return Params{DefaultIndexBits} }

// Validate checks the range; errors wrap ErrParams.
func (p Params) Validate() error {
	if p.IndexBits < MinIndexBits || p.IndexBits > MaxIndexBits {
		return fmt.Errorf("airlift: index bits %d are outside %d..%d: %w", p.IndexBits, MinIndexBits, MaxIndexBits, ErrParams)
	}
	return nil
}

// String describes the parameters.
func (p Params) String() string { return fmt.Sprintf("index_bits=%d", p.IndexBits) }
