package ingest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sketchd/sketchd/internal/murmur"
)

// The fuzz oracles use encoding/json as the reference. Where this package
// is documented to be stricter, the reference computes what encoding/json
// would give and says whether a refusal is allowed:
//
//   - keys: encoding/json matches them case-insensitively and lets a
//     duplicate win; here a body must have exactly one key, spelt exactly,
//     so the reference walks the tokens itself and refuses anything else;
//   - null where an array or item is expected, and floats, bools, null and
//     containers as ids, decode fine into []any but are refused by the
//     service, so the reference refuses them too;
//   - invalid UTF-8 and lone surrogates are replaced by U+FFFD in
//     encoding/json and refused here: for such bodies (raw invalid UTF-8
//     or a surrogate escape anywhere) a refusal with ErrSyntax is allowed,
//     but an acceptance must still give encoding/json's ids.

type verdict int

const (
	refuse    verdict = iota // the service must refuse the body
	accept                   // the service must accept it with the reference's ids
	mayRefuse                // accept with the reference's ids, or refuse as invalid text
)

// surrogateEscape finds a \u escape of a UTF-16 surrogate (or something
// that looks like one behind an escaped backslash: that only makes the
// oracle more lenient).
var surrogateEscape = regexp.MustCompile(`\\u[dD][89abcdefABCDEF]`)

func textVerdict(body []byte) verdict {
	if !utf8.Valid(body) || surrogateEscape.Match(body) {
		return mayRefuse
	}
	return accept
}

// node is a JSON value read with encoding/json's tokenizer, keeping object
// keys in order with duplicates.
type node struct {
	kind  byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	str   string
	num   json.Number
	keys  []string
	elems []*node // object values or array elements
}

func readNode(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		n := &node{kind: 'a'}
		if tok == '{' {
			n.kind = 'o'
		}
		for dec.More() {
			if n.kind == 'o' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k.(string))
			}
			e, err := readNode(dec)
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, e)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return n, nil
	case string:
		return &node{kind: 's', str: tok}, nil
	case json.Number:
		return &node{kind: 'n', num: tok}, nil
	case bool:
		return &node{kind: 'b'}, nil
	case nil:
		return &node{kind: 'z'}, nil
	}
	panic("unreachable")
}

// refTree checks the body with encoding/json: valid JSON, decodes into the
// struct the service would use (UseNumber, DisallowUnknownFields), and
// returns its token tree.
func refTree(body []byte, into any) *node {
	if !json.Valid(body) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return nil
	}
	dec = json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	n, err := readNode(dec)
	if err != nil {
		panic("token walk failed on valid JSON: " + err.Error())
	}
	return n
}

// onlyKey returns the value of the object's only key if it is one of names.
func onlyKey(n *node, names ...string) (string, *node) {
	if n.kind != 'o' || len(n.keys) != 1 {
		return "", nil
	}
	for _, name := range names {
		if n.keys[0] == name {
			return name, n.elems[0]
		}
	}
	return "", nil
}

// refID converts an id node to an ID.
func refID(n *node) (ID, bool) {
	switch n.kind {
	case 'n':
		v, err := strconv.ParseInt(string(n.num), 10, 64)
		return IntID(v), err == nil
	case 's':
		return TextID(n.str), true
	}
	return ID{}, false
}

func refJSONHashes(body []byte) ([]uint64, verdict) {
	var into struct {
		IDs    *[]any `json:"ids"`
		Hashes *[]any `json:"hashes"`
	}
	root := refTree(body, &into)
	if root == nil {
		return nil, refuse
	}
	key, arr := onlyKey(root, "ids", "hashes")
	if arr == nil || arr.kind != 'a' {
		return nil, refuse
	}
	hashes := []uint64{}
	for _, e := range arr.elems {
		id, ok := refID(e)
		if !ok || (key == "hashes" && id.IsText) {
			return nil, refuse
		}
		if key == "hashes" {
			hashes = append(hashes, uint64(id.Int))
		} else {
			hashes = append(hashes, id.Hash())
		}
	}
	return hashes, textVerdict(body)
}

