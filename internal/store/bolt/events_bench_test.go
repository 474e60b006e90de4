package bolt

import (
	"runtime"
	"testing"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/sketch"
)

// eventsBatch is what a 1 MiB events body parses to: 26,000 events of
// one id each, every one naming the sketches dau and wau in a list the
// parser shares between them.
func eventsBatch() []sketch.Event {
	evs := make([]sketch.Event, 26_000)
	names := []string{"dau", "wau"}
	for i := range evs {
		evs[i] = sketch.Event{ID: cms.IntID(int64(i)), Sketches: names}
	}
	return evs
}

// renumber gives the events of batch k ids no other batch has.
func renumber(evs []sketch.Event, k int) {
	for i := range evs {
		evs[i].ID = cms.IntID(int64(k)<<32 | int64(i))
	}
}

// BenchmarkAddEvents adds a 1 MiB body's worth of events to two dense
// HLLs, durably; alloc-B/event is what the store allocates for each
// (the parser's part is BenchmarkEventsDecode's), which 64 concurrent
// maximum-size events requests multiply.
func BenchmarkAddEvents(b *testing.B) {
	s, _ := openStore(b, Options{})
	evs := eventsBatch()
	if _, err := s.AddEvents(ctx, evs, true); err != nil {
		b.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for k := 1; b.Loop(); k++ {
		renumber(evs, k)
		if _, err := s.AddEvents(ctx, evs, false); err != nil {
			b.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	n := float64(b.N * len(evs))
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "alloc-B/event")
	b.ReportMetric(n/b.Elapsed().Seconds(), "events/s")
}

// TestAddEventsAllocation: a 1 MiB body's worth of events (26,000, each
// to two HLLs) costs the store at most 150 bytes each, beside the
// parser's 100 or so: the ids gathered by sketch in lists made once at
// their length, and their hashes. Gathering them by appending, with each
// id's event and every event's names kept, cost 670.
func TestAddEventsAllocation(t *testing.T) {
	s, _ := openStore(t, Options{})
	evs := eventsBatch()
	if _, err := s.AddEvents(ctx, evs, true); err != nil {
		t.Fatal(err)
	}
	renumber(evs, 1)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := s.AddEvents(ctx, evs, false); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	per := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(evs))
	t.Logf("%.1f bytes allocated per event", per)
	if raceEnabled {
		return // allocation sizes differ under the race detector (scripts/test checks without it)
	}
	if per > 150 {
		t.Errorf("%.1f bytes allocated per event, want at most 150", per)
	}
}
