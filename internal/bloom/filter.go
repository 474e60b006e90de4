package bloom

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Filter is a Bloom filter. Create one with New or Decode; the zero Filter
// only serves as the target of UnmarshalBinary.
//
// A Filter is not safe for concurrent use: methods that only read may run
// together, but not alongside Add, AddNew or Union.
type Filter struct {
	p     Params
	words []uint64 // bit j is bit j%64 of words[j/64]
	set   int      // bits set: the population count of words
}

// New returns an empty filter with parameters p (see Params.Validate).
func New(p Params) (*Filter, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Filter{p: p, words: make([]uint64, p.Bits/64)}, nil
}

// Params returns the filter's parameters.
func (f *Filter) Params() Params { return f.p }

// step is g, the stride between an item's positions (doc.go).
func step(h uint64) uint64 {
	return fmix64(h^0x9E3779B97F4A7C15) | 1
}

// fmix64 is MurmurHash3's 64-bit finalizer.
func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// Add adds the item hashed to h and reports whether it was new: whether
// any of its bits was still clear. An item added before is never new; an
// item never added is reported not new with the filter's current
// false-positive rate.
func (f *Filter) Add(h uint64) bool {
	m, g := uint64(f.p.Bits), step(h)
	fresh := false
	for range f.p.Hashes {
		pos, _ := bits.Mul64(h, m)
		w, b := pos>>6, uint64(1)<<(pos&63)
		if f.words[w]&b == 0 {
			f.words[w] |= b
			f.set++
			fresh = true
		}
		h += g
	}
	return fresh
}

// Contains reports whether the item hashed to h may have been added: true
// for every item added (no false negatives), and for an item never added
// with probability Rate.
func (f *Filter) Contains(h uint64) bool {
	m, g := uint64(f.p.Bits), step(h)
	for range f.p.Hashes {
		pos, _ := bits.Mul64(h, m)
		if f.words[pos>>6]&(uint64(1)<<(pos&63)) == 0 {
			return false
		}
		h += g
	}
	return true
}

// BitsSet returns the number of bits set.
func (f *Filter) BitsSet() int { return f.set }

// IsEmpty reports whether no item was added.
func (f *Filter) IsEmpty() bool { return f.set == 0 }

// Rate returns the current false-positive rate, (X/m)^k for X bits set:
// the probability that Contains reports an item never added.
func (f *Filter) Rate() float64 {
	return math.Pow(float64(f.set)/float64(f.p.Bits), float64(f.p.Hashes))
}

// EstimatedItems estimates the number of distinct items added,
// −(m/k)·ln(1 − X/m); m when every bit is set.
func (f *Filter) EstimatedItems() float64 {
	m := float64(f.p.Bits)
	if f.set >= f.p.Bits {
		return m
	}
	return -m / float64(f.p.Hashes) * math.Log1p(-float64(f.set)/m)
}

// Union ORs o's bits into f. Both must have the same Bits and Hashes
// (ErrIncompatible otherwise, f unchanged); f keeps its stated items and
// rate.
func (f *Filter) Union(o *Filter) error {
	if f.p.Bits != o.p.Bits || f.p.Hashes != o.p.Hashes {
		return fmt.Errorf("bloom: union of %d bits and %d hashes with %d bits and %d hashes: %w",
			f.p.Bits, f.p.Hashes, o.p.Bits, o.p.Hashes, ErrIncompatible)
	}
	set := 0
	for i, w := range o.words {
		f.words[i] |= w
		set += bits.OnesCount64(f.words[i])
	}
	f.set = set
	return nil
}

// Clone returns a deep copy of f.
func (f *Filter) Clone() *Filter {
	c := *f
	c.words = slices.Clone(f.words)
	return &c
}

// SizeBytes is the length of f's encoding.
func (f *Filter) SizeBytes() int { return headerLen + 8*len(f.words) }
