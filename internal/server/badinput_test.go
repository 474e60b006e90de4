package server

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
)

// The table's limits: small, so that oversized bodies stay small.
const (
	tableMaxBody      = 64 << 10
	tableMaxQueryBody = 4 << 10
	tableMaxIDs       = 1000
)

// badCase is one request that must be refused with a problem and change
// nothing.
type badCase struct {
	name    string
	method  string
	path    string
	ctype   string
	body    string
	chunked bool // send without Content-Length
	want    int
}

// fixture is what the bad-input table runs against: an HLL "h"
// (log2m 11, SPARSE or FULL), a small EXPLICIT HLL "he", a CMS "c" with
// heavy hitters and data, and a CMS "c2" of another shape without them.
type fixture struct {
	hll, hllExplicit, cms, cms2 []byte
}

const (
	fixtureHLLLog2m = 11
	fixtureCMSWidth = 100
	fixtureCMSDepth = 3
)

// makeFixture builds the fixture's sketches in process.
func makeFixture(tb testing.TB) fixture {
	tb.Helper()
	p := hll.DefaultParams()
	p.Log2m = fixtureHLLLog2m
	h := hllOf(tb, p, idRange(0, 2000)...)
	he := hllOf(tb, hll.DefaultParams(), 1, 2, 3, 4, 5)
	c, err := cms.New(cms.Params{Width: fixtureCMSWidth, Depth: fixtureCMSDepth, TopK: 3})
	if err != nil {
		tb.Fatal(err)
	}
	for i := range int64(50) {
		if err := c.AddInt(i%7, uint64(i+1)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := c.AddText([]byte("x"), 3); err != nil {
		tb.Fatal(err)
	}
	c2, err := cms.New(cms.Params{Width: 50, Depth: 2})
	if err != nil {
		tb.Fatal(err)
	}
	if err := c2.AddInt(1, 1); err != nil {
		tb.Fatal(err)
	}
	cb, _ := c.AppendBinary(nil)
	c2b, _ := c2.AppendBinary(nil)
	return fixture{hll: encode(tb, h), hllExplicit: encode(tb, he), cms: cb, cms2: c2b}
}

// load uploads the fixture into e.
func (f fixture) load(tb testing.TB, e *env) {
	tb.Helper()
	for name, b := range map[string][]byte{"h": f.hll, "he": f.hllExplicit, "c": f.cms, "c2": f.cms2} {
		must(tb, e.send(tb, http.MethodPut, "/v1/sketches/"+name+"/raw", "application/octet-stream", string(b)), http.StatusCreated, "upload "+name)
	}
}

// hllHeader returns the three header bytes of the storage format.
func hllHeader(typ, log2m, regwidth int, sparse bool, cutoff int) []byte {
	b2 := byte(cutoff)
	if sparse {
		b2 |= 1 << 6
	}
	return []byte{byte(1<<4 | typ), byte((regwidth-1)<<5 | log2m), b2}
}

func be64(vs ...int64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return b
}

func cat(parts ...[]byte) string {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return string(b)
}

// badUploads are sketch encodings every upload route must refuse with 400.
func badUploads(f fixture) map[string]string {
	full := hllHeader(4, 11, 5, true, 63)
	out := map[string]string{
		"empty":                         "",
		"one byte":                      "\x14",
		"truncated header":              string(f.hll[:2]),
		"truncated body":                string(f.hll[:len(f.hll)-1]),
		"trailing byte":                 string(f.hll) + "\x00",
		"unknown version":               cat([]byte{0x24}, f.hll[1:]),
		"version 0":                     cat([]byte{0x04}, f.hll[1:]),
		"type nibble 5":                 cat(hllHeader(5, 11, 5, true, 63)),
		"type nibble 15":                cat(hllHeader(15, 11, 5, true, 63), make([]byte, 16)),
		"log2m 31 header only":          cat(hllHeader(4, 31, 5, true, 63)),
		"log2m 31 sparse":               cat(hllHeader(3, 31, 5, true, 63), make([]byte, 8)),
		"log2m 18":                      cat(hllHeader(4, 18, 5, true, 63), make([]byte, 64)),
		"log2m 3":                       cat(hllHeader(4, 3, 5, true, 63), make([]byte, 5)),
		"regwidth 8":                    cat(hllHeader(4, 11, 8, true, 63), make([]byte, 2048)),
		"full claims more registers":    cat(full, make([]byte, 10)),
		"full one byte short":           cat(full, make([]byte, 5*2048/8-1)),
		"full one byte long":            cat(full, make([]byte, 5*2048/8+1)),
		"explicit unordered":            cat(hllHeader(2, 11, 5, true, 63), be64(5, 3)),
		"explicit duplicate":            cat(hllHeader(2, 11, 5, true, 63), be64(3, 3)),
		"explicit ragged":               cat(hllHeader(2, 11, 5, true, 63), be64(3), []byte{1, 2}),
		"explicit bad cutoff":           cat(hllHeader(2, 11, 5, true, 20), be64(3)),
		"sparse unordered":              cat(hllHeader(3, 11, 5, true, 63), []byte{0x00, 0x41, 0x00, 0x21}),
		"empty with trailing byte":      cat(hllHeader(1, 11, 5, true, 63), []byte{0}),
		"undefined":                     cat(hllHeader(0, 11, 5, true, 63)),
		"cms version byte only":         "\xc1",
		"cms truncated":                 string(f.cms[:len(f.cms)/2]),
		"cms trailing byte":             string(f.cms) + "\x00",
		"cms depth 33":                  cat([]byte{0xc1, 0, 33}, f.cms[3:]),
		"cms row sum broken":            cat(f.cms[:17], []byte{0x7f}, f.cms[18:]),
		"cms total above int64":         cat(f.cms[:9], []byte{0x80, 0, 0, 0, 0, 0, 0, 0}, f.cms[17:]),
		"cms claims 4M counters":        cat([]byte{0xc1, 0, 4, 0, 0x10, 0, 0, 0, 0}, make([]byte, 8), []byte{0}),
		"cms unknown flags":             cat([]byte{0xc1, 0x80}, f.cms[2:]),
		"cms version 2":                 cat([]byte{0xc2}, f.cms[1:]),
		"random bytes":                  "\x9a\x07\xff\x00\x13\x37",
		"hll header of log2m 31 padded": cat(hllHeader(4, 31, 7, true, 63), make([]byte, 64)),
	}
	return out
}

// badHexUploads are text uploads every upload route must refuse with 400.
var badHexUploads = map[string]string{
	"no prefix":       "14ab",
	"not hex":         `\xzz`,
	"odd length":      `\x123`,
	"prefix only":     `\x`,
	"upper X":         `\X148b7f`,
	"space inside":    `\x14 8b7f`,
	"undefined (hex)": `\x108b7f`,
}

// badInputCases is the table of refused requests against the fixture.
func badInputCases(f fixture) []badCase {
	var cs []badCase
	add := func(name, method, path, ctype, body string, want int) {
		cs = append(cs, badCase{name: name, method: method, path: path, ctype: ctype, body: body, want: want})
	}
	const js = "application/json"

	// Add bodies refused for both kinds of sketch.
	malformed := map[string]string{
		"truncated":            `{"ids":[1,2`,
		"truncated string":     `{"ids":["ab`,
		"trailing comma":       `{"ids":[1,]}`,
		"unquoted key":         `{ids:[1]}`,
		"bare array":           `[1,2]`,
		"trailing data":        `{"ids":[1]} x`,
		"two objects":          `{"ids":[1]}{"ids":[2]}`,
		"empty body":           ``,
		"whitespace body":      "  \n",
		"null body":            `null`,
		"leading zero":         `{"ids":[01]}`,
		"plus sign":            `{"ids":[+1]}`,
		"minus alone":          `{"ids":[-]}`,
		"lone surrogate":       `{"ids":["\ud800"]}`,
		"invalid utf8":         "{\"ids\":[\"\xff\"]}",
		"control char":         "{\"ids\":[\"a\x01\"]}",
		"bad escape":           `{"ids":["\q"]}`,
		"byte order mark":      "\xef\xbb\xbf{\"ids\":[1]}",
		"float 1.5":            `{"ids":[1.5]}`,
		"float 1.0":            `{"ids":[1.0]}`,
		"float 1e3":            `{"ids":[1e3]}`,
		"float -0.5":           `{"ids":[-0.5]}`,
		"true":                 `{"ids":[true]}`,
		"false":                `{"ids":[false]}`,
		"null id":              `{"ids":[null]}`,
		"nested array":         `{"ids":[[1]]}`,
		"object id":            `{"ids":[{"id":1}]}`,
		"int64 max + 1":        `{"ids":[9223372036854775808]}`,
		"int64 min - 1":        `{"ids":[-9223372036854775809]}`,
		"huge positive":        `{"ids":[123456789012345678901234567890]}`,
		"huge negative":        `{"ids":[-123456789012345678901234567890]}`,
		"ids null":             `{"ids":null}`,
		"ids object":           `{"ids":{}}`,
		"ids string":           `{"ids":"1"}`,
		"ids number":           `{"ids":1}`,
		"unknown field":        `{"ids":[1],"x":1}`,
		"only unknown field":   `{"x":[1]}`,
		"wrong case key":       `{"IDS":[1]}`,
		"no key":               `{}`,
		"duplicate key":        `{"ids":[1],"ids":[2]}`,
		"ids and hashes":       `{"ids":[1],"hashes":[2]}`,
		"hashes and ids":       `{"hashes":[2],"ids":[1]}`,
		"valid then bad":       `{"ids":[1,2,3,"ok",4.5]}`,
		"ids and items":        `{"ids":[1],"items":[{"id":1,"count":1}]}`,
		"escaped key (hashes)": `{"hashes":[1],"ids":[]}`,
	}
	for n, body := range malformed {
		add("add hll json: "+n, "POST", "/v1/sketches/h/add", js, body, 400)
		add("add cms json: "+n, "POST", "/v1/sketches/c/add", js, body, 400)
	}
	for n, body := range map[string]string{
		"hashes string":   `{"hashes":["1"]}`,
		"hashes float":    `{"hashes":[1.5]}`,
		"hashes too big":  `{"hashes":[18446744073709551615]}`,
		"hashes null":     `{"hashes":null}`,
		"hashes nested":   `{"hashes":[[1]]}`,
		"items into hll":  `{"items":[{"id":1,"count":1}]}`,
		"ids then hashes": `{"ids":[],"hashes":[]}`,
	} {
		add("add hll json: "+n, "POST", "/v1/sketches/h/add", js, body, 400)
	}
	for n, body := range map[string]string{
		"hashes into cms":   `{"hashes":[1]}`,
		"count 0":           `{"items":[{"id":1,"count":0}]}`,
		"count -1":          `{"items":[{"id":1,"count":-1}]}`,
		"count 1.5":         `{"items":[{"id":1,"count":1.5}]}`,
		"count 1.0":         `{"items":[{"id":1,"count":1.0}]}`,
		"count string":      `{"items":[{"id":1,"count":"1"}]}`,
		"count null":        `{"items":[{"id":1,"count":null}]}`,
		"count too big":     `{"items":[{"id":1,"count":9223372036854775808}]}`,
		"count missing":     `{"items":[{"id":1}]}`,
		"id missing":        `{"items":[{"count":1}]}`,
		"id float":          `{"items":[{"id":1.5,"count":1}]}`,
		"id bool":           `{"items":[{"id":true,"count":1}]}`,
		"item extra key":    `{"items":[{"id":1,"count":1,"x":0}]}`,
		"item not object":   `{"items":[1]}`,
		"items null":        `{"items":null}`,
		"second item bad":   `{"items":[{"id":1,"count":1},{"id":2,"count":0}]}`,
		"text id too long":  `{"ids":["` + strings.Repeat("a", cms.MaxTextLen+1) + `"]}`,
		"long text in item": `{"items":[{"id":"` + strings.Repeat("é", cms.MaxTextLen) + `","count":1}]}`,
	} {
		add("add cms json: "+n, "POST", "/v1/sketches/c/add", js, body, 400)
	}
	// N would pass 2^63-1: a conflict with the stored total, nothing added.
	add("add cms: total overflow", "POST", "/v1/sketches/c/add", js, `{"items":[{"id":1,"count":9223372036854775807}]}`, 409)
	add("add cms: total overflow in two items", "POST", "/v1/sketches/c/add", js, `{"items":[{"id":1,"count":4611686018427387904},{"id":2,"count":4611686018427387904}]}`, 409)

	// Line and octet bodies.
	for _, k := range []string{"h", "c"} {
		p := "/v1/sketches/" + k + "/add"
		add("add "+k+" text: not an int", "POST", p, "text/plain", "1\nx\n", 400)
		add("add "+k+" text: float", "POST", p, "text/plain", "1.5\n", 400)
		add("add "+k+" text: beyond int64", "POST", p, "text/plain", "9223372036854775808\n", 400)
		add("add "+k+" text: invalid utf8", "POST", p+"?id_type=text", "text/plain", "ok\n\xff\n", 400)
		add("add "+k+" ndjson: object line", "POST", p, "application/x-ndjson", "1\n{\"a\":1}\n", 400)
		add("add "+k+" ndjson: array line", "POST", p, "application/x-ndjson", "[1]\n", 400)
		add("add "+k+" ndjson: float line", "POST", p, "application/x-ndjson", "1\n2.5\n", 400)
		add("add "+k+" ndjson: text as int", "POST", p+"?id_type=int", "application/x-ndjson", "\"a\"\n", 400)
		add("add "+k+" ndjson: int as text", "POST", p+"?id_type=text", "application/x-ndjson", "1\n", 400)
		add("add "+k+" octet: ragged", "POST", p, "application/octet-stream", "1234567", 400)
		add("add "+k+" octet: ragged long", "POST", p, "application/octet-stream", octetIDs(1, 2)+"x", 400)
		add("add "+k+" octet: id_type text", "POST", p+"?id_type=text", "application/octet-stream", octetIDs(1), 400)
		add("add "+k+" json: id_type", "POST", p+"?id_type=int", js, `{"ids":[1]}`, 400)
		add("add "+k+": id_type float", "POST", p+"?id_type=float", "text/plain", "1\n", 400)
		add("add "+k+": create yes", "POST", p+"?create=yes", js, `{"ids":[1]}`, 400)
		add("add "+k+": create empty", "POST", p+"?create=", js, `{"ids":[1]}`, 400)
		add("add "+k+": create twice", "POST", p+"?create=true&create=true", js, `{"ids":[1]}`, 400)
		add("add "+k+": unknown query", "POST", p+"?idtype=int", js, `{"ids":[1]}`, 400)
		add("add "+k+": bad query escape", "POST", p+"?id_type=%zz", js, `{"ids":[1]}`, 400)
		add("add "+k+": too many ids", "POST", p, js, idsJSON(idRange(0, tableMaxIDs+1)...), 413)
		add("add "+k+": too many octet ids", "POST", p, "application/octet-stream", octetIDs(idRange(0, tableMaxIDs+1)...), 413)
		add("add "+k+": too many lines", "POST", p, "text/plain", strings.Repeat("1\n", tableMaxIDs+1), 413)
	}

	// Unknown sketches.
	add("add to missing", "POST", "/v1/sketches/nope/add", js, `{"ids":[1]}`, 404)
	add("add to missing, bad body", "POST", "/v1/sketches/nope/add", js, `{"ids":[1.5]}`, 404)
	add("describe missing", "GET", "/v1/sketches/nope", "", "", 404)
	add("delete missing", "DELETE", "/v1/sketches/nope", "", "", 404)
	add("raw of missing", "GET", "/v1/sketches/nope/raw", "", "", 404)
	add("raw hex of missing", "GET", "/v1/sketches/nope/raw?format=hex", "", "", 404)
	add("folded raw of missing", "GET", "/v1/sketches/nope/raw?log2m=10", "", "", 404)
	add("merge into missing", "POST", "/v1/sketches/nope/raw", "application/octet-stream", string(f.hll), 404)
	add("merge cms into missing", "POST", "/v1/sketches/nope/raw", "application/octet-stream", string(f.cms), 404)
	add("frequency of missing", "POST", "/v1/sketches/nope/frequency", js, `{"ids":[1]}`, 404)
	add("frequency get of missing", "GET", "/v1/sketches/nope/frequency?id=1", "", "", 404)
	add("top of missing", "GET", "/v1/sketches/nope/top", "", "", 404)
	add("fold missing", "POST", "/v1/sketches/nope/fold", js, `{"log2m":10}`, 404)
	add("no such route", "GET", "/v1/nothing", "", "", 404)
	add("no such route below a sketch", "GET", "/v1/sketches/h/nothing", "", "", 404)
	add("post to the console", "POST", "/", "", "", 405)
	add("no such console file", "GET", "/console/nothing.js", "", "", 404)
	add("a console file below a folder", "GET", "/console/x/app.js", "", "", 404)

	// Names.
	badNames := map[string]string{
		"dot dot":         "..",
		"dot":             ".a",
		"leading dash":    "-a",
		"leading under":   "_a",
		"leading colon":   ":a",
		"escaped slash":   "%2F",
		"a escaped slash": "a%2Fb",
		"escaped dotdot":  "..%2F..%2Fetc",
		"space":           "a%20b",
		"plus":            "a+b",
		"percent":         "a%25b",
		"unicode":         "caf%C3%A9",
		"nul":             "a%00",
		"newline":         "a%0Ab",
		"tab":             "a%09",
		"backslash":       "a%5Cb",
		"too long":        strings.Repeat("a", 201),
		"too long escape": strings.Repeat("%61", 201),
		"quote":           "a%22b",
		"star":            "a*",
	}
	for n, name := range badNames {
		add("describe name "+n, "GET", "/v1/sketches/"+name, "", "", 400)
		add("create name "+n, "PUT", "/v1/sketches/"+name, js, `{}`, 400)
		add("add name "+n, "POST", "/v1/sketches/"+name+"/add?create=true", js, `{"ids":[1]}`, 400)
		add("upload name "+n, "PUT", "/v1/sketches/"+name+"/raw", "application/octet-stream", string(f.hll), 400)
		add("delete name "+n, "DELETE", "/v1/sketches/"+name, "", "", 400)
	}
	add("union bad name", "POST", "/v1/union", js, `{"sketches":["h","../x"]}`, 400)
	add("union into bad name", "POST", "/v1/union", js, `{"sketches":["h"],"into":"a/b"}`, 400)
	add("union into long name", "POST", "/v1/union", js, `{"sketches":["h"],"into":"`+strings.Repeat("a", 201)+`"}`, 400)
	add("union empty name", "POST", "/v1/union", js, `{"sketches":[""]}`, 400)
	add("intersection bad name", "POST", "/v1/intersection", js, `{"sketches":["h","é"]}`, 400)
	add("fold into bad name", "POST", "/v1/sketches/h/fold", js, `{"log2m":10,"into":".x"}`, 400)
	add("events bad name", "POST", "/v1/events?create=true", js, `{"events":[{"id":1,"sketches":["h","a b"]}]}`, 400)
	add("events same sketch twice", "POST", "/v1/events", js, `{"events":[{"id":1,"sketches":["c","c"]}]}`, 400)
	add("create log2m null", "PUT", "/v1/sketches/newsketch", js, `{"log2m":null}`, 400)
	add("create body null", "PUT", "/v1/sketches/newsketch", js, `null`, 400)
	add("union into null", "POST", "/v1/union", js, `{"sketches":["h"],"into":null}`, 400)
	add("fold regwidth null", "POST", "/v1/sketches/h/fold", js, `{"log2m":10,"regwidth":null}`, 400)
	add("list bad prefix", "GET", "/v1/sketches?prefix=%2F", "", "", 400)
	add("list bad after", "GET", "/v1/sketches?after=..", "", "", 400)

	// Create parameters.
	for n, body := range map[string]string{
		"log2m 3":                    `{"log2m":3}`,
		"log2m 18":                   `{"log2m":18}`,
		"log2m 31":                   `{"log2m":31}`,
		"log2m -1":                   `{"log2m":-1}`,
		"regwidth 0":                 `{"regwidth":0}`,
		"regwidth 8":                 `{"regwidth":8}`,
		"expthresh 3":                `{"expthresh":3}`,
		"expthresh 100":              `{"expthresh":100}`,
		"expthresh 16384":            `{"expthresh":16384}`,
		"expthresh -2":               `{"expthresh":-2}`,
		"log2m 1.5":                  `{"log2m":1.5}`,
		"log2m 14.0":                 `{"log2m":14.0}`,
		"log2m 1e1":                  `{"log2m":1e1}`,
		"log2m string":               `{"log2m":"14"}`,
		"log2m bool":                 `{"log2m":true}`,
		"log2m array":                `{"log2m":[14]}`,
		"log2m huge":                 `{"log2m":99999999999999999999}`,
		"log2m huge negative":        `{"log2m":-99999999999999999999}`,
		"expthresh huge":             `{"expthresh":9223372036854775808}`,
		"sparse string":              `{"sparse":"true"}`,
		"metric number":              `{"metric":1}`,
		"unknown type":               `{"type":"cuckoo"}`,
		"type number":                `{"type":1}`,
		"type upper case":            `{"type":"HLL"}`,
		"unknown field":              `{"log2m":12,"colour":"red"}`,
		"field case":                 `{"Log2m":12}`,
		"field upper case":           `{"LOG2M":12}`,
		"repeated field":             `{"log2m":12,"log2m":13}`,
		"width on hll":               `{"width":10}`,
		"topk on hll":                `{"topk":1}`,
		"conservative on hll":        `{"type":"hll","conservative":true}`,
		"cms width 0":                `{"type":"cms","width":0,"depth":4}`,
		"cms width -1":               `{"type":"cms","width":-1,"depth":4}`,
		"cms depth 0":                `{"type":"cms","width":10,"depth":0}`,
		"cms depth 33":               `{"type":"cms","width":10,"depth":33}`,
		"cms too many counters":      `{"type":"cms","width":1048577,"depth":4}`,
		"cms width huge":             `{"type":"cms","width":9223372036854775807,"depth":1}`,
		"cms width float":            `{"type":"cms","width":10.5,"depth":4}`,
		"cms width alone":            `{"type":"cms","width":10}`,
		"cms depth alone":            `{"type":"cms","depth":4}`,
		"cms epsilon alone":          `{"type":"cms","epsilon":0.01}`,
		"cms delta alone":            `{"type":"cms","delta":0.01}`,
		"cms shape and bound":        `{"type":"cms","width":10,"depth":4,"epsilon":0.01,"delta":0.01}`,
		"cms epsilon 0":              `{"type":"cms","epsilon":0,"delta":0.01}`,
		"cms epsilon 1":              `{"type":"cms","epsilon":1,"delta":0.01}`,
		"cms epsilon -1":             `{"type":"cms","epsilon":-1,"delta":0.01}`,
		"cms epsilon tiny":           `{"type":"cms","epsilon":1e-300,"delta":0.01}`,
		"cms epsilon string":         `{"type":"cms","epsilon":"0.1","delta":0.01}`,
		"cms delta 0":                `{"type":"cms","epsilon":0.01,"delta":0}`,
		"cms delta 1":                `{"type":"cms","epsilon":0.01,"delta":1}`,
		"cms delta tiny":             `{"type":"cms","epsilon":0.01,"delta":1e-300}`,
		"cms topk 1001":              `{"type":"cms","topk":1001}`,
		"cms topk -1":                `{"type":"cms","topk":-1}`,
		"cms log2m":                  `{"type":"cms","log2m":12}`,
		"cms regwidth":               `{"type":"cms","regwidth":5}`,
		"cms expthresh":              `{"type":"cms","expthresh":-1}`,
		"cms sparse":                 `{"type":"cms","sparse":false}`,
		"malformed":                  `{"log2m":`,
		"array":                      `[]`,
		"trailing":                   `{} {}`,
		"json null with json header": `null x`,
	} {
		add("create "+n, "PUT", "/v1/sketches/newsketch", js, body, 400)
	}
	add("create: unknown query", "PUT", "/v1/sketches/newsketch?log2m=12", js, `{}`, 400)
	add("create: body too large", "PUT", "/v1/sketches/newsketch", js, `{"log2m":12`+strings.Repeat(" ", tableMaxQueryBody)+`}`, 413)
	add("create: text/plain", "PUT", "/v1/sketches/newsketch", "text/plain", `{}`, 415)
	add("create: body without type", "PUT", "/v1/sketches/newsketch", "", `{}`, 415)
	add("create: latin1", "PUT", "/v1/sketches/newsketch", "application/json; charset=latin1", `{}`, 415)
	add("create: unparsable type", "PUT", "/v1/sketches/newsketch", "application/", `{}`, 415)
	add("create conflicting log2m", "PUT", "/v1/sketches/h", js, `{"log2m":12}`, 409)
	add("create conflicting default", "PUT", "/v1/sketches/h", js, `{}`, 409)
	add("create hll over cms", "PUT", "/v1/sketches/c", js, `{"type":"hll","log2m":11}`, 409)
	add("create cms over hll", "PUT", "/v1/sketches/h", js, `{"type":"cms","width":100,"depth":3}`, 409)
	add("create cms other topk", "PUT", "/v1/sketches/c", js, `{"type":"cms","width":100,"depth":3,"topk":4}`, 409)
	add("create cms conservative", "PUT", "/v1/sketches/c", js, `{"type":"cms","width":100,"depth":3,"topk":3,"conservative":true}`, 409)

	// Uploads.
	for n, body := range badUploads(f) {
		add("replace h: "+n, "PUT", "/v1/sketches/h/raw", "application/octet-stream", body, 400)
		add("create from: "+n, "PUT", "/v1/sketches/newraw/raw", "application/octet-stream", body, 400)
		add("merge into h: "+n, "POST", "/v1/sketches/h/raw", "application/octet-stream", body, 400)
		add("merge into c: "+n, "POST", "/v1/sketches/c/raw", "application/octet-stream", body, 400)
		add("create from hex: "+n, "PUT", "/v1/sketches/newraw/raw", "text/plain", `\x`+hex.EncodeToString([]byte(body)), 400)
	}
	for n, body := range badHexUploads {
		add("replace h from text: "+n, "PUT", "/v1/sketches/h/raw", "text/plain", body, 400)
		add("merge into h from text: "+n, "POST", "/v1/sketches/h/raw", "text/plain", body, 400)
	}
	add("upload json", "PUT", "/v1/sketches/h/raw", "application/json", string(f.hll), 415)
	add("upload no type", "PUT", "/v1/sketches/h/raw", "", string(f.hll), 415)
	add("upload latin1 text", "PUT", "/v1/sketches/h/raw", "text/plain; charset=latin1", `\x`+hex.EncodeToString(f.hll), 415)
	add("upload unknown query", "PUT", "/v1/sketches/h/raw?force=1", "application/octet-stream", string(f.hll), 400)
	add("upload too large", "PUT", "/v1/sketches/h/raw", "application/octet-stream", string(f.hll)+strings.Repeat("\x00", tableMaxBody), 413)
	add("replace cms with hll", "PUT", "/v1/sketches/c/raw", "application/octet-stream", string(f.hll), 409)
	add("replace hll with cms", "PUT", "/v1/sketches/h/raw", "application/octet-stream", string(f.cms), 409)
	add("merge hll into cms", "POST", "/v1/sketches/c/raw", "application/octet-stream", string(f.hll), 409)
	add("merge cms into hll", "POST", "/v1/sketches/h/raw", "application/octet-stream", string(f.cms), 409)
	add("merge fewer registers", "POST", "/v1/sketches/h/raw", "application/octet-stream", cat(hllHeader(1, 10, 5, true, 63)), 409)
	add("merge other cms shape", "POST", "/v1/sketches/c/raw", "application/octet-stream", string(f.cms2), 409)

	// Union, intersection, fold.
	// Kinds that cannot be combined conflict with the stored state: 409,
	// as in an intersection.
	add("union hll with cms", "POST", "/v1/union", js, `{"sketches":["h","c"]}`, 409)
	add("union cms with hll", "POST", "/v1/union", js, `{"sketches":["c","h"]}`, 409)
	add("union hll with cms into", "POST", "/v1/union", js, `{"sketches":["h","c"],"into":"newunion"}`, 409)
	add("union of none", "POST", "/v1/union", js, `{"sketches":[]}`, 400)
	add("union without sketches", "POST", "/v1/union", js, `{}`, 400)
	add("union of a string", "POST", "/v1/union", js, `{"sketches":"h"}`, 400)
	add("union of 1001", "POST", "/v1/union", js, `{"sketches":[`+strings.TrimSuffix(strings.Repeat(`"h",`, 1001), ",")+`]}`, 400)
	add("union unknown field", "POST", "/v1/union", js, `{"sketches":["h"],"as":"x"}`, 400)
	add("union into number", "POST", "/v1/union", js, `{"sketches":["h"],"into":1}`, 400)
	add("union with missing", "POST", "/v1/union", js, `{"sketches":["h","nope"]}`, 404)
	add("union of a prefix and names", "POST", "/v1/union", js, `{"prefix":"h","sketches":["h"]}`, 400)
	add("union of a bad prefix", "POST", "/v1/union", js, `{"prefix":"h/"}`, 400)
	add("union of a prefix starting with a dot", "POST", "/v1/union", js, `{"prefix":".h"}`, 400)
	add("union of a null prefix", "POST", "/v1/union", js, `{"prefix":null}`, 400)
	add("union of a numeric prefix", "POST", "/v1/union", js, `{"prefix":1}`, 400)
	add("union of a long prefix", "POST", "/v1/union", js, `{"prefix":"`+strings.Repeat("a", 201)+`"}`, 400)
	add("union of a prefix nothing starts with", "POST", "/v1/union", js, `{"prefix":"nothing:"}`, 404)
	add("union of a prefix of mixed kinds", "POST", "/v1/union", js, `{"prefix":""}`, 409)
	add("union of a prefix of mixed kinds into", "POST", "/v1/union", js, `{"prefix":"","into":"newunion"}`, 409)
	add("union of a prefix operand with a series", "POST", "/v1/union", js, `{"sketches":[{"prefix":"h","series":"s","from":"2024-01-01T00:00:00Z","to":"2024-01-02T00:00:00Z"}]}`, 400)
	add("intersection with a bad prefix operand", "POST", "/v1/intersection", js, `{"sketches":["h",{"prefix":"h*"}]}`, 400)
	add("intersection with a prefix of nothing", "POST", "/v1/intersection", js, `{"sketches":["h",{"prefix":"nothing:"}]}`, 404)
	add("union with missing into", "POST", "/v1/union", js, `{"sketches":["h","nope"],"into":"newunion"}`, 404)
	add("union hll into cms", "POST", "/v1/union", js, `{"sketches":["h","he"],"into":"c"}`, 409)
	add("union cms into hll", "POST", "/v1/union", js, `{"sketches":["c"],"into":"h"}`, 409)
	add("union cms shapes", "POST", "/v1/union", js, `{"sketches":["c","c2"]}`, 409)
	add("union cms shapes into", "POST", "/v1/union", js, `{"sketches":["c","c2"],"into":"newunion"}`, 409)
	add("union text/plain", "POST", "/v1/union", "text/plain", `{"sketches":["h"]}`, 415)
	// The JSON-document routes take at most MaxQueryBody, far below
	// MaxBody: a client cannot make a query hold a maximum-size body.
	pad := strings.Repeat(" ", tableMaxQueryBody)
	add("union too large", "POST", "/v1/union", js, `{"sketches":["h"]`+pad+`}`, 413)
	add("union into, too large", "POST", "/v1/union", js, `{"sketches":["h"],"into":"newunion"`+pad+`}`, 413)
	add("intersection too large", "POST", "/v1/intersection", js, `{"sketches":["h","he"]`+pad+`}`, 413)
	add("frequency too large", "POST", "/v1/sketches/c/frequency", js, `{"ids":[1]`+pad+`}`, 413)
	add("fold too large", "POST", "/v1/sketches/h/fold", js, `{"log2m":10`+pad+`}`, 413)
	add("union query", "POST", "/v1/union?into=x", js, `{"sketches":["h"]}`, 400)
	add("intersection of 1", "POST", "/v1/intersection", js, `{"sketches":["h"]}`, 400)
	add("intersection of 9", "POST", "/v1/intersection", js, `{"sketches":["h","h","h","h","h","h","h","h","h"]}`, 400)
	add("intersection with cms", "POST", "/v1/intersection", js, `{"sketches":["h","c"]}`, 409)
	add("intersection with missing", "POST", "/v1/intersection", js, `{"sketches":["h","nope"]}`, 404)
	add("intersection bad method", "POST", "/v1/intersection", js, `{"sketches":["h","he"],"method":"guess"}`, 400)
	add("intersection malformed", "POST", "/v1/intersection", js, `{"sketches":["h","he"]`, 400)
	add("overlap of 1", "POST", "/v1/overlap", js, `{"sketches":["h"]}`, 400)
	add("overlap of 65", "POST", "/v1/overlap", js, `{"sketches":[`+strings.Repeat(`"h",`, 64)+`"h"]}`, 400)
	add("overlap with cms", "POST", "/v1/overlap", js, `{"sketches":["h","c"]}`, 409)
	add("overlap of cms", "POST", "/v1/overlap", js, `{"sketches":["c","c"]}`, 409)
	add("overlap with missing", "POST", "/v1/overlap", js, `{"sketches":["h","nope"]}`, 404)
	add("overlap malformed", "POST", "/v1/overlap", js, `{"sketches":["h","he"]`, 400)
	add("overlap unknown field", "POST", "/v1/overlap", js, `{"sketches":["h","he"],"x":1}`, 400)
	add("overlap unknown method", "POST", "/v1/overlap", js, `{"sketches":["h","he"],"method":"median"}`, 400)
	add("overlap mle of three", "POST", "/v1/overlap", js, `{"sketches":["h","he","h"],"method":"mle"}`, 400)
	add("overlap empty operand", "POST", "/v1/overlap", js, `{"sketches":["h",{}]}`, 400)
	add("overlap too large", "POST", "/v1/overlap", js, `{"sketches":["h","he"]`+pad+`}`, 413)
	add("overlap text/plain", "POST", "/v1/overlap", "text/plain", `{"sketches":["h","he"]}`, 415)
	add("overlap query", "POST", "/v1/overlap?k=2", js, `{"sketches":["h","he"]}`, 400)
	add("fold up", "POST", "/v1/sketches/h/fold", js, `{"log2m":12}`, 409)
	add("fold to 3", "POST", "/v1/sketches/h/fold", js, `{"log2m":3}`, 400)
	add("fold without log2m", "POST", "/v1/sketches/h/fold", js, `{"into":"x"}`, 400)
	add("fold regwidth 9", "POST", "/v1/sketches/h/fold", js, `{"log2m":10,"regwidth":9}`, 400)
	add("fold float", "POST", "/v1/sketches/h/fold", js, `{"log2m":10.5}`, 400)
	add("fold cms", "POST", "/v1/sketches/c/fold", js, `{"log2m":10}`, 409)
	add("fold into cms", "POST", "/v1/sketches/h/fold", js, `{"log2m":10,"into":"c"}`, 409)

	// Queries on CMS sketches.
	add("frequency of hll", "POST", "/v1/sketches/h/frequency", js, `{"ids":[1]}`, 409)
	add("frequency get of hll", "GET", "/v1/sketches/h/frequency?id=1", "", "", 409)
	add("top of hll", "GET", "/v1/sketches/h/top", "", "", 409)
	add("top without topk", "GET", "/v1/sketches/c2/top", "", "", 409)
	add("frequency float id", "POST", "/v1/sketches/c/frequency", js, `{"ids":[1.5]}`, 400)
	add("frequency null id", "POST", "/v1/sketches/c/frequency", js, `{"ids":[null]}`, 400)
	add("frequency no ids", "POST", "/v1/sketches/c/frequency", js, `{}`, 400)
	add("frequency ids null", "POST", "/v1/sketches/c/frequency", js, `{"ids":null}`, 400)
	add("frequency items", "POST", "/v1/sketches/c/frequency", js, `{"items":[]}`, 400)
	add("frequency too many", "POST", "/v1/sketches/c/frequency", js, idsJSON(idRange(0, 10001)...), 413)
	add("frequency query", "POST", "/v1/sketches/c/frequency?id=1", js, `{"ids":[1]}`, 400)
	add("frequency get text id as int", "GET", "/v1/sketches/c/frequency?id=abc", "", "", 400)
	add("frequency get float id", "GET", "/v1/sketches/c/frequency?id=1.5", "", "", 400)
	add("frequency get no id", "GET", "/v1/sketches/c/frequency", "", "", 400)
	add("frequency get id_type float", "GET", "/v1/sketches/c/frequency?id=1&id_type=float", "", "", 400)
	add("frequency get id_type empty", "GET", "/v1/sketches/c/frequency?id=1&id_type=", "", "", 400)
	add("frequency get unknown query", "GET", "/v1/sketches/c/frequency?id=1&ids=2", "", "", 400)
	add("top k 0", "GET", "/v1/sketches/c/top?k=0", "", "", 400)
	add("top k 1001", "GET", "/v1/sketches/c/top?k=1001", "", "", 400)
	add("top k x", "GET", "/v1/sketches/c/top?k=x", "", "", 400)
	add("top k empty", "GET", "/v1/sketches/c/top?k=", "", "", 400)
	add("top k twice", "GET", "/v1/sketches/c/top?k=1&k=2", "", "", 400)

	// Events.
	for n, body := range map[string]string{
		"no events key":         `{}`,
		"events null":           `{"events":null}`,
		"events object":         `{"events":{}}`,
		"id float":              `{"events":[{"id":1.5,"sketches":["h"]}]}`,
		"id bool":               `{"events":[{"id":true,"sketches":["h"]}]}`,
		"id null":               `{"events":[{"id":null,"sketches":["h"]}]}`,
		"id array":              `{"events":[{"id":[1],"sketches":["h"]}]}`,
		"id beyond int64":       `{"events":[{"id":9223372036854775808,"sketches":["h"]}]}`,
		"id missing":            `{"events":[{"sketches":["h"]}]}`,
		"second id bad":         `{"events":[{"id":1,"sketches":["h"]},{"id":1e3,"sketches":["h"]}]}`,
		"no sketches":           `{"events":[{"id":1,"sketches":[]}]}`,
		"sketches missing":      `{"events":[{"id":1}]}`,
		"sketches string":       `{"events":[{"id":1,"sketches":"h"}]}`,
		"unknown event field":   `{"events":[{"id":1,"sketches":["h"],"count":2}]}`,
		"unknown field":         `{"events":[],"x":1}`,
		"too many sketches":     `{"events":[{"id":1,"sketches":[` + strings.TrimSuffix(strings.Repeat(`"h",`, 101), ",") + `]}]}`,
		"malformed":             `{"events":[{"id":1,"sketches":["h"]}`,
		"lone surrogate id":     `{"events":[{"id":"\udc00","sketches":["h"]}]}`,
		"text too long for cms": `{"events":[{"id":1,"sketches":["h","c"]},{"id":"` + strings.Repeat("z", cms.MaxTextLen+1) + `","sketches":["he","c"]}]}`,
		"invalid utf8 text":     "{\"events\":[{\"id\":\"\xfe\",\"sketches\":[\"c\"]}]}",
	} {
		add("events: "+n, "POST", "/v1/events", js, body, 400)
	}
	add("events: unknown sketch", "POST", "/v1/events", js, `{"events":[{"id":1,"sketches":["h","c"]},{"id":2,"sketches":["he","nope"]}]}`, 404)
	add("events: create yes", "POST", "/v1/events?create=yes", js, `{"events":[{"id":1,"sketches":["h"]}]}`, 400)
	add("events: unknown query", "POST", "/v1/events?sketch=h", js, `{"events":[{"id":1,"sketches":["h"]}]}`, 400)
	add("events: text/plain", "POST", "/v1/events", "text/plain", `{"events":[]}`, 415)
	add("events: too large", "POST", "/v1/events", js, `{"events":[`+strings.Repeat(`{"id":1,"sketches":["h"]},`, tableMaxBody/20)+`{"id":1,"sketches":["h"]}]}`, 413)
	add("events: too many", "POST", "/v1/events", js, `{"events":[`+strings.TrimSuffix(strings.Repeat(`{"id":1,"sketches":["h"]},`, tableMaxIDs+1), ",")+`]}`, 413)

	// Bodies over -max-body, with and without Content-Length.
	big := `{"ids":[` + strings.Repeat("1,", tableMaxBody/2) + `1]}`
	// The body is read before the sketch is looked up (the store decides
	// how to parse it), so a missing sketch is refused for its body too.
	for _, k := range []string{"h", "c", "nope"} {
		want := 413
		p := "/v1/sketches/" + k + "/add"
		add("add "+k+": body too large", "POST", p, js, big, want)
		cs = append(cs, badCase{name: "add " + k + ": chunked body too large", method: "POST", path: p, ctype: js, body: big, chunked: true, want: want})
		add("add "+k+": octet body too large", "POST", p, "application/octet-stream", strings.Repeat("\x00", tableMaxBody+8), want)
	}
	cs = append(cs,
		badCase{name: "upload: chunked body too large", method: "PUT", path: "/v1/sketches/h/raw", ctype: "application/octet-stream", body: strings.Repeat("\x00", tableMaxBody+1), chunked: true, want: 413},
		badCase{name: "union: chunked body too large", method: "POST", path: "/v1/union", ctype: js, body: `{"sketches":["h"]` + strings.Repeat(" ", tableMaxQueryBody) + `}`, chunked: true, want: 413},
		badCase{name: "add: chunked malformed", method: "POST", path: "/v1/sketches/h/add", ctype: js, body: `{"ids":[1,2`, chunked: true, want: 400},
	)
	// A body exactly at the limit is read (and refused for its content).
	add("add: body at the limit, malformed", "POST", "/v1/sketches/h/add", js, `{"ids":[`+strings.Repeat(" ", tableMaxBody-9)+`x`, 400)

	// Media types.
	for _, k := range []string{"h", "c"} {
		p := "/v1/sketches/" + k + "/add"
		add("add "+k+": text/csv", "POST", p, "text/csv", "1,2", 415)
		add("add "+k+": no content type", "POST", p, "", `{"ids":[1]}`, 415)
		add("add "+k+": json latin1", "POST", p, "application/json; charset=latin1", `{"ids":[1]}`, 415)
		add("add "+k+": text latin1", "POST", p, "text/plain; charset=ISO-8859-1", "1\n", 415)
		add("add "+k+": unparsable type", "POST", p, "application/json; charset", `{"ids":[1]}`, 415)
		add("add "+k+": form", "POST", p, "application/x-www-form-urlencoded", "ids=1", 415)
		add("add "+k+": problem+json", "POST", p, "application/problem+json", `{"ids":[1]}`, 415)
	}
	add("frequency: text/plain", "POST", "/v1/sketches/c/frequency", "text/plain", `{"ids":[1]}`, 415)
	add("intersection: no type", "POST", "/v1/intersection", "", `{"sketches":["h","he"]}`, 415)
	add("fold: xml", "POST", "/v1/sketches/h/fold", "application/xml", `<fold/>`, 415)
	add("expiry: no type", "PATCH", "/v1/sketches/h", "", `{"expire_after":"P1D"}`, 415)
	add("expiry: unknown field", "PATCH", "/v1/sketches/h", "application/json", `{"expire_in":"P1D"}`, 400)

	// Methods.
	for _, m := range []struct{ method, path string }{
		{"PATCH", "/v1/sketches/h/add"},
		{"POST", "/v1/sketches/h"},
		{"DELETE", "/v1/sketches"},
		{"PUT", "/v1/sketches"},
		{"GET", "/v1/union"},
		{"PUT", "/v1/union"},
		{"GET", "/v1/intersection"},
		{"GET", "/v1/overlap"},
		{"GET", "/v1/events"},
		{"DELETE", "/v1/events"},
		{"PUT", "/v1/sketches/h/add"},
		{"GET", "/v1/sketches/h/add"},
		{"DELETE", "/v1/sketches/h/raw"},
		{"PUT", "/v1/sketches/c/frequency"},
		{"POST", "/v1/sketches/c/top"},
		{"GET", "/v1/sketches/h/fold"},
		{"DELETE", "/healthz"},
		{"POST", "/readyz"},
		{"POST", "/metrics"},
		{"PUT", "/openapi.yaml"},
		{"BREW", "/v1/sketches/h"},
	} {
		add("method "+m.method+" "+m.path, m.method, m.path, "", "", 405)
	}

	// Query parameters.
	for n, q := range map[string]string{
		"unknown":         "foo=1",
		"limit 0":         "limit=0",
		"limit -1":        "limit=-1",
		"limit x":         "limit=x",
		"limit 1001":      "limit=1001",
		"limit empty":     "limit=",
		"limit float":     "limit=1.5",
		"limit twice":     "limit=1&limit=2",
		"limit huge":      "limit=99999999999999999999",
		"malformed query": "limit=%zz",
		"semicolon":       "limit=1;prefix=a",
	} {
		add("list "+n, "GET", "/v1/sketches?"+q, "", "", 400)
	}
	for n, q := range map[string]string{
		"format pdf":   "format=pdf",
		"format HEX":   "format=HEX",
		"format empty": "format=",
		"log2m 99":     "log2m=99",
		"log2m 3":      "log2m=3",
		"log2m x":      "log2m=x",
		"log2m empty":  "log2m=",
		"unknown":      "fold=10",
		"log2m twice":  "log2m=10&log2m=9",
	} {
		add("raw "+n, "GET", "/v1/sketches/h/raw?"+q, "", "", 400)
	}
	add("raw log2m up", "GET", "/v1/sketches/h/raw?log2m=12", "", "", 409)
	add("raw log2m of cms", "GET", "/v1/sketches/c/raw?log2m=10", "", "", 409)
	add("describe with query", "GET", "/v1/sketches/h?verbose=1", "", "", 400)
	add("delete with query", "DELETE", "/v1/sketches/h?force=true", "", "", 400)
	add("fold with query", "POST", "/v1/sketches/h/fold?into=x", js, `{"log2m":10}`, 400)
	add("top unknown query", "GET", "/v1/sketches/c/top?n=1", "", "", 400)
	add("intersection query", "POST", "/v1/intersection?method=mle", js, `{"sketches":["h","he"]}`, 400)
	return cs
}

// chunkedReader hides its length so the client sends the body chunked,
// without Content-Length.
type chunkedReader struct{ io.Reader }

// TestBadInput sends every refused request of the table: each must get
// its 4xx as a well-formed problem, and no stored sketch may change.
func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *Config) { c.MaxBody = tableMaxBody; c.MaxQueryBody = tableMaxQueryBody; c.MaxIDs = tableMaxIDs }))
	f := makeFixture(t)
	f.load(t, e)
	// The fixture's sketches hold data; "h" has left EXPLICIT.
	var d hllResponse
	decode(t, must(t, e.get(t, "/v1/sketches/h"), 200, "describe h").Body, &d)
	if d.Representation != "SPARSE" && d.Representation != "FULL" || d.Cardinality < 1500 {
		t.Fatalf("fixture h = %+v, want SPARSE or FULL with about 2000 ids", d)
	}
	before := e.snapshot(t)
	if len(before) != 4 {
		t.Fatalf("fixture has %d sketches, want 4", len(before))
	}
	seen := map[string]bool{}
	for _, c := range badInputCases(f) {
		if seen[c.name] {
			t.Fatalf("case name %q repeated", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			var body io.Reader
			if c.body != "" || c.chunked {
				body = strings.NewReader(c.body)
				if c.chunked {
					body = chunkedReader{body}
				}
			}
			var hdr []string
			if c.ctype != "" {
				hdr = append(hdr, "Content-Type: "+c.ctype)
			}
			r := e.do(t, request{Method: c.method, Path: c.path, Body: body, Header: hdr})
			p := checkProblem(t, r, c.want)
			if r.Status == http.StatusMethodNotAllowed && r.Header.Get("Allow") == "" {
				t.Errorf("405 without an Allow header (detail %q)", p.Detail)
			}
			if d := before.diff(e.snapshot(t)); len(d) > 0 {
				t.Errorf("the store changed: %s", strings.Join(d, "; "))
			}
		})
	}
	if len(seen) < 400 {
		t.Errorf("the table has %d cases", len(seen))
	}
}

