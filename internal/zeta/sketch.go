package zeta

import (
	"fmt"
	"slices"
)

// Sketch is a ZetaSketch HLL++ aggregator state: sparse (a sorted list
// of sparse values, with a buffer of values not merged into it yet) or
// normal (2^p one-byte registers). It is not safe for concurrent use.
type Sketch struct {
	p, sp     int
	valueType ValueType
	numValues int64
	normal    bool
	// data holds the normal registers; nil in a normal sketch that has
	// none yet (sparse precision 0, nothing added), which writes no data
	// field, as ZetaSketch does.
	data []byte
	// sparse is the merged sparse list: sorted, one value per sparse
	// index; buf holds values added since (unsorted, duplicates allowed).
	sparse []uint32
	buf    []uint32
}

// New returns an empty sketch (of no value type yet).
func New(p Params) (*Sketch, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Sketch{p: p.Precision, sp: p.SparsePrecision, normal: p.SparsePrecision == 0}, nil
}

// Params returns the sketch's precisions.
func (s *Sketch) Params() Params { return Params{s.p, s.sp} }

// ValueType is the type of values the sketch counts.
func (s *Sketch) ValueType() ValueType { return s.valueType }

// NumValues is the number of values added, duplicates included (the
// proto's num_values; a union adds its inputs').
func (s *Sketch) NumValues() int64 { return s.numValues }

// Normal reports whether the sketch is in the normal representation.
func (s *Sketch) Normal() bool { return s.normal }

// Representation is "SPARSE" or "NORMAL".
func (s *Sketch) Representation() string {
	if s.normal {
		return "NORMAL"
	}
	return "SPARSE"
}

// Clone returns a deep copy.
func (s *Sketch) Clone() *Sketch {
	c := *s
	c.data = slices.Clone(s.data)
	c.sparse = slices.Clone(s.sparse)
	c.buf = slices.Clone(s.buf)
	return &c
}

// SetType narrows an unknown value type to t, as ZetaSketch's first add
// of a value does; it fails (ErrValueType), changing nothing, when the
// sketch counts another type.
func (s *Sketch) SetType(t ValueType) error {
	if s.valueType == TypeUnknown {
		s.valueType = t
		return nil
	}
	if s.valueType != t {
		return fmt.Errorf("zeta: a sketch of %s values cannot take %s values: %w", s.valueType, t, ErrValueType)
	}
	return nil
}

// AddHash adds a hashed value (counted in NumValues); the caller has
// checked the value type (SetType).
func (s *Sketch) AddHash(h uint64) {
	s.numValues++
	s.addHash(h)
}

// AddInt adds an INT64 value, as BigQuery and ZetaSketch's add(long)
// do.
func (s *Sketch) AddInt(v int64) error {
	if err := s.SetType(TypeLong); err != nil {
		return err
	}
	s.AddHash(HashInt(v))
	return nil
}

// AddString adds a STRING value (its UTF-8 bytes).
func (s *Sketch) AddString(v string) error {
	if err := s.SetType(TypeString); err != nil {
		return err
	}
	s.AddHash(HashString(v))
	return nil
}

// AddCount counts n more values without adding any (the duplicates of a
// batch whose hashes were added once).
func (s *Sketch) AddCount(n int64) { s.numValues += n }

// AddHashes adds hashes to the registers without counting them.
func (s *Sketch) AddHashes(hs []uint64) {
	for _, h := range hs {
		s.addHash(h)
	}
	s.Compact()
}

func (s *Sketch) addHash(h uint64) {
	if s.normal {
		s.ensureData()
		i, r := h>>(64-s.p), rhoW(h, 64-s.p)
		if s.data[i] < r {
			s.data[i] = r
		}
		return
	}
	s.buf = append(s.buf, s.enc().encodeHash(h))
	if len(s.buf) > s.maxBuffer() {
		s.flush()
	}
}

func (s *Sketch) enc() enc { return enc{s.p, s.sp} }

