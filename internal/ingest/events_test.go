package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// parseEvents collects ParseJSONEvents' events.
// parseEvents collects ParseJSONEvents' events (TS copied, End dropped).
func parseEvents(body []byte, maxEvents int) ([]Event, error) {
	var out []Event
	err := ParseJSONEvents(body, maxEvents, func(ev Event) error {
		if ev.End <= 0 || ev.End > len(body) || body[ev.End-1] != '}' {
			return fmt.Errorf("End %d is not just after an event", ev.End)
		}
		ev.TS, ev.End = bytes.Clone(ev.TS), 0
		out = append(out, ev)
		return nil
	})
	return out, err
}

func TestParseJSONEvents(t *testing.T) {
	body := []byte(" {\"events\" : [ {\"id\":1,\"sketches\":[\"a\",\"b\"]}, {\"sketches\":[\"a\",\"b\"],\"id\":\"u\\u00e9\"},\n" +
		`{"id":-9223372036854775808,"sketches":["c"]},{"id":"","sketches":[]},{"id":2,"sketches":["a","b"]},` +
		`{"ts":"2026-11-23T04:00:00\u005a","series":["s\u0031"],"id":3,"sketches":["a\u0062"]}]} `)
	got, err := parseEvents(body, -1)
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{ID: IntID(1), Sketches: []string{"a", "b"}},
		{ID: TextID("u\u00e9"), Sketches: []string{"a", "b"}},
		{ID: IntID(-9223372036854775808), Sketches: []string{"c"}},
		{ID: TextID(""), Sketches: []string{}},
		{ID: IntID(2), Sketches: []string{"a", "b"}},
		{ID: IntID(3), Sketches: []string{"ab"}, Series: []string{"s1"}, TS: []byte("2026-11-23T04:00:00Z")},
	}
	if !eventsEqual(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	// Equal consecutive lists are shared.
	if &got[0].Sketches[0] != &got[1].Sketches[0] {
		t.Errorf("events 0 and 1 name the same sketches but do not share the list")
	}
	if &got[4].Sketches[0] == &got[0].Sketches[0] {
		t.Errorf("event 4 shares the list of event 0 across another list")
	}
	for i := range body {
		body[i] = 'x' // nothing aliases the body
	}
	if !eventsEqual(got, want) {
		t.Fatalf("events changed with the body: %v", got)
	}

	if got, err := parseEvents([]byte(`{"events":[]}`), 0); err != nil || len(got) != 0 {
		t.Errorf("empty events = %v, %v", got, err)
	}
	stop := errors.New("stop")
	n := 0
	err = ParseJSONEvents([]byte(`{"events":[{"id":1,"sketches":["a"]},{"id":2,"sketches":["a"]}]}`), -1, func(Event) error { n++; return stop })
	if err != stop || n != 1 {
		t.Errorf("yield's error: got %v after %d events, want it returned after 1", err, n)
	}
}

func eventsEqual(a, b []Event) bool {
	return slices.EqualFunc(a, b, func(x, y Event) bool {
		return x.ID == y.ID && slices.Equal(x.Sketches, y.Sketches) && slices.Equal(x.Series, y.Series) && bytes.Equal(x.TS, y.TS)
	})
}

