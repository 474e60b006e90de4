package hll

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/sketchd/sketchd/internal/murmur"
)

// Representation is how a sketch is (or would be) serialized.
type Representation uint8

// The storage-format types. SPARSE and FULL both hold registers; which
// one is written is decided when the sketch is encoded.
const (
	Undefined Representation = iota
	Empty
	Explicit
	Sparse
	Full
)

// String returns the name used by the storage-format documents and the
// HTTP API: UNDEFINED, EMPTY, EXPLICIT, SPARSE, FULL.
func (r Representation) String() string {
	switch r {
	case Undefined:
		return "UNDEFINED"
	case Empty:
		return "EMPTY"
	case Explicit:
		return "EXPLICIT"
	case Sparse:
		return "SPARSE"
	case Full:
		return "FULL"
	}
	return fmt.Sprintf("Representation(%d)", uint8(r))
}

// kind is the in-memory form. Registers live either as sorted pairs
// (sparse) or one byte each (dense); that choice only saves memory and is
// independent of the SPARSE/FULL choice made when encoding.
type kind uint8

const (
	kindUndefined kind = iota
	kindEmpty
	kindExplicit
	kindSparse
	kindDense
)

// AutoSparse selects postgresql-hll's automatic SPARSE/FULL rule.
const AutoSparse = -1

// Sketch is a HyperLogLog sketch with postgresql-hll's semantics. The zero
// value is not usable: create sketches with New or Decode. A Sketch is not
// safe for concurrent use.
type Sketch struct {
	p     Params
	kind  kind
	shift uint8 // Log2m
	max   uint8 // largest register value, 2^Regwidth-1

	// maxSparse is the SPARSE/FULL threshold used when encoding:
	// AutoSparse (PostgreSQL's default) or a register count, like
	// hll_set_max_sparse.
	maxSparse int

	explicit []int64   // kindExplicit: distinct hashes, ascending as int64
	pairs    []uint32  // kindSparse: index<<8 | value, ascending index, value > 0
	regs     []uint8   // kindDense: m register values
	hist     *[128]int // kindDense: hist[v] = number of registers holding v
}

// New returns an EMPTY sketch with parameters p.
func New(p Params) (*Sketch, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return newSketch(p, kindEmpty), nil
}

// newSketch trusts p; decoders call it after their own checks.
func newSketch(p Params, k kind) *Sketch {
	return &Sketch{p: p, kind: k, shift: uint8(p.Log2m), max: p.maxValue(), maxSparse: AutoSparse}
}

// Params returns the sketch's parameters.
func (s *Sketch) Params() Params { return s.p }

// SetMaxSparse sets the SPARSE/FULL rule used when encoding, like
// postgresql-hll's hll_set_max_sparse: n >= 0 writes SPARSE while at most n
// registers are filled; AutoSparse (the default) writes SPARSE only while
// it is strictly smaller than FULL. Register contents are unaffected.
func (s *Sketch) SetMaxSparse(n int) {
	if n < 0 {
		n = AutoSparse
	}
	s.maxSparse = n
}

// Representation returns the type the sketch encodes to now.
func (s *Sketch) Representation() Representation {
	switch s.kind {
	case kindUndefined:
		return Undefined
	case kindEmpty:
		return Empty
	case kindExplicit:
		return Explicit
	}
	if s.packSparse(s.filled()) {
		return Sparse
	}
	return Full
}

// packSparse is postgresql-hll's multiset_pack rule for a register sketch
// with n filled registers.
func (s *Sketch) packSparse(n int) bool {
	if !s.p.Sparse {
		return false
	}
	if s.maxSparse >= 0 {
		return n <= s.maxSparse
	}
	return n*(s.p.Log2m+s.p.Regwidth) < s.p.NumRegisters()*s.p.Regwidth
}

// filled returns the number of non-zero registers.
func (s *Sketch) filled() int {
	switch s.kind {
	case kindSparse:
		return len(s.pairs)
	case kindDense:
		return len(s.regs) - s.hist[0]
	}
	return 0
}

