package sketch

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/sketchd/sketchd/internal/zeta"
)

// TypeZetaHLL sketches are ZetaSketch's HLL++ sketches, in the bytes
// BigQuery's HLL_COUNT.INIT writes (and HLL_COUNT.MERGE / EXTRACT, Beam's
// HllCount and Dataflow read). Ids hash as BigQuery hashes an INT64 or a
// STRING (Fingerprint2011), and a sketch counts one of the two.
const TypeZetaHLL Type = "zeta_hll"

var zetaKind = Kind{
	Type:    TypeZetaHLL,
	Format:  "a ZetaSketch HLL++ sketch (BigQuery HLL_COUNT, Beam HllCount)",
	Tag:     20,
	Default: func() Params { return ZetaParams{zeta.DefaultParams()} },
	Decode: func(b []byte) (Sketch, error) {
		z, err := zeta.Decode(b)
		if err != nil {
			return nil, err
		}
		s := zetaSketch{z: z}
		s.orig = keepOriginal(b, z.SizeBytes(), z.AppendBinary)
		return s, nil
	},
	Sniff: zeta.Sniff,
	// Prepare hashes each id as BigQuery hashes an INT64 (a JSON integer)
	// or a STRING; a batch of both is Invalid, as one HLL_COUNT.INIT
	// column holds one type.
	Prepare: func(in Input) (Batch, error) {
		its, err := in.Items()
		if err != nil {
			return nil, err
		}
		b := zetaBatch{hashes: make([]uint64, len(its))}
		ints := 0
		for i, it := range its {
			if it.ID.IsText() {
				b.hashes[i] = zeta.HashString(it.ID.Text())
			} else {
				b.hashes[i] = zeta.HashInt(it.ID.Int())
				ints++
			}
			b.values += int64(it.Count)
		}
		switch {
		case ints > 0 && ints < len(its):
			return nil, Errorf(Invalid, "a zeta_hll sketch counts one type of id, as a BigQuery column holds one: this batch has %d integers and %d strings", ints, len(its)-ints)
		case ints > 0:
			b.typ = zeta.TypeLong
		case len(its) > 0:
			b.typ = zeta.TypeString
		}
		return b, nil
	},
	// The union is ZetaSketch's: the first input merged with each other
	// in turn, at the smallest precisions.
	Union: func(ss []Sketch) (Sketch, error) {
		zs := make([]*zeta.Sketch, len(ss))
		for i, s := range ss {
			zs[i] = s.(zetaSketch).z
		}
		u, err := zeta.Union(zs...)
		if err != nil {
			return nil, Wrap(Conflict, err, trimKindPrefix(err.Error()))
		}
		return zetaSketch{z: u}, nil
	},
	Representation: func(b []byte) (string, error) {
		z, err := zeta.Decode(b)
		if err != nil {
			return "", err
		}
		return z.Representation(), nil
	},
}

// ZetaParams are a ZetaSketch HLL++ sketch's precisions.
type ZetaParams struct{ zeta.Params }

// Kind implements Params.
func (ZetaParams) Kind() *Kind { return &zetaKind }

// Validate implements Params.
func (p ZetaParams) Validate() error {
	if err := p.Params.Validate(); err != nil {
		return Wrap(Invalid, err, "invalid zeta_hll parameters: "+trimKindPrefix(err.Error()))
	}
	return nil
}

// New implements Params.
func (p ZetaParams) New() (Sketch, error) {
	z, err := zeta.New(p.Params)
	if err != nil {
		return nil, Wrap(Invalid, err, "invalid zeta_hll parameters: "+trimKindPrefix(err.Error()))
	}
	return zetaSketch{z: z}, nil
}

// String implements Params.
func (p ZetaParams) String() string { return "zeta_hll " + p.Params.String() }

// ZetaOf returns the engine sketch behind s, if s is a zeta_hll sketch.
func ZetaOf(s Sketch) (*zeta.Sketch, bool) {
	z, ok := s.(zetaSketch)
	return z.z, ok
}

// zetaBatch is a batch of ids hashed as BigQuery hashes them: their type
// (none for an empty batch) and how many values they count (an item's
// count adds as many values, as many rows would in BigQuery).
type zetaBatch struct {
	hashes []uint64
	typ    zeta.ValueType
	values int64
}

func (b zetaBatch) Len() int { return len(b.hashes) }

// zetaSketch is a ZetaSketch HLL++ sketch; orig keeps the bytes it was
// decoded from (see original).
type zetaSketch struct {
	z    *zeta.Sketch
	orig *original
}

func (s zetaSketch) Kind() *Kind    { return &zetaKind }
func (s zetaSketch) Params() Params { return ZetaParams{s.z.Params()} }
func (s zetaSketch) AppendBinary(b []byte) []byte {
	if ob := s.orig.bytes(); ob != nil {
		return append(b, ob...)
	}
	return s.z.AppendBinary(b)
}
func (s zetaSketch) Clone() Sketch { return zetaSketch{z: s.z.Clone(), orig: s.orig.clone()} }

// Check refuses ids of the other type than the sketch counts (Conflict).
func (s zetaSketch) Check(b Batch) error {
	zb := b.(zetaBatch)
	if have := s.z.ValueType(); zb.Len() > 0 && have != zeta.TypeUnknown && have != zb.typ {
		return Errorf(Conflict, "this zeta_hll sketch counts %s ids (BigQuery %s); the batch has %s ids", have, bqType(have), zb.typ)
	}
	return nil
}