func refJSONItems(body []byte) ([]Item, verdict) {
	var into struct {
		IDs   *[]any `json:"ids"`
		Items *[]struct {
			ID    any          `json:"id"`
			Count *json.Number `json:"count"`
		} `json:"items"`
	}
	root := refTree(body, &into)
	if root == nil {
		return nil, refuse
	}
	key, arr := onlyKey(root, "ids", "items")
	if arr == nil || arr.kind != 'a' {
		return nil, refuse
	}
	items := []Item{}
	for _, e := range arr.elems {
		if key == "ids" {
			id, ok := refID(e)
			if !ok {
				return nil, refuse
			}
			items = append(items, Item{id, 1})
			continue
		}
		if e.kind != 'o' || len(e.keys) != 2 || e.keys[0] == e.keys[1] {
			return nil, refuse
		}
		var it Item
		for k, name := range e.keys {
			v := e.elems[k]
			switch name {
			case "id":
				var ok bool
				if it.ID, ok = refID(v); !ok {
					return nil, refuse
				}
			case "count":
				c, err := strconv.ParseInt(string(v.num), 10, 64)
				if v.kind != 'n' || err != nil || c <= 0 {
					return nil, refuse
				}
				it.Count = c
			default:
				return nil, refuse
			}
		}
		items = append(items, it)
	}
	return items, textVerdict(body)
}

// checkOutcome applies the oracle to one parse: n is the number of ids the
// reference found, limit the limit passed.
func checkOutcome(t *testing.T, body []byte, err error, v verdict, n, limit int, same func() bool) {
	t.Helper()
	if err == nil {
		if v == refuse {
			t.Fatalf("accepted %q, which the reference refuses", body)
		}
		if limit >= 0 && n > limit {
			t.Fatalf("accepted %d ids from %q with limit %d", n, body, limit)
		}
		if !same() {
			t.Fatalf("ids of %q differ from the reference's", body)
		}
		return
	}
	checkWrapsSentinel(t, err)
	var e *Error
	errors.As(err, &e)
	if e.Offset < 0 || e.Offset > len(body) {
		t.Fatalf("error %q: offset outside the body (%d bytes)", err, len(body))
	}
	switch {
	case v == refuse:
	case v == mayRefuse && errors.Is(err, ErrSyntax) &&
		(strings.Contains(e.Reason, "UTF-8") || strings.Contains(e.Reason, "surrogate")):
	case limit >= 0 && n > limit:
		if !errors.Is(err, ErrTooMany) {
			t.Fatalf("refused %q with %q, want ErrTooMany (%d ids, limit %d)", body, err, n, limit)
		}
	default:
		t.Fatalf("refused %q with %q; the reference accepts it", body, err)
	}
}

func addJSONSeeds(f *testing.F) {
	for _, s := range []string{
		`{"ids":[]}`, `{"ids":[1,2,3]}`, `{"ids":[-9223372036854775808,"a\u00e9\ud83d\ude00",""]}`,
		`{"hashes":[1,-1]}`, " {\n\"ids\" : [ 1 , \"x\" ] }\n", `{"items":[{"id":1,"count":2},{"count":1,"id":"a"}]}`,
		`{"ids":[12345678901234567,1234567,"user-12345"]}`, `{"ids":["\u00e9\u00E9\\\"\/"]}`,
	} {
		f.Add([]byte(s), int16(-1))
		f.Add([]byte(s), int16(1))
	}
	for _, r := range append(jsonRejections, itemRejections...) {
		f.Add([]byte(r.body), int16(3))
	}
}

