package ingest

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestAppendLineHashesAccepts(t *testing.T) {
	tests := []struct {
		name string
		f    LineFormat
		body string
		want []uint64
	}{
		{"ndjson mixed", NDJSON, "1\n\"a\"\n-3\n", idHashes(1, "a", -3)},
		{"ndjson no final newline", NDJSON, "1\n2", idHashes(1, 2)},
		{"ndjson crlf", NDJSON, "1\r\n\"b\"\r\n", idHashes(1, "b")},
		{"ndjson blank lines skipped", NDJSON, "\n\n1\n \t\r\n\r\n2\n\n", idHashes(1, 2)},
		{"ndjson whitespace around", NDJSON, " \t1 \r\n\t\"x\"\t\n", idHashes(1, "x")},
		{"ndjson escapes", NDJSON, `"a\nb"` + "\n" + `"\ud83d\ude00"`, idHashes("a\nb", "😀")},
		{"ndjson empty string", NDJSON, `""`, []uint64{0}},
		{"ndjson empty body", NDJSON, "", idHashes()},
		{"ndjson ints", NDJSONInts, "9223372036854775807\n-9223372036854775808\n-0", idHashes(int64(math.MaxInt64), int64(math.MinInt64), 0)},
		{"ndjson texts", NDJSONTexts, "\"1\"\n\"2\"", idHashes("1", "2")},
		{"text ints", TextInts, "1\n22\r\n-333\n\n4444", idHashes(1, 22, -333, 4444)},
		{"text ints only blank lines", TextInts, "\n\r\n\n", idHashes()},
		{"text ints lone final cr", TextInts, "5\r", idHashes(5)},
		{"text texts raw", TextTexts, "alice\nbob\r\n\"quoted\"\n\\n\n", idHashes("alice", "bob", `"quoted"`, `\n`)},
		{"text texts keep spaces", TextTexts, " a \n", idHashes(" a ")},
		{"text texts unicode", TextTexts, "é😀日本\n", idHashes("é😀日本")},
		{"text texts numbers are text", TextTexts, "7\n007", idHashes("7", "007")},
		{"text texts long line", TextTexts, strings.Repeat("x", 1000) + "\ny", idHashes(strings.Repeat("x", 1000), "y")},
		{"text texts blank", TextTexts, "\r\n\n\r\na", idHashes("a")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AppendLineHashes([]uint64{9}, []byte(tt.body), tt.f, 100)
			if err != nil {
				t.Fatalf("AppendLineHashes(%q, %v) error %v", tt.body, tt.f, err)
			}
			if want := append([]uint64{9}, tt.want...); !equalHashes(got, want) {
				t.Errorf("AppendLineHashes(%q, %v) = %x, want %x", tt.body, tt.f, got, want)
			}
			items, err := AppendLineItems(nil, []byte(tt.body), tt.f, 100)
			if err != nil {
				t.Fatalf("AppendLineItems(%q, %v) error %v", tt.body, tt.f, err)
			}
			if got := itemHashes(items); !equalHashes(got, tt.want) {
				t.Errorf("AppendLineItems(%q, %v) hashes = %x, want %x", tt.body, tt.f, got, tt.want)
			}
		})
	}
}

func itemHashes(items []Item) []uint64 {
	out := []uint64{}
	for _, it := range items {
		if it.Count != 1 {
			panic("count not 1")
		}
		out = append(out, it.ID.Hash())
	}
	return out
}

type lineRejection struct {
	rejection
	f    LineFormat
	line int
}

