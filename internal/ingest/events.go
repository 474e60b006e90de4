package ingest

import (
	"slices"
	"strconv"
	"unsafe"
)

// Event is one event of an events body: an id, the names of the sketches
// and of the series it goes to, and its time stamp for the series.
type Event struct {
	ID ID
	// Sketches and Series are shared with other events of the same call
	// that name the same ones in the same order: callers must not modify
	// them. Either may be empty (the key absent or []).
	Sketches, Series []string
	// TS is the "ts" string, unescaped, valid only during the yield call
	// (nil if absent).
	TS []byte
	// End is the offset in the body just after the event, so a caller can
	// estimate how many events the rest of the body holds.
	End int
}

// ParseJSONEvents parses a JSON events body and calls yield for each event,
// in order. The body must be exactly one JSON object with exactly one key,
// "events", whose value is an array of objects with the keys "id" (an id,
// as for AppendJSONItems; required), "sketches" and "series" (arrays of
// JSON strings) and "ts" (a JSON string), in any order. Everything else
// follows the package rules; the sentinels are the same (a missing "id" or
// an unknown or repeated key is ErrField; null, a non-array list, a
// non-string name or "ts" is ErrType). At most maxEvents events are taken
// (maxEvents < 0: no limit): one more is ErrTooMany, before yield sees it.
// Names and times are not checked beyond being strings; that is the
// caller's business (yield may refuse an event by returning an error,
// which ParseJSONEvents returns as is and stops).
//
// Memory is bounded by the body, not by what it claims: the texts of ids
// are copied into an arena that grows in fixed chunks, each name is
// copied once (or taken from the previous event when it names the same
// one at the same place), and a list of names equal to the previous
// event's is shared, never copied. Event values never alias body, so the
// body buffer may be reused after the call. Texts of ids share the
// arena's chunks, which a caller keeping a few of them for long should
// strings.Clone.
func ParseJSONEvents(body []byte, maxEvents int, yield func(Event) error) error {
	k := keys{"events", "events"}
	_, i, e := openBody(body, k)
	if e != nil {
		return e
	}
	p := eventParser{b: body}
	if i, err := p.array(i, maxEvents, yield); err != nil {
		return err
	} else if e := closeBody(body, i, k, 0); e != nil {
		return e
	}
	return nil
}

// eventParser holds the arenas of one ParseJSONEvents call.
type eventParser struct {
	b     []byte
	text  []byte   // current chunk for the texts of ids
	lists []string // current chunk for lists of names
	list  []string // the names of the list being parsed
	// the last lists of sketches and series handed out
	prevSketches, prevSeries []string
	ts                       []byte // the current event's "ts"
	scratch                  []byte // unescaped strings
}

const (
	textChunk = 64 << 10
	listChunk = 4 << 10
)

// str copies s into the text arena and returns it as a string that never
// changes (a chunk is never written again where a string points).
func (p *eventParser) str(s []byte) string {
	if len(s) == 0 {
		return ""
	}
	if len(s) > cap(p.text)-len(p.text) {
		p.text = make([]byte, 0, max(textChunk, len(s)))
	}
	start := len(p.text)
	p.text = append(p.text, s...)
	return unsafe.String(&p.text[start], len(s))
}

// name returns a copy of the j-th name of a list: the previous list's
// j-th name if it is the same, else a string of its own (never in an
// arena: a store keeps names as keys, and one name must not pin a chunk).
func name(prev []string, j int, s []byte) string {
	if j < len(prev) && prev[j] == string(s) {
		return prev[j]
	}
	return string(s)
}

// keep returns p.list as *prev (the previous event's list of the same key)
// if equal, else as a copy in the list arena, which becomes *prev.
func (p *eventParser) keep(prev *[]string) []string {
	if *prev != nil && slices.Equal(p.list, *prev) {
		return *prev
	}
	n := len(p.list)
	if n > cap(p.lists)-len(p.lists) {
		p.lists = make([]string, 0, max(listChunk, n))
	}
	start := len(p.lists)
	p.lists = append(p.lists, p.list...)
	*prev = p.lists[start : start+n : start+n]
	return *prev
}

// array parses the "events" array at b[i].
func (p *eventParser) array(i, maxEvents int, yield func(Event) error) (int, error) {
	const field = "events"
	b := p.b
	if i >= len(b) || b[i] != '[' {
		return i, notArray(b, i, field)
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for n := 0; ; n++ {
		if n == maxEvents {
			return i, &Error{Err: ErrTooMany, Offset: i, Path: pathIndex(field, n), Reason: "more than " + strconv.Itoa(maxEvents) + " events in one request"}
		}
		ev, j, e := p.event(i, n)
		if e != nil {
			return j, e
		}
		if err := yield(ev); err != nil {
			return j, err
		}
		i = skipSpace(b, j)
		if i < len(b) {
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
				continue
			case ']':
				return i + 1, nil
			}
		}
		return i, afterElem(b, i, pathIndex(field, n))
	}
}

