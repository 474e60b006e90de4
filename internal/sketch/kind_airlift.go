package sketch

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/sketchd/sketchd/internal/airlift"
)

// TypeAirliftHLL sketches are airlift's HyperLogLog, the bytes of Trino's
// and Presto's HyperLogLog type (approx_set, merge, cardinality; Athena
// too). Ids hash as approx_set hashes a BIGINT (a JSON integer) or a
// VARCHAR (a string): MurmurHash3 x64 128, seed 0, as postgresql-hll does.
const TypeAirliftHLL Type = "airlift_hll"

var airliftKind = Kind{
	Type:    TypeAirliftHLL,
	Format:  "an airlift HyperLogLog (Trino/Presto approx_set)",
	Tag:     21,
	Default: func() Params { return AirliftParams{airlift.DefaultParams()} },
	Decode: func(b []byte) (Sketch, error) {
		a, err := airlift.Decode(b)
		if err != nil {
			return nil, err
		}
		// airlift.Decode takes only what airlift writes, which encodes
		// back to the same bytes: nothing to keep.
		return airliftSketch{a: a}, nil
	},
	Sniff: airlift.Sniff,
	// Prepare takes the ids hashed as postgresql-hll hashes them, which
	// is how approx_set hashes a BIGINT and a VARCHAR (airlift's
	// Murmur3Hash128.hash64: TestAirliftHashesAsTrino), and hashed values
	// as given (airlift's addHash).
	Prepare: func(in Input) (Batch, error) { hs, err := in.Hashes(); return hashBatch(hs), err },
	// The union is airlift's mergeWith from the first input: sparse
	// inputs merge whatever their index bits, dense ones only at the
	// same (a Conflict otherwise, as Trino's merge refuses them).
	Union: func(ss []Sketch) (Sketch, error) {
		as := make([]*airlift.Sketch, len(ss))
		for i, s := range ss {
			as[i] = s.(airliftSketch).a
		}
		u, err := airlift.Union(as...)
		if err != nil {
			return nil, Wrap(Conflict, err, trimKindPrefix(err.Error()))
		}
		return airliftSketch{a: u}, nil
	},
	Representation: func(b []byte) (string, error) {
		switch {
		case len(b) > 0 && b[0] == 2:
			return "SPARSE", nil
		case len(b) > 0 && b[0] == 3:
			return "DENSE", nil
		}
		return "", fmt.Errorf("airlift: no format tag")
	},
}

// AirliftParams are an airlift HyperLogLog's index bits.
type AirliftParams struct{ airlift.Params }

// Kind implements Params.
func (AirliftParams) Kind() *Kind { return &airliftKind }

// Validate implements Params.
func (p AirliftParams) Validate() error {
	if err := p.Params.Validate(); err != nil {
		return Wrap(Invalid, err, "invalid airlift_hll parameters: "+trimKindPrefix(err.Error()))
	}
	return nil
}

// New implements Params.
func (p AirliftParams) New() (Sketch, error) {
	a, err := airlift.New(p.Params)
	if err != nil {
		return nil, Wrap(Invalid, err, "invalid airlift_hll parameters: "+trimKindPrefix(err.Error()))
	}
	return airliftSketch{a: a}, nil
}

// String implements Params.
func (p AirliftParams) String() string { return "airlift_hll " + p.Params.String() }

// AirliftOf returns the engine sketch behind s, if s is an airlift_hll
// sketch.
func AirliftOf(s Sketch) (*airlift.Sketch, bool) {
	a, ok := s.(airliftSketch)
	return a.a, ok
}

// airliftSketch is an airlift HyperLogLog. Its decoder keeps no original
// bytes: it accepts only what airlift writes, which it writes back alike.
type airliftSketch struct{ a *airlift.Sketch }

func (s airliftSketch) Kind() *Kind                  { return &airliftKind }
func (s airliftSketch) Params() Params               { return AirliftParams{s.a.Params()} }
func (s airliftSketch) AppendBinary(b []byte) []byte { return s.a.AppendBinary(b) }
func (s airliftSketch) Clone() Sketch                { return airliftSketch{a: s.a.Clone()} }
func (s airliftSketch) Check(Batch) error            { return nil }

func (s airliftSketch) Merge(o Sketch) error {
	if err := s.a.Merge(o.(airliftSketch).a); err != nil {
		return Wrap(Conflict, err, trimKindPrefix(err.Error()))
	}
	return nil
}

// Apply adds the batch and logs it whole (uvarint n, then n big-endian
// hashes): where airlift turns dense depends on the batch, not only on
// which hashes change a register, and replaying the whole batch from the
// same bytes gives the same bytes.
func (s airliftSketch) Apply(b Batch, delta []byte) ([]byte, error) {
	hs := b.(hashBatch)
	if len(hs) == 0 {
		return delta, nil
	}
	delta = binary.AppendUvarint(delta, uint64(len(hs)))
	for _, h := range hs {
		delta = binary.BigEndian.AppendUint64(delta, h)
	}
	s.a.AddHashes(hs)
	return delta, nil
}

func (s airliftSketch) ApplyDelta(delta []byte) error {
	n, k := binary.Uvarint(delta)
	if k <= 0 || n == 0 || n > uint64(len(delta))/8 || uint64(len(delta)-k) != 8*n {
		return fmt.Errorf("airlift delta of %d bytes is malformed", len(delta))
	}
	hs := make([]uint64, n)
	for i := range hs {
		hs[i] = binary.BigEndian.Uint64(delta[k+8*i:])
	}
	s.a.AddHashes(hs)
	return nil
}

// Describe gives airlift's estimate (what Trino's cardinality returns),
// its relative standard error (linear counting's while the estimate is
// one, else 1.04/√2^p) and bounds at two standard errors.
func (s airliftSketch) Describe(in *Info) {
	in.Representation = s.Representation()
	e, se := s.a.Describe()
	est := float64(e)
	in.Cardinality, in.StdError = est, se
	in.Lower = math.Max(0, est*(1-2*se))
	in.Upper = est * (1 + 2*se)
	in.SizeBytes = s.SizeBytes()
}

func (s airliftSketch) SizeBytes() int { return s.a.SizeBytes() }

func (s airliftSketch) MemoryBytes() int64 {
	if s.a.Dense() {
		return int64(1)<<s.a.Params().IndexBits + 128
	}
	return 4*int64(s.a.Entries()) + 128
}

// Representation is SPARSE or DENSE.
func (s airliftSketch) Representation() string { return s.a.Representation() }
func (s airliftSketch) Estimate() float64      { return float64(s.a.Estimate()) }
