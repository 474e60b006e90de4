package sketch

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/dshll"
)

// TypeDSHLL sketches are Apache DataSketches' HLL sketches (HLL_4, HLL_6,
// HLL_8), in their own format: what Spark's hll_sketch_agg, Druid, Hive
// and the DataSketches UDFs and extensions read. Ids hash as DataSketches
// hashes them (MurmurHash3_x64_128, seed 9001), not as postgresql-hll
// does, so these do not mix with hll sketches.
const TypeDSHLL Type = "ds_hll"

var dshllKind = Kind{
	Type:    TypeDSHLL,
	Format:  "a DataSketches HLL sketch",
	Tag:     5,
	Default: func() Params { return DSHLLParams{dshll.DefaultParams()} },
	Decode: func(b []byte) (Sketch, error) {
		d, err := dshll.Decode(b)
		if err != nil {
			return nil, err
		}
		s := dshllSketch{d: d}
		s.orig = keepOriginal(b, len(b), func(out []byte) []byte { out, _ = d.AppendBinary(out); return out })
		return s, nil
	},
	Sniff: dshll.Sniff,
	Prepare: func(in Input) (Batch, error) {
		its, err := in.Items()
		if err != nil {
			return nil, err
		}
		ids := make(idBatch, 0, len(its))
		for _, it := range its {
			if !it.ID.IsText() || it.ID.Text() != "" {
				ids = append(ids, it.ID)
			}
		}
		return ids, nil
	},
	// The union is DataSketches' at the smallest lg_k of its inputs (as
	// an hll union folds to the smallest log2m), in the first input's
	// target type.
	Union: func(ss []Sketch) (Sketch, error) {
		ds := make([]*dshll.Sketch, len(ss))
		p := ss[0].(dshllSketch).d.Params()
		for i, s := range ss {
			ds[i] = s.(dshllSketch).d
			p.LgK = min(p.LgK, ds[i].Params().LgK)
		}
		u, err := dshll.Union(p, ds...)
		if err != nil {
			return nil, Wrap(Invalid, err, trimKindPrefix(err.Error()))
		}
		return dshllSketch{d: u}, nil
	},
	Representation: func(b []byte) (string, error) {
		if len(b) < 8 || b[7]&3 == 3 {
			return "", errors.New("dshll: no mode byte")
		}
		return [...]string{"LIST", "SET", "HLL"}[b[7]&3], nil
	},
}

// DSHLLParams are a DataSketches HLL sketch's parameters: lg_k and the
// target type.
type DSHLLParams struct{ dshll.Params }

// Kind implements Params.
func (DSHLLParams) Kind() *Kind { return &dshllKind }

// Validate implements Params.
func (p DSHLLParams) Validate() error {
	if err := p.Params.Validate(); err != nil {
		return Wrap(Invalid, err, "invalid ds_hll parameters: "+trimKindPrefix(err.Error()))
	}
	return nil
}

// New implements Params.
func (p DSHLLParams) New() (Sketch, error) {
	d, err := dshll.New(p.Params)
	if err != nil {
		return nil, Wrap(Invalid, err, "invalid ds_hll parameters: "+trimKindPrefix(err.Error()))
	}
	return dshllSketch{d: d}, nil
}

// String implements Params.
func (p DSHLLParams) String() string { return "ds_hll " + p.Params.String() }

// DSHLLOf returns the engine sketch behind s, if s is a DataSketches HLL.
func DSHLLOf(s Sketch) (*dshll.Sketch, bool) {
	d, ok := s.(dshllSketch)
	return d.d, ok
}

// dshllSketch is a DataSketches HLL; orig keeps the bytes it was decoded
// from (see original).
type dshllSketch struct {
	d    *dshll.Sketch
	orig *original
}

// idBatch is a batch of ids as given, for kinds whose library hashes them
// itself.
type idBatch []cms.ID

func (b idBatch) Len() int { return len(b) }

func (s dshllSketch) Kind() *Kind    { return &dshllKind }
func (s dshllSketch) Params() Params { return DSHLLParams{s.d.Params()} }
func (s dshllSketch) AppendBinary(b []byte) []byte {
	if ob := s.orig.bytes(); ob != nil {
		return append(b, ob...)
	}
	b, _ = s.d.AppendBinary(b)
	return b
}
func (s dshllSketch) Clone() Sketch     { return dshllSketch{d: s.d.Clone(), orig: s.orig.clone()} }
func (s dshllSketch) Check(Batch) error { return nil }

func (s dshllSketch) Merge(o Sketch) error {
	if err := s.d.Merge(o.(dshllSketch).d); err != nil {
		if errors.Is(err, dshll.ErrFewerRegisters) {
			return Wrap(Conflict, err, trimKindPrefix(err.Error()))
		}
		return Wrap(Invalid, err, trimKindPrefix(err.Error()))
	}
	s.orig.drop()
	return nil
}

