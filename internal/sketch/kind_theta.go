package sketch

import (
	"encoding/binary"
	"fmt"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/theta"
)

// TypeTheta sketches are DataSketches' theta sketches (KMV with a
// threshold), in its compact format: intersections whose error scales
// with the intersection. Ids hash as DataSketches hashes them
// (theta.HashInt, theta.HashString), not as postgresql-hll does.
const TypeTheta Type = "theta"

var thetaKind = Kind{
	Type:    TypeTheta,
	Format:  "a DataSketches theta sketch",
	Tag:     3,
	Default: func() Params { return ThetaParams{theta.DefaultParams()} },
	Decode: func(b []byte) (Sketch, error) {
		t, err := theta.Decode(b)
		if err != nil {
			return nil, err
		}
		return thetaSketch{t: t, orig: keepOriginal(b, t.SizeBytes(), t.AppendStored)}, nil
	},
	Sniff: theta.Sniff,
	Prepare: func(in Input) (Batch, error) {
		its, err := in.Items()
		if err != nil {
			return nil, err
		}
		hs := make(thetaBatch, 0, len(its))
		for _, it := range its {
			if h, ok := thetaHash(it.ID); ok {
				hs = append(hs, h)
			}
		}
		return hs, nil
	},
	// The union keeps the smallest lg_k of its inputs, as an HLL union
	// folds to the smallest log2m.
	Union: func(ss []Sketch) (Sketch, error) {
		ts := make([]*theta.Sketch, len(ss))
		p := ss[0].(thetaSketch).t.Params()
		for i, s := range ss {
			ts[i] = s.(thetaSketch).t
			p.LgK = min(p.LgK, ts[i].Params().LgK)
		}
		u, err := theta.UnionAll(p, ts...)
		if err != nil {
			return nil, Wrap(Invalid, err, trimKindPrefix(err.Error()))
		}
		return thetaSketch{t: u}, nil
	},
}

// thetaHash is DataSketches' hash of an id; it ignores empty strings.
func thetaHash(id cms.ID) (uint64, bool) {
	if id.IsText() {
		if id.Text() == "" {
			return 0, false
		}
		return theta.HashString(id.Text()), true
	}
	return theta.HashInt(id.Int()), true
}

// ThetaParams are a theta sketch's parameters: lg_k.
type ThetaParams struct{ theta.Params }

// Kind implements Params.
func (ThetaParams) Kind() *Kind { return &thetaKind }

// Validate implements Params.
func (p ThetaParams) Validate() error {
	if err := p.Params.Validate(); err != nil {
		return Wrap(Invalid, err, "invalid theta parameters: "+trimKindPrefix(err.Error()))
	}
	return nil
}

// New implements Params.
func (p ThetaParams) New() (Sketch, error) {
	t, err := theta.New(p.Params)
	if err != nil {
		return nil, Wrap(Invalid, err, "invalid theta parameters: "+trimKindPrefix(err.Error()))
	}
	return thetaSketch{t: t}, nil
}

// String implements Params.
func (p ThetaParams) String() string { return fmt.Sprintf("theta lg_k=%d", p.LgK) }

// NewTheta wraps a theta engine sketch; the Sketch owns t from then on.
func NewTheta(t *theta.Sketch) Sketch { return thetaSketch{t: t} }

// ThetaOf returns the engine sketch behind s, if s is a theta sketch.
func ThetaOf(s Sketch) (*theta.Sketch, bool) {
	t, ok := s.(thetaSketch)
	return t.t, ok
}

// thetaSketch is a theta sketch; orig keeps the bytes it was decoded from
// (see original).
type thetaSketch struct {
	t    *theta.Sketch
	orig *original
}

// thetaBatch is a theta batch: DataSketches hashes.
type thetaBatch []uint64

func (b thetaBatch) Len() int { return len(b) }

func (s thetaSketch) Kind() *Kind            { return &thetaKind }
func (s thetaSketch) Params() Params         { return ThetaParams{s.t.Params()} }
func (s thetaSketch) Clone() Sketch          { return thetaSketch{t: s.t.Clone(), orig: s.orig.clone()} }
func (s thetaSketch) Merge(o Sketch) error   { s.t.Union(o.(thetaSketch).t); s.orig.drop(); return nil }
func (s thetaSketch) Check(Batch) error      { return nil }
func (s thetaSketch) MemoryBytes() int64     { return int64(s.t.MemoryBytes()+len(s.orig.bytes())) + 128 }
func (s thetaSketch) Representation() string { return "" }

// AppendBinary appends the bytes as uploaded while they are kept, else
// the compact form with lg_k in byte 3 (theta.AppendStored).
func (s thetaSketch) AppendBinary(b []byte) []byte {
	if ob := s.orig.bytes(); ob != nil {
		return append(b, ob...)
	}
	return s.t.AppendStored(b)
}

func (s thetaSketch) SizeBytes() int {
	if ob := s.orig.bytes(); ob != nil {
		return len(ob)
	}
	return s.t.SizeBytes()
}
func (s thetaSketch) Estimate() float64 { return s.t.Estimate() }

// Apply logs the hashes that could change the sketch (below its theta
// when they arrive, or any while it is empty): uvarint n, n big-endian
// uint64s. Replayed onto the same state in the same order they give the
// same sketch. A write that changes nothing still drops bytes kept as
// uploaded, and logs n = 0 for that (original.written).
func (s thetaSketch) Apply(b Batch, delta []byte) ([]byte, error) {
	n := len(delta)
	delta = appendHashDelta(delta, b.(thetaBatch), func(h uint64) bool {
		useful := s.t.IsEmpty() || h < s.t.Theta64()
		if useful {
			s.t.AddHash(h)
		}
		return useful
	})
	return s.orig.written(b.Len(), delta, n), nil
}

func (s thetaSketch) ApplyDelta(delta []byte) error {
	hs, err := readHashDelta(delta)
	if err != nil {
		return err
	}
	for _, h := range hs {
		s.t.AddHash(h)
	}
	s.orig.drop()
	return nil
}

func (s thetaSketch) Describe(in *Info) {
	in.Cardinality = s.t.Estimate()
	in.Lower, _ = s.t.LowerBound(2)
	in.Upper, _ = s.t.UpperBound(2)
	in.Theta = s.t.Theta()
	in.Retained = s.t.Retained()
	in.SizeBytes = s.SizeBytes()
}

// appendHashDelta appends uvarint n and the n hashes add reported as
// useful; nothing when none was.
func appendHashDelta(delta []byte, hs []uint64, add func(uint64) bool) []byte {
	var kept []uint64
	for _, h := range hs {
		if add(h) {
			kept = append(kept, h)
		}
	}
	if len(kept) == 0 {
		return delta
	}
	delta = binary.AppendUvarint(delta, uint64(len(kept)))
	for _, h := range kept {
		delta = binary.BigEndian.AppendUint64(delta, h)
	}
	return delta
}

// readHashDelta reads what appendHashDelta wrote, refusing any other
// length.
func readHashDelta(delta []byte) ([]uint64, error) {
	n, k := binary.Uvarint(delta)
	if k <= 0 || uint64(len(delta)-k)%8 != 0 || n != uint64(len(delta)-k)/8 {
		return nil, fmt.Errorf("hash delta of %d bytes is malformed", len(delta))
	}
	hs := make([]uint64, n)
	for i := range hs {
		hs[i] = binary.BigEndian.Uint64(delta[k+8*i:])
	}
	return hs, nil
}
