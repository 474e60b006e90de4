package freq

import (
	"fmt"
	"math"
	"slices"

	"github.com/sketchd/sketchd/internal/theta"
)

// Params are a frequency sketch's parameters: lg_k as for a theta sketch
// (theta.MinLgK..theta.MaxLgK, default 12).
type Params struct {
	// LgK is log2 of the nominal number of users k kept once there are
	// more than about 2k.
	LgK int
}

// DefaultParams returns lg_k 12.
func DefaultParams() Params { return Params{LgK: theta.DefaultLgK} }

// Validate returns an error wrapping ErrParams unless lg_k is in range.
func (p Params) Validate() error {
	if p.LgK < theta.MinLgK || p.LgK > theta.MaxLgK {
		return fmt.Errorf("freq: lg_k %d not in [%d, %d]: %w", p.LgK, theta.MinLgK, theta.MaxLgK, ErrParams)
	}
	return nil
}

// K returns 2^LgK.
func (p Params) K() int { return 1 << p.LgK }

// MaxRetained returns the most keys a sketch holds between rebuilds, 15/16
// of its largest table (theta.Params.MaxRetained).
func (p Params) MaxRetained() int { return 15 << (p.LgK - 3) }

// MaxCount is the largest count a key holds; sums saturate there (the
// format's summary is a signed 32-bit integer).
const MaxCount = math.MaxInt32

// Sketch is a tuple sketch whose summary is an integer count, summed on
// update and on union (DataSketches' IntegerSummary in mode Sum, or the
// C++/Python AccumulatorPolicy): a theta sketch of user ids where each
// retained user carries how many times it was added. A retained user's
// count is exact: a hash below the current theta was below every earlier
// theta, so none of its additions were dropped. The zero value is not
// usable; call New or Decode.
type Sketch struct {
	lgK   uint8
	empty bool
	theta uint64

	// keys is an open-addressing table of 2^lgSize hashes (0 free); counts
	// is parallel to it; n counts the filled slots.
	keys   []uint64
	counts []uint32
	lgSize uint8
	n      int
}

const minLgSize = 5

// New returns an empty sketch.
func New(p Params) (*Sketch, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &Sketch{lgK: uint8(p.LgK), empty: true, theta: theta.MaxTheta}, nil
}

// Params returns the sketch's parameters.
func (s *Sketch) Params() Params { return Params{LgK: int(s.lgK)} }

// IsEmpty reports whether nothing was ever added.
func (s *Sketch) IsEmpty() bool { return s.empty }

// IsEstimationMode reports whether theta is below 1.
func (s *Sketch) IsEstimationMode() bool { return s.theta < theta.MaxTheta && !s.empty }

// Theta64 returns theta as a 63-bit integer (theta.MaxTheta when exact).
func (s *Sketch) Theta64() uint64 {
	if s.empty {
		return theta.MaxTheta
	}
	return s.theta
}

// Theta returns the sampling rate in (0, 1].
func (s *Sketch) Theta() float64 { return float64(s.Theta64()) / theta.MaxTheta }

// Retained returns the number of users the sketch holds.
func (s *Sketch) Retained() int { return s.n }

// Estimate returns the estimated number of distinct users.
func (s *Sketch) Estimate() float64 { return float64(s.n) / s.Theta() }

// AddInt records one impression of user v, hashed as theta.HashInt.
func (s *Sketch) AddInt(v int64) { s.AddHash(theta.HashInt(v), 1) }

// AddString records one impression of user v, hashed as theta.HashString;
// an empty string is ignored, as DataSketches ignores it.
func (s *Sketch) AddString(v string) {
	if v != "" {
		s.AddHash(theta.HashString(v), 1)
	}
}

// AddHash records count impressions (count >= 1) of the user with hash h
// (as theta.HashInt or theta.HashString return it): the update
// update(key, count) of a tuple sketch with a summing policy. A count of
// zero changes nothing.
func (s *Sketch) AddHash(h uint64, count uint32) {
	if count == 0 {
		return
	}
	s.empty = false
	if h >= s.theta || h == 0 {
		return
	}
	s.add(h, count)
}

// add sums count into h's entry (0 < h < theta), inserting it if absent.
func (s *Sketch) add(h uint64, count uint32) {
	if s.keys == nil {
		s.rehash(minLgSize, nil, nil)
	}
	i, found := theta.Slot(s.keys, s.lgSize, h)
	if found {
		s.counts[i] = addSat(s.counts[i], count)
		return
	}
	s.keys[i], s.counts[i] = h, min(count, MaxCount)
	s.n++
	if s.n > s.capacity() {
		s.grow()
	}
}

func addSat(a, b uint32) uint32 {
	if uint64(a)+uint64(b) > MaxCount {
		return MaxCount
	}
	return a + b
}

func (s *Sketch) capacity() int {
	if s.lgSize <= s.lgK {
		return 1 << (s.lgSize - 1)
	}
	return s.Params().MaxRetained()
}

