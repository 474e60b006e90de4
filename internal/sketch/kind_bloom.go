package sketch

import (
	"errors"
	"fmt"

	"github.com/sketchd/sketchd/internal/bloom"
)

// TypeBloom sketches are Bloom filters (internal/bloom): membership with
// no false negatives and a stated false-positive rate. Ids hash as for
// HLL (postgresql-hll's hashes); hashes are taken as given.
const TypeBloom Type = "bloom"

var bloomKind = Kind{
	Type:    TypeBloom,
	Format:  "sketchd's Bloom filter format",
	Tag:     16,
	Default: func() Params { return BloomParams{bloom.DefaultParams()} },
	Decode: func(b []byte) (Sketch, error) {
		f, err := bloom.Decode(b)
		if err != nil {
			return nil, err
		}
		return bloomSketch{f}, nil
	},
	Sniff: bloom.Sniff,
	Prepare: func(in Input) (Batch, error) {
		hs, err := in.Hashes()
		if err != nil {
			return nil, err
		}
		return &bloomBatch{hashes: hs}, nil
	},
	// Filters unite only with filters of the same shape; the union keeps
	// the first one's stated items and rate.
	Union: func(ss []Sketch) (Sketch, error) {
		u := ss[0].(bloomSketch).f.Clone()
		for _, s := range ss[1:] {
			if err := u.Union(s.(bloomSketch).f); err != nil {
				return nil, bloomError(err)
			}
		}
		return bloomSketch{u}, nil
	},
	Fresh: func(b Batch) []bool { return b.(*bloomBatch).fresh },
}

// BloomParams are a Bloom filter's parameters: its shape, and the items
// and rate it was made for (bloom.ParamsFor) if it was made that way.
type BloomParams struct{ bloom.Params }

// Kind implements Params.
func (BloomParams) Kind() *Kind { return &bloomKind }

// Validate implements Params.
func (p BloomParams) Validate() error {
	if err := p.Params.Validate(); err != nil {
		return Wrap(Invalid, err, "invalid bloom parameters: "+trimKindPrefix(err.Error()))
	}
	return nil
}

// New implements Params.
func (p BloomParams) New() (Sketch, error) {
	f, err := bloom.New(p.Params)
	if err != nil {
		return nil, Wrap(Invalid, err, "invalid bloom parameters: "+trimKindPrefix(err.Error()))
	}
	return bloomSketch{f}, nil
}

// String implements Params.
func (p BloomParams) String() string {
	if p.Stated() {
		return fmt.Sprintf("bloom bits=%d hashes=%d expected_items=%d fpp=%v", p.Bits, p.Hashes, p.ExpectedItems, p.FPP)
	}
	return fmt.Sprintf("bloom bits=%d hashes=%d", p.Bits, p.Hashes)
}

// BloomOf returns the filter behind s, if s is a Bloom filter.
func BloomOf(s Sketch) (*bloom.Filter, bool) {
	b, ok := s.(bloomSketch)
	return b.f, ok
}

// bloomError classifies a filter error: shapes that cannot be merged
// contradict the stored filter (Conflict); anything else is bad input.
func bloomError(err error) error {
	if errors.Is(err, bloom.ErrIncompatible) {
		return Wrap(Conflict, err, trimKindPrefix(err.Error()))
	}
	return Wrap(Invalid, err, trimKindPrefix(err.Error()))
}

type bloomSketch struct{ f *bloom.Filter }

// bloomBatch is a Bloom batch: hashes, and once applied, which of them
// were new.
type bloomBatch struct {
	hashes []uint64
	fresh  []bool
}

func (b *bloomBatch) Len() int { return len(b.hashes) }

func (s bloomSketch) Kind() *Kind                  { return &bloomKind }
func (s bloomSketch) Params() Params               { return BloomParams{s.f.Params()} }
func (s bloomSketch) AppendBinary(b []byte) []byte { return s.f.AppendBinary(b) }
func (s bloomSketch) Clone() Sketch                { return bloomSketch{s.f.Clone()} }
func (s bloomSketch) Check(Batch) error            { return nil }
func (s bloomSketch) SizeBytes() int               { return s.f.SizeBytes() }
func (s bloomSketch) MemoryBytes() int64           { return int64(s.f.SizeBytes()) + 128 }
func (s bloomSketch) Representation() string       { return "" }
func (s bloomSketch) Estimate() float64            { return s.f.EstimatedItems() }

func (s bloomSketch) Merge(o Sketch) error {
	if err := s.f.Union(o.(bloomSketch).f); err != nil {
		return bloomError(err)
	}
	return nil
}

// Apply adds the batch's hashes in order, recording which were new (a
// hash twice in one batch is new at most once), and logs the new ones:
// uvarint n, n big-endian uint64s. Setting bits is idempotent, so replay
// gives the same filter.
func (s bloomSketch) Apply(b Batch, delta []byte) ([]byte, error) {
	bb := b.(*bloomBatch)
	bb.fresh = make([]bool, len(bb.hashes))
	i := 0
	return appendHashDelta(delta, bb.hashes, func(h uint64) bool {
		bb.fresh[i] = s.f.Add(h)
		i++
		return bb.fresh[i-1]
	}), nil
}

func (s bloomSketch) ApplyDelta(delta []byte) error {
	hs, err := readHashDelta(delta)
	if err != nil {
		return err
	}
	for _, h := range hs {
		s.f.Add(h)
	}
	return nil
}

func (s bloomSketch) Describe(in *Info) {
	in.Cardinality = s.f.EstimatedItems()
	in.BitsSet = s.f.BitsSet()
	in.FalsePositiveRate = s.f.Rate()
	in.SizeBytes = s.f.SizeBytes()
}
