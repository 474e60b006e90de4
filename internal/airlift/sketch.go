package airlift

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/sketchd/sketchd/internal/murmur"
)

// prefixBits is the bucket width of sparse entries: the top 26 bits of
// the hash, whatever the index bits (airlift's EXTENDED_PREFIX_BITS).
const prefixBits = 26

// Sketch is an airlift HyperLogLog: sparse (entries of the top 26 bits of
// a hash and the leading zeros after them, sorted by bucket) or dense
// (2^p registers). It is not safe for concurrent use.
type Sketch struct {
	p     int
	dense bool
	// entries are the sparse entries, bucket<<6 | zeros, ascending by
	// bucket, one per bucket; capacity is the length of the Java array
	// that would hold them, which decides when the sketch turns dense.
	entries  []uint32
	capacity int
	// regs are the dense registers (the values; Bytes packs them as
	// airlift does).
	regs []uint8
}

// New returns an empty sparse sketch, as HyperLogLog.newInstance does.
func New(p Params) (*Sketch, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Sketch{p: p.IndexBits, capacity: 1}, nil
}

// Params returns the sketch's index bits.
func (s *Sketch) Params() Params { return Params{s.p} }

// Dense reports whether the sketch is dense.
func (s *Sketch) Dense() bool { return s.dense }

// Representation is "SPARSE" or "DENSE".
func (s *Sketch) Representation() string {
	if s.dense {
		return "DENSE"
	}
	return "SPARSE"
}

// Entries is the number of sparse entries (0 when dense).
func (s *Sketch) Entries() int { return len(s.entries) }

// Clone returns a deep copy.
func (s *Sketch) Clone() *Sketch {
	c := *s
	c.entries = slices.Clone(s.entries)
	c.regs = slices.Clone(s.regs)
	return &c
}

// HashInt is the hash of a BIGINT as approx_set takes it: airlift's
// Murmur3Hash128.hash64(long), the first 64 bits of MurmurHash3_x64_128
// (seed 0) of its eight little-endian bytes.
func HashInt(v int64) uint64 {
	h, _ := murmur.Int64(v, 0)
	return h
}

// HashString is the hash of a VARCHAR: Murmur3Hash128.hash64 of its UTF-8
// bytes.
func HashString(v string) uint64 {
	h, _ := murmur.String(v, 0)
	return h
}

// AddInt adds a BIGINT (HyperLogLog.add(long)).
func (s *Sketch) AddInt(v int64) { s.AddHash(HashInt(v)) }

// AddString adds a VARCHAR (HyperLogLog.add(Slice)).
func (s *Sketch) AddString(v string) { s.AddHash(HashString(v)) }

// AddHash adds a hash as HyperLogLog.addHash does, the sparse entries'
// array growing as airlift's does; a sparse sketch turns dense once that
// array would take more memory than the dense registers (see doc.go).
func (s *Sketch) AddHash(h uint64) {
	if s.dense {
		s.insert(uint32(h>>(64-s.p)), uint8(bits.LeadingZeros64(h<<s.p|1<<(s.p-1))+1))
		return
	}
	bucket := uint32(h >> (64 - prefixBits))
	zeros := uint32(bits.LeadingZeros64(h<<prefixBits | 1<<(prefixBits-1)))
	i, found := slices.BinarySearchFunc(s.entries, bucket, func(e, b uint32) int { return cmpU32(e>>6, b) })
	switch {
	case found:
		if s.entries[i]&63 < zeros {
			s.entries[i] = bucket<<6 | zeros
		}
	default:
		if len(s.entries)+1 > s.capacity {
			s.capacity += 10
		}
		s.entries = slices.Insert(s.entries, i, bucket<<6|zeros)
	}
	s.denseIfNecessary()
}

// AddHashes adds a batch of hashes to a sketch as stored: the entries'
// array starts as airlift's deserialization leaves it (as long as the
// entries; a new sketch's holds one).
func (s *Sketch) AddHashes(hs []uint64) {
	s.settle()
	for _, h := range hs {
		s.AddHash(h)
	}
}

// settle sets the capacity of a sparse sketch's array as decoding it
// would.
func (s *Sketch) settle() {
	if !s.dense {
		s.capacity = max(len(s.entries), 1)
	}
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// denseIfNecessary is airlift's makeDenseIfNecessary for the 64-bit JVM
// with compressed pointers (the default below a 32 GiB heap): a sparse
// sketch (24 bytes and an int array of 16 + 4·capacity) turns dense when
// it outgrows a dense one (40 bytes and a byte array of 16 + 2^p/2).
func (s *Sketch) denseIfNecessary() {
	if 4*s.capacity > 16+1<<(s.p-1) {
		s.toDense()
	}
}

// toDense turns a sparse sketch dense (SparseHll.toDense).
func (s *Sketch) toDense() {
	if s.dense {
		return
	}
	s.regs = make([]uint8, 1<<s.p)
	s.eachBucket(s.p, s.entries, s.insert)
	s.dense, s.entries, s.capacity = true, nil, 0
}

// eachBucket visits the dense bucket and value of each sparse entry at p
// index bits (SparseHll.eachBucket).
func (s *Sketch) eachBucket(p int, entries []uint32, visit func(bucket uint32, value uint8)) {
	for _, e := range entries {
		bucket := e >> (32 - p)
		zeros := bits.LeadingZeros32(e << p)
		if n := prefixBits - p; zeros >= n {
			zeros = n + int(e&63)
		}
		visit(bucket, uint8(zeros+1))
	}
}

func (s *Sketch) insert(bucket uint32, value uint8) {
	if s.regs[bucket] < value {
		s.regs[bucket] = value
	}
}

// Merge unions o into s as HyperLogLog.mergeWith does: two sparse
// sketches merge their entries (whatever their index bits; s keeps its
// own) and may turn dense; otherwise both are taken dense and must have
// the same index bits (ErrPrecision, s unchanged).
func (s *Sketch) Merge(o *Sketch) error {
	switch {
	case !s.dense && !o.dense:
		s.entries = mergeEntries(s.entries, o.entries)
		s.capacity = len(s.entries)
		s.denseIfNecessary()
		return nil
	case s.p != o.p:
		return fmt.Errorf("airlift: cannot merge sketches of %d and %d buckets: %w", 1<<s.p, 1<<o.p, ErrPrecision)
	case !o.dense:
		s.eachBucket(s.p, o.entries, s.insert)
		return nil
	}
	s.toDense()
	for i, v := range o.regs {
		s.insert(uint32(i), v)
	}
	return nil
}

// Union returns the first sketch merged with each of the others in turn.
func Union(ss ...*Sketch) (*Sketch, error) {
	if len(ss) == 0 {
		return nil, fmt.Errorf("airlift: a union needs a sketch: %w", ErrParams)
	}
	u := ss[0].Clone()
	for _, o := range ss[1:] {
		if err := u.Merge(o); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// mergeEntries merges two sorted entry lists, keeping the larger count of
// zeros of a bucket in both.
func mergeEntries(a, b []uint32) []uint32 {
	out := make([]uint32, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ba, bb := a[i]>>6, b[j]>>6
		switch {
		case ba < bb:
			out = append(out, a[i])
			i++
		case ba > bb:
			out = append(out, b[j])
			j++
		default:
			out = append(out, ba<<6|max(a[i]&63, b[j]&63))
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}
