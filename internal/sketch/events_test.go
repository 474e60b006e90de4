package sketch

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/cms"
)

// eventTargets is a store's Targets over names, by a lookup that counts
// its calls.
func eventTargets(events []Event, names []string, lookups *int) Targets {
	of := ListIndex(func(n string) int {
		*lookups++
		return slices.Index(names, n)
	})
	return func(i int, fn func(j int)) {
		for _, j := range of(events[i].Sketches) {
			fn(j)
		}
	}
}

func TestEventsGathered(t *testing.T) {
	shared := []string{"b", "a"}
	events := []Event{
		{ID: cms.IntID(1), Sketches: shared},
		{ID: cms.IntID(2), Sketches: shared},
		{ID: cms.TextID("x"), Sketches: []string{"c", "a", "c"}},       // c twice
		{ID: cms.IntID(3), Series: &EventSeries{Names: []string{"s"}}}, // no sketch
		{ID: cms.IntID(4), Sketches: shared},
	}
	names := SketchNames(events)
	if want := []string{"b", "a", "c"}; !slices.Equal(names, want) {
		t.Fatalf("SketchNames = %q, want %q", names, want)
	}
	names = append(names, "d") // named by no event
	lookups := 0
	targets := eventTargets(events, names, &lookups)
	ids := IDsByTarget(events, len(names), targets)
	want := [][]cms.ID{
		{cms.IntID(1), cms.IntID(2), cms.IntID(4)},
		{cms.IntID(1), cms.IntID(2), cms.TextID("x"), cms.IntID(4)},
		{cms.TextID("x"), cms.TextID("x")},
		nil,
	}
	for j := range want {
		if !slices.Equal(ids[j], want[j]) || (want[j] == nil) != (ids[j] == nil) || cap(ids[j]) != len(want[j]) {
			t.Errorf("%s: ids %v (cap %d), want %v", names[j], ids[j], cap(ids[j]), want[j])
		}
	}
	// Two passes over the events, looking a list up only where it
	// follows another: 2+3+2 names in the first (event 3's empty list
	// costs none), 3+2 in the second, which starts where the first ended.
	if lookups != 12 {
		t.Errorf("%d lookups of names, want 12: a list shared by consecutive events is looked up once", lookups)
	}
}

func TestEventErrorNamesTheEvent(t *testing.T) {
	sk, err := Spec{Params: cmsKind.Default()}.New()
	if err != nil {
		t.Fatal(err)
	}
	long := cms.TextID(strings.Repeat("x", cms.MaxTextLen+1))
	events := []Event{
		{ID: cms.IntID(1), Sketches: []string{"h"}},
		{ID: cms.IntID(2), Sketches: []string{"h", "c"}},
		{ID: cms.IntID(3), Sketches: []string{"h"}},
		{ID: long, Sketches: []string{"h", "c"}},
	}
	names := []string{"h", "c"}
	lookups := 0
	targets := eventTargets(events, names, &lookups)
	ids := IDsByTarget(events, len(names), targets)
	b, err := sk.Kind().Prepare(IDs(ids[1]))
	if err == nil {
		err = sk.Check(b)
	}
	if err == nil {
		t.Fatal("a Count-Min took a text id over its limit")
	}
	// c's second id is event 3's.
	got := EventError(sk, events, targets, 1, ids[1], err)
	if !strings.HasPrefix(got.Error(), "events[3]: ") || KindOf(got) != KindOf(err) {
		t.Errorf("EventError = %v (%v), want it to name events[3] and keep %v", got, KindOf(got), KindOf(err))
	}
}

func TestRepeated(t *testing.T) {
	var r Repeated[int, string]
	builds := 0
	keys := []int{1, 2}
	build := func() string { builds++; return fmt.Sprint(keys) }
	steps := []struct {
		keys []int
		want string
	}{{[]int{1, 2}, "[1 2]"}, {[]int{1, 2}, "[1 2]"}, {[]int{1}, "[1]"}, {[]int{1, 2}, "[1 2]"}}
	for i, s := range steps {
		keys = append(keys[:0], s.keys...) // the caller's buffer, reused
		if got := r.Of(keys, build); got != s.want {
			t.Errorf("step %d: %q, want %q", i, got, s.want)
		}
	}
	if builds != 3 {
		t.Errorf("%d builds, want 3: equal keys in a row share one", builds)
	}
}