// event parses {"id":…,"sketches":[…],"series":[…],"ts":…} at b[i], the
// n-th event.
func (p *eventParser) event(i, n int) (Event, int, *Error) {
	b := p.b
	path := func(sub string) string { return pathIndex("events", n) + sub }
	var ev Event
	if i >= len(b) {
		return ev, i, at(newError(ErrSyntax, i, "unexpected end of body, want an event"), path(""))
	}
	if b[i] != '{' {
		if b[i] == ']' && n > 0 {
			return ev, i, at(newError(ErrSyntax, i, "trailing comma before ']'"), path(""))
		}
		d, value := describe(b, i)
		if !value {
			return ev, i, at(newError(ErrSyntax, i, "unexpected "+d+`, want an event {"id":…,"sketches":[…]}`), path(""))
		}
		return ev, i, at(newError(ErrType, i, d+` is not an event (want {"id":…,"sketches":[…]})`), path(""))
	}
	start := i
	i = skipSpace(b, i+1)
	var haveID, haveSketches, haveSeries, haveTS bool
	if i < len(b) && b[i] == '}' {
		i++
		goto missing
	}
	for {
		key, j, e := parseKey(b, i)
		if e != nil {
			return ev, j, at(e, path(""))
		}
		var seen *bool
		switch string(key) {
		case "id":
			seen = &haveID
		case "sketches":
			seen = &haveSketches
		case "series":
			seen = &haveSeries
		case "ts":
			seen = &haveTS
		default:
			return ev, i, at(newError(ErrField, i, "unknown field "+quote(key)+` (want "id", "sketches", "series" or "ts")`), path(""))
		}
		if *seen {
			return ev, i, at(newError(ErrField, i, "duplicate field "+quote(key)), path(""))
		}
		*seen = true
		switch string(key) {
		case "id":
			if ev.ID, j, e = p.id(j); e != nil {
				return ev, j, at(e, path(".id"))
			}
		case "sketches":
			if j, e = p.names(j, n, "sketches", p.prevSketches); e != nil {
				return ev, j, e
			}
			ev.Sketches = p.keep(&p.prevSketches)
		case "series":
			if j, e = p.names(j, n, "series", p.prevSeries); e != nil {
				return ev, j, e
			}
			ev.Series = p.keep(&p.prevSeries)
		case "ts":
			if j >= len(b) {
				return ev, j, at(newError(ErrSyntax, j, "unexpected end of body, want a time"), path(".ts"))
			}
			if b[j] != '"' {
				d, value := describe(b, j)
				if !value {
					return ev, j, at(newError(ErrSyntax, j, "unexpected "+d+", want a time"), path(".ts"))
				}
				return ev, j, at(newError(ErrType, j, d+" is not a time (want an RFC 3339 string)"), path(".ts"))
			}
			var ts []byte
			if ts, j, e = p.string(j); e != nil {
				return ev, j, at(e, path(".ts"))
			}
			// Copied: a later string of the event reuses the scratch.
			p.ts = append(p.ts[:0], ts...)
			ev.TS = p.ts
		}
		i = skipSpace(b, j)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			i++
			break
		}
		return ev, i, at(newError(ErrSyntax, i, "want ',' or '}' in an event, found "+found(b, i)), path(""))
	}
missing:
	if !haveID {
		return ev, i, at(newError(ErrField, start, `missing field "id"`), path(""))
	}
	ev.End = i
	return ev, i, nil
}

// id parses an id at b[i], copying a text into the arena.
func (p *eventParser) id(i int) (ID, int, *Error) {
	b := p.b
	if i >= len(b) {
		return ID{}, i, newError(ErrSyntax, i, "unexpected end of body, want an id")
	}
	switch c := b[i]; {
	case c-'0' < 10 || c == '-':
		v, j, ok := parseInt(b, i)
		if !ok {
			return ID{}, i, intError(b, i, "ids")
		}
		return ID{Int: v}, j, nil
	case c == '"':
		s, j, e := p.string(i)
		if e != nil {
			return ID{}, j, e
		}
		return ID{Text: p.str(s), IsText: true}, j, nil
	}
	return ID{}, i, elemError(b, i, "id", 0)
}

// string returns the unescaped bytes of the JSON string at b[i] (b[i] is
// '"'), valid until the next call, and the index after it.
func (p *eventParser) string(i int) ([]byte, int, *Error) {
	b := p.b
	end, ok := scanString(b, i+1)
	if ok {
		return b[i+1 : end], end + 1, nil
	}
	s, j, e := decodeString(b, i+1, p.scratch[:0])
	if e != nil {
		return nil, j, e
	}
	p.scratch = s
	return s, j, nil
}

// names parses the array of names at b[i] (key "sketches" or "series" of
// the ev-th event; prev is that key's previous list) into p.list.
func (p *eventParser) names(i, ev int, key string, prev []string) (int, *Error) {
	b := p.b
	p.list = p.list[:0]
	if i >= len(b) || b[i] != '[' {
		return i, at(notArray(b, i, key), pathIndex("events", ev)+"."+key)
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for n := 0; ; n++ {
		if i >= len(b) {
			return i, at(newError(ErrSyntax, i, "unexpected end of body, want a name"), namePath(ev, key, n))
		}
		if b[i] != '"' {
			if b[i] == ']' && n > 0 {
				return i, at(newError(ErrSyntax, i, "trailing comma before ']'"), namePath(ev, key, n))
			}
			d, value := describe(b, i)
			if !value {
				return i, at(newError(ErrSyntax, i, "unexpected "+d+", want a name"), namePath(ev, key, n))
			}
			return i, at(newError(ErrType, i, d+" is not a name (want a JSON string)"), namePath(ev, key, n))
		}
		s, j, e := p.string(i)
		if e != nil {
			return j, at(e, namePath(ev, key, n))
		}
		p.list = append(p.list, name(prev, n, s))
		i = skipSpace(b, j)
		if i < len(b) {
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
				continue
			case ']':
				return i + 1, nil
			}
		}
		return i, afterElem(b, i, namePath(ev, key, n))
	}
}

// namePath is the path of the n-th name under key of the ev-th event, for
// messages.
func namePath(ev int, key string, n int) string {
	return pathIndex("events", ev) + "." + key + "[" + strconv.Itoa(n) + "]"
}
