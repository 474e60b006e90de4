package series

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/sketchd/sketchd/internal/sketch"
)

// Plan is how a range [From, To) is answered: from the fewest buckets
// (coarse levels inside, finer ones at the edges), in time order. From and
// To are the range actually covered; when it differs from the one asked
// for, Warnings say why in plain words. Runs are the same buckets grouped
// by level, as a read looks them up.
type Plan struct {
	From, To time.Time
	Buckets  []Key
	Runs     []Run
	Warnings []string
}

// MaxRange bounds a range so that planning stays cheap: 100 years.
const MaxRange = 100 * 366 * 24 * time.Hour

// Plan covers [from, to) with buckets that exist at now. An edge that
// falls inside the finest bucket kept there is moved outward to that
// bucket's edge, and a start before everything kept is moved to the
// oldest data; both with a warning. to not after from is Invalid. It plans
// within a budget of its own (NewBudget's defaults).
func (s *Spec) Plan(from, to, now time.Time) (Plan, error) {
	return s.PlanWithin(from, to, now, NewBudget(0, 0))
}

// PlanWithin is Plan spending b: a range that would have it consider more
// buckets than b has left is Unprocessable, found before it allocates
// more than b allows.
func (s *Spec) PlanWithin(from, to, now time.Time, b *Budget) (Plan, error) {
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
	before := b.Used()
	keys, ok, err := s.cover(p.From, p.To, now, b, before)
	// Finer buckets inside the range may have expired where coarser ones
	// do not fit: widen to the edges of ever coarser levels.
	for i := 0; err == nil && !ok && i < len(s.Levels); i++ {
		l := s.Levels[i].Level
		x, y := l.Start(p.From, s.loc), l.Ceil(p.To, s.loc)
		if keys, ok, err = s.cover(x, y, now, b, before); ok {
			p.Warnings = append(p.Warnings, fmt.Sprintf("finer buckets inside the range have expired; it is answered from %s buckets over [%s, %s)", l, stamp(x), stamp(y)))
			p.From, p.To = x, y
		}
	}
	if err != nil {
		return Plan{}, err
	}
	if !ok {
		return Plan{}, fmt.Errorf("series: no bucket cover for [%s, %s)", stamp(p.From), stamp(p.To))
	}
	p.Buckets = keys
	p.Runs = runsOf(keys)
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
// pass over the steps in the order of their ends finds it; of two equally
// short paths into an edge the one arriving by the finer bucket wins.
// Week and month buckets do not nest, so no greedy choice of the coarsest
// level is always right. Each step considered is spent from bud (before:
// what the request had spent before this range); past it cover stops with
// the refusal. a and b are bucket edges, so whole seconds.
func (s *Spec) cover(a, b, now time.Time, bud *Budget, before int) ([]Key, bool, error) {
	if !a.Before(b) {
		return nil, true, nil
	}
	type step struct {
		from, to int64 // Unix seconds
		level    Level
	}
	var steps []step
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
			if !bud.spend() {
				return nil, false, bud.tooManyBuckets(before, fmt.Sprintf("the range [%s, %s) spans", stamp(a), stamp(b)), "buckets of the levels kept for it")
			}
			steps = append(steps, step{t.Unix(), n.Unix(), l})
			t = n
		}
	}
	slices.SortFunc(steps, func(x, y step) int { return cmp.Or(cmp.Compare(x.to, y.to), cmp.Compare(x.level, y.level)) })
	nodes := make([]int64, 1, len(steps)+1) // a, then every step's end, in order
	nodes[0] = a.Unix()
	for _, st := range steps {
		if st.to != nodes[len(nodes)-1] {
			nodes = append(nodes, st.to)
		}
	}
	type best struct {
		n   int32 // buckets from a; -1: not reached
		via int32 // the step that arrives, by index
	}
	dist := make([]best, len(nodes))
	for i := range dist {
		dist[i] = best{-1, -1}
	}
	dist[0].n = 0
	at := 0
	for i, st := range steps {
		for nodes[at] != st.to {
			at++
		}
		f, ok := slices.BinarySearch(nodes, st.from)
		if !ok || dist[f].n < 0 {
			continue
		}
		if d := dist[f].n + 1; dist[at].n < 0 || d < dist[at].n {
			dist[at] = best{d, int32(i)}
		}
	}
	end, ok := slices.BinarySearch(nodes, b.Unix())
	if !ok || dist[end].n < 0 {
		return nil, false, nil
	}
	keys := make([]Key, dist[end].n)
	for i, at := len(keys)-1, end; i >= 0; i-- {
		st := steps[dist[at].via]
		keys[i] = Key{st.level, time.Unix(st.from, 0).In(s.loc)}
		at, _ = slices.BinarySearch(nodes, st.from)
	}
	return keys, true, nil
}

// stamp writes t for messages, in UTC where its offset has seconds
// (RFC 3339 offsets are whole minutes).
func stamp(t time.Time) string {
	if _, off := t.Zone(); off%60 != 0 {
		t = t.UTC()
	}
	return t.Format(time.RFC3339)
}
