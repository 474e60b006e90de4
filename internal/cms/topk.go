package cms

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"unsafe"
)

// candidate is a heavy-hitter candidate: an id and its estimate at its last
// addition (or at the last union). Counters only grow, so est is at most
// the id's current estimate.
type candidate struct {
	id  ID
	est uint64
}

// compareRank orders candidates heaviest first: larger est, then ID.less.
func compareRank(a, b candidate) int {
	if a.est != b.est {
		return cmp.Compare(b.est, a.est)
	}
	switch {
	case a.id == b.id:
		return 0
	case a.id.less(b.id):
		return -1
	default:
		return 1
	}
}

// heavier reports whether a ranks strictly above b.
func heavier(a, b candidate) bool { return compareRank(a, b) < 0 }

// topK keeps up to k candidates. slots hold them at stable positions (a
// slot is reused when its candidate is evicted); heap is a min-heap of slot
// numbers with the lightest candidate at heap[0]; pos maps a slot to its
// heap position; ints and texts map ids to slots. Keeping the maps on
// slots, not heap positions, spares map writes while sifting.
type topK struct {
	k     int
	slots []candidate
	heap  []int32
	pos   []int32
	ints  map[int64]int32
	texts map[string]int32
}

func newTopK(k int) topK {
	return topK{k: k}
}

// lookup returns the slot of id. A text id's string may alias a caller's
// buffer: it is only used as a map key here, never retained.
func (t *topK) lookup(id ID) (int32, bool) {
	var s int32
	var ok bool
	if id.isText {
		s, ok = t.texts[id.text]
	} else {
		s, ok = t.ints[id.num]
	}
	return s, ok
}

// observe records that id now has estimate est: it raises a candidate,
// fills a free place, or evicts the lightest candidate if id ranks above
// it. A text id is copied before it is retained.
func (t *topK) observe(id ID, est uint64) {
	if s, ok := t.lookup(id); ok {
		if est > t.slots[s].est {
			t.slots[s].est = est
			t.down(int(t.pos[s]))
		}
		return
	}
	c := candidate{id: id, est: est}
	if len(t.slots) < t.k {
		if id.isText {
			c.id.text = strings.Clone(id.text)
		}
		s := int32(len(t.slots))
		t.slots = append(t.slots, c)
		t.heap = append(t.heap, s)
		t.pos = append(t.pos, s)
		t.index(c.id, s)
		t.up(int(s))
		return
	}
	s := t.heap[0]
	if !heavier(c, t.slots[s]) {
		return
	}
	if id.isText {
		c.id.text = strings.Clone(id.text)
	}
	t.unindex(t.slots[s].id)
	t.slots[s] = c
	t.index(c.id, s)
	t.down(0)
}

func (t *topK) index(id ID, s int32) {
	if id.isText {
		if t.texts == nil {
			t.texts = make(map[string]int32)
		}
		t.texts[id.text] = s
		return
	}
	if t.ints == nil {
		t.ints = make(map[int64]int32)
	}
	t.ints[id.num] = s
}

func (t *topK) unindex(id ID) {
	if id.isText {
		delete(t.texts, id.text)
		return
	}
	delete(t.ints, id.num)
}

// lighter reports whether the candidate at heap position i ranks below the
// one at j.
func (t *topK) lighter(i, j int) bool {
	return heavier(t.slots[t.heap[j]], t.slots[t.heap[i]])
}

func (t *topK) swap(i, j int) {
	t.heap[i], t.heap[j] = t.heap[j], t.heap[i]
	t.pos[t.heap[i]] = int32(i)
	t.pos[t.heap[j]] = int32(j)
}

func (t *topK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.lighter(i, p) {
			return
		}
		t.swap(i, p)
		i = p
	}
}

func (t *topK) down(i int) {
	n := len(t.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && t.lighter(r, l) {
			m = r
		}
		if !t.lighter(m, i) {
			return
		}
		t.swap(i, m)
		i = m
	}
}

// ranked returns a copy of the candidates, heaviest first by stored
// estimate.
func (t *topK) ranked() []candidate {
	out := slices.Clone(t.slots)
	slices.SortFunc(out, compareRank)
	return out
}

// reset replaces the candidates with cs, which must be ranked heaviest
// first, hold distinct ids and number at most k. Slots keep that order, and
// the heap lists them lightest first: an ascending array is a min-heap.
func (t *topK) reset(cs []candidate) {
	n := len(cs)
	t.slots = append(t.slots[:0], cs...)
	t.heap = slices.Grow(t.heap[:0], n)[:n]
	t.pos = slices.Grow(t.pos[:0], n)[:n]
	clear(t.ints)
	clear(t.texts)
	for i := range n {
		t.heap[i] = int32(n - 1 - i)
		t.pos[n-1-i] = int32(i)
		t.index(t.slots[i].id, int32(i))
	}
}

func (t *topK) clone() topK {
	return topK{
		k:     t.k,
		slots: slices.Clone(t.slots),
		heap:  slices.Clone(t.heap),
		pos:   slices.Clone(t.pos),
		ints:  maps.Clone(t.ints),
		texts: maps.Clone(t.texts),
	}
}

// sizeBytes approximates the memory held: slots, heap and positions, map
// entries (with Go's map overhead rounded up) and the texts.
func (t *topK) sizeBytes() int {
	n := cap(t.slots)*int(unsafe.Sizeof(candidate{})) + 4*(cap(t.heap)+cap(t.pos))
	n += len(t.ints) * 24
	for s := range t.texts {
		n += 40 + len(s)
	}
	return n
}

// borrowText returns a text ID whose string aliases b, for lookups and
// comparisons that do not retain it (observe copies it before keeping it).
func borrowText(b []byte) ID {
	return ID{text: unsafe.String(unsafe.SliceData(b), len(b)), isText: true}
}
