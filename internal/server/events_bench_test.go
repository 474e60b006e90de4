package server

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sketchd/sketchd/internal/sketch"
)

// eventsBody is an events body of about size bytes: each event one id and
// two sketches, as a product backend sends them.
func eventsBody(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"events":[`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"sketches":["dau","wau"]}`, 1_000_000_000+i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// decodeEventsReflect is how events bodies were decoded before the
// dedicated parser (encoding/json into DTOs, key checks, then the ids):
// the peer of the benchmark below.
func decodeEventsReflect(body []byte) ([]sketch.Event, error) {
	var req struct {
		Events []struct {
			ID       json.RawMessage `json:"id"`
			Sketches []string        `json:"sketches"`
		} `json:"events"`
	}
	if err := strictUnmarshal(body, &req); err != nil {
		return nil, err
	}
	ids, err := parseRawIDs(len(req.Events), func(i int) []byte { return req.Events[i].ID }, "events[%d].id")
	if err != nil {
		return nil, err
	}
	events := make([]sketch.Event, len(req.Events))
	for i, ev := range req.Events {
		events[i] = sketch.Event{ID: ids[i], Sketches: ev.Sketches}
	}
	return events, nil
}

// BenchmarkEventsDecode compares the events parser with the encoding/json
// decoding it replaced, on the same 4 MiB body; alloc-B/body-B is the
// bytes allocated per body byte (what 64 concurrent bodies multiply).
func BenchmarkEventsDecode(b *testing.B) {
	body := eventsBody(4 << 20)
	s := New(DefaultConfig(), Deps{})
	for _, bc := range []struct {
		name   string
		decode func([]byte) ([]sketch.Event, error)
	}{
		{"parser", func(b []byte) ([]sketch.Event, error) { return s.parseEvents(context.Background(), b) }},
		{"encoding-json", decodeEventsReflect},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			n := 0
			for b.Loop() {
				events, err := bc.decode(body)
				if err != nil {
					b.Fatal(err)
				}
				n = len(events)
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(len(body)), "alloc-B/body-B")
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// TestEventsDecodeAllocation: decoding an events body, the events slice
// included, allocates at most 2 bytes per body byte (encoding/json took
// about 46; 104-byte events took 2.6, 64-byte ones 1.6).
func TestEventsDecodeAllocation(t *testing.T) {
	body := eventsBody(4 << 20)
	s := New(DefaultConfig(), Deps{})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	events, err := s.parseEvents(context.Background(), body)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	ratio := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(body))
	t.Logf("%d events in %d bytes: %.2f bytes allocated per body byte", len(events), len(body), ratio)
	if raceEnabled {
		return // allocation sizes differ under the race detector (scripts/test checks without it)
	}
	if ratio > 2 {
		t.Errorf("%.2f bytes allocated per body byte, want at most 2", ratio)
	}
}

// TestEventsShareSeries: events naming the same series without a stamp
// share one EventSeries; a stamped event has its own, and the unstamped
// event after it is not given its stamp.
func TestEventsShareSeries(t *testing.T) {
	s := New(DefaultConfig(), Deps{})
	body := `{"events":[` +
		`{"id":1,"series":["a","b"]},` +
		`{"id":2,"series":["a","b"]},` +
		`{"id":3,"series":["a","b"],"ts":"2026-11-30T01:02:03Z"},` +
		`{"id":4,"series":["a","b"]},` +
		`{"id":5,"series":["c"]},` +
		`{"id":6,"sketches":["h"]}]}`
	events, err := s.parseEvents(context.Background(), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 6 {
		t.Fatalf("%d events, want 6", len(events))
	}
	stamp := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	for i, want := range []struct {
		names []string
		ts    time.Time
	}{{[]string{"a", "b"}, time.Time{}}, {[]string{"a", "b"}, time.Time{}}, {[]string{"a", "b"}, stamp}, {[]string{"a", "b"}, time.Time{}}, {[]string{"c"}, time.Time{}}, {nil, time.Time{}}} {
		if got := events[i].SeriesNames(); !slices.Equal(got, want.names) {
			t.Errorf("events[%d] names series %q, want %q", i, got, want.names)
		}
		if got := events[i].Stamp(); !got.Equal(want.ts) {
			t.Errorf("events[%d] stamped %v, want %v", i, got, want.ts)
		}
	}
	if events[0].Series != events[1].Series || events[1].Series != events[3].Series {
		t.Errorf("unstamped events naming the same series hold %p, %p and %p, want one shared", events[0].Series, events[1].Series, events[3].Series)
	}
	if events[2].Series == events[1].Series || events[4].Series == events[3].Series || events[5].Series != nil {
		t.Errorf("a stamped event, another list or no series shares an EventSeries")
	}
}