// Apply adds the ids and logs them all (the library does not say which
// changed the sketch; an add is idempotent, and replayed in the same
// order from the same state it gives the same bytes, HIP accumulator
// included): uvarint n, then per id a tag byte, 0 and a big-endian int64
// or 1, a uvarint length and the string's bytes.
func (s dshllSketch) Apply(b Batch, delta []byte) ([]byte, error) {
	ids := b.(idBatch)
	at := len(delta)
	if len(ids) > 0 {
		delta = appendIDs(delta, ids)
	}
	if err := addIDs(s.d, ids); err != nil {
		return delta[:at], err
	}
	return s.orig.written(len(ids), delta, at), nil
}

func (s dshllSketch) ApplyDelta(delta []byte) error {
	ids, err := readIDs(delta)
	if err != nil {
		return err
	}
	if err := addIDs(s.d, ids); err != nil {
		return err
	}
	s.orig.drop()
	return nil
}

func addIDs(d *dshll.Sketch, ids []cms.ID) error {
	for _, id := range ids {
		var err error
		if id.IsText() {
			err = d.AddString(id.Text())
		} else {
			err = d.AddInt(id.Int())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// appendIDs appends uvarint n and the ids (see dshllSketch.Apply).
func appendIDs(delta []byte, ids []cms.ID) []byte {
	delta = binary.AppendUvarint(delta, uint64(len(ids)))
	for _, id := range ids {
		if id.IsText() {
			delta = append(delta, 1)
			delta = binary.AppendUvarint(delta, uint64(len(id.Text())))
			delta = append(delta, id.Text()...)
		} else {
			delta = append(delta, 0)
			delta = binary.BigEndian.AppendUint64(delta, uint64(id.Int()))
		}
	}
	return delta
}

// readIDs reads what appendIDs wrote (or uvarint 0 alone), refusing
// anything else; it allocates no more than the delta's length implies.
func readIDs(delta []byte) ([]cms.ID, error) {
	n, k := binary.Uvarint(delta)
	if k <= 0 || n > uint64(len(delta)) {
		return nil, fmt.Errorf("id delta of %d bytes is malformed", len(delta))
	}
	ids := make([]cms.ID, 0, n)
	rest := delta[k:]
	for range n {
		if len(rest) == 0 {
			return nil, fmt.Errorf("id delta of %d bytes ends early", len(delta))
		}
		switch rest[0] {
		case 0:
			if len(rest) < 9 {
				return nil, fmt.Errorf("id delta of %d bytes ends in an int", len(delta))
			}
			ids = append(ids, cms.IntID(int64(binary.BigEndian.Uint64(rest[1:]))))
			rest = rest[9:]
		case 1:
			l, m := binary.Uvarint(rest[1:])
			if m <= 0 || l > uint64(len(rest)-1-m) {
				return nil, fmt.Errorf("id delta of %d bytes ends in a string", len(delta))
			}
			ids = append(ids, cms.TextID(string(rest[1+m:1+m+int(l)])))
			rest = rest[1+m+int(l):]
		default:
			return nil, fmt.Errorf("id delta of %d bytes has tag %d", len(delta), rest[0])
		}
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("id delta of %d bytes has %d trailing bytes", len(delta), len(rest))
	}
	return ids, nil
}

// Describe gives the estimate, its bounds at two standard deviations, and
// its relative standard error as the library's one-deviation bounds
// imply it (the HIP estimator's while the sketch was only updated, the
// composite's after a union).
func (s dshllSketch) Describe(in *Info) {
	in.Representation = s.Representation()
	in.Cardinality = s.d.Estimate()
	in.Lower, _ = s.d.LowerBound(2)
	in.Upper, _ = s.d.UpperBound(2)
	if lo, _ := s.d.LowerBound(1); in.Cardinality > 0 {
		hi, _ := s.d.UpperBound(1)
		in.StdError = (hi - lo) / 2 / in.Cardinality
	}
	in.SizeBytes = s.SizeBytes()
}

func (s dshllSketch) SizeBytes() int {
	if ob := s.orig.bytes(); ob != nil {
		return len(ob)
	}
	return s.d.SizeBytes()
}

func (s dshllSketch) MemoryBytes() int64 {
	return int64(s.d.MemoryBytes()+len(s.orig.bytes())) + 128
}

// Representation is the mode: LIST, SET or HLL.
func (s dshllSketch) Representation() string { return s.d.Mode() }
func (s dshllSketch) Estimate() float64      { return s.d.Estimate() }