func FuzzJSONHashes(f *testing.F) {
	addJSONSeeds(f)
	for _, s := range intListSeeds {
		f.Add([]byte(`{"ids":[`+strings.Repeat(s+",", 3)+`"x",`+s+`]}`), int16(-1))
		f.Add([]byte(`{"hashes":[`+strings.Repeat(s+",", 3)+s+`]}`), int16(7))
	}
	// Runs of string ids long enough for the text run (textRun): UUIDs,
	// the longest it takes and one more, with an escape, a control
	// character or non-ASCII bytes among them.
	uuid := `"8c1f9a2e-4b7d-4e1a-9f3c-2d5e6a7b8c9d"`
	for _, sep := range []string{",", ", ", ",\n  "} {
		f.Add([]byte(`{"ids":[`+strings.Repeat(uuid+sep, 6)+uuid+`]}`), int16(-1))
		f.Add([]byte(`{"ids":[`+strings.Repeat(`"`+strings.Repeat("a", maxRunText)+`"`+sep, 3)+`"`+strings.Repeat("b", maxRunText+1)+`"`+sep+uuid+sep+uuid+`]}`), int16(-1))
	}
	for _, odd := range []string{`"a\"b"`, "\"a\x01b\"", `"\u00e9t\u00e9"`, "\"été\"", "\"\xff\"", `""`, `12`} {
		f.Add([]byte(`{"ids":[`+strings.Repeat(uuid+",", 3)+odd+","+strings.Repeat(uuid+", ", 3)+uuid+`]}`), int16(5))
	}
	f.Fuzz(func(t *testing.T, body []byte, limit int16) {
		want, v := refJSONHashes(body)
		prefix := []uint64{42}
		got, err := AppendJSONHashes(prefix, body, int(limit))
		sameWithoutIntKernel(t, body, got, err, func() ([]uint64, error) { return AppendJSONHashes([]uint64{42}, body, int(limit)) })
		if err != nil && (len(got) != 1 || got[0] != 42) {
			t.Fatalf("dst changed on error: %x", got)
		}
		checkOutcome(t, body, err, v, len(want), int(limit), func() bool {
			return got[0] == 42 && equalHashes(got[1:], want)
		})
		// With room for every id the runs of integers take the ids that
		// fit them; what they take or refuse must not change the answer.
		roomy, rerr := AppendJSONHashes(make([]uint64, 1, len(body)+1), body, int(limit))
		if (err == nil) != (rerr == nil) || (err != nil && err.Error() != rerr.Error()) ||
			(err == nil && !equalHashes(roomy[1:], got[1:])) {
			t.Fatalf("with room: %x, %v; without: %x, %v", roomy[1:], rerr, got[1:], err)
		}
		// AppendJSONItems parses "ids" one element at a time through the
		// general path: the errors must be the same, byte for byte.
		if FirstKey(body) == "ids" {
			_, ierr := AppendJSONItems(nil, body, int(limit))
			if !sameIDsError(err, ierr) {
				t.Fatalf("AppendJSONHashes error %v, AppendJSONItems error %v for %q", err, ierr, body)
			}
		}
	})
}

// sameWithoutIntKernel checks that parse, run with each narrower kernel
// and with the word loops alone, gives what got and err, parsed with the
// widest kernel the processor runs, are: the same values or the same
// error, byte for byte.
func sameWithoutIntKernel(t *testing.T, body []byte, got []uint64, err error, parse func() ([]uint64, error)) {
	t.Helper()
	for k := intsKernel - 1; k >= kernelWords; k-- {
		narrower, nerr := withIntKernel(k, parse)
		if !sameParse(got, err, narrower, nerr) {
			t.Fatalf("%q: %v kernel %x, %v; %v %x, %v", body, intsKernel, got, err, k, narrower, nerr)
		}
	}
}

// sameIDsError says whether AppendJSONHashes and AppendJSONItems refused
// an "ids" body alike: the same error, byte for byte, except after the
// array, where each names the other key it takes ("hashes" or "items")
// and only the sentinel and the offset must agree.
func sameIDsError(err, ierr error) bool {
	if err == nil || ierr == nil {
		return err == nil && ierr == nil
	}
	var e, ie *Error
	if !errors.As(err, &e) || !errors.As(ierr, &ie) {
		return false
	}
	if strings.Contains(e.Reason, `"hashes"`) || strings.Contains(ie.Reason, `"items"`) {
		return e.Err == ie.Err && e.Offset == ie.Offset
	}
	return err.Error() == ierr.Error()
}

