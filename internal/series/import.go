package series

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/sketchd/sketchd/internal/sketch"
)

// Import is one bucket to import: its key and its sketch, at the series'
// parameters (sketch.Conform).
type Import struct {
	Key
	Sketch sketch.Sketch
}

// Action is what an import does to one bucket.
type Action uint8

// The actions, as answers name them.
const (
	// Replaced: the bucket now holds the imported sketch, whatever it
	// held (PUT).
	Replaced Action = iota + 1
	// Merged: the imported sketch is unioned into the bucket (POST).
	Merged
	// RolledUp: the bucket is a coarser one holding an imported bucket,
	// which is unioned into it, as an add stamped inside the imported
	// bucket would have updated it.
	RolledUp
)

// String names the action as answers do.
func (a Action) String() string {
	switch a {
	case Replaced:
		return "replaced"
	case Merged:
		return "merged"
	case RolledUp:
		return "rolled_up"
	}
	return fmt.Sprintf("action(%d)", uint8(a))
}

// Write is one bucket an import writes: a replaced bucket takes Sketch as
// its state, a merged or rolled-up one the union of its state (or an
// empty sketch, when it holds none) and Sketch.
type Write struct {
	Key
	Sketch sketch.Sketch
	Action Action
}

// MaxImports bounds the buckets one import names.
const MaxImports = 10_000

// ImportWrites plans an import at now: each bucket imports names is
// replaced (replace) or merged into, and every coarser kept level's
// bucket that wholly holds it and has not expired takes it too (rolled
// up), so that ranges answered from coarser buckets count it as they
// count adds. A coarser bucket the import names itself is not rolled
// into: the import's own sketch for it is taken as its whole state.
// Roll-ups into one bucket are unioned first. Weeks do not lie inside
// months, so a week rolls up into nothing; hours and days roll up into
// the days, weeks and months holding them.
//
// Each named bucket must be the start of a bucket of a level the series
// keeps (a level it does not keep is a Conflict; a start that is no
// bucket's start Invalid, naming the bucket's start), not yet expired
// and not starting more than MaxFuture ahead of now (Unprocessable), and
// be named once (Invalid). The writes come in (level, start) order, the
// order the backends lock buckets in. The sketches are imports' own or
// new unions; the caller must not change them.
func (s *Spec) ImportWrites(imports []Import, replace bool, now time.Time) ([]Write, error) {
	if len(imports) > MaxImports {
		return nil, sketch.Errorf(sketch.TooLarge, "%d buckets; an import names at most %d", len(imports), MaxImports)
	}
	action := Merged
	if replace {
		action = Replaced
	}
	named := make(map[Key]int, len(imports))
	writes := make([]Write, 0, len(imports))
	for i, im := range imports {
		k := Key{im.Level, im.Start.In(s.loc)}
		if err := s.checkImport(k, now); err != nil {
			return nil, sketch.Prefixed(err, fmt.Sprintf("bucket %d: ", i))
		}
		if j, ok := named[k]; ok {
			return nil, sketch.Errorf(sketch.Invalid, "bucket %d (%s %s) is named twice, first as bucket %d", i, k.Level, stamp(k.Start), j)
		}
		named[k] = i
		writes = append(writes, Write{Key: k, Sketch: im.Sketch, Action: action})
	}
	rolled := map[Key]int{} // index in writes
	// copied says which rolled-up writes hold a copy of their own: the
	// first bucket rolled into one is the caller's sketch, copied only
	// when a second merges into it.
	copied := map[int]bool{}
	for i := range len(writes) {
		w := writes[i]
		end := w.Level.Next(w.Start, s.loc)
		for _, ls := range s.Levels {
			c := ls.Level
			if c <= w.Level || (w.Level == Week && c == Month) {
				continue
			}
			cs := c.Start(w.Start, s.loc)
			if c.Next(cs, s.loc).Before(end) || !c.Next(cs, s.loc).After(s.Cutoff(c, now)) {
				continue // not wholly inside, or expired
			}
			ck := Key{c, cs}
			if _, ok := named[ck]; ok {
				continue
			}
			if j, ok := rolled[ck]; ok {
				if !copied[j] {
					writes[j].Sketch, copied[j] = writes[j].Sketch.Clone(), true
				}
				if err := writes[j].Sketch.Merge(w.Sketch); err != nil {
					return nil, err
				}
				continue
			}
			rolled[ck] = len(writes)
			writes = append(writes, Write{Key: ck, Sketch: w.Sketch, Action: RolledUp})
		}
	}
	slices.SortFunc(writes, func(a, b Write) int {
		return cmp.Or(cmp.Compare(a.Level, b.Level), a.Start.Compare(b.Start))
	})
	return writes, nil
}

// checkImport checks that k names a bucket an import may write at now.
func (s *Spec) checkImport(k Key, now time.Time) error {
	if _, ok := s.Kept(k.Level); !ok {
		return sketch.Errorf(sketch.Conflict, "the series keeps %s, not %s buckets", s.levelNames(), k.Level)
	}
	if a := k.Level.Start(k.Start, s.loc); !a.Equal(k.Start) {
		return sketch.Errorf(sketch.Invalid, "%s is not the start of a %s bucket in %s; the %s holding it starts at %s", stamp(k.Start), k.Level, s.TZ, k.Level, stamp(a))
	}
	if k.Start.After(now.Add(MaxFuture)) {
		return sketch.Errorf(sketch.Unprocessable, "the %s bucket starting %s is in the future", k.Level, stamp(k.Start))
	}
	if !k.Level.Next(k.Start, s.loc).After(s.Cutoff(k.Level, now)) {
		r, _ := s.Kept(k.Level)
		return sketch.Errorf(sketch.Unprocessable, "the %s bucket starting %s has expired: the %s level keeps %s", k.Level, stamp(k.Start), k.Level, r)
	}
	return nil
}
