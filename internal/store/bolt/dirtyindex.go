package bolt

import (
	"slices"
	"strings"
)

// dirtyIndex keeps the entries changed since their last committed
// checkpoint (those whose dirty flag is set) in key order, so a listing
// merges the page it needs with the bbolt cursor from its start instead
// of scanning every unsettled sketch: listing a page costs about a page
// of rows however many sketches wait for a checkpoint.
//
// It is a sorted list cut into chunks of at most dirtyChunk items (a
// sorted list of sorted chunks): a lookup is two binary searches, an
// insert or removal moves at most a chunk, and an item costs 24 bytes
// (the key and the entry pointer) plus a share of the chunk headers. Its
// methods are not synchronised: DB.dirtyMu guards it.
type dirtyIndex struct {
	chunks [][]dirtyItem
	n      int
}

type dirtyItem struct {
	key string
	e   *entry
}

// dirtyChunk is the largest chunk: small enough that an insert's copy
// stays within a few cache lines' worth of moves, large enough that the
// chunk list of a million keys is a few thousand headers.
const dirtyChunk = 512

// dirtyFirst is a new chunk's room.
const dirtyFirst = 16

// find returns the chunk that holds key or would receive it, and key's
// position in it.
func (x *dirtyIndex) find(key string) (ci, i int) {
	// The first chunk whose last key is >= key; past the end, the last.
	ci, _ = slices.BinarySearchFunc(x.chunks, key, func(c []dirtyItem, k string) int {
		return strings.Compare(c[len(c)-1].key, k)
	})
	if ci == len(x.chunks) {
		ci--
	}
	i, _ = slices.BinarySearchFunc(x.chunks[ci], key, compareItem)
	return ci, i
}

func compareItem(it dirtyItem, k string) int { return strings.Compare(it.key, k) }

// set maps key to e, adding key if it is absent.
func (x *dirtyIndex) set(key string, e *entry) {
	it := dirtyItem{key, e}
	if len(x.chunks) == 0 {
		x.chunks = [][]dirtyItem{append(make([]dirtyItem, 0, dirtyFirst), it)}
		x.n = 1
		return
	}
	ci, i := x.find(key)
	c := x.chunks[ci]
	if i < len(c) && c[i].key == key {
		c[i].e = e
		return
	}
	x.n++
	if len(c) == dirtyChunk {
		if ci == len(x.chunks)-1 && i == len(c) {
			// Past the last key: names often come in order (counting
			// up), and then the full chunk stays full and a new one
			// starts, instead of leaving a trail of half-full ones.
			x.chunks = append(x.chunks, append(make([]dirtyItem, 0, dirtyFirst), it))
			return
		}
		// Split in halves, the right one in an array of its own with
		// room for a full chunk.
		half := len(c) / 2
		right := make([]dirtyItem, len(c)-half, dirtyChunk)
		copy(right, c[half:])
		clear(c[half:])
		x.chunks[ci] = c[:half]
		x.chunks = slices.Insert(x.chunks, ci+1, right)
		c = x.chunks[ci]
		if i > half {
			ci, i, c = ci+1, i-half, right
		}
	}
	if len(c) == cap(c) {
		// Grow by doubling, never past a full chunk: a chunk's array
		// holds at most dirtyChunk items.
		grown := make([]dirtyItem, len(c), min(dirtyChunk, 2*cap(c)))
		copy(grown, c)
		c = grown
	}
	x.chunks[ci] = slices.Insert(c, i, it)
}

// remove drops key if it is present.
func (x *dirtyIndex) remove(key string) {
	if len(x.chunks) == 0 {
		return
	}
	ci, i := x.find(key)
	c := x.chunks[ci]
	if i == len(c) || c[i].key != key {
		return
	}
	c = slices.Delete(c, i, i+1)
	x.n--
	switch {
	case len(c) == 0:
		x.chunks = slices.Delete(x.chunks, ci, ci+1)
	case ci+1 < len(x.chunks) && len(c)+len(x.chunks[ci+1]) <= dirtyChunk/2:
		// Merge small neighbours so removals never leave a long list of
		// nearly empty chunks.
		x.chunks[ci] = append(c, x.chunks[ci+1]...)
		x.chunks = slices.Delete(x.chunks, ci+1, ci+2)
	default:
		x.chunks[ci] = c
	}
}

// appendAll appends every entry to out, in key order.
func (x *dirtyIndex) appendAll(out []dirtyItem) []dirtyItem {
	out = slices.Grow(out, x.n)
	for _, c := range x.chunks {
		out = append(out, c...)
	}
	return out
}

// len returns the number of keys.
func (x *dirtyIndex) len() int { return x.n }

// dirtyBatch is how many entries dirtyFrom copies out under the lock at
// a time.
const dirtyBatch = 256

// dirtyFrom calls fn with the entries changed since their last committed
// checkpoint whose keys start with prefix and sort at or after from
// (after it, if exclusive), in key order, until fn returns false. It
// copies them out a batch at a time under dirtyMu and calls fn without
// it, so fn may lock them; an entry may have turned clean (or been
// evicted) by then, its state still the latest.
func (s *DB) dirtyFrom(from, prefix string, exclusive bool, fn func(e *entry) bool) {
	var buf []dirtyItem
	for {
		var more bool
		s.dirtyMu.Lock()
		buf, more = s.dirtyIdx.appendFrom(buf[:0], from, prefix, exclusive, dirtyBatch)
		s.dirtyMu.Unlock()
		for _, it := range buf {
			if !fn(it.e) {
				return
			}
		}
		if !more || len(buf) == 0 {
			return
		}
		from, exclusive = buf[len(buf)-1].key, true
	}
}

// appendFrom appends to out, in key order, up to max entries whose keys
// are >= from (> from when exclusive) and start with prefix, and returns
// it with whether keys with that prefix may follow.
func (x *dirtyIndex) appendFrom(out []dirtyItem, from, prefix string, exclusive bool, max int) ([]dirtyItem, bool) {
	if len(x.chunks) == 0 {
		return out, false
	}
	if from < prefix {
		from, exclusive = prefix, false
	}
	ci, i := x.find(from)
	for ; ci < len(x.chunks); ci, i = ci+1, 0 {
		for _, it := range x.chunks[ci][i:] {
			if exclusive && it.key == from {
				continue
			}
			if !strings.HasPrefix(it.key, prefix) {
				return out, false
			}
			if len(out) == max {
				return out, true
			}
			out = append(out, it)
		}
	}
	return out, false
}
