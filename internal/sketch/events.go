package sketch

import (
	"fmt"
	"slices"

	"github.com/sketchd/sketchd/internal/cms"
)

// The stores gather an events write's ids by the sketch (or bucket) they
// go to. A body of the maximum size holds tens of thousands of events and
// many such writes run at once, so what is kept per event is kept small:
// each list of ids is made once at its final length, a list of names the
// parser shares between consecutive events is looked up once, and where
// each id came from is worked out only to name a refused one.

// Targets calls fn with the index of each target of event i, in the
// order the event names them; a store builds it over its own lookup.
type Targets func(i int, fn func(j int))

// SameList reports whether a and b are the same slice (not merely equal
// ones): the events parser shares a list of names repeated from the
// event before, which this finds.
func SameList(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// SketchNames returns the names of the sketches the events name, each
// once, in the order first named.
func SketchNames(events []Event) []string {
	var names []string
	seen := map[string]bool{}
	var last []string
	for _, ev := range events {
		if SameList(ev.Sketches, last) {
			continue
		}
		last = ev.Sketches
		for _, n := range ev.Sketches {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	return names
}

// ListIndex returns the indices of a list of names, by index, remembering
// the last list: for the events that share it, the lookups are made once.
// The slice returned is valid until the next call.
func ListIndex(index func(string) int) func([]string) []int {
	var last []string
	var idx []int
	return func(list []string) []int {
		if !SameList(list, last) {
			last, idx = list, idx[:0]
			for _, n := range list {
				idx = append(idx, index(n))
			}
		}
		return idx
	}
}

// Repeated keeps the last keys it was given and what was built of them,
// so that consecutive events with the same keys (the buckets an add's
// stamp falls in) share one value.
type Repeated[K comparable, V any] struct {
	keys []K
	val  V
	set  bool
}

// Of returns build's value for keys, or the value built for the keys
// before if they are equal. The caller may reuse keys after the call.
func (r *Repeated[K, V]) Of(keys []K, build func() V) V {
	if !r.set || !slices.Equal(keys, r.keys) {
		r.keys = append(r.keys[:0], keys...)
		r.val, r.set = build(), true
	}
	return r.val
}

// IDsByTarget gathers the events' ids by target, j in [0, n): a target
// named by no event gets nil. An event naming a target twice gives it its
// id twice.
func IDsByTarget(events []Event, n int, targets Targets) [][]cms.ID {
	// The functions are made once, not once an event.
	count := make([]int, n)
	counted := func(j int) { count[j]++ }
	for i := range events {
		targets(i, counted)
	}
	ids := make([][]cms.ID, n)
	for j, c := range count {
		if c > 0 {
			ids[j] = make([]cms.ID, 0, c)
		}
	}
	var id cms.ID
	add := func(j int) { ids[j] = append(ids[j], id) }
	for i := range events {
		id = events[i].ID
		targets(i, add)
	}
	return ids
}

// EventError names the first event whose id sk refuses, given target j's
// ids as IDsByTarget gathered them and err, the refusal of all of them
// together; it returns err if no single id is refused.
func EventError(sk Sketch, events []Event, targets Targets, j int, ids []cms.ID, err error) error {
	var from []int // the event of each of j's ids
	var i int
	note := func(k int) {
		if k == j {
			from = append(from, i)
		}
	}
	for i = range events {
		targets(i, note)
	}
	for k, id := range ids {
		b, perr := sk.Kind().Prepare(IDs([]cms.ID{id}))
		if perr == nil {
			perr = sk.Check(b)
		}
		if perr != nil {
			return Prefixed(perr, fmt.Sprintf("events[%d]: ", from[k]))
		}
	}
	return err
}