var eventRejections = []rejection{
	{"empty", ``, ErrSyntax, 0, "empty body"},
	{"null events", `{"events":null}`, ErrType, 10, `"events" must be an array`},
	{"other key", `{"ids":[]}`, ErrField, 1, `unknown field "ids", want {"events":[…]}`},
	{"two keys", `{"events":[],"x":1}`, ErrField, -1, `unknown field "x"`},
	{"repeated key", `{"events":[],"events":[]}`, ErrField, -1, `duplicate field "events"`},
	{"event not object", `{"events":[1]}`, ErrType, 11, "events[0] at offset 11: number 1 is not an event"},
	{"trailing comma", `{"events":[{"id":1,"sketches":["a"]},]}`, ErrSyntax, -1, "trailing comma"},
	{"missing id", `{"events":[{"sketches":["a"]}]}`, ErrField, 11, `events[0] at offset 11: missing field "id"`},
	{"missing id with series", `{"events":[{"series":["a"],"ts":"x"}]}`, ErrField, 11, `missing field "id"`},
	{"repeated series", `{"events":[{"id":1,"series":["a"],"series":["b"]}]}`, ErrField, -1, `duplicate field "series"`},
	{"repeated ts", `{"events":[{"id":1,"ts":"a","ts":"b"}]}`, ErrField, -1, `duplicate field "ts"`},
	{"null series", `{"events":[{"id":1,"series":null}]}`, ErrType, -1, "events[0].series"},
	{"number ts", `{"events":[{"id":1,"series":["a"],"ts":17}]}`, ErrType, -1, "events[0].ts at offset 39: number 17 is not a time"},
	{"null ts", `{"events":[{"id":1,"series":["a"],"ts":null}]}`, ErrType, -1, "events[0].ts"},
	{"number series name", `{"events":[{"id":1,"series":[7]}]}`, ErrType, -1, "events[0].series[0]"},
	{"empty event", `{"events":[{}]}`, ErrField, 11, `missing field "id"`},
	{"repeated id", `{"events":[{"id":1,"id":2,"sketches":["a"]}]}`, ErrField, -1, `duplicate field "id"`},
	{"repeated sketches", `{"events":[{"id":1,"sketches":["a"],"sketches":["b"]}]}`, ErrField, -1, `duplicate field "sketches"`},
	{"unknown field", `{"events":[{"id":1,"sketches":["a"],"count":2}]}`, ErrField, -1, `unknown field "count"`},
	{"key case", `{"events":[{"ID":1,"sketches":["a"]}]}`, ErrField, -1, `unknown field "ID"`},
	{"float id", `{"events":[{"id":1.5,"sketches":["a"]}]}`, ErrType, -1, "events[0].id"},
	{"big id", `{"events":[{"id":9223372036854775808,"sketches":["a"]}]}`, ErrRange, -1, "events[0].id"},
	{"null id", `{"events":[{"id":null,"sketches":["a"]}]}`, ErrType, -1, "events[0].id"},
	{"null sketches", `{"events":[{"id":1,"sketches":null}]}`, ErrType, -1, "events[0].sketches"},
	{"number name", `{"events":[{"id":1,"sketches":["a",7]}]}`, ErrType, -1, "events[0].sketches[1] at offset 35: number 7 is not a name"},
	{"bad escape in name", `{"events":[{"id":1,"sketches":["a\q"]}]}`, ErrSyntax, -1, "events[0].sketches[0]"},
	{"unterminated", `{"events":[{"id":1,"sketches":["a"]}`, ErrSyntax, -1, "want ',' or ']'"},
	{"trailing data", `{"events":[]} x`, ErrSyntax, -1, "after the JSON object"},
	{"bom", "\xEF\xBB\xBF{\"events\":[]}", ErrSyntax, 0, "byte order mark"},
}

func TestParseJSONEventsRejects(t *testing.T) {
	for _, r := range eventRejections {
		t.Run(r.name, func(t *testing.T) {
			n := 0
			err := ParseJSONEvents([]byte(r.body), -1, func(Event) error { n++; return nil })
			checkRejected(t, r, err, 0, 0)
		})
	}
	body := []byte(`{"events":[{"id":1,"sketches":["a"]},{"id":2,"sketches":["a"]},{"id":3,"sketches":["a"]}]}`)
	n := 0
	err := ParseJSONEvents(body, 2, func(Event) error { n++; return nil })
	if !errors.Is(err, ErrTooMany) || n != 2 {
		t.Errorf("3 events with a limit of 2: %v after %d, want ErrTooMany after 2", err, n)
	}
}

// eventBodies are shapes of events bodies for the allocation bound,
// including ones built to make a parser allocate: many distinct short
// names, many names an event, long text ids.
func eventBodies(size int) map[string][]byte {
	build := func(ev func(i int) string) []byte {
		var b strings.Builder
		b.WriteString(`{"events":[`)
		for i := 0; b.Len() < size; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(ev(i))
		}
		b.WriteString(`]}`)
		return []byte(b.String())
	}
	return map[string][]byte{
		"minimal": build(func(i int) string { return `{"id":` + strconv.Itoa(i%10) + `,"sketches":["a"]}` }),
		"typical": build(func(i int) string {
			return fmt.Sprintf(`{"id":%d,"sketches":["dau:2026-11-23","wau:2026-w47"]}`, 1e9+i)
		}),
		"text ids":       build(func(i int) string { return fmt.Sprintf(`{"id":"user-%08d","sketches":["a"]}`, i) }),
		"distinct names": build(func(i int) string { return `{"id":1,"sketches":["` + strconv.FormatInt(int64(i), 36) + `"]}` }),
		"many names": build(func(i int) string {
			names := make([]string, 100)
			for j := range names {
				names[j] = `"` + strconv.FormatInt(int64(i*100+j)%1296, 36) + `"`
			}
			return `{"id":1,"sketches":[` + strings.Join(names, ",") + `]}`
		}),
		"alternating": build(func(i int) string { return `{"id":1,"sketches":["` + string(rune('a'+i%2)) + `"]}` }),
	}
}