func (s *Sketch) grow() {
	keys, counts := s.entries()
	if s.lgSize <= s.lgK {
		s.rehash(s.lgSize+1, keys, counts)
		return
	}
	// Rebuild: theta becomes the (k+1)-th smallest key; the k below stay.
	k := 1 << s.lgK
	sorted := slices.Clone(keys)
	s.theta = theta.NthSmallest(sorted, k)
	kk, kc := keys[:0], counts[:0]
	for i, h := range keys {
		if h < s.theta {
			kk, kc = append(kk, h), append(kc, counts[i])
		}
	}
	s.rehash(s.lgSize, kk, kc)
}

// entries returns the filled slots' keys and counts, in table order.
func (s *Sketch) entries() ([]uint64, []uint32) {
	keys := make([]uint64, 0, s.n)
	counts := make([]uint32, 0, s.n)
	for i, h := range s.keys {
		if h != 0 {
			keys, counts = append(keys, h), append(counts, s.counts[i])
		}
	}
	return keys, counts
}

// Entries returns the retained hashes ascending, with each one's count.
func (s *Sketch) Entries() ([]uint64, []uint32) { return s.sortedEntries() }

// sortedEntries returns the keys ascending with their counts.
func (s *Sketch) sortedEntries() ([]uint64, []uint32) {
	keys, counts := s.entries()
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case keys[a] < keys[b]:
			return -1
		case keys[a] > keys[b]:
			return 1
		}
		return 0
	})
	sk := make([]uint64, len(keys))
	sc := make([]uint32, len(keys))
	for i, j := range idx {
		sk[i], sc[i] = keys[j], counts[j]
	}
	return sk, sc
}

func (s *Sketch) rehash(lgSize uint8, keys []uint64, counts []uint32) {
	lgSize = max(lgSize, minLgSize)
	s.keys = make([]uint64, 1<<lgSize)
	s.counts = make([]uint32, 1<<lgSize)
	s.lgSize = lgSize
	for j, h := range keys {
		i, _ := theta.Slot(s.keys, lgSize, h)
		s.keys[i], s.counts[i] = h, counts[j]
	}
	s.n = len(keys)
}

// tableLgSize is the smallest table holding n entries below its growth or
// rebuild point.
func tableLgSize(n, lgK int) uint8 {
	lg := minLgSize
	for lg <= lgK && n > 1<<(lg-1) {
		lg++
	}
	return uint8(lg)
}

// Clone returns an independent copy.
func (s *Sketch) Clone() *Sketch {
	c := *s
	c.keys = slices.Clone(s.keys)
	c.counts = slices.Clone(s.counts)
	return &c
}

// MemoryBytes returns the heap the sketch holds, in bytes.
func (s *Sketch) MemoryBytes() int { return 64 + 8*cap(s.keys) + 4*cap(s.counts) }

// Union merges o into s, keeping s's lg_k; counts of a user in both are
// summed. The result is what DataSketches' tuple_union with a summing
// policy and lg_k(s) returns for s and o: the k smallest keys below both
// thetas, theta the (k+1)-th of them if there are more.
func (s *Sketch) Union(o *Sketch) {
	r := &Sketch{lgK: s.lgK, empty: s.empty && o.empty, theta: theta.MaxTheta}
	if r.empty {
		*s = *r
		return
	}
	for _, x := range []*Sketch{s, o} {
		if !x.empty {
			r.theta = min(r.theta, x.theta)
		}
	}
	keys := make([]uint64, 0, s.n+o.n)
	counts := make([]uint32, 0, s.n+o.n)
	// index maps a key to its position in keys, by open addressing.
	lg := uint8(minLgSize)
	for 1<<lg < 2*(s.n+o.n) {
		lg++
	}
	index := make([]int32, 1<<lg) // position+1; 0 free
	mask := uint64(len(index) - 1)
	for _, x := range []*Sketch{s, o} {
		if x.empty {
			continue
		}
		for j, h := range x.keys {
			if h == 0 || h >= r.theta {
				continue
			}
			i := h & mask
			st := theta.Stride(h, lg)
			for index[i] != 0 && keys[index[i]-1] != h {
				i = (i + st) & mask
			}
			if p := index[i]; p != 0 {
				counts[p-1] = addSat(counts[p-1], x.counts[j])
				continue
			}
			keys, counts = append(keys, h), append(counts, x.counts[j])
			index[i] = int32(len(keys))
		}
	}
	if k := 1 << s.lgK; len(keys) > k {
		r.theta = theta.NthSmallest(slices.Clone(keys), k)
		kk, kc := keys[:0], counts[:0]
		for i, h := range keys {
			if h < r.theta {
				kk, kc = append(kk, h), append(kc, counts[i])
			}
		}
		keys, counts = kk, kc
	}
	if len(keys) > 0 {
		r.rehash(tableLgSize(len(keys), int(s.lgK)), keys, counts)
	}
	*s = *r
}

// String describes the sketch for tests and logs.
func (s *Sketch) String() string {
	return fmt.Sprintf("freq{lg_k %d, empty %t, theta %#x, retained %d}", s.lgK, s.empty, s.Theta64(), s.n)
}
