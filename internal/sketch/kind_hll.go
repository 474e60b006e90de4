package sketch

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
)

// TypeHLL sketches are postgresql-hll's HyperLogLog, in its storage format.
var hllKind = Kind{
	Type:    TypeHLL,
	Format:  "the postgresql-hll storage format",
	Tag:     1,
	Default: func() Params { return HLLParams{hll.DefaultParams()} },
	Decode: func(b []byte) (Sketch, error) {
		h, err := hll.Decode(b)
		if err != nil {
			return nil, err
		}
		if h.Representation() == hll.Undefined {
			return nil, errUndefined
		}
		return hllSketch{h: h, orig: keepOriginal(b, h.SizeBytes(), func(out []byte) []byte { out, _ = h.AppendBinary(out); return out })}, nil
	},
	Check: func(b []byte) (Params, error) {
		rep, p, err := hll.Check(b)
		if err != nil {
			return nil, err
		}
		if rep == hll.Undefined {
			return nil, errUndefined
		}
		return HLLParams{p}, nil
	},
	// Storage format version 1 is the high nibble of the first byte.
	Sniff:   func(b []byte) bool { return len(b) > 0 && b[0]>>4 == 1 },
	Prepare: func(in Input) (Batch, error) { hs, err := in.Hashes(); return hashBatch(hs), err },
	Union: func(ss []Sketch) (Sketch, error) {
		hs := make([]*hll.Sketch, len(ss))
		for i, s := range ss {
			hs[i] = s.(hllSketch).h
		}
		h, err := hll.Union(hs...)
		if err != nil {
			return nil, Wrap(Invalid, err, trimKindPrefix(err.Error()))
		}
		return hllSketch{h: h}, nil
	},
	Representation: hllRepresentation,
}

// hllRepresentation reads the storage type from the low nibble of the
// first byte.
func hllRepresentation(b []byte) (string, error) {
	reps := [...]string{"UNDEFINED", "EMPTY", "EXPLICIT", "SPARSE", "FULL"}
	if len(b) == 0 || int(b[0]&0x0f) >= len(reps) {
		return "", errors.New("hll: no storage type")
	}
	return reps[b[0]&0x0f], nil
}

var errUndefined = errors.New("hll: an UNDEFINED hll (the result of an undefined operation in PostgreSQL) cannot be stored")

// HLLParams are an HLL sketch's parameters (log2m, regwidth, expthresh,
// sparse), as postgresql-hll takes them.
type HLLParams struct{ hll.Params }

// DefaultHLL returns the spec of a sketch created implicitly (?create=true).
func DefaultHLL() Spec { return Spec{Params: hllKind.Default()} }

// Kind implements Params.
func (HLLParams) Kind() *Kind { return &hllKind }

// Validate implements Params.
func (p HLLParams) Validate() error {
	if err := p.Params.Validate(); err != nil {
		return Wrap(Invalid, err, "invalid hll parameters: "+trimKindPrefix(err.Error()))
	}
	return nil
}

// New implements Params.
func (p HLLParams) New() (Sketch, error) {
	h, err := hll.New(p.Params)
	if err != nil {
		return nil, Wrap(Invalid, err, "invalid hll parameters: "+trimKindPrefix(err.Error()))
	}
	return hllSketch{h: h}, nil
}

// String implements Params.
func (p HLLParams) String() string { return "hll " + p.Params.String() }

// NewHLL wraps an HLL engine sketch; the Sketch owns h from then on.
func NewHLL(h *hll.Sketch) Sketch { return hllSketch{h: h} }

// HLLOf returns the engine sketch behind s, if s is an HLL. Callers must
// not keep or change it beyond what the store allows for s.
func HLLOf(s Sketch) (*hll.Sketch, bool) {
	h, ok := s.(hllSketch)
	return h.h, ok
}

// hllSketch is an HLL; orig keeps the bytes it was decoded from (see
// original).
type hllSketch struct {
	h    *hll.Sketch
	orig *original
}

// hashBatch is an HLL batch: hashed ids.
type hashBatch []uint64

func (b hashBatch) Len() int { return len(b) }

func (s hllSketch) Kind() *Kind    { return &hllKind }
func (s hllSketch) Params() Params { return HLLParams{s.h.Params()} }
func (s hllSketch) AppendBinary(b []byte) []byte {
	if ob := s.orig.bytes(); ob != nil {
		return append(b, ob...)
	}
	b, _ = s.h.AppendBinary(b)
	return b
}
func (s hllSketch) Clone() Sketch { return hllSketch{h: s.h.Clone(), orig: s.orig.clone()} }

func (s hllSketch) Merge(o Sketch) error {
	if err := s.h.Union(o.(hllSketch).h); err != nil {
		return Wrap(Conflict, err, trimKindPrefix(err.Error()))
	}
	s.orig.drop()
	return nil
}

func (s hllSketch) Check(Batch) error { return nil }

// Apply logs the hashes that changed the sketch (raised a register or
// joined the EXPLICIT set): uvarint n, then n big-endian uint64s. Replaying
// only those gives the same sketch, since the others changed nothing.
// A write that changes nothing still drops bytes kept as uploaded, and
// logs n = 0 for that (original.written).
func (s hllSketch) Apply(b Batch, delta []byte) ([]byte, error) {
	at := len(delta)
	changed := s.h.AddHashes(b.(hashBatch), nil)
	if len(changed) > 0 {
		delta = binary.AppendUvarint(delta, uint64(len(changed)))
		for _, h := range changed {
			delta = binary.BigEndian.AppendUint64(delta, h)
		}
	}
	return s.orig.written(b.Len(), delta, at), nil
}

// Absorb adds b without the log Apply builds (see the package's Absorb).
func (s hllSketch) Absorb(b Batch) error {
	s.h.AddAll(b.(hashBatch))
	s.orig.drop()
	return nil
}

func (s hllSketch) ApplyDelta(delta []byte) error {
	n, k := binary.Uvarint(delta)
	if k <= 0 || n != uint64(len(delta)-k)/8 || uint64(len(delta)-k)%8 != 0 {
		return fmt.Errorf("hll delta of %d bytes is malformed", len(delta))
	}
	hs := make([]uint64, n)
	for i := range hs {
		hs[i] = binary.BigEndian.Uint64(delta[k+8*i:])
	}
	s.h.AddHashes(hs, nil)
	s.orig.drop()
	return nil
}

func (s hllSketch) Describe(in *Info) {
	in.Representation = s.Representation()
	a := s.h.Answer(hll.PostgreSQLEstimator)
	in.Cardinality, in.StdError, in.Lower, in.Upper = a.Estimate, a.StdError, a.LowerBound, a.UpperBound
	in.SizeBytes = s.SizeBytes()
}

func (s hllSketch) SizeBytes() int {
	if ob := s.orig.bytes(); ob != nil {
		return len(ob)
	}
	return s.h.SizeBytes()
}

func (s hllSketch) MemoryBytes() int64 {
	return int64(s.h.MemoryBytes()+len(s.orig.bytes())) + 128
}

// Representation is the storage type the sketch's bytes have: as
// uploaded while they are kept, else as postgresql-hll's rules choose.
func (s hllSketch) Representation() string {
	if ob := s.orig.bytes(); ob != nil {
		if r, err := hllRepresentation(ob); err == nil {
			return r
		}
	}
	return s.h.Representation().String()
}
func (s hllSketch) Estimate() float64 { return s.h.Estimate() }

func hashID(id cms.ID) uint64 {
	if id.IsText() {
		return hll.HashString(id.Text())
	}
	return hll.HashInt64(id.Int())
}