// TestEscapedNames: a name escaped beyond what a path needs (a ':' as %3A,
// as encodeURIComponent writes it, or a letter as %41) names the same
// sketch or series as the plain one, on every route that takes a name.
func TestEscapedNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	must(t, e.send(t, http.MethodPut, "/v1/sketches/dau%3A2026-11-17", "application/json", `{"log2m":12}`), http.StatusCreated, "create escaped")
	must(t, e.postJSON(t, "/v1/sketches/dau:2026-11-17/add", `{"ids":[1,2]}`), http.StatusOK, "add plain")
	must(t, e.postJSON(t, "/v1/sketches/dau%3a2026-11-17/add", `{"ids":[3]}`), http.StatusOK, "add escaped, lower case")
	var d struct {
		Name        string  `json:"name"`
		Cardinality float64 `json:"cardinality"`
	}
	decode(t, must(t, e.get(t, "/v1/sketches/%64au%3A2026-11-17"), http.StatusOK, "describe escaped letter").Body, &d)
	if d.Name != "dau:2026-11-17" || d.Cardinality != 3 {
		t.Fatalf("describe = %+v, want dau:2026-11-17 holding 3 ids", d)
	}
	raw := must(t, e.get(t, "/v1/sketches/dau%3A2026-11-17/raw"), http.StatusOK, "raw escaped").Body
	if want := must(t, e.get(t, "/v1/sketches/dau:2026-11-17/raw"), http.StatusOK, "raw plain").Body; !bytes.Equal(raw, want) {
		t.Error("raw through the escaped name differs from the plain one")
	}
	var list struct {
		Sketches []struct {
			Name string `json:"name"`
		} `json:"sketches"`
	}
	decode(t, must(t, e.get(t, "/v1/sketches?prefix=dau"), http.StatusOK, "list").Body, &list)
	if len(list.Sketches) != 1 || list.Sketches[0].Name != "dau:2026-11-17" {
		t.Errorf("list = %+v, want the one sketch", list)
	}
	must(t, e.send(t, http.MethodDelete, "/v1/sketches/dau%3A2026-11-17", "", ""), http.StatusNoContent, "delete escaped")
	checkProblem(t, e.get(t, "/v1/sketches/dau:2026-11-17"), http.StatusNotFound)
	// An escape that decodes to what a name may not hold is still refused.
	for _, name := range []string{"a%2Fb", "%2E%2E", "a%25"} {
		checkProblem(t, e.get(t, "/v1/sketches/"+name), http.StatusBadRequest)
	}
	if _, ok := e.db.Store.(SeriesStore); ok {
		must(t, e.send(t, http.MethodPut, "/v1/series/web%3Adau", "application/json", `{"levels":{"day":"P30D"}}`), http.StatusCreated, "create series escaped")
		must(t, e.get(t, "/v1/series/web:dau"), http.StatusOK, "describe series plain")
	}
}
