package sketch

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/sketchd/sketchd/internal/kll"
)

// TypeKLL sketches are DataSketches' KLL quantile sketches of doubles or
// longs (internal/kll), in its compact format: quantiles, ranks, CDFs and
// PMFs of the values added, with the sketch's rank error. The two item
// types are two kinds of one API type (their bytes and their values
// differ): a sketch of doubles never unites with one of longs.
const TypeKLL Type = "kll"

var (
	kllDoublesKind = kllKind[float64](17)
	kllLongsKind   = kllKind[int64](18)
)

func kllKind[T kll.Item](tag byte) Kind {
	typ := kll.ItemTypeOf[T]()
	return Kind{
		Type:    TypeKLL,
		Format:  "DataSketches' compact KLL of " + typ.String() + "s",
		Tag:     tag,
		Default: func() Params { return KLLParams{K: kll.DefaultK, Items: typ} },
		Decode: func(b []byte) (Sketch, error) {
			s, err := kll.Decode[T](b)
			if err != nil {
				return nil, err
			}
			return kllSketch[T]{s}, nil
		},
		Sniff: func(b []byte) bool { return kll.Sniff(b) && kll.ItemType(b[7]) == typ },
		Prepare: func(in Input) (Batch, error) {
			vi, ok := in.(ValueInput)
			if !ok {
				return nil, Errorf(Invalid, "kll sketches take values, not ids")
			}
			var vs []T
			var err error
			switch any(vs).(type) {
			case []float64:
				var fs []float64
				fs, err = vi.Floats()
				vs = any(fs).([]T)
			default:
				var ls []int64
				ls, err = vi.Longs()
				vs = any(ls).([]T)
			}
			if err != nil {
				return nil, err
			}
			return kllBatch[T](vs), nil
		},
		// The union keeps the smallest k of its inputs, as an HLL union
		// folds to the smallest log2m. When the first input has that k
		// the others merge into a copy of it, as the libraries' merge
		// into a sketch does: the union of [a, b, c] is then the union of
		// [union(a, b), c], byte for byte, so a Unioner's batches give
		// what one union of all gives.
		Union: func(ss []Sketch) (Sketch, error) {
			k := kll.MaxK
			for _, s := range ss {
				k = min(k, s.(kllSketch[T]).s.K())
			}
			rest := ss
			var u *kll.Sketch[T]
			if len(ss) > 0 && ss[0].(kllSketch[T]).s.K() == k {
				u, rest = ss[0].(kllSketch[T]).s.Clone(), ss[1:]
			} else {
				var err error
				if u, err = kll.New[T](k); err != nil {
					return nil, Wrap(Invalid, err, trimKindPrefix(err.Error()))
				}
			}
			for _, s := range rest {
				u.Merge(s.(kllSketch[T]).s)
			}
			return kllSketch[T]{u}, nil
		},
	}
}

// ValueInput is an Input whose body can be read as numbers, for kinds
// that add values rather than ids (kll): finite doubles, or integers
// within int64. Errors are *Error (Invalid or TooLarge).
type ValueInput interface {
	Floats() ([]float64, error)
	Longs() ([]int64, error)
}

// KLLParams are a KLL sketch's parameters: k and what it keeps.
type KLLParams struct {
	K     int
	Items kll.ItemType
}

// Kind implements Params.
func (p KLLParams) Kind() *Kind {
	if p.Items == kll.Longs {
		return &kllLongsKind
	}
	return &kllDoublesKind
}

// Validate implements Params.
func (p KLLParams) Validate() error {
	if err := kll.CheckK(p.K); err != nil {
		return Wrap(Invalid, err, "invalid kll parameters: "+trimKindPrefix(err.Error()))
	}
	if p.Items != kll.Doubles && p.Items != kll.Longs {
		return Errorf(Invalid, "invalid kll parameters: items must be double or long")
	}
	return nil
}

// New implements Params.
func (p KLLParams) New() (Sketch, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Items == kll.Longs {
		s, _ := kll.New[int64](p.K)
		return kllSketch[int64]{s}, nil
	}
	s, _ := kll.New[float64](p.K)
	return kllSketch[float64]{s}, nil
}

// String implements Params.
func (p KLLParams) String() string { return fmt.Sprintf("kll k=%d items=%s", p.K, p.Items) }