var lineRejections = []lineRejection{
	{rejection{"ndjson bom", "\xEF\xBB\xBF1\n", ErrSyntax, 0, "byte order mark"}, NDJSON, 1},
	{rejection{"ndjson float", "1\n2.5\n", ErrType, 2, "line 2 at offset 2: 2.5 is not an integer"}, NDJSON, 2},
	{rejection{"ndjson range", "\n\n9223372036854775808", ErrRange, 2, "out of the int64 range"}, NDJSON, 3},
	{rejection{"ndjson leading zero", "01", ErrSyntax, 0, "leading zeros"}, NDJSON, 1},
	{rejection{"ndjson bool", "1\ntrue\n", ErrType, 2, "true is not an id"}, NDJSON, 2},
	{rejection{"ndjson array", "[1,2]\n", ErrType, 0, "an array is not an id"}, NDJSON, 1},
	{rejection{"ndjson object", `{"ids":[1]}`, ErrType, 0, "an object is not an id"}, NDJSON, 1},
	{rejection{"ndjson two values", "1 2\n", ErrSyntax, 2, "want the end of the line"}, NDJSON, 1},
	{rejection{"ndjson unquoted text", "alice\n", ErrSyntax, 0, "unexpected alice"}, NDJSON, 1},
	{rejection{"ndjson bad escape", "\"\\q\"", ErrSyntax, 1, "invalid escape"}, NDJSON, 1},
	{rejection{"ndjson lone surrogate", "1\r\n\"\\udd00\"", ErrSyntax, 4, "lone UTF-16 surrogate"}, NDJSON, 2},
	{rejection{"ndjson newline in string", "\"a\nb\"", ErrSyntax, 2, "control character 0x0a"}, NDJSON, 1},
	{rejection{"ndjson invalid utf8", "\"\xff\"", ErrSyntax, 1, "invalid UTF-8"}, NDJSON, 1},
	{rejection{"ndjson unterminated", "\"abc", ErrSyntax, 4, "unexpected end of body"}, NDJSON, 1},
	{rejection{"ndjson form feed", "\f1", ErrSyntax, 0, "unexpected"}, NDJSON, 1},
	{rejection{"ndjson ints string", "1\n\"2\"", ErrType, 2, "a string is not an integer id (id_type=int)"}, NDJSONInts, 2},
	{rejection{"ndjson texts number", "\"1\"\n2", ErrType, 4, "number 2 is not a text id (id_type=text)"}, NDJSONTexts, 2},
	{rejection{"ndjson too many", "1\n2\n\n3\n4\n", ErrTooMany, 7, "more than 3 ids"}, NDJSON, 5},
	{rejection{"ndjson too many texts", "\"a\"\n\"b\"\n\"c\"\n\"d\"", ErrTooMany, 12, "line 4 at offset 12: more than 3 ids"}, NDJSON, 4},
	{rejection{"text ints bom", "\xEF\xBB\xBF1", ErrSyntax, 0, "byte order mark"}, TextInts, 1},
	{rejection{"text ints plus", "+1", ErrSyntax, 0, "want a decimal integer"}, TextInts, 1},
	{rejection{"text ints leading zero", "1\n007", ErrSyntax, 2, "leading zeros"}, TextInts, 2},
	{rejection{"text ints space before", " 1", ErrSyntax, 0, "want a decimal integer"}, TextInts, 1},
	{rejection{"text ints space after", "1 \n", ErrSyntax, 1, "want the end of the line"}, TextInts, 1},
	{rejection{"text ints float", "1.5", ErrType, 0, "1.5 is not an integer"}, TextInts, 1},
	{rejection{"text ints range", "-9223372036854775809", ErrRange, 0, "out of the int64 range"}, TextInts, 1},
	{rejection{"text ints text", "1\n2\nalice", ErrSyntax, 4, `line 3 at offset 4: want a decimal integer (id_type=int), found "alice"`}, TextInts, 3},
	{rejection{"text ints quoted", "\"1\"", ErrSyntax, 0, "want a decimal integer"}, TextInts, 1},
	{rejection{"text ints minus", "-\n", ErrSyntax, 0, "'-' must be followed by a digit"}, TextInts, 1},
	{rejection{"text ints cr inside", "1\r2", ErrSyntax, 2, "want the end of the line"}, TextInts, 1},
	{rejection{"text ints long junk", "1" + strings.Repeat("x", 5000), ErrSyntax, 1, "xxxx"}, TextInts, 1},
	{rejection{"text ints too many", "1\n2\n3\n4", ErrTooMany, 6, "more than 3 ids"}, TextInts, 4},
	{rejection{"text texts bom", "\xEF\xBB\xBFalice", ErrSyntax, 0, "byte order mark"}, TextTexts, 1},
	{rejection{"text texts tab", "a\tb", ErrSyntax, 1, "control character 0x09 in a text id"}, TextTexts, 1},
	{rejection{"text texts nul", "ok\nab\x00", ErrSyntax, 5, "control character 0x00"}, TextTexts, 2},
	{rejection{"text texts cr inside", "a\rb\n", ErrSyntax, 1, "control character 0x0d"}, TextTexts, 1},
	{rejection{"text texts invalid utf8", "abcdefghijk\xc3(", ErrSyntax, 11, "invalid UTF-8 in a text id"}, TextTexts, 1},
	{rejection{"text texts utf8 surrogate", "\xed\xb0\x80", ErrSyntax, 0, "invalid UTF-8"}, TextTexts, 1},
	{rejection{"text texts too many", "a\nb\nc\n\nd\n", ErrTooMany, 7, "more than 3 ids"}, TextTexts, 5},
}