// Clone returns a deep copy.
func (s *Sketch) Clone() *Sketch {
	c := *s
	c.explicit = slices.Clone(s.explicit)
	c.pairs = slices.Clone(s.pairs)
	c.regs = slices.Clone(s.regs)
	if s.hist != nil {
		h := *s.hist
		c.hist = &h
	}
	return &c
}

// AddInt64 adds an integer id hashed as postgresql-hll's
// hll_hash_bigint(v). It reports whether the sketch changed.
func (s *Sketch) AddInt64(v int64) bool {
	return s.AddHash(HashInt64(v))
}

// AddBytes adds b hashed as hll_hash_bytea(b) (and hll_hash_text for UTF-8
// text). It reports whether the sketch changed.
func (s *Sketch) AddBytes(b []byte) bool {
	return s.AddHash(HashBytes(b))
}

// AddString adds s hashed as hll_hash_text(s).
func (s *Sketch) AddString(v string) bool {
	return s.AddHash(HashString(v))
}

// AddHash adds an already hashed value, like hll_add(h, hll_hashval(v)).
// It reports whether the sketch changed; a value that changes nothing need
// not be logged or replayed.
func (s *Sketch) AddHash(h uint64) bool {
	if s.kind != kindDense {
		return s.addSlow(h)
	}
	w := h >> s.shift
	if w == 0 {
		return false
	}
	v := uint8(bits.TrailingZeros64(w)) + 1
	return s.setDense(uint32(h&uint64(len(s.regs)-1)), min(v, s.max))
}

// AddHashes adds every hash of hs and appends to changed the hashes that
// changed the sketch, in an order whose replay onto the previous state
// gives the same sketch. It returns the extended changed slice, which may
// share hs's array (the hashes are read before their slots are written).
func (s *Sketch) AddHashes(hs []uint64, changed []uint64) []uint64 {
	return s.addHashes(hs, changed, true)
}

// AddAll adds every hash of hs, like AddHashes without the record of what
// changed: for a sketch that only gathers a batch's registers to be merged
// elsewhere.
func (s *Sketch) AddAll(hs []uint64) {
	s.addHashes(hs, nil, false)
}

// addHashes is AddHashes; with track false it appends to changed only the
// new EXPLICIT elements it needs as scratch.
func (s *Sketch) addHashes(hs []uint64, changed []uint64, track bool) []uint64 {
	switch s.kind {
	case kindEmpty:
		// The first hash picks the next type (EXPLICIT, or registers when
		// expthresh is 0); the rest then take that type's batch path, not
		// one sorted insert at a time.
		if len(hs) == 0 {
			return changed
		}
		if s.addSlow(hs[0]) && track {
			changed = append(changed, hs[0])
		}
		return s.addHashes(hs[1:], changed, track)
	case kindExplicit:
		return s.addExplicitBatch(hs, changed, track)
	case kindSparse:
		// A batch that could fill a quarter of the registers is cheaper to
		// apply densely than by inserting into sorted pairs one by one.
		if len(s.pairs)+len(hs) >= s.p.NumRegisters()/4 {
			s.densify()
		}
	}
	if s.kind == kindDense {
		return s.addDense(hs, changed, track)
	}
	for _, h := range hs {
		if s.AddHash(h) && track {
			changed = append(changed, h)
		}
	}
	return changed
}