// maxBuffer and maxSparseBytes are ZetaSketch's limits: the buffer is
// merged into the list past a quarter of 2^p values, and the sketch turns
// normal once the list's encoding exceeds three quarters of 2^p bytes (as
// ZetaSketch 0.1.0 decides; its later sources turn normal at three
// quarters already).
func (s *Sketch) maxBuffer() int      { return 1 << s.p / 4 }
func (s *Sketch) maxSparseBytes() int { return 1 << s.p * 3 / 4 }

func (s *Sketch) ensureData() {
	if s.data == nil {
		s.data = make([]byte, 1<<s.p)
	}
}

// flush merges the buffer into the sparse list and turns the sketch
// normal when the list has grown too large.
func (s *Sketch) flush() {
	if len(s.buf) > 0 {
		s.sparse = dedupe(s.enc(), append(s.sparse, s.buf...))
		s.buf = s.buf[:0]
	}
	if sparseSize(s.sparse) > s.maxSparseBytes() {
		s.normalize()
	}
}

// Compact merges the buffer, as a write does before the sketch is
// encoded (ZetaSketch's compact()); encoding, estimates and merges call
// it themselves.
func (s *Sketch) Compact() {
	if !s.normal {
		s.flush()
	}
}

// dedupe sorts vs and keeps one value per sparse index, the largest.
func dedupe(e enc, vs []uint32) []uint32 {
	slices.Sort(vs)
	out := vs[:0]
	for i, v := range vs {
		if i+1 < len(vs) && e.key(vs[i+1]) == e.key(v) {
			continue
		}
		out = append(out, v)
	}
	return out
}

// sparseSize is the length of the list's difference encoding.
func sparseSize(vs []uint32) int {
	n, last := 0, uint32(0)
	for _, v := range vs {
		n += uvarintLen(uint64(v - last))
		last = v
	}
	return n
}

// normalize turns a sparse sketch normal at its precision.
func (s *Sketch) normalize() {
	e := s.enc()
	s.data = make([]byte, 1<<s.p)
	for _, vs := range [][]uint32{s.sparse, s.buf} {
		for _, v := range vs {
			i, r := e.normalIndex(v), e.normalRho(v)
			if s.data[i] < r {
				s.data[i] = r
			}
		}
	}
	s.normal, s.sparse, s.buf = true, nil, nil
}

// Merge unions o into s keeping s's precisions, as ZetaSketch merges:
// o's values are downgraded to s's precisions, s's value type is kept
// and the value counts add up. It fails, changing nothing, when o has a
// lower precision or sparse precision than s (ErrFewerRegisters: the
// union would lower s's), or counts another type of value
// (ErrValueType).
func (s *Sketch) Merge(o *Sketch) error {
	if o.p < s.p || (s.sp != 0 && o.sp < s.sp) {
		return fmt.Errorf("zeta: a sketch of precision %d (sparse %d) cannot be merged into one of precision %d (sparse %d) without lowering it: %w", o.p, o.sp, s.p, s.sp, ErrFewerRegisters)
	}
	if !compatible(allowed(s.valueType), allowed(o.valueType)) {
		return fmt.Errorf("zeta: a sketch of %s values cannot be merged into one of %s values: %w", o.valueType, s.valueType, ErrValueType)
	}
	s.merge(o)
	return nil
}

// Union returns the union of sketches as ZetaSketch computes it: the
// first merged with each of the others in turn, each merge lowering the
// precisions to the smaller ones. Sketches of different value types
// (ErrValueType) or of precisions ZetaSketch cannot merge (one with the
// higher normal precision, the other with the higher sparse one:
// ErrPrecision) have no union.
func Union(ss ...*Sketch) (*Sketch, error) {
	if len(ss) == 0 {
		return nil, fmt.Errorf("zeta: a union needs a sketch: %w", ErrParams)
	}
	u := ss[0].Clone()
	ok := allowed(u.valueType)
	for _, o := range ss[1:] {
		both := ok & allowed(o.valueType)
		if both == 0 {
			return nil, fmt.Errorf("zeta: a sketch of %s values cannot be merged with one of %s values: %w", o.valueType, ss[0].valueType, ErrValueType)
		}
		ok = both
		if err := u.checkPrecisions(o); err != nil {
			return nil, err
		}
		u.merge(o)
	}
	u.Compact()
	return u, nil
}