func TestAppendLineHashesRejects(t *testing.T) {
	for _, tt := range lineRejections {
		t.Run(tt.name, func(t *testing.T) {
			dst := make([]uint64, 1, 10)
			got, err := AppendLineHashes(dst, []byte(tt.body), tt.f, 3)
			checkRejected(t, tt.rejection, err, len(got), 1)
			if e := (*Error)(nil); errors.As(err, &e) && e.Line != tt.line {
				t.Errorf("error %q on line %d, want %d", err, e.Line, tt.line)
			}
			items, err := AppendLineItems(nil, []byte(tt.body), tt.f, 3)
			checkRejected(t, tt.rejection, err, len(items), 0)
		})
	}
}

func TestAppendLineHashesInvalidFormat(t *testing.T) {
	for _, f := range []LineFormat{0, TextTexts + 1, 255} {
		if _, err := AppendLineHashes(nil, []byte("1"), f, -1); err == nil {
			t.Errorf("AppendLineHashes(format %v) accepted, want an error", f)
		}
		if _, err := AppendLineItems(nil, []byte("1"), f, -1); err == nil {
			t.Errorf("AppendLineItems(format %v) accepted, want an error", f)
		}
	}
}

func TestAppendLineItemsCopiesText(t *testing.T) {
	body := []byte("alice\n\"b\\u00e9b\"\n7\n")
	if _, err := AppendLineItems(nil, body, NDJSON, -1); err == nil {
		t.Fatalf("AppendLineItems(%q, NDJSON) accepted unquoted text", body)
	}
	body = []byte("\"alice\"\n\"b\\u00e9b\"\n7\n\"\"\n")
	got, err := AppendLineItems(nil, body, NDJSON, -1)
	if err != nil {
		t.Fatalf("AppendLineItems(%q) error %v", body, err)
	}
	clear(body)
	want := []Item{{TextID("alice"), 1}, {TextID("béb"), 1}, {IntID(7), 1}, {TextID(""), 1}}
	if !slices.Equal(got, want) {
		t.Errorf("AppendLineItems = %v, want %v", got, want)
	}
}

func TestAppendOctet(t *testing.T) {
	vals := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 1234567890123}
	var body []byte
	for _, v := range vals {
		body = binary.BigEndian.AppendUint64(body, uint64(v))
	}
	got, err := AppendOctetHashes([]uint64{5}, body, 6)
	if err != nil {
		t.Fatalf("AppendOctetHashes error %v", err)
	}
	var want []uint64
	for _, v := range vals {
		want = append(want, IntID(v).Hash())
	}
	if !equalHashes(got, append([]uint64{5}, want...)) {
		t.Errorf("AppendOctetHashes = %x, want %x", got, want)
	}
	items, err := AppendOctetItems(nil, body, 6)
	if err != nil {
		t.Fatalf("AppendOctetItems error %v", err)
	}
	for i, it := range items {
		if it != (Item{IntID(vals[i]), 1}) {
			t.Errorf("AppendOctetItems[%d] = %v, want %d", i, it, vals[i])
		}
	}
	if got, err := AppendOctetHashes(nil, nil, 0); err != nil || len(got) != 0 {
		t.Errorf("AppendOctetHashes(empty) = %v, %v, want nothing", got, err)
	}
	for _, tt := range []struct {
		body []byte
		max  int
		want rejection
	}{
		{body[:7], -1, rejection{body: "7 bytes", err: ErrSyntax, off: 0, detail: "at offset 0: body length 7 is not a multiple of 8"}},
		{body[:13], -1, rejection{body: "13 bytes", err: ErrSyntax, off: 8, detail: "body length 13"}},
		{body, 5, rejection{body: "6 ids", err: ErrTooMany, off: 40, detail: "more than 5 ids"}},
		{body, 0, rejection{body: "6 ids", err: ErrTooMany, off: 0, detail: "more than 0 ids"}},
	} {
		got, err := AppendOctetHashes([]uint64{1}, tt.body, tt.max)
		checkRejected(t, tt.want, err, len(got), 1)
		items, err := AppendOctetItems(nil, tt.body, tt.max)
		checkRejected(t, tt.want, err, len(items), 0)
	}
}