// KLL is what the API asks of a KLL sketch of either item type. Values
// are Values: a long stays an int64 through every question and answer.
type KLL interface {
	K() int
	N() uint64
	Retained() int
	IsEmpty() bool
	// Items is what the sketch keeps: the type its questions' values
	// are parsed as.
	Items() kll.ItemType
	Min() Value
	Max() Value
	// RankError is the normalized rank error (pmf: double-sided).
	RankError(pmf bool) float64
	// View sorts the items for the queries below; a request builds it
	// once.
	View() KLLView
}

// KLLView answers a KLL sketch's questions (kll.View). A value or split
// point of the other item type than the sketch's is an Invalid error;
// split points that do not increase strictly wrap kll.ErrParams.
type KLLView interface {
	Quantile(rank float64, inclusive bool) (Value, error)
	Rank(x Value, inclusive bool) (float64, error)
	CDF(splits []Value, inclusive bool) ([]float64, error)
	PMF(splits []Value, inclusive bool) ([]float64, error)
}

// KLLOf returns the KLL sketch behind s, if s is one.
func KLLOf(s Sketch) (KLL, bool) {
	switch k := s.(type) {
	case kllSketch[float64]:
		return k, true
	case kllSketch[int64]:
		return k, true
	}
	return nil, false
}

type kllSketch[T kll.Item] struct{ s *kll.Sketch[T] }

// kllBatch is a KLL batch: the values.
type kllBatch[T kll.Item] []T

func (b kllBatch[T]) Len() int { return len(b) }

func (s kllSketch[T]) Kind() *Kind {
	return KLLParams{Items: kll.ItemTypeOf[T]()}.Kind()
}
func (s kllSketch[T]) Params() Params {
	return KLLParams{K: s.s.K(), Items: kll.ItemTypeOf[T]()}
}
func (s kllSketch[T]) AppendBinary(b []byte) []byte { return s.s.AppendBinary(b) }
func (s kllSketch[T]) Clone() Sketch                { return kllSketch[T]{s.s.Clone()} }
func (s kllSketch[T]) Check(Batch) error            { return nil }
func (s kllSketch[T]) SizeBytes() int               { return s.s.SizeBytes() }
func (s kllSketch[T]) MemoryBytes() int64           { return int64(s.s.MemoryBytes()) + 128 }
func (s kllSketch[T]) Representation() string       { return "" }
func (s kllSketch[T]) Estimate() float64            { return float64(s.s.N()) }

func (s kllSketch[T]) Merge(o Sketch) error {
	ok, isT := o.(kllSketch[T])
	if !isT {
		return Errorf(Conflict, "cannot merge a %s sketch into a %s sketch", o.Params(), s.Params())
	}
	s.s.Merge(ok.s)
	return nil
}

// Apply adds the values and logs them: uvarint n, then n big-endian
// 8-byte values (IEEE 754 bits or two's complement). Compaction coins
// depend only on the sketch's state, so replay gives the same sketch.
func (s kllSketch[T]) Apply(b Batch, delta []byte) ([]byte, error) {
	vs := b.(kllBatch[T])
	if len(vs) == 0 {
		return delta, nil
	}
	delta = binary.AppendUvarint(delta, uint64(len(vs)))
	for _, v := range vs {
		s.s.Update(v)
		delta = binary.BigEndian.AppendUint64(delta, kllBits(v))
	}
	return delta, nil
}

// Absorb adds the values without logging them.
func (s kllSketch[T]) Absorb(b Batch) error {
	for _, v := range b.(kllBatch[T]) {
		s.s.Update(v)
	}
	return nil
}

func kllBits[T kll.Item](v T) uint64 {
	if f, ok := any(v).(float64); ok {
		return math.Float64bits(f)
	}
	return uint64(any(v).(int64))
}

func (s kllSketch[T]) ApplyDelta(delta []byte) error {
	n, k := binary.Uvarint(delta)
	if k <= 0 || uint64(len(delta)-k)%8 != 0 || n != uint64(len(delta)-k)/8 {
		return fmt.Errorf("kll delta of %d bytes is malformed", len(delta))
	}
	vs := make([]T, n)
	for i := range vs {
		u := binary.BigEndian.Uint64(delta[k+8*i:])
		var v T
		switch p := any(&v).(type) {
		case *float64:
			*p = math.Float64frombits(u)
			if math.IsNaN(*p) || math.IsInf(*p, 0) {
				return fmt.Errorf("kll delta: value %d is not finite", i)
			}
		case *int64:
			*p = int64(u)
		}
		vs[i] = v
	}
	for _, v := range vs {
		s.s.Update(v)
	}
	return nil
}