// allowed is the set of value types (as bits: 1 long, 2 string) a
// sketch's type admits; an unknown type admits both.
func allowed(t ValueType) int {
	switch t {
	case TypeLong:
		return 1
	case TypeString:
		return 2
	}
	return 3
}

func compatible(a, b int) bool { return a&b != 0 }

// checkPrecisions refuses what ZetaSketch's sparse-to-sparse merge
// refuses. A normal sketch on either side merges any precisions;
// checkPrecisions follows the representations merge will see.
func (s *Sketch) checkPrecisions(o *Sketch) error {
	if s.normal || o.normal {
		return nil
	}
	if (s.p <= o.p && s.sp <= o.sp) || (s.p >= o.p && s.sp >= o.sp) {
		return nil
	}
	return fmt.Errorf("zeta: precisions (p=%d, sp=%d) and (p=%d, sp=%d) cannot be merged: %w", s.p, s.sp, o.p, o.sp, ErrPrecision)
}

// merge unions o into s with ZetaSketch's precision rules (the caller
// has checked types and precisions).
func (s *Sketch) merge(o *Sketch) {
	s.numValues += o.numValues
	o = o.compacted()
	s.Compact()
	if !s.normal && o.normal {
		s.normalize()
	}
	if s.normal {
		s.downgradeNormal(o.p, o.sp)
		if o.normal {
			s.mergeData(o)
		} else {
			s.ensureData()
			oe := o.enc()
			for _, v := range o.sparse {
				i, r := oe.normalIndex(v), oe.normalRho(v)
				if s.p < o.p {
					i, r = i>>(o.p-s.p), downgradeRho(i, r, o.p, s.p)
				}
				if s.data[i] < r {
					s.data[i] = r
				}
			}
		}
		return
	}
	// Both sparse: downgrade to the smaller encoding, then merge lists.
	se, oe := s.enc(), o.enc()
	t := enc{min(s.p, o.p), min(s.sp, o.sp)}
	vals := make([]uint32, 0, len(s.sparse)+len(o.sparse))
	for _, v := range s.sparse {
		if t != se {
			v = se.downgrade(v, t)
		}
		vals = append(vals, v)
	}
	for _, v := range o.sparse {
		if t != oe {
			v = oe.downgrade(v, t)
		}
		vals = append(vals, v)
	}
	s.p, s.sp = t.p, t.sp
	s.sparse, s.buf = dedupe(t, vals), nil
	s.flush()
}

// compacted returns o with its buffer merged, without changing o.
func (o *Sketch) compacted() *Sketch {
	if o.normal || len(o.buf) == 0 {
		return o
	}
	c := o.Clone()
	c.flush()
	return c
}

// downgradeNormal lowers a normal sketch's precisions to at most p and
// sp, as ZetaSketch's maybeDowngrade does.
func (s *Sketch) downgradeNormal(p, sp int) {
	if s.p <= p && s.sp <= sp {
		return
	}
	if s.p > p {
		old, oldP := s.data, s.p
		s.data, s.p = make([]byte, 1<<p), p
		if old != nil {
			downgradeData(s.data, p, old, oldP)
		}
	}
	s.sp = min(s.sp, sp)
}

// mergeData takes the register maxima of a normal o, downgraded to s's
// precision.
func (s *Sketch) mergeData(o *Sketch) {
	if o.data == nil {
		return
	}
	s.ensureData()
	if s.p == o.p {
		for i, r := range o.data {
			if s.data[i] < r {
				s.data[i] = r
			}
		}
		return
	}
	downgradeData(s.data, s.p, o.data, o.p)
}

// downgradeData merges registers of precision srcP into dst of precision
// p < srcP.
func downgradeData(dst []byte, p int, src []byte, srcP int) {
	for i, r := range src {
		if r == 0 {
			continue
		}
		j, nr := i>>(srcP-p), downgradeRho(uint32(i), r, srcP, p)
		if dst[j] < nr {
			dst[j] = nr
		}
	}
}

// SparseLen is the number of values in the sparse list (after Compact).
func (s *Sketch) SparseLen() int { return len(s.sparse) }