func bqType(t zeta.ValueType) string {
	if t == zeta.TypeLong {
		return "INT64"
	}
	return "STRING"
}

func (s zetaSketch) Merge(o Sketch) error {
	if err := s.z.Merge(o.(zetaSketch).z); err != nil {
		return Wrap(Conflict, err, trimKindPrefix(err.Error()))
	}
	s.orig.drop()
	return nil
}

// Apply adds the hashes and logs them: uvarint n, the value type byte,
// uvarint values, then n big-endian hashes. Every add changes the
// sketch's count of values, so a batch of ids always logs a delta.
func (s zetaSketch) Apply(b Batch, delta []byte) ([]byte, error) {
	zb := b.(zetaBatch)
	if err := s.Check(b); err != nil {
		return delta, err
	}
	at := len(delta)
	if zb.Len() > 0 {
		delta = binary.AppendUvarint(delta, uint64(len(zb.hashes)))
		delta = append(delta, byte(zb.typ))
		delta = binary.AppendUvarint(delta, uint64(zb.values))
		for _, h := range zb.hashes {
			delta = binary.BigEndian.AppendUint64(delta, h)
		}
		s.add(zb)
	}
	return s.orig.written(zb.Len(), delta, at), nil
}

func (s zetaSketch) add(b zetaBatch) {
	_ = s.z.SetType(b.typ)
	s.z.AddHashes(b.hashes)
	s.z.AddCount(b.values)
}

// Absorb adds b without recording it.
func (s zetaSketch) Absorb(b Batch) error {
	if err := s.Check(b); err != nil {
		return err
	}
	if b.Len() > 0 {
		s.add(b.(zetaBatch))
		s.orig.drop()
	}
	return nil
}

func (s zetaSketch) ApplyDelta(delta []byte) error {
	b, err := readZetaDelta(delta)
	if err != nil {
		return err
	}
	if err := s.Check(b); err != nil {
		return fmt.Errorf("zeta delta: %w", err)
	}
	if b.Len() > 0 {
		s.add(b)
	}
	s.orig.drop()
	return nil
}

// readZetaDelta reads what Apply logs (or a lone uvarint 0), refusing
// anything else; it allocates no more than the delta's length implies.
func readZetaDelta(delta []byte) (zetaBatch, error) {
	n, k := binary.Uvarint(delta)
	if k <= 0 || n > uint64(len(delta))/8 {
		return zetaBatch{}, fmt.Errorf("zeta delta of %d bytes is malformed", len(delta))
	}
	if n == 0 {
		if len(delta) != k {
			return zetaBatch{}, fmt.Errorf("zeta delta of %d bytes has trailing bytes", len(delta))
		}
		return zetaBatch{}, nil
	}
	rest := delta[k:]
	if len(rest) < 1 {
		return zetaBatch{}, fmt.Errorf("zeta delta of %d bytes ends early", len(delta))
	}
	typ := zeta.ValueType(rest[0])
	if typ != zeta.TypeLong && typ != zeta.TypeString {
		return zetaBatch{}, fmt.Errorf("zeta delta of %d bytes has value type %d", len(delta), rest[0])
	}
	v, m := binary.Uvarint(rest[1:])
	if m <= 0 || v > math.MaxInt64 {
		return zetaBatch{}, fmt.Errorf("zeta delta of %d bytes has no count", len(delta))
	}
	rest = rest[1+m:]
	if uint64(len(rest)) != 8*n {
		return zetaBatch{}, fmt.Errorf("zeta delta of %d bytes holds %d bytes of hashes for %d", len(delta), len(rest), n)
	}
	b := zetaBatch{hashes: make([]uint64, n), typ: typ, values: int64(v)}
	for i := range b.hashes {
		b.hashes[i] = binary.BigEndian.Uint64(rest[8*i:])
	}
	return b, nil
}

// Describe gives ZetaSketch's estimate (rounded, as BigQuery's
// HLL_COUNT.EXTRACT returns it), its relative standard error (linear
// counting's while the estimate is one, else 1.04/√2^p), bounds at two
// standard errors, the value type and the count of values added.
func (s zetaSketch) Describe(in *Info) {
	in.Representation = s.Representation()
	e, se := s.z.Describe()
	est := float64(e)
	in.Cardinality = est
	in.StdError = se
	in.Lower = math.Max(0, est*(1-2*in.StdError))
	in.Upper = est * (1 + 2*in.StdError)
	in.Total = s.z.NumValues()
	in.ValueType = s.z.ValueType().String()
	in.SizeBytes = s.SizeBytes()
}

func (s zetaSketch) SizeBytes() int {
	if ob := s.orig.bytes(); ob != nil {
		return len(ob)
	}
	return s.z.SizeBytes()
}

func (s zetaSketch) MemoryBytes() int64 {
	p := s.z.Params()
	mem := 4 * int64(s.z.SparseLen())
	if s.z.Normal() {
		mem = int64(1) << p.Precision
	}
	return mem + int64(len(s.orig.bytes())) + 128
}

// Representation is SPARSE or NORMAL.
func (s zetaSketch) Representation() string { return s.z.Representation() }
func (s zetaSketch) Estimate() float64      { return float64(s.z.Estimate()) }
