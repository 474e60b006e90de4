package ingest

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestAppendJSONHashesAccepts(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name string
		body string
		want []uint64
	}{
		{"empty ids", `{"ids":[]}`, idHashes()},
		{"empty hashes", `{"hashes":[ ]}`, idHashes()},
		{"ints", `{"ids":[1,2,3]}`, idHashes(1, 2, 3)},
		{"mixed", `{"ids":[42,"42","user-1",-7]}`, idHashes(42, "42", "user-1", -7)},
		{"ints in blocks, then a string, then ints", `{"ids":[1,2,3,4,5,6,"x",7,8,9,10,11]}`, idHashes(1, 2, 3, 4, 5, 6, "x", 7, 8, 9, 10, 11)},
		{"a string first", `{"ids":["x",1,2,3,4,5]}`, idHashes("x", 1, 2, 3, 4, 5)},
		{"whitespace everywhere", " \t\r\n{ \"ids\" \n:\r [ 1 ,\t\"a\" \n, -2 ] \r\n} \n\t", idHashes(1, "a", -2)},
		{"int64 extremes", `{"ids":[-9223372036854775808,9223372036854775807]}`, idHashes(int64(math.MinInt64), int64(math.MaxInt64))},
		{"minus zero is zero", `{"ids":[-0,0]}`, idHashes(0, 0)},
		{"every length", `{"ids":[1,12,123,1234,12345,123456,1234567,12345678,123456789,1234567890,12345678901,123456789012,1234567890123,12345678901234,123456789012345,1234567890123456,12345678901234567,123456789012345678,1234567890123456789]}`,
			idHashes(1, 12, 123, 1234, 12345, 123456, 1234567, 12345678, 123456789, 1234567890, 12345678901, 123456789012, 1234567890123, 12345678901234, 123456789012345, 1234567890123456, 12345678901234567, 123456789012345678, 1234567890123456789)},
		{"empty string hashes to 0", `{"ids":[""]}`, []uint64{0}},
		{"simple escapes", `{"ids":["a\"b\\c\/d\b\f\n\r\t"]}`, idHashes("a\"b\\c/d\b\f\n\r\t")},
		{"unicode raw", `{"ids":["é😀日本"]}`, idHashes("é😀日本")},
		{"unicode escaped", `{"ids":["\u00e9\uD83D\uDE00\u65e5\u672c"]}`, idHashes("é😀日本")},
		{"nul escape", `{"ids":["a\u0000b"]}`, idHashes("a\x00b")},
		{"long escaped string", `{"ids":["` + long + `\n` + long + `","\t"]}`, idHashes(long+"\n"+long, "\t")},
		{"escaped key", `{"\u0069ds":[5]}`, idHashes(5)},
		{"hashes used as is", `{"hashes":[0,1,-1,9223372036854775807,-9223372036854775808]}`, []uint64{0, 1, math.MaxUint64, math.MaxInt64, 1 << 63}},
		{"strings with delimiters", `{"ids":["]}", ",", "{\"ids\":[1]}"]}`, idHashes("]}", ",", `{"ids":[1]}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []uint64{7, 8}
			got, err := AppendJSONHashes(slices.Clone(prefix), []byte(tt.body), 100)
			if err != nil {
				t.Fatalf("AppendJSONHashes(%q) error %v", tt.body, err)
			}
			if want := append(prefix, tt.want...); !equalHashes(got, want) {
				t.Errorf("AppendJSONHashes(%q) = %x, want %x", tt.body, got, want)
			}
		})
	}
}

// jsonRejections are bodies both JSON parsers refuse. Offsets point at the
// offending byte. They also seed the fuzzers.
var jsonRejections = []rejection{
	{"empty body", ``, ErrSyntax, 0, "empty body"},
	{"whitespace only", " \n\t", ErrSyntax, 3, "empty body"},
	{"byte order mark", "\xEF\xBB\xBF{\"ids\":[1]}", ErrSyntax, 0, "byte order mark"},
	{"top-level array", `[1,2]`, ErrType, 0, "found an array"},
	{"top-level null", `null`, ErrType, 0, "found null"},
	{"top-level garbage", `ids=1`, ErrSyntax, 0, "found ids=1"},
	{"empty object", `{}`, ErrField, 1, "empty object"},
	{"ids null", `{"ids":null}`, ErrType, 7, `"ids" must be an array, found null`},
	{"ids object", `{"ids":{}}`, ErrType, 7, "found an object"},
	{"ids string", `{"ids":"1"}`, ErrType, 7, "found a string"},
	{"ids number", `{"ids":1}`, ErrType, 7, "found number 1"},
	{"ids missing value", `{"ids":}`, ErrSyntax, 7, "found '}'"},
	{"float", `{"ids":[1,1.5]}`, ErrType, 10, "ids[1] at offset 10: 1.5 is not an integer (floats are not ids)"},
	{"integral float", `{"ids":[1.0]}`, ErrType, 8, "1.0 is not an integer"},
	{"exponent", `{"ids":[1e3]}`, ErrType, 8, "1e3 is not an integer"},
	{"upper exponent", `{"ids":[1E+3]}`, ErrType, 8, "1E+3 is not an integer"},
	{"negative fraction", `{"ids":[-0.5]}`, ErrType, 8, "-0.5 is not an integer"},
	{"huge float", `{"ids":[1e400]}`, ErrType, 8, "1e400 is not an integer"},
	{"bad fraction", `{"ids":[1.]}`, ErrSyntax, 8, "malformed number 1."},
	{"bad exponent", `{"ids":[1e]}`, ErrSyntax, 8, "malformed number 1e"},
	{"true", `{"ids":[true]}`, ErrType, 8, "ids[0] at offset 8: true is not an id"},
	{"false", `{"ids":[1,false]}`, ErrType, 10, "false is not an id"},
	{"null element", `{"ids":[null]}`, ErrType, 8, "null is not an id"},
	{"object element", `{"ids":[{"id":1}]}`, ErrType, 8, "an object is not an id"},
	{"nested array", `{"ids":[[1]]}`, ErrType, 8, "an array is not an id"},
	{"misspelt literal", `{"ids":[tru]}`, ErrSyntax, 8, "unexpected tru"},
	{"leading zero", `{"ids":[01]}`, ErrSyntax, 8, "leading zeros"},
	{"negative leading zero", `{"ids":[-01]}`, ErrSyntax, 8, "leading zeros"},
	{"double zero", `{"ids":[00]}`, ErrSyntax, 8, "leading zeros"},
	{"plus sign", `{"ids":[+1]}`, ErrSyntax, 8, "unexpected +1"},
	{"minus alone", `{"ids":[-]}`, ErrSyntax, 8, "'-' must be followed by a digit"},
	{"minus letter", `{"ids":[-a]}`, ErrSyntax, 8, "'-' must be followed by a digit"},
	{"minus at end", `{"ids":[-`, ErrSyntax, 8, "unexpected end of body"},
	{"above int64", `{"ids":[9223372036854775808]}`, ErrRange, 8, "9223372036854775808 is out of the int64 range"},
	{"below int64", `{"ids":[-9223372036854775809]}`, ErrRange, 8, "-9223372036854775809 is out of the int64 range"},
	{"twenty digits", `{"ids":[99999999999999999999]}`, ErrRange, 8, "out of the int64 range"},
	{"max uint64", `{"ids":[18446744073709551615]}`, ErrRange, 8, "out of the int64 range"},
	{"hash above int64", `{"hashes":[9223372036854775808]}`, ErrRange, 11, "hashes[0]"},
	{"hash float", `{"hashes":[1.5]}`, ErrType, 11, "floats are not hashes"},
	{"hash string", `{"hashes":["a"]}`, ErrType, 11, "hashes[0] at offset 11: a string is not a hash"},
	{"raw newline in string", "{\"ids\":[\"a\nb\"]}", ErrSyntax, 10, "control character 0x0a"},
	{"raw tab in string", "{\"ids\":[\"a\tb\"]}", ErrSyntax, 10, "control character 0x09"},
	{"raw nul in string", "{\"ids\":[\"a\x00\"]}", ErrSyntax, 10, "control character 0x00"},
	{"bad escape", `{"ids":["a\x"]}`, ErrSyntax, 10, `invalid escape \x in a string`},
	{"short unicode escape", `{"ids":["\u12"]}`, ErrSyntax, 9, "want \\u and 4 hex digits"},
	{"non-hex unicode escape", `{"ids":["\uZZZZ"]}`, ErrSyntax, 9, "want \\u and 4 hex digits"},
	{"lone high surrogate", `{"ids":["\ud800"]}`, ErrSyntax, 9, `lone UTF-16 surrogate \ud800`},
	{"high surrogate then letter", `{"ids":["\uD800\u0041"]}`, ErrSyntax, 9, "lone UTF-16 surrogate"},
	{"high surrogate twice", `{"ids":["\uD800\uD800"]}`, ErrSyntax, 9, "lone UTF-16 surrogate"},
	{"lone low surrogate", `{"ids":["x\udc00"]}`, ErrSyntax, 10, "lone UTF-16 surrogate \\udc00"},
	{"invalid UTF-8", "{\"ids\":[\"a\xffb\"]}", ErrSyntax, 10, "invalid UTF-8"},
	{"overlong UTF-8", "{\"ids\":[\"\xc0\x80\"]}", ErrSyntax, 9, "invalid UTF-8"},
	{"UTF-8 surrogate", "{\"ids\":[\"\xed\xa0\x80\"]}", ErrSyntax, 9, "invalid UTF-8"},
	{"truncated UTF-8", "{\"ids\":[\"abcdefghij\xe6\x97\"]}", ErrSyntax, 19, "invalid UTF-8"},
	{"invalid UTF-8 in long string", "{\"ids\":[\"abcdefghijklmnop\x80\"]}", ErrSyntax, 25, "invalid UTF-8"},
	{"unterminated string", `{"ids":["abc`, ErrSyntax, 12, "unexpected end of body in a string"},
	{"unknown key", `{"foo":[1]}`, ErrField, 1, `unknown field "foo"`},
	{"keys are case-sensitive", `{"IDS":[1]}`, ErrField, 1, `unknown field "IDS"`},
	{"unknown second key", `{"ids":[1],"foo":1}`, ErrField, 11, `unknown field "foo"`},
	{"duplicate key", `{"ids":[1],"ids":[2]}`, ErrField, 11, `duplicate field "ids"`},
	{"escaped duplicate key", `{"ids":[1],"\u0069ds":[2]}`, ErrField, 11, `duplicate field "ids"`},
	{"ids and hashes", `{"ids":[1],"hashes":[2]}`, ErrField, 11, `both "ids" and "hashes"`},
	{"hashes and ids", `{"hashes":[1],"ids":[2]}`, ErrField, 14, `both "ids" and "hashes"`},
	{"long unknown key", `{"` + strings.Repeat("k", 5000) + `":1}`, ErrField, 1, `unknown field "kkkk`},
	{"trailing data", `{"ids":[1]} x`, ErrSyntax, 12, "unexpected x after the JSON object"},
	{"second object", `{"ids":[1]}{}`, ErrSyntax, 11, "after the JSON object"},
	{"trailing bracket", `{"ids":[1]}]`, ErrSyntax, 11, "after the JSON object"},
	{"trailing nul", "{\"ids\":[1]}\x00", ErrSyntax, 11, "after the JSON object"},
	{"missing close brace", `{"ids":[1]`, ErrSyntax, 10, "unexpected end of body, want '}'"},
	{"missing close bracket", `{"ids":[1}`, ErrSyntax, 9, "want ',' or ']'"},
	{"trailing comma", `{"ids":[1,]}`, ErrSyntax, 10, "trailing comma"},
	{"leading comma", `{"ids":[,1]}`, ErrSyntax, 8, "unexpected ','"},
	{"double comma", `{"ids":[1,,2]}`, ErrSyntax, 10, "unexpected ','"},
	{"missing comma", `{"ids":[1 2]}`, ErrSyntax, 10, "want ',' or ']' after the value, found number 2"},
	{"glued string", `{"ids":[1"a"]}`, ErrSyntax, 9, "want ',' or ']'"},
	{"trailing comma in object", `{"ids":[1],}`, ErrSyntax, 11, "want a field name"},
	{"missing colon", `{"ids" [1]}`, ErrSyntax, 7, "want ':'"},
	{"single quotes", `{'ids':[1]}`, ErrSyntax, 1, "want a field name"},
	{"unquoted key", `{ids:[1]}`, ErrSyntax, 1, "want a field name"},
	{"form feed is not whitespace", "{\"ids\":[1,\f2]}", ErrSyntax, 10, "unexpected"},
	{"vertical tab is not whitespace", "{\"ids\":\v[1]}", ErrSyntax, 7, `found "\v"`},
	{"no-break space is not whitespace", "{\"ids\":[1,\u00a02]}", ErrSyntax, 10, "unexpected"},
	{"huge number", `{"ids":[` + strings.Repeat("9", 10000) + `]}`, ErrRange, 8, "999…"},
	{"huge float", `{"ids":[1.` + strings.Repeat("5", 10000) + `]}`, ErrType, 8, "1.5555"},
}

func TestAppendJSONHashesRejects(t *testing.T) {
	for _, tt := range jsonRejections {
		t.Run(tt.name, func(t *testing.T) {
			dst := make([]uint64, 3, 100)
			got, err := AppendJSONHashes(dst, []byte(tt.body), 100)
			checkRejected(t, tt, err, len(got), 3)
		})
	}
}

func TestAppendJSONHashesLimit(t *testing.T) {
	body := []byte(`{"ids":[1,"b",3]}`)
	for _, tt := range []struct {
		max  int
		want int // ids, or -1 for ErrTooMany
		off  int
	}{{-1, 3, 0}, {3, 3, 0}, {2, -1, 14}, {1, -1, 10}, {0, -1, 8}} {
		got, err := AppendJSONHashes(nil, body, tt.max)
		if tt.want >= 0 {
			if err != nil || len(got) != tt.want {
				t.Errorf("AppendJSONHashes(max %d) = %d ids, %v, want %d ids", tt.max, len(got), err, tt.want)
			}
			continue
		}
		checkRejected(t, rejection{body: string(body), err: ErrTooMany, off: tt.off, detail: "more than"}, err, len(got), 0)
	}
	// The empty array needs no room at all.
	if got, err := AppendJSONHashes(nil, []byte(`{"ids":[]}`), 0); err != nil || len(got) != 0 {
		t.Errorf("AppendJSONHashes(empty, max 0) = %v, %v, want no ids", got, err)
	}
}

// Every proper prefix of a valid body is truncated and must be refused.
func TestAppendJSONHashesTruncated(t *testing.T) {
	body := `{"ids":[12345678901234,"ab\u00e9\n",-3,"😀"]}`
	for n := range len(body) {
		if _, err := AppendJSONHashes(nil, []byte(body[:n]), -1); !errors.Is(err, ErrSyntax) {
			t.Errorf("AppendJSONHashes(%q) error %v, want ErrSyntax", body[:n], err)
		}
	}
	if _, err := AppendJSONHashes(nil, []byte(body), -1); err != nil {
		t.Fatalf("AppendJSONHashes(%q) error %v", body, err)
	}
}

func TestAppendJSONItemsAccepts(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []Item
	}{
		{"ids count 1", `{"ids":[1,"a",-0]}`, []Item{{IntID(1), 1}, {TextID("a"), 1}, {IntID(0), 1}}},
		{"empty items", `{"items":[]}`, nil},
		{"items", `{"items":[{"id":7,"count":3},{"count":9223372036854775807,"id":"x\ty"}]}`,
			[]Item{{IntID(7), 3}, {TextID("x\ty"), math.MaxInt64}}},
		{"whitespace", " {\n\"items\" : [ { \"id\" : \"\" , \"count\" : 1 } ] } ", []Item{{TextID(""), 1}}},
		{"texts keep their bytes", `{"ids":["ab","\u00e9","c\"d","","e"]}`,
			[]Item{{TextID("ab"), 1}, {TextID("é"), 1}, {TextID(`c"d`), 1}, {TextID(""), 1}, {TextID("e"), 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []Item{{TextID("kept"), 2}}
			body := []byte(tt.body)
			got, err := AppendJSONItems(slices.Clone(prefix), body, 100)
			if err != nil {
				t.Fatalf("AppendJSONItems(%q) error %v", tt.body, err)
			}
			// Texts must not alias the body.
			for i := range body {
				body[i] = 'Z'
			}
			if want := append(prefix, tt.want...); !slices.Equal(got, want) {
				t.Errorf("AppendJSONItems(%q) = %v, want %v", tt.body, got, want)
			}
		})
	}
}

var itemRejections = []rejection{
	{"hashes", `{"hashes":[1]}`, ErrField, 1, `unknown field "hashes"`},
	{"ids and items", `{"ids":[1],"items":[]}`, ErrField, 11, `both "ids" and "items"`},
	{"item not object", `{"items":[1]}`, ErrType, 10, `items[0] at offset 10: number 1 is not an item`},
	{"item null", `{"items":[null]}`, ErrType, 10, "null is not an item"},
	{"missing count", `{"items":[{"id":1}]}`, ErrField, 10, `items[0] at offset 10: missing field "count"`},
	{"missing id", `{"items":[{"count":1}]}`, ErrField, 10, `missing field "id"`},
	{"empty item", `{"items":[{}]}`, ErrField, 10, `missing field "id"`},
	{"zero count", `{"items":[{"id":1,"count":0}]}`, ErrRange, 26, "items[0].count at offset 26: count 0 is not positive"},
	{"negative count", `{"items":[{"id":1,"count":-5}]}`, ErrRange, 26, "count -5 is not positive"},
	{"float count", `{"items":[{"id":1,"count":1.0}]}`, ErrType, 26, "floats are not counts"},
	{"string count", `{"items":[{"id":1,"count":"1"}]}`, ErrType, 26, "a string is not a count"},
	{"null count", `{"items":[{"id":1,"count":null}]}`, ErrType, 26, "null is not a count"},
	{"huge count", `{"items":[{"id":1,"count":9223372036854775808}]}`, ErrRange, 26, "out of the int64 range"},
	{"float id", `{"items":[{"id":1.5,"count":1}]}`, ErrType, 16, "items[0].id at offset 16: 1.5 is not an integer"},
	{"bool id", `{"items":[{"id":true,"count":1}]}`, ErrType, 16, "true is not an id"},
	{"unknown item key", `{"items":[{"id":1,"count":1,"weight":2}]}`, ErrField, 28, `unknown field "weight"`},
	{"duplicate id", `{"items":[{"id":1,"id":2,"count":1}]}`, ErrField, 18, `duplicate field "id"`},
	{"duplicate count", `{"items":[{"count":1,"id":1,"count":1}]}`, ErrField, 28, `duplicate field "count"`},
	{"item trailing comma", `{"items":[{"id":1,"count":1,}]}`, ErrSyntax, 28, "want a field name"},
	{"items trailing comma", `{"items":[{"id":1,"count":1},]}`, ErrSyntax, 29, "trailing comma"},
	{"lone surrogate id", `{"items":[{"id":"\udfff","count":1}]}`, ErrSyntax, 17, "lone UTF-16 surrogate"},
	{"too many", `{"ids":[1,2,3,4]}`, ErrTooMany, 14, "more than 3 ids"},
}

func TestAppendJSONItemsRejects(t *testing.T) {
	// Every body the hashes parser refuses for its shape, except those
	// about "hashes" itself, is refused here too.
	var all []rejection
	for _, r := range jsonRejections {
		if !strings.Contains(r.body, "hashes") && !strings.Contains(r.detail, "hashes") {
			all = append(all, r)
		}
	}
	all = append(all, itemRejections...)
	for _, tt := range all {
		t.Run(tt.name, func(t *testing.T) {
			dst := make([]Item, 2, 10)
			got, err := AppendJSONItems(dst, []byte(tt.body), 3)
			if tt.err != ErrTooMany && errors.Is(err, ErrTooMany) {
				got, err = AppendJSONItems(dst, []byte(tt.body), 100)
			}
			if tt.err == ErrField && strings.Contains(tt.detail, `want "ids" or "hashes"`) {
				tt.detail = strings.ReplaceAll(tt.detail, "hashes", "items")
			}
			checkRejected(t, tt, err, len(got), 2)
		})
	}
}

func TestIDHashAndJSON(t *testing.T) {
	for _, tt := range []struct {
		id   ID
		json string
		hash uint64
	}{
		{IntID(0), `0`, 2945182322382062539},
		{IntID(-100), `-100`, uint64(18446744073709551616 - 886862857196634693)},
		{TextID(""), `""`, 0},
		{TextID("A"), `"A"`, 243126998722523514},
		{TextID("7"), `"7"`, idHashes("7")[0]},
		{TextID("a\"\n<"), `"a\"\n\u003c"`, idHashes("a\"\n<")[0]},
	} {
		if got := tt.id.Hash(); got != tt.hash {
			t.Errorf("%v.Hash() = %d, want %d", tt.id, got, tt.hash)
		}
		if got, err := tt.id.MarshalJSON(); err != nil || string(got) != tt.json {
			t.Errorf("%#v.MarshalJSON() = %s, %v, want %s", tt.id, got, err, tt.json)
		}
	}
}
