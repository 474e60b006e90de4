package series

import (
	"fmt"
	"slices"
	"time"

	"github.com/sketchd/sketchd/internal/sketch"
)

// Plan is how a range [From, To) is answered: from the fewest buckets
// (coarse levels inside, finer ones at the edges), in time order. From and
// To are the range actually covered; when it differs from the one asked
// for, Warnings say why in plain words.
type Plan struct {
	From, To time.Time
	Buckets  []Key
	Warnings []string
}

// MaxRange bounds a range so that planning stays cheap: 100 years.
const MaxRange = 100 * 366 * 24 * time.Hour

// Plan covers [from, to) with buckets that exist at now. An edge that
// falls inside the finest bucket kept there is moved outward to that
// bucket's edge, and a start before everything kept is moved to the
// oldest data; both with a warning. to not after from is Invalid.
func (s *Spec) Plan(from, to, now time.Time) (Plan, error) {
	if !to.After(from) {
		return Plan{}, sketch.Errorf(sketch.Invalid, "to (%s) must be after from (%s)", stamp(to), stamp(from))
	}
	if to.Sub(from) > MaxRange {
		return Plan{}, sketch.Errorf(sketch.Invalid, "a range may span at most 100 years")
	}
	p := Plan{From: from.In(s.loc), To: to.In(s.loc)}
	// The start: the finest level that still has the bucket holding it.
	if l, ok := s.finestAt(from, now); ok {
		if a := l.Start(from, s.loc); !a.Equal(from) {
			p.From = a
			p.Warnings = append(p.Warnings, fmt.Sprintf("from %s is inside a %s bucket (the finest kept for that time); the range starts at %s", stamp(from), l, stamp(a)))
		}
	} else {
		coarse := s.Levels[len(s.Levels)-1].Level
		oldest := coarse.Start(s.Cutoff(coarse, now), s.loc)
		p.From = oldest
		p.Warnings = append(p.Warnings, fmt.Sprintf("data before %s has expired; the range starts there", stamp(oldest)))
	}
	last := to.Add(-time.Nanosecond)
	if l, ok := s.finestAt(last, now); ok && last.After(p.From) {
		if b := l.Ceil(to, s.loc); !b.Equal(to) {
			p.To = b
			p.Warnings = append(p.Warnings, fmt.Sprintf("to %s is inside a %s bucket (the finest kept for that time); the range ends at %s", stamp(to), l, stamp(b)))
		}
	} else {
		p.To = p.From
		p.Warnings = append(p.Warnings, "the whole range has expired: nothing is kept for it")
		return p, nil
	}
	keys, ok := s.cover(p.From, p.To, now)
	// Finer buckets inside the range may have expired where coarser ones
	// do not fit: widen to the edges of ever coarser levels.
	for i := 0; !ok && i < len(s.Levels); i++ {
		l := s.Levels[i].Level
		a, b := l.Start(p.From, s.loc), l.Ceil(p.To, s.loc)
		if keys, ok = s.cover(a, b, now); ok {
			p.Warnings = append(p.Warnings, fmt.Sprintf("finer buckets inside the range have expired; it is answered from %s buckets over [%s, %s)", l, stamp(a), stamp(b)))
			p.From, p.To = a, b
		}
	}
	if !ok {
		return Plan{}, fmt.Errorf("series: no bucket cover for [%s, %s)", stamp(p.From), stamp(p.To))
	}
	p.Buckets = keys
	return p, nil
}

// finestAt returns the finest kept level whose bucket holding t has not
// expired.
func (s *Spec) finestAt(t, now time.Time) (Level, bool) {
	for _, ls := range s.Levels {
		start := ls.Level.Start(t, s.loc)
		if ls.Level.Next(start, s.loc).After(s.Cutoff(ls.Level, now)) {
			return ls.Level, true
		}
	}
	return 0, false
}

// cover returns the fewest unexpired buckets that tile [a, b) exactly: a
// shortest path from a to b over bucket edges, where each unexpired
// bucket inside [a, b) is a step. Edges only go forward in time, so one
// pass over the edges in time order finds it. Week and month buckets do
// not nest, so no greedy choice of the coarsest level is always right.
func (s *Spec) cover(a, b, now time.Time) ([]Key, bool) {
	if !a.Before(b) {
		return nil, true
	}
	type step struct {
		from int64
		key  Key
	}
	into := map[int64][]step{} // buckets by their end
	nodes := []int64{a.UnixNano()}
	for _, ls := range s.Levels {
		l := ls.Level
		t := l.Ceil(a, s.loc)
		if oldest := l.Start(s.Cutoff(l, now), s.loc); oldest.After(t) {
			t = oldest
		}
		for {
			n := l.Next(t, s.loc)
			if n.After(b) {
				break
			}
			into[n.UnixNano()] = append(into[n.UnixNano()], step{t.UnixNano(), Key{l, t}})
			nodes = append(nodes, n.UnixNano())
			t = n
		}
	}
	slices.Sort(nodes)
	nodes = slices.Compact(nodes)
	type best struct {
		n    int
		prev step
	}
	dist := map[int64]best{a.UnixNano(): {}}
	for _, at := range nodes[1:] {
		for _, st := range into[at] {
			d, ok := dist[st.from]
			if !ok {
				continue
			}
			if cur, seen := dist[at]; !seen || d.n+1 < cur.n {
				dist[at] = best{d.n + 1, st}
			}
		}
	}
	end, ok := dist[b.UnixNano()]
	if !ok {
		return nil, false
	}
	keys := make([]Key, end.n)
	for i, at := end.n-1, end; i >= 0; i-- {
		keys[i] = at.prev.key
		at = dist[at.prev.from]
	}
	return keys, true
}

// stamp writes t for messages, in UTC where its offset has seconds
// (RFC 3339 offsets are whole minutes).
func stamp(t time.Time) string {
	if _, off := t.Zone(); off%60 != 0 {
		t = t.UTC()
	}
	return t.Format(time.RFC3339)
}