// addDense is addHashes for registers: one loop over the batch with the
// registers, histogram and limits held in locals, instead of a call and a
// type switch per hash (AddHash). The loop is a function of its own that
// makes no call (growRegisters), a chunk of hashes at a time: in a
// function with a call anywhere in the loop (growing changed) the
// compiler keeps the loop's state on the stack for every hash.
//
// Where the processor has a vector kernel (quietVector), it first skips
// the hashes that raise no register, eight at a time, which is most of
// them once a sketch has seen many more ids than it has registers; the
// loop takes the step that raises one.
func (s *Sketch) addDense(hs []uint64, changed []uint64, track bool) []uint64 {
	var grew [256]uint64
	for len(hs) > 0 {
		// A run of eight where the kernel skipped some hashes first; a
		// longer one where it stopped at once, as it does at every step
		// while most hashes still raise a register.
		run := len(grew)
		if quietKernel != registersPortable {
			q := quietVector(s.regs, hs, s.shift, s.max)
			hs, run = hs[q:], loopRun
			if q > 0 {
				run = 8
			}
		}
		if len(hs) == 0 {
			break
		}
		chunk := hs[:min(len(hs), run)]
		hs = hs[len(chunk):]
		n := growRegisters(s.regs, s.hist, chunk, s.shift, s.max, &grew)
		if track {
			changed = append(changed, grew[:n]...)
		}
	}
	return changed
}

// loopRun is how many hashes the loop takes where the vector kernel
// stopped at its first step (at most len(grew) in addDense).
const loopRun = 64

// quietKernel is the widest register kernel the processor runs; tests
// lower it to run the portable loop alone on the same machine.
var quietKernel = widestRegisters()

// registerKernel is a way to find the hashes that raise no register: none
// (the portable loop takes every hash), or a vector kernel
// (registers_amd64.s).
type registerKernel int

const (
	registersPortable registerKernel = iota
	registersAVX512                  // eight hashes a step (AVX-512 F, DQ and CD)
)

func (k registerKernel) String() string {
	if k == registersAVX512 {
		return "AVX-512"
	}
	return "portable"
}

// growRegisters raises the registers of regs (len a power of two) that
// the hashes of hs (at most 256) set higher, keeping hist, and writes the
// hashes that raised one to grew; it returns how many. The shift is
// masked to 63 (it is at most 16) so it needs no check for shifts of 64
// and more.
func growRegisters(regs []uint8, hist *[128]int, hs []uint64, shift, top uint8, grew *[256]uint64) int {
	mask := len(regs) - 1
	shift &= 63
	n := 0
	for _, h := range hs {
		w := h >> shift
		if w == 0 {
			continue
		}
		v := min(uint8(bits.TrailingZeros64(w))+1, top)
		if r := &regs[int(h)&mask]; v > *r {
			hist[*r&127]--
			hist[v&127]++
			*r = v
			grew[n&255] = h // n < len(hs) <= 256
			n++
		}
	}
	return n
}

func (s *Sketch) addSlow(h uint64) bool {
	switch s.kind {
	case kindEmpty:
		if s.p.ExplicitCapacity() > 0 {
			s.kind = kindExplicit
			s.explicit = append(s.explicit[:0], int64(h))
			return true
		}
		// EMPTY goes to registers even when h sets none: the type changes.
		s.kind = kindSparse
		s.addRegister(h)
		return true
	case kindExplicit:
		i, found := slices.BinarySearch(s.explicit, int64(h))
		if found {
			return false
		}
		if len(s.explicit) >= s.p.ExplicitCapacity() {
			s.promote()
			s.addRegister(h)
			return true
		}
		s.explicit = slices.Insert(s.explicit, i, int64(h))
		return true
	case kindSparse:
		return s.addRegister(h)
	case kindDense:
		return s.AddHash(h)
	}
	return false // UNDEFINED absorbs everything, as in PostgreSQL.
}

