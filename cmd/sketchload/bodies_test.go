package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var allFormats = []format{formatJSON, formatJSONText, formatNDJSON, formatText, formatOctet, formatJSONUUID}

// uuidShape is the form of a UUID's text: 8-4-4-4-12 lowercase hex digits.
var uuidShape = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// unmix64 inverts splitmix64's finalizer step by step (the multiplier's
// inverse mod 2^64 by Newton's iteration), to read the id back out of the
// low half of a UUID-like id.
func unmix64(x uint64) uint64 {
	inv := func(c uint64) uint64 {
		v := c
		for range 6 {
			v *= 2 - c*v
		}
		return v
	}
	x ^= x>>31 ^ x>>62
	x *= inv(0x94d049bb133111eb)
	x ^= x>>27 ^ x>>54
	x *= inv(0xbf58476d1ce4e5b9)
	return x ^ x>>30 ^ x>>60
}

// decodeBody decodes a body the way the HTTP contract defines each format,
// independently of appendBody, and returns the ids it carries.
func decodeBody(f format, body []byte) ([]int64, error) {
	switch f {
	case formatJSON:
		var v struct {
			IDs []int64 `json:"ids"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if dec.More() {
			return nil, fmt.Errorf("trailing data")
		}
		if v.IDs == nil {
			return nil, fmt.Errorf("no ids array")
		}
		return v.IDs, nil
	case formatJSONText:
		var v struct {
			IDs []string `json:"ids"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return nil, err
		}
		if v.IDs == nil {
			return nil, fmt.Errorf("no ids array")
		}
		out := make([]int64, 0, len(v.IDs))
		for _, s := range v.IDs {
			n, ok := strings.CutPrefix(s, textIDPrefix)
			if !ok {
				return nil, fmt.Errorf("text id %q lacks prefix %q", s, textIDPrefix)
			}
			id, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				return nil, err
			}
			out = append(out, id)
		}
		return out, nil
	case formatJSONUUID:
		var v struct {
			IDs []string `json:"ids"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return nil, err
		}
		if v.IDs == nil {
			return nil, fmt.Errorf("no ids array")
		}
		out := make([]int64, 0, len(v.IDs))
		for _, s := range v.IDs {
			if !uuidShape.MatchString(s) {
				return nil, fmt.Errorf("id %q is not shaped as a UUID", s)
			}
			hex := strings.ReplaceAll(s, "-", "")
			lo, err := strconv.ParseUint(hex[16:], 16, 64)
			if err != nil {
				return nil, err
			}
			out = append(out, int64(unmix64(lo)^0x9e3779b97f4a7c15))
		}
		return out, nil
	case formatNDJSON, formatText:
		if len(body) > 0 && body[len(body)-1] != '\n' {
			return nil, fmt.Errorf("last line not terminated")
		}
		out := []int64{}
		sc := bufio.NewScanner(bytes.NewReader(body))
		for sc.Scan() {
			var id int64
			var err error
			if f == formatNDJSON {
				err = json.Unmarshal(sc.Bytes(), &id)
			} else {
				id, err = strconv.ParseInt(sc.Text(), 10, 64)
			}
			if err != nil {
				return nil, fmt.Errorf("line %q: %w", sc.Text(), err)
			}
			out = append(out, id)
		}
		return out, sc.Err()
	case formatOctet:
		if len(body)%8 != 0 {
			return nil, fmt.Errorf("octet body of %d bytes is not a multiple of 8", len(body))
		}
		out := []int64{}
		for b := body; len(b) > 0; b = b[8:] {
			out = append(out, int64(binary.BigEndian.Uint64(b)))
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown format %d", f)
}

// decodeRESP parses one RESP array of bulk strings and returns its elements
// and what follows it.
func decodeRESP(b []byte) ([]string, []byte, error) {
	line := func() (string, error) {
		i := bytes.Index(b, []byte("\r\n"))
		if i < 0 {
			return "", fmt.Errorf("no CRLF")
		}
		s := string(b[:i])
		b = b[i+2:]
		return s, nil
	}
	h, err := line()
	if err != nil || !strings.HasPrefix(h, "*") {
		return nil, nil, fmt.Errorf("array header %q: %v", h, err)
	}
	n, err := strconv.Atoi(h[1:])
	if err != nil {
		return nil, nil, err
	}
	var out []string
	for range n {
		h, err := line()
		if err != nil || !strings.HasPrefix(h, "$") {
			return nil, nil, fmt.Errorf("bulk header %q: %v", h, err)
		}
		l, err := strconv.Atoi(h[1:])
		if err != nil || l < 0 || len(b) < l+2 || string(b[l:l+2]) != "\r\n" {
			return nil, nil, fmt.Errorf("bulk of %d bytes: %v", l, err)
		}
		out = append(out, string(b[:l]))
		b = b[l+2:]
	}
	return out, b, nil
}

func TestAppendBodyRoundTrip(t *testing.T) {
	t.Parallel()
	idSets := map[string][]int64{
		"empty":   {},
		"one":     {0},
		"edges":   {0, 1, 9, 10, 99, 100, math.MaxInt64, math.MaxInt32, 1 << 53},
		"uniform": genIDs(distUniform, 1000, 100_000_000),
		"zipf":    genIDs(distZipf, 1000, 1_000_000),
		"repeats": {5, 5, 5, 7, 5},
		"negative": func() []int64 { // as -negative sends them
			ids := append(genIDs(distUniform, 1000, 1<<63), 0, math.MaxInt64)
			negate(ids)
			return ids
		}(),
	}
	for _, f := range allFormats {
		for name, ids := range idSets {
			t.Run(f.String()+"/"+name, func(t *testing.T) {
				t.Parallel()
				body := appendBody([]byte("junk"), f, ids)
				if !bytes.HasPrefix(body, []byte("junk")) {
					t.Fatalf("appendBody overwrote the prefix of dst")
				}
				got, err := decodeBody(f, body[4:])
				if err != nil {
					t.Fatalf("decode %s body %.80q: %v", f, body[4:], err)
				}
				if !slices.Equal(got, ids) {
					t.Fatalf("decoded %d ids %v, want %d ids %v", len(got), head(got), len(ids), head(ids))
				}
			})
		}
	}
}

func TestAppendRESP(t *testing.T) {
	t.Parallel()
	ids := []int64{0, 7, 42, math.MaxInt64, 123456789012}
	cmd := appendRESPHeader(nil, "load-3", len(ids))
	cmd = appendRESPArgs(cmd, ids)
	cmd = append(cmd, "tail"...)
	args, rest, err := decodeRESP(cmd)
	if err != nil {
		t.Fatalf("decodeRESP(%q): %v", cmd, err)
	}
	want := []string{"PFADD", "load-3", "0", "7", "42", "9223372036854775807", "123456789012"}
	if !slices.Equal(args, want) {
		t.Errorf("command = %q, want %q", args, want)
	}
	if string(rest) != "tail" {
		t.Errorf("left after the command: %q, want %q", rest, "tail")
	}
}

// TestBuildNoAlloc pins the promise that building a batch during a run
// costs no allocation, whatever the size.
func TestBuildNoAlloc(t *testing.T) {
	const n = 10000
	for _, d := range []dist{distUniform, distZipf, distSequential} {
		g := newIDGen(d, 1<<62, 1.1, 1, 1)
		ids := make([]int64, n)
		buf := make([]byte, 0, bodyCap(n))
		for _, f := range allFormats {
			var k uint64
			allocs := testing.AllocsPerRun(20, func() {
				k++
				g.fill(ids, k<<50)
				buf = appendBody(buf[:0], f, ids)
			})
			if allocs != 0 {
				t.Errorf("%s/%s: %v allocations per batch of %d ids, want 0", d, f, allocs, n)
			}
		}
		allocs := testing.AllocsPerRun(20, func() {
			g.fill(ids, 3)
			buf = appendRESPArgs(buf[:0], ids)
		})
		if allocs != 0 {
			t.Errorf("%s/resp: %v allocations per batch of %d ids, want 0", d, allocs, n)
		}
	}
}

func FuzzAppendBody(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1})
	f.Add(bytes.Repeat([]byte{0xff}, 24))
	f.Fuzz(func(t *testing.T, data []byte) {
		ids := make([]int64, 0, len(data)/8)
		for b := data; len(b) >= 8; b = b[8:] {
			ids = append(ids, int64(binary.BigEndian.Uint64(b)&math.MaxInt64))
		}
		for _, fm := range allFormats {
			got, err := decodeBody(fm, appendBody(nil, fm, ids))
			if err != nil {
				t.Fatalf("%s: decode: %v", fm, err)
			}
			if !slices.Equal(got, ids) {
				t.Fatalf("%s: decoded %v, want %v", fm, head(got), head(ids))
			}
		}
		args, rest, err := decodeRESP(appendRESPArgs(appendRESPHeader(nil, "k", len(ids)), ids))
		if err != nil || len(rest) != 0 || len(args) != len(ids)+2 {
			t.Fatalf("resp: %d args, %d bytes left, err %v; want %d args", len(args), len(rest), err, len(ids)+2)
		}
		for i, id := range ids {
			if args[i+2] != strconv.FormatInt(id, 10) {
				t.Fatalf("resp arg %d = %q, want %d", i, args[i+2], id)
			}
		}
	})
}

func TestParseFormat(t *testing.T) {
	t.Parallel()
	for _, f := range allFormats {
		got, err := parseFormat(f.String())
		if err != nil || got != f {
			t.Errorf("parseFormat(%q) = %v, %v, want %v", f.String(), got, err, f)
		}
	}
	if _, err := parseFormat("xml"); err == nil {
		t.Errorf("parseFormat(%q) succeeded, want an error", "xml")
	}
	if got := formatText.query(); got != "?id_type=int" {
		t.Errorf("text query = %q, want ?id_type=int", got)
	}
}

func genIDs(d dist, n int, space uint64) []int64 {
	ids := make([]int64, n)
	newIDGen(d, space, 1.2, 9, 9).fill(ids, 0)
	return ids
}

func head(ids []int64) []int64 { return ids[:min(len(ids), 8)] }

func BenchmarkAppendBody(b *testing.B) {
	const n = 10000
	ids := genIDs(distUniform, n, 100_000_000)
	for _, f := range allFormats {
		b.Run(f.String(), func(b *testing.B) {
			buf := make([]byte, 0, bodyCap(n))
			b.ReportAllocs()
			for b.Loop() {
				buf = appendBody(buf[:0], f, ids)
			}
			b.SetBytes(int64(len(buf)))
			b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "ids/s")
		})
	}
}