func (s kllSketch[T]) Describe(in *Info) {
	in.Total = int64(min(s.s.N(), math.MaxInt64))
	in.Retained = s.s.Retained()
	in.RankError = s.s.NormalizedRankError(false)
	in.RankErrorPMF = s.s.NormalizedRankError(true)
	if !s.s.IsEmpty() {
		mn, mx := ValueOf(s.s.Min()), ValueOf(s.s.Max())
		in.Min, in.Max = &mn, &mx
	}
	in.SizeBytes = s.SizeBytes()
}

// KLL implementation.

func (s kllSketch[T]) K() int                     { return s.s.K() }
func (s kllSketch[T]) N() uint64                  { return s.s.N() }
func (s kllSketch[T]) Retained() int              { return s.s.Retained() }
func (s kllSketch[T]) IsEmpty() bool              { return s.s.IsEmpty() }
func (s kllSketch[T]) Items() kll.ItemType        { return kll.ItemTypeOf[T]() }
func (s kllSketch[T]) Min() Value                 { return ValueOf(s.s.Min()) }
func (s kllSketch[T]) Max() Value                 { return ValueOf(s.s.Max()) }
func (s kllSketch[T]) RankError(pmf bool) float64 { return s.s.NormalizedRankError(pmf) }
func (s kllSketch[T]) View() KLLView              { return kllView[T]{s.s.View()} }

type kllView[T kll.Item] struct{ v *kll.View[T] }

func (v kllView[T]) Quantile(rank float64, inclusive bool) (Value, error) {
	x, err := v.v.Quantile(rank, inclusive)
	return ValueOf(x), err
}

func (v kllView[T]) Rank(x Value, inclusive bool) (float64, error) {
	t, err := item[T](x)
	if err != nil {
		return 0, err
	}
	return v.v.Rank(t, inclusive)
}

func (v kllView[T]) splits(vs []Value) ([]T, error) {
	out := make([]T, len(vs))
	for i, x := range vs {
		t, err := item[T](x)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

func (v kllView[T]) CDF(splits []Value, inclusive bool) ([]float64, error) {
	sp, err := v.splits(splits)
	if err != nil {
		return nil, err
	}
	return v.v.CDF(sp, inclusive)
}

func (v kllView[T]) PMF(splits []Value, inclusive bool) ([]float64, error) {
	sp, err := v.splits(splits)
	if err != nil {
		return nil, err
	}
	return v.v.PMF(sp, inclusive)
}

// Floats implements ValueInput: ids given one by one (an event's) are
// values when they are integers.
func (in idsInput) Floats() ([]float64, error) {
	out := make([]float64, len(in))
	for i, id := range in {
		if id.IsText() {
			return nil, Errorf(Invalid, "a kll sketch takes numbers; the id %q is a text", id.Text())
		}
		out[i] = float64(id.Int())
	}
	return out, nil
}

// Longs implements ValueInput.
func (in idsInput) Longs() ([]int64, error) {
	out := make([]int64, len(in))
	for i, id := range in {
		if id.IsText() {
			return nil, Errorf(Invalid, "a kll sketch takes numbers; the id %q is a text", id.Text())
		}
		out[i] = id.Int()
	}
	return out, nil
}

// QuantilesOf returns the values of a KLL sketch at the fractions qs
// (inclusive), or nil for a sketch of another kind or an empty one: what
// an opted-in sketch exports on /metrics, whose gauges are float64s (a
// long beyond 2^53 is rounded there, and only there).
func QuantilesOf(sk Sketch, qs []float64) []float64 {
	k, ok := KLLOf(sk)
	if !ok || k.IsEmpty() {
		return nil
	}
	v := k.View()
	out := make([]float64, len(qs))
	for i, q := range qs {
		x, err := v.Quantile(q, true)
		if err != nil {
			return nil
		}
		out[i] = x.Float64()
	}
	return out
}