// maxEventAllocRatio bounds the bytes ParseJSONEvents allocates per body
// byte, arenas and interning map included, on every shape above. (The
// caller's slice of events is separate: see ingest.MinEventBytes.)
const maxEventAllocRatio = 4.0

// TestEventsAllocationBounded: whatever the body's shape, parsing it
// allocates at most maxEventAllocRatio bytes per body byte (in a build
// without the race detector: scripts/test runs the package in one).
func TestEventsAllocationBounded(t *testing.T) {
	for name, body := range eventBodies(1 << 20) {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			n := 0
			err := ParseJSONEvents(body, -1, func(Event) error { n++; return nil })
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			ratio := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(body))
			t.Logf("%d events in %d bytes: %.2f bytes allocated per body byte", n, len(body), ratio)
			if raceEnabled {
				return // allocation sizes differ under the race detector
			}
			if ratio > maxEventAllocRatio {
				t.Errorf("%.2f bytes allocated per body byte, want at most %v", ratio, maxEventAllocRatio)
			}
		})
	}
}

func refJSONEvents(body []byte) ([]Event, verdict) {
	var into struct {
		Events *[]struct {
			ID       any       `json:"id"`
			Sketches *[]string `json:"sketches"`
			Series   *[]string `json:"series"`
			TS       *string   `json:"ts"`
		} `json:"events"`
	}
	root := refTree(body, &into)
	if root == nil {
		return nil, refuse
	}
	_, arr := onlyKey(root, "events")
	if arr == nil || arr.kind != 'a' {
		return nil, refuse
	}
	events := []Event{}
	for _, e := range arr.elems {
		if e.kind != 'o' {
			return nil, refuse
		}
		var ev Event
		seen := map[string]bool{}
		for k, name := range e.keys {
			v := e.elems[k]
			if seen[name] {
				return nil, refuse
			}
			seen[name] = true
			switch name {
			case "id":
				var ok bool
				if ev.ID, ok = refID(v); !ok {
					return nil, refuse
				}
			case "sketches", "series":
				if v.kind != 'a' {
					return nil, refuse
				}
				list := []string{}
				for _, s := range v.elems {
					if s.kind != 's' {
						return nil, refuse
					}
					list = append(list, s.str)
				}
				if name == "sketches" {
					ev.Sketches = list
				} else {
					ev.Series = list
				}
			case "ts":
				if v.kind != 's' {
					return nil, refuse
				}
				ev.TS = []byte(v.str)
			default:
				return nil, refuse
			}
		}
		if !seen["id"] {
			return nil, refuse
		}
		events = append(events, ev)
	}
	return events, textVerdict(body)
}

func FuzzJSONEvents(f *testing.F) {
	for _, s := range []string{
		`{"events":[]}`, `{"events":[{"id":1,"sketches":["a","b"]},{"sketches":["a","b"],"id":"x"}]}`,
		` {"events" : [ {"id":"\u00e9\ud83d\ude00","sketches":["a\u0062",""]} ] } `,
		`{"events":[{"id":-9223372036854775808,"sketches":[]},{"id":0,"sketches":["a"]}]}`,
		`{"events":[{"id":1,"series":["s"],"ts":"2026-11-23T04:00:00Z"},{"ts":"x\u0041","sketches":["a"],"series":["s"],"id":2}]}`,
	} {
		f.Add([]byte(s), int16(-1))
		f.Add([]byte(s), int16(1))
	}
	for _, r := range eventRejections {
		f.Add([]byte(r.body), int16(3))
	}
	f.Fuzz(func(t *testing.T, body []byte, limit int16) {
		want, v := refJSONEvents(body)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := parseEvents(body, int(limit))
		runtime.ReadMemStats(&after)
		checkOutcome(t, body, err, v, len(want), int(limit), func() bool { return eventsEqual(got, want) })
		// The parser's arenas start at one chunk each; beyond that,
		// allocation follows the body (plus the collected slice here).
		if grown := after.TotalAlloc - before.TotalAlloc; grown > uint64(textChunk+16*listChunk+64*len(body)+4096) {
			t.Fatalf("parsing %d bytes allocated %d bytes", len(body), grown)
		}
	})
}
