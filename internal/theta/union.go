package theta

import "slices"

// Union accumulates sketches the way DataSketches' theta union does, and
// Result returns what the library's union of the same lg_k returns: the k
// smallest distinct hashes below every input's theta, and theta the
// (k+1)-th smallest of them if there are more than k, else the least input
// theta. That result does not depend on the order of the inputs nor on
// when the union trims its own table, so the table here is kept at most
// half full (a quarter of the library's probing) and trimmed to k when it
// holds 2k. A Union is built with NewUnion.
type Union struct {
	lgK   uint8
	theta uint64 // the least theta of the inputs and of the table's trims
	empty bool

	table  []uint64 // open addressing, 0 free
	lgSize uint8
	n      int
	buf    []uint64 // scratch for trims
}

// maxUnionLgSize bounds the union's table: 4k slots, but no more than the
// 2^27 a sketch of the largest lg_k may use.
func maxUnionLgSize(lgK uint8) uint8 { return min(lgK+2, MaxLgK+1) }

// NewUnion returns a union whose result keeps at most 2^p.LgK hashes.
func NewUnion(p Params) (*Union, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return newUnion(uint8(p.LgK)), nil
}

func newUnion(lgK uint8) *Union {
	return &Union{lgK: lgK, theta: MaxTheta, empty: true}
}

// Add merges o into the union. An empty sketch changes nothing. Hashes at
// or above the union's theta are skipped; a sorted sketch stops there.
func (u *Union) Add(o *Sketch) {
	if o.empty {
		return
	}
	u.empty = false
	u.theta = min(u.theta, o.theta)
	if o.table == nil {
		for _, h := range o.sorted {
			if h >= u.theta {
				break
			}
			u.insert(h)
		}
		return
	}
	for _, h := range o.table {
		if h != 0 && h < u.theta {
			u.insert(h)
		}
	}
}

func (u *Union) insert(h uint64) {
	if u.table == nil {
		u.lgSize = minLgSize
		u.table = make([]uint64, 1<<minLgSize)
	}
	i, found := Slot(u.table, u.lgSize, h)
	if found {
		return
	}
	u.table[i] = h
	u.n++
	if u.n > u.limit() {
		u.grow()
	}
}

// limit is the count past which the table grows (half full) or, at its
// largest, is trimmed to k (at 2k, or 3/4 full for lg_k 26).
func (u *Union) limit() int {
	size := 1 << u.lgSize
	if u.lgSize < maxUnionLgSize(u.lgK) {
		return size / 2
	}
	return min(2<<u.lgK, size*3/4)
}

func (u *Union) grow() {
	u.buf = u.entries(u.buf[:0]) // drops hashes a later input's theta excluded
	k := 1 << u.lgK
	switch {
	case len(u.buf) <= u.limit()/2:
		u.refill(u.lgSize, u.buf)
	case u.lgSize < maxUnionLgSize(u.lgK):
		u.refill(u.lgSize+1, u.buf)
	case len(u.buf) <= k:
		u.refill(u.lgSize, u.buf)
	default:
		u.theta = NthSmallest(u.buf, k)
		u.refill(u.lgSize, u.buf[:k])
	}
}

func (u *Union) entries(dst []uint64) []uint64 {
	for _, h := range u.table {
		if h != 0 && h < u.theta {
			dst = append(dst, h)
		}
	}
	return dst
}

func (u *Union) refill(lgSize uint8, e []uint64) {
	u.table, u.lgSize, u.n = fill(u.table, lgSize, e), lgSize, len(e)
}

// Result returns the union as a new sketch with the union's lg_k. The
// union can keep accumulating afterwards.
func (u *Union) Result() *Sketch {
	r := &Sketch{lgK: u.lgK, empty: u.empty, theta: u.theta}
	if u.empty {
		r.sorted = []uint64{}
		return r
	}
	e := u.entries(make([]uint64, 0, u.n))
	if k := 1 << u.lgK; len(e) > k {
		r.theta = NthSmallest(e, k)
		e = e[:k:k]
	}
	slices.Sort(e)
	r.sorted = e
	return r
}

// UnionAll returns the union of sketches with parameters p: the same
// sketch as a Union of lg_k p.LgK given the same inputs, computed by a
// k-way merge of their sorted hashes below the least theta, which stops
// after k+1 distinct hashes. Sketches in the compact form (decoded, or
// results of set operations) are merged in place; others are sorted
// first.
func UnionAll(p Params, sketches ...*Sketch) (*Sketch, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	r := &Sketch{lgK: uint8(p.LgK), empty: true, theta: MaxTheta, sorted: []uint64{}}
	lists := make([][]uint64, 0, len(sketches))
	for _, s := range sketches {
		if s.empty {
			continue
		}
		r.empty = false
		r.theta = min(r.theta, s.theta)
		if s.table == nil {
			lists = append(lists, s.sorted) // read only
		} else {
			lists = append(lists, s.Hashes(nil))
		}
	}
	if r.empty {
		return r, nil
	}
	k := p.K()
	h := mergeHeap{}
	for i, l := range lists {
		if len(l) > 0 && l[0] < r.theta {
			h.push(mergeItem{l[0], int32(i), 0})
		}
	}
	out := make([]uint64, 0, min(k, totalLen(lists)))
	last := uint64(0)
	for len(h) > 0 {
		top := h[0]
		if top.v != last {
			if len(out) == k {
				r.theta = top.v // the (k+1)-th distinct hash
				break
			}
			out = append(out, top.v)
			last = top.v
		}
		l := lists[top.list]
		if next := top.pos + 1; int(next) < len(l) && l[next] < r.theta {
			h[0] = mergeItem{l[next], top.list, next}
			h.down(0)
		} else {
			h.pop()
		}
	}
	r.sorted = out
	return r, nil
}

func totalLen(lists [][]uint64) int {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	return n
}

type mergeItem struct {
	v    uint64
	list int32
	pos  int32
}

// mergeHeap is a binary min-heap on v.
type mergeHeap []mergeItem

func (h *mergeHeap) push(it mergeItem) {
	*h = append(*h, it)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if a[p].v <= a[i].v {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *mergeHeap) pop() {
	a := *h
	n := len(a) - 1
	a[0] = a[n]
	*h = a[:n]
	if n > 0 {
		h.down(0)
	}
}

func (h mergeHeap) down(i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r].v < h[l].v {
			m = r
		}
		if h[i].v <= h[m].v {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