// addExplicitBatch adds hs to an EXPLICIT sketch. The state is a function
// of the set of hashes (EXPLICIT while at most T, else registers), so the
// new distinct hashes are gathered, a chunk at a time, only until they
// outnumber the room left: then the sketch turns into registers holding
// them, and the rest of hs goes straight to the registers. A batch far
// larger than T is thus never sorted whole.
func (s *Sketch) addExplicitBatch(hs []uint64, changed []uint64, track bool) []uint64 {
	room := s.p.ExplicitCapacity() - len(s.explicit)
	start, next := len(changed), 0
	for next < len(hs) && len(changed)-start <= room {
		end := min(len(hs), next+room+1)
		for _, h := range hs[next:end] {
			if _, found := slices.BinarySearch(s.explicit, int64(h)); !found {
				changed = append(changed, h)
			}
		}
		next = end
		fresh := changed[start:]
		sortSigned(fresh)
		changed = changed[:start+len(slices.Compact(fresh))]
	}
	fresh := changed[start:]
	if len(fresh) == 0 {
		return changed
	}
	if len(fresh) <= room {
		merged := make([]int64, 0, len(s.explicit)+len(fresh))
		i := 0
		for _, h := range fresh {
			for i < len(s.explicit) && s.explicit[i] < int64(h) {
				merged = append(merged, s.explicit[i])
				i++
			}
			merged = append(merged, int64(h))
		}
		s.explicit = append(merged, s.explicit[i:]...)
		return changed
	}
	// Replaying fresh onto the old state promotes it too (fresh is
	// disjoint from the EXPLICIT set and larger than the room), and the
	// rest of hs matters only where it raised a register.
	rest := hs[next:]
	s.promote()
	if len(s.pairs)+len(fresh)+len(rest) >= s.p.NumRegisters()/4 {
		s.densify()
	}
	for _, h := range fresh {
		s.addRegister(h)
	}
	for _, h := range rest {
		if s.addRegister(h) && track {
			changed = append(changed, h)
		}
	}
	return changed
}

// sortSigned sorts hs in the order of the EXPLICIT set: as int64s. With
// the sign bit flipped that is the order of uint64s, which sorts without
// a comparison function.
func sortSigned(hs []uint64) {
	for i := range hs {
		hs[i] ^= 1 << 63
	}
	slices.Sort(hs)
	for i := range hs {
		hs[i] ^= 1 << 63
	}
}

// promote turns an EXPLICIT sketch into registers holding its elements.
func (s *Sketch) promote() {
	elems := s.explicit
	s.explicit = nil
	s.kind = kindSparse
	s.pairs = make([]uint32, 0, min(len(elems)+1, s.p.NumRegisters()/4))
	if len(elems) >= s.p.NumRegisters()/4 {
		s.densify()
	}
	for _, h := range elems {
		s.addRegister(uint64(h))
	}
}

// registerOf returns the register index and value of hash h; value 0
// means h sets no register.
func (s *Sketch) registerOf(h uint64) (uint32, uint8) {
	w := h >> s.shift
	if w == 0 {
		return 0, 0
	}
	return uint32(h & (uint64(1)<<s.shift - 1)), min(uint8(bits.TrailingZeros64(w))+1, s.max)
}

// addRegister applies h to a sparse or dense register sketch.
func (s *Sketch) addRegister(h uint64) bool {
	if s.kind == kindDense {
		return s.AddHash(h)
	}
	i, v := s.registerOf(h)
	if v == 0 {
		return false
	}
	return s.setSparse(i, v)
}

// setRegister raises register i to v (v > 0) in a register sketch.
func (s *Sketch) setRegister(i uint32, v uint8) bool {
	if s.kind == kindDense {
		return s.setDense(i, v)
	}
	return s.setSparse(i, v)
}

// setSparse raises register i to v in a sparse sketch, turning it dense
// when the pairs would outgrow a quarter of the registers.
func (s *Sketch) setSparse(i uint32, v uint8) bool {
	pos, found := slices.BinarySearchFunc(s.pairs, i, func(p uint32, i uint32) int {
		return int(p>>8) - int(i)
	})
	if found {
		if uint8(s.pairs[pos]) >= v {
			return false
		}
		s.pairs[pos] = i<<8 | uint32(v)
		return true
	}
	if len(s.pairs)+1 >= s.p.NumRegisters()/4 {
		s.densify()
		return s.setDense(i, v)
	}
	s.pairs = slices.Insert(s.pairs, pos, i<<8|uint32(v))
	return true
}