func FuzzJSONItems(f *testing.F) {
	addJSONSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte, limit int16) {
		want, v := refJSONItems(body)
		got, err := AppendJSONItems(nil, body, int(limit))
		if err != nil && len(got) != 0 {
			t.Fatalf("dst changed on error: %v", got)
		}
		checkOutcome(t, body, err, v, len(want), int(limit), func() bool {
			if len(got) != len(want) {
				return false
			}
			for i := range got {
				if got[i] != want[i] {
					return false
				}
			}
			return true
		})
	})
}

// refLines is a plain reading of the LineFormat rules.
func refLines(body []byte, f LineFormat) ([]ID, verdict) {
	if bytes.HasPrefix(body, []byte("\xEF\xBB\xBF")) {
		return nil, refuse
	}
	ids := []ID{}
	for _, line := range strings.Split(string(body), "\n") {
		line = strings.TrimSuffix(line, "\r")
		switch f {
		case TextTexts:
			if line == "" {
				continue
			}
			if !utf8.ValidString(line) || strings.ContainsFunc(line, func(r rune) bool { return r < 0x20 }) {
				return nil, refuse
			}
			ids = append(ids, TextID(line))
		case TextInts:
			if line == "" {
				continue
			}
			if !regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`).MatchString(line) {
				return nil, refuse
			}
			v, err := strconv.ParseInt(line, 10, 64)
			if err != nil {
				return nil, refuse
			}
			ids = append(ids, IntID(v))
		default:
			line = strings.Trim(line, " \t\r")
			if line == "" {
				continue
			}
			if !json.Valid([]byte(line)) {
				return nil, refuse
			}
			dec := json.NewDecoder(strings.NewReader(line))
			dec.UseNumber()
			n, err := readNode(dec)
			if err != nil {
				panic(err)
			}
			id, ok := refID(n)
			if !ok || (f == NDJSONInts && id.IsText) || (f == NDJSONTexts && !id.IsText) {
				return nil, refuse
			}
			ids = append(ids, id)
		}
	}
	if f == TextTexts || f == TextInts {
		return ids, accept
	}
	return ids, textVerdict(body)
}

func FuzzLines(f *testing.F) {
	for _, s := range []string{"1\n2\n", "\"a\"\r\n-5\n\n", "alice\nbob", "12345678901\n-0\n", "\"\\u00e9\"\n"} {
		for fm := NDJSON; fm <= TextTexts; fm++ {
			f.Add([]byte(s), uint8(fm), int16(-1))
		}
	}
	for _, r := range lineRejections {
		f.Add([]byte(r.body), uint8(r.f), int16(3))
	}
	for _, s := range intListSeeds {
		for _, sep := range []string{"\n", "\r\n"} {
			lines := strings.ReplaceAll(s, ",", sep)
			body := strings.Repeat(lines+sep, 3) + lines
			f.Add([]byte(body), uint8(NDJSON), int16(-1))
			f.Add([]byte(body+sep), uint8(TextInts), int16(9))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, format uint8, limit int16) {
		fm := NDJSON + LineFormat(format%5)
		want, v := refLines(body, fm)
		got, err := AppendLineHashes([]uint64{42}, body, fm, int(limit))
		sameWithoutIntKernel(t, body, got, err, func() ([]uint64, error) { return AppendLineHashes([]uint64{42}, body, fm, int(limit)) })
		items, ierr := AppendLineItems(nil, body, fm, int(limit))
		// AppendLineItems reads every line with the scanner; the runs of
		// integer lines in AppendLineHashes must give the same errors,
		// byte for byte (line numbers included).
		if (err == nil) != (ierr == nil) || (err != nil && err.Error() != ierr.Error()) {
			t.Fatalf("hashes error %v, items error %v for %q", err, ierr, body)
		}
		roomy, rerr := AppendLineHashes(make([]uint64, 1, len(body)+1), body, fm, int(limit))
		if (err == nil) != (rerr == nil) || (err != nil && err.Error() != rerr.Error()) ||
			(err == nil && !equalHashes(roomy[1:], got[1:])) {
			t.Fatalf("with room: %x, %v; without: %x, %v", roomy[1:], rerr, got[1:], err)
		}
		checkOutcome(t, body, err, v, len(want), int(limit), func() bool {
			if len(got) != len(want)+1 || len(items) != len(want) {
				return false
			}
			for i, id := range want {
				if got[i+1] != id.Hash() || items[i] != (Item{id, 1}) {
					return false
				}
			}
			return true
		})
		if err != nil {
			var e *Error
			if errors.As(err, &e) && (e.Line < 1 || e.Line > bytes.Count(body, []byte("\n"))+1) {
				t.Fatalf("error %q: line out of range", err)
			}
		}
	})
}

func FuzzOctet(f *testing.F) {
	f.Add([]byte{}, int16(-1))
	f.Add(binary.BigEndian.AppendUint64(nil, 1<<63), int16(1))
	f.Add([]byte("1234567"), int16(-1))
	f.Add(make([]byte, 24), int16(2))
	f.Fuzz(func(t *testing.T, body []byte, limit int16) {
		var want []ID
		v := accept
		if len(body)%8 != 0 {
			v = refuse
		}
		for i := 0; i+8 <= len(body); i += 8 {
			want = append(want, IntID(int64(binary.BigEndian.Uint64(body[i:]))))
		}
		got, err := AppendOctetHashes([]uint64{42}, body, int(limit))
		items, ierr := AppendOctetItems(nil, body, int(limit))
		if (err == nil) != (ierr == nil) {
			t.Fatalf("hashes error %v, items error %v", err, ierr)
		}
		checkOutcome(t, body, err, v, len(want), int(limit), func() bool {
			if len(got) != len(want)+1 || len(items) != len(want) {
				return false
			}
			for i, id := range want {
				if got[i+1] != id.Hash() || items[i] != (Item{id, 1}) {
					return false
				}
			}
			return true
		})
	})
}

// The seeds of the fuzzers, run as plain tests, also check the oracle
// agrees with the tables (a refused table entry must be refused by the
// reference unless it is a documented strictness).
func TestOracleAgreesWithTables(t *testing.T) {
	for _, r := range jsonRejections {
		if _, v := refJSONHashes([]byte(r.body)); v == accept {
			t.Errorf("reference accepts %q (%s), which the table refuses", r.body, r.name)
		}
	}
}

// quoteJSON writes s as a JSON string; with escapeAll every non-ASCII rune
// is a \u escape (astral runes as surrogate pairs), which exercises the
// decoder on arbitrary code points.
func quoteJSON(s string, escapeAll bool) string {
	if !escapeAll {
		b, _ := json.Marshal(s)
		return string(b)
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r >= 0x7f:
			if r > 0xFFFF {
				r -= 0x10000
				fmt.Fprintf(&b, `\u%04x\u%04X`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
				continue
			}
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// FuzzJSONValid builds valid bodies from fuzzed ids (most mutations of a
// JSON body are invalid, so this target covers the accepting side) and
// checks the hashes and items against encoding/json's reading of the same
// body.
func FuzzJSONValid(f *testing.F) {
	f.Add("user-1", int64(42), "é😀\u0000\"\\/<", int64(-1<<63), uint8(0))
	f.Add("", int64(0), "\ud7ff\ue000\U0010FFFF", int64(1<<63-1), uint8(0xff))
	f.Add("\xff\xfe", int64(-7), "a b", int64(123456789012), uint8(0x55))
	f.Fuzz(func(t *testing.T, s1 string, v1 int64, s2 string, v2 int64, style uint8) {
		ws := []string{"", " ", "\n\t", " \r\n "}[style&3]
		esc := style&4 != 0
		parts := []string{
			strconv.FormatInt(v1, 10), quoteJSON(s1, esc), strconv.FormatInt(v2, 10), quoteJSON(s2, esc),
		}
		body := []byte(ws + "{" + ws + `"ids"` + ws + ":" + ws + "[" + ws + strings.Join(parts, ws+","+ws) + ws + "]" + ws + "}" + ws)
		var ref struct{ IDs []any }
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&ref); err != nil {
			t.Fatalf("test built invalid JSON %q: %v", body, err)
		}
		var want []ID
		for _, x := range ref.IDs {
			switch x := x.(type) {
			case json.Number:
				v, _ := strconv.ParseInt(string(x), 10, 64)
				want = append(want, IntID(v))
			case string:
				want = append(want, TextID(x))
			}
		}
		got, err := AppendJSONHashes(nil, body, 4)
		if err != nil {
			t.Fatalf("AppendJSONHashes(%q) error %v", body, err)
		}
		items, err := AppendJSONItems(nil, body, 4)
		if err != nil {
			t.Fatalf("AppendJSONItems(%q) error %v", body, err)
		}
		for i, id := range want {
			if got[i] != id.Hash() || items[i] != (Item{id, 1}) {
				t.Fatalf("id %d of %q: hash %x, item %v, want %v", i, body, got[i], items[i], id)
			}
		}
		if style&8 != 0 { // the same ids, one a line
			nd := []byte(strings.Join(parts, ws+"\n"+ws))
			got, err := AppendLineHashes(nil, nd, NDJSON, -1)
			if err != nil || !equalHashes(got, idHashesOf(want)) {
				t.Fatalf("AppendLineHashes(%q) = %x, %v, want %x", nd, got, err, idHashesOf(want))
			}
		}
	})
}

func idHashesOf(ids []ID) []uint64 {
	out := make([]uint64, len(ids))
	for i, id := range ids {
		out[i] = id.Hash()
	}
	return out
}

// jsonIntToken is the JSON integer grammar, a whole token.
var jsonIntToken = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// FuzzJSONIntList checks the integer scanning of AppendJSONHashes against
// strconv.ParseInt: s is put between `{"ids":[` and `]}` (and the same for
// "hashes"), cut at its commas, and the body must be accepted exactly when
// every piece, without JSON whitespace, is a JSON integer that ParseInt
// takes, with ParseInt's values. Pieces go through every path of the
// scanner: short ones followed by a comma, long ones, the last one of the
// array.
// intListSeeds are comma-separated integer lists for the fuzz targets of
// integer ids: every width from 1 to 20 characters, both signs, int64's
// bounds and one beyond them, leading zeros, floats, and JSON whitespace
// around the commas.
var intListSeeds = func() []string {
	seeds := []string{
		"1", "0,1,2", "12345678,1", "123456789,1", "99999999,0", "-12345678,7", "00,1", "01234567,1",
		"00000000,1", "0,0", "-0,0", "12345678.5,1", "1234567e8,1", "1234567E+1,1", "12345678 ,\t1",
		" 1 , 2 ", "1,,2", "1,", ",1", "", " ", "9223372036854775807,-9223372036854775808",
		"9223372036854775808,1", "-9223372036854775809,1", "18446744073709551616,1", "1234567,12345678,123456789,1",
		"1234567\x00,1", "1234567:,1", "1234567/,1", "12345678]", "1,2]", "1],\"x\":[2", "0x10,1", "+1,2", "1_000,1",
		"-,1", "--1,1", "-a,1", "1-,2", "1.0,2", "1e3,2", "-0.0,1", "0123456789012345678,1", "-09,1",
		"10000000000000000000,1", "99999999999999999999,1", "-99999999999999999999,1", "1 2,3", "1\n,\r2 ,\t 3",
		"123456789012345678901234567890,1", "1\x0b,2", "1\f,2",
	}
	digits := "9223372036854775807"
	var all, neg, ws []string
	for w := 1; w <= 19; w++ { // every width, with the largest digits it can have
		all = append(all, digits[:w], "1"+strings.Repeat("0", w-1))
		neg = append(neg, "-"+digits[:w], "-"+strings.Repeat("9", w))
		ws = append(ws, strings.Repeat("8", w)+" \t,\r\n")
	}
	neg = append(neg, "-9223372036854775808") // 20 characters
	seeds = append(seeds, strings.Join(all, ","), strings.Join(neg, ","), strings.Join(ws, "")+"1",
		strings.Join(neg, " , "))
	// Runs of ids of up to 8 digits, which the AVX-512 path takes eight
	// at a time, whole and with one id it must leave to the id loop: a
	// leading zero, an empty one, nine digits, a sign, a space.
	var short []string
	for k := range 40 {
		short = append(short, strconv.Itoa(k*7919%int(math.Pow10(1+k%8))))
	}
	seeds = append(seeds, strings.Join(short, ","))
	for _, bad := range []string{"007", "", "123456789", "-5", " 6"} {
		s := slices.Clone(short)
		s[27] = bad
		seeds = append(seeds, strings.Join(s, ","))
	}
	// And ids of up to 19 digits, which it takes four at a time: one
	// above int64's range, one of 20 digits that wraps to 0 mod 2^64.
	var long []string
	for k := range 16 {
		long = append(long, strconv.FormatUint(uint64(k+1)*0x7fffffffffffffff/16, 10))
	}
	seeds = append(seeds, strings.Join(long, ","))
	for _, bad := range []string{"9223372036854775808", "55340232221128654848", "0123", "", "-5"} {
		s := slices.Clone(long)
		s[9] = bad
		seeds = append(seeds, strings.Join(s, ","))
	}
	// Negative ids among both, every other one and all of them, with a
	// sign that is no id's first byte, a lone one, one before a leading
	// zero, and int64's smallest value and the one below it.
	for _, ids := range [][]string{short, long} {
		every, all := slices.Clone(ids), slices.Clone(ids)
		for k := range ids {
			all[k] = "-" + ids[k]
			if k%2 == 1 {
				every[k] = all[k]
			}
		}
		seeds = append(seeds, strings.Join(every, ","), strings.Join(all, ","))
		for _, bad := range []string{"5-", "-", "--5", "-05", "-9223372036854775808", "-9223372036854775809"} {
			s := slices.Clone(all)
			s[9] = bad
			seeds = append(seeds, strings.Join(s, ","))
		}
	}
	return seeds
}()

func FuzzJSONIntList(f *testing.F) {
	for _, s := range intListSeeds {
		f.Add(s, uint8(0))
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, s string, reps uint8) {
		if strings.ContainsRune(s, '"') {
			t.Skip("string ids are FuzzJSONHashes' business")
		}
		// The list repeated, so that its pieces are also read where more
		// bytes follow them than a run of integers needs.
		if strings.Trim(s, " \t\r\n") != "" {
			s = strings.Repeat(s+",", int(reps%8)) + s
		}
		var want []int64
		valid := true
		if strings.Trim(s, " \t\r\n") != "" {
			for _, tok := range strings.Split(s, ",") {
				tok = strings.Trim(tok, " \t\r\n")
				v, err := strconv.ParseInt(tok, 10, 64)
				if err != nil || !jsonIntToken.MatchString(tok) {
					valid = false
					break
				}
				want = append(want, v)
			}
		}
		for _, key := range []string{"ids", "hashes"} {
			body := []byte(`{"` + key + `":[` + s + `]}`)
			got, err := AppendJSONHashes(nil, body, -1)
			sameWithoutIntKernel(t, body, got, err, func() ([]uint64, error) { return AppendJSONHashes(nil, body, -1) })
			roomy, rerr := AppendJSONHashes(make([]uint64, 0, len(body)), body, -1)
			if (err == nil) != (rerr == nil) || (err != nil && err.Error() != rerr.Error()) ||
				(err == nil && !equalHashes(roomy, got)) {
				t.Fatalf("%s with room: %x, %v; without: %x, %v", body, roomy, rerr, got, err)
			}
			if key == "ids" {
				if _, ierr := AppendJSONItems(nil, body, -1); !sameIDsError(err, ierr) {
					t.Fatalf("%s: AppendJSONHashes error %v, AppendJSONItems error %v", body, err, ierr)
				}
			}
			if !valid {
				if err == nil {
					t.Fatalf("%s accepted: %x", body, got)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s refused: %v", body, err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d hashes, want %d", body, len(got), len(want))
			}
			for k, v := range want {
				h := uint64(v)
				if key == "ids" {
					h, _ = murmur.Int64(v, 0)
				}
				if got[k] != h {
					t.Fatalf("%s: hash %d is %x, want %x (of %d)", body, k, got[k], h, v)
				}
			}
		}
	})
}
