package sketch

import (
	"errors"

	"github.com/sketchd/sketchd/internal/cpc"
)

// TypeCPC sketches are Apache DataSketches' CPC sketches, in their own
// compressed format (what Pinot, Hive, Impala and the DataSketches UDFs
// and extensions read). Ids hash as DataSketches hashes them.
const TypeCPC Type = "cpc"

var cpcKind = Kind{
	Type:    TypeCPC,
	Format:  "a DataSketches CPC sketch",
	Tag:     6,
	Default: func() Params { return CPCParams{cpc.DefaultParams()} },
	Decode: func(b []byte) (Sketch, error) {
		c, err := cpc.Decode(b)
		if err != nil {
			return nil, err
		}
		s := cpcSketch{c: c}
		s.orig = keepOriginal(b, len(b), func(out []byte) []byte { out, _ = c.AppendBinary(out); return out })
		return s, nil
	},
	Sniff:   cpc.Sniff,
	Prepare: dshllKind.Prepare,
	// The union is DataSketches' at the smallest lg_k of its inputs.
	Union: func(ss []Sketch) (Sketch, error) {
		cs := make([]*cpc.Sketch, len(ss))
		p := ss[0].(cpcSketch).c.Params()
		for i, s := range ss {
			cs[i] = s.(cpcSketch).c
			p.LgK = min(p.LgK, cs[i].Params().LgK)
		}
		u, err := cpc.Union(p, cs...)
		if err != nil {
			return nil, Wrap(Invalid, err, trimKindPrefix(err.Error()))
		}
		return cpcSketch{c: u}, nil
	},
	Representation: func(b []byte) (string, error) {
		if f := cpc.FlavorOf(b); f != "" {
			return f, nil
		}
		return "", errors.New("cpc: no preamble")
	},
}

// CPCParams are a CPC sketch's parameters: lg_k.
type CPCParams struct{ cpc.Params }

// Kind implements Params.
func (CPCParams) Kind() *Kind { return &cpcKind }

// Validate implements Params.
func (p CPCParams) Validate() error {
	if err := p.Params.Validate(); err != nil {
		return Wrap(Invalid, err, "invalid cpc parameters: "+trimKindPrefix(err.Error()))
	}
	return nil
}

// New implements Params.
func (p CPCParams) New() (Sketch, error) {
	c, err := cpc.New(p.Params)
	if err != nil {
		return nil, Wrap(Invalid, err, "invalid cpc parameters: "+trimKindPrefix(err.Error()))
	}
	return cpcSketch{c: c}, nil
}

// String implements Params.
func (p CPCParams) String() string { return "cpc " + p.Params.String() }

// CPCOf returns the engine sketch behind s, if s is a CPC sketch.
func CPCOf(s Sketch) (*cpc.Sketch, bool) {
	c, ok := s.(cpcSketch)
	return c.c, ok
}

// cpcSketch is a CPC sketch; orig keeps the bytes it was decoded from
// (see original).
type cpcSketch struct {
	c    *cpc.Sketch
	orig *original
}

func (s cpcSketch) Kind() *Kind    { return &cpcKind }
func (s cpcSketch) Params() Params { return CPCParams{s.c.Params()} }
func (s cpcSketch) AppendBinary(b []byte) []byte {
	if ob := s.orig.bytes(); ob != nil {
		return append(b, ob...)
	}
	b, _ = s.c.AppendBinary(b)
	return b
}
func (s cpcSketch) Clone() Sketch     { return cpcSketch{c: s.c.Clone(), orig: s.orig.clone()} }
func (s cpcSketch) Check(Batch) error { return nil }

func (s cpcSketch) Merge(o Sketch) error {
	if err := s.c.Merge(o.(cpcSketch).c); err != nil {
		if errors.Is(err, cpc.ErrFewerRows) {
			return Wrap(Conflict, err, trimKindPrefix(err.Error()))
		}
		return Wrap(Invalid, err, trimKindPrefix(err.Error()))
	}
	s.orig.drop()
	return nil
}

// Apply adds the ids and logs them all, as ds_hll does (the library does
// not say which changed the sketch; replayed in order from the same state
// they give the same bytes, HIP accumulator included).
func (s cpcSketch) Apply(b Batch, delta []byte) ([]byte, error) {
	ids := b.(idBatch)
	at := len(delta)
	if len(ids) > 0 {
		delta = appendIDs(delta, ids)
	}
	for _, id := range ids {
		if err := s.add(id.IsText(), id.Text(), id.Int()); err != nil {
			return delta[:at], err
		}
	}
	return s.orig.written(len(ids), delta, at), nil
}

func (s cpcSketch) add(text bool, str string, v int64) error {
	if text {
		return s.c.AddString(str)
	}
	return s.c.AddInt(v)
}

func (s cpcSketch) ApplyDelta(delta []byte) error {
	ids, err := readIDs(delta)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := s.add(id.IsText(), id.Text(), id.Int()); err != nil {
			return err
		}
	}
	s.orig.drop()
	return nil
}

// Describe gives the estimate, its bounds at two standard deviations and
// the relative standard error the one-deviation bounds imply (HIP while
// only updated, ICON after a union).
func (s cpcSketch) Describe(in *Info) {
	in.Representation = s.Representation()
	in.Cardinality = s.c.Estimate()
	in.Lower, _ = s.c.LowerBound(2)
	in.Upper, _ = s.c.UpperBound(2)
	if lo, _ := s.c.LowerBound(1); in.Cardinality > 0 {
		hi, _ := s.c.UpperBound(1)
		in.StdError = (hi - lo) / 2 / in.Cardinality
	}
	in.SizeBytes = s.SizeBytes()
}

func (s cpcSketch) SizeBytes() int {
	if ob := s.orig.bytes(); ob != nil {
		return len(ob)
	}
	b, _ := s.c.MarshalBinary()
	return len(b)
}

func (s cpcSketch) MemoryBytes() int64 {
	return int64(s.c.MemoryBytes()+len(s.orig.bytes())) + 128
}

// Representation is the flavor: EMPTY, SPARSE, HYBRID, PINNED, SLIDING.
func (s cpcSketch) Representation() string { return s.c.Flavor() }
func (s cpcSketch) Estimate() float64      { return s.c.Estimate() }