func (s *Sketch) setDense(i uint32, v uint8) bool {
	if old := s.regs[i]; v > old {
		s.regs[i] = v
		s.hist[old]--
		s.hist[v]++
		return true
	}
	return false
}

// densify converts sparse (or empty) registers to one byte per register.
func (s *Sketch) densify() {
	if s.kind == kindDense {
		return
	}
	m := s.p.NumRegisters()
	s.regs = make([]uint8, m)
	s.hist = new([128]int)
	s.hist[0] = m
	for _, p := range s.pairs {
		s.setDense(p>>8, uint8(p))
	}
	s.pairs = nil
	s.kind = kindDense
}

// Registers writes the m register values into dst (grown as needed) and
// returns it. EXPLICIT elements are turned into the registers they would
// set; EMPTY and UNDEFINED sketches give all zeros.
func (s *Sketch) Registers(dst []uint8) []uint8 {
	m := s.p.NumRegisters()
	dst = slices.Grow(dst[:0], m)[:m]
	switch s.kind {
	case kindDense:
		copy(dst, s.regs)
		return dst
	}
	clear(dst)
	switch s.kind {
	case kindSparse:
		for _, p := range s.pairs {
			dst[p>>8] = uint8(p)
		}
	case kindExplicit:
		for _, h := range s.explicit {
			if i, v := s.registerOf(uint64(h)); v > dst[i] {
				dst[i] = v
			}
		}
	}
	return dst
}

// Histogram sets hist[v] to the number of the sketch's registers holding
// v and returns true when it is SPARSE or FULL (register form); otherwise
// it leaves hist unchanged and returns false. A FULL sketch keeps its
// histogram, so this costs no pass over the registers:
// HistogramEstimate(p, hist) is then its Estimate.
func (s *Sketch) Histogram(hist *[128]int) bool {
	switch s.kind {
	case kindDense:
		*hist = *s.hist
		return true
	case kindSparse:
		*hist = [128]int{}
		hist[0] = s.p.NumRegisters() - len(s.pairs)
		for _, p := range s.pairs {
			hist[uint8(p)&127]++
		}
		return true
	}
	return false
}

// Explicit returns the sketch's distinct hashes in storage order and true
// when it is EXPLICIT; otherwise nil and false.
func (s *Sketch) Explicit() ([]uint64, bool) {
	if s.kind != kindExplicit {
		return nil, false
	}
	out := make([]uint64, len(s.explicit))
	for i, h := range s.explicit {
		out[i] = uint64(h)
	}
	return out, true
}

// SizeBytes returns the length of the sketch's encoding.
func (s *Sketch) SizeBytes() int {
	switch s.kind {
	case kindExplicit:
		return headerLen + 8*len(s.explicit)
	case kindSparse, kindDense:
		n := s.filled()
		if s.packSparse(n) {
			return headerLen + (n*(s.p.Log2m+s.p.Regwidth)+7)/8
		}
		return headerLen + (s.p.NumRegisters()*s.p.Regwidth+7)/8
	}
	return headerLen
}

// MemoryBytes approximates the heap the sketch holds, for cache
// accounting.
func (s *Sketch) MemoryBytes() int {
	n := 96 + 8*cap(s.explicit) + 4*cap(s.pairs) + cap(s.regs)
	if s.hist != nil {
		n += len(s.hist) * 8
	}
	return n
}

// HashInt64 returns postgresql-hll's hll_hash_bigint(v): the hash AddInt64
// adds.
func HashInt64(v int64) uint64 {
	h, _ := murmur.Int64(v, 0)
	return h
}

// HashBytes returns hll_hash_bytea(b), which is hll_hash_text for UTF-8
// text.
func HashBytes(b []byte) uint64 {
	h, _ := murmur.Bytes(b, 0)
	return h
}

// HashString returns hll_hash_text(s).
func HashString(s string) uint64 {
	h, _ := murmur.String(s, 0)
	return h
}
