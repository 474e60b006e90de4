package hll_test

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"math/bits"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sketchd/sketchd/internal/hll"
)

// docExample is one worked example of docs/storage-format.md: the
// summary block and the bytes listed one by one in the table after it.
type docExample struct {
	fields map[string]string
	table  []byte // the table's first column, concatenated
}

// readDocExamples parses the ```text blocks that start with "bytes:" and
// the byte table that follows each.
func readDocExamples(tb testing.TB, doc string) []docExample {
	tb.Helper()
	var out []docExample
	sc := bufio.NewScanner(strings.NewReader(doc))
	var cur *docExample
	inBlock, inTable := false, false
	tableCell := regexp.MustCompile("^\\| `([0-9a-f]+)` \\|")
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "```text":
			inBlock = true
			out = append(out, docExample{fields: map[string]string{}})
			cur = &out[len(out)-1]
			inTable = false
		case inBlock && line == "```":
			inBlock = false
		case inBlock:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				tb.Fatalf("docs/storage-format.md: %q in an example block has no colon", line)
			}
			cur.fields[k] = strings.TrimSpace(v)
		case cur != nil && strings.HasPrefix(line, "| byte |"):
			inTable = cur.table == nil
		case inTable && strings.HasPrefix(line, "|"):
			if m := tableCell.FindStringSubmatch(line); m != nil {
				b, err := hex.DecodeString(m[1])
				if err != nil {
					tb.Fatalf("table cell %q: %v", m[1], err)
				}
				cur.table = append(cur.table, b...)
			}
		default:
			if inTable && line == "" {
				inTable = false
			}
		}
	}
	return out
}

// TestStorageFormatDoc decodes the bytes shown in docs/storage-format.md,
// checks everything the page says about them, and rebuilds them from the
// ids it shows.
func TestStorageFormatDoc(t *testing.T) {
	raw, err := os.ReadFile("../../docs/storage-format.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)

	// The table of ids, hashes, indexes and values at log2m 4.
	hashRow := regexp.MustCompile("(?m)^\\| (\\d+) \\| `([0-9a-f]{16})` \\| `[0-9a-f]` = (\\d+) \\| (\\d+) \\| (\\d+) \\|$")
	rows := hashRow.FindAllStringSubmatch(doc, -1)
	if len(rows) != 3 {
		t.Fatalf("found %d rows of the hash table, want 3", len(rows))
	}
	for _, r := range rows {
		id, _ := strconv.ParseInt(r[1], 10, 64)
		h := hll.HashInt64(id)
		var le [8]byte
		for i := range le {
			le[i] = byte(uint64(id) >> (8 * i))
		}
		if hb := hll.HashBytes(le[:]); hb != h {
			t.Errorf("id %d: hash of its 8 little-endian bytes %016x, HashInt64 %016x", id, hb, h)
		}
		index := h & 15
		value := 1 + bits.TrailingZeros64(h>>4)
		if got := fmt.Sprintf("%016x %d %d %d", h, index, value-1, value); got != strings.Join(r[2:], " ") {
			t.Errorf("id %d: computed hash, index, zeros, value %s; the page says %s", id, got, strings.Join(r[2:], " "))
		}
	}

	examples := readDocExamples(t, doc)
	if len(examples) != 4 {
		t.Fatalf("found %d worked examples, want 4", len(examples))
	}
	for _, ex := range examples {
		f := ex.fields
		t.Run(f["type"], func(t *testing.T) {
			want, err := hex.DecodeString(strings.TrimPrefix(f["bytes"], `\x`))
			if err != nil {
				t.Fatalf("bytes %q: %v", f["bytes"], err)
			}
			if !bytes.Equal(ex.table, want) {
				t.Errorf("the byte table lists %x, the example's bytes are %x", ex.table, want)
			}
			s, err := hll.Decode(want)
			if err != nil {
				t.Fatalf("Decode(%x): %v", want, err)
			}
			if got := s.Params().String(); got != f["params"] {
				t.Errorf("params %q, the page says %q", got, f["params"])
			}
			if got := s.Representation().String(); got != f["type"] {
				t.Errorf("type %s, the page says %s", got, f["type"])
			}
			if r, ok := f["registers"]; ok {
				var got []string
				for i, v := range s.Registers(nil) {
					if v != 0 {
						got = append(got, fmt.Sprintf("%d=%d", i, v))
					}
				}
				if strings.Join(got, " ") != r {
					t.Errorf("registers %v, the page says %s", got, r)
				}
			}
			if hs, ok := f["hashes"]; ok {
				ex, isExplicit := s.Explicit()
				var got []string
				for _, h := range ex {
					got = append(got, fmt.Sprintf("%016x", h))
				}
				if !isExplicit || strings.Join(got, " ") != hs {
					t.Errorf("hashes %v (explicit %v), the page says %s", got, isExplicit, hs)
				}
			}
			shown := f["estimate"]
			digits := 0
			if _, frac, ok := strings.Cut(shown, "."); ok {
				digits = len(frac)
			}
			if got := strconv.FormatFloat(s.Estimate(), 'f', digits, 64); got != shown {
				t.Errorf("estimate %v, the page says %s", s.Estimate(), shown)
			}

			// The same bytes from the ids and parameters shown.
			var p hll.Params
			if _, err := fmt.Sscanf(f["params"], "log2m=%d regwidth=%d expthresh=%d sparse=%t", &p.Log2m, &p.Regwidth, &p.Expthresh, &p.Sparse); err != nil {
				t.Fatalf("params %q: %v", f["params"], err)
			}
			b, err := hll.New(p)
			if err != nil {
				t.Fatal(err)
			}
			if f["ids"] != "none" {
				for _, id := range strings.Split(f["ids"], ", ") {
					n, err := strconv.ParseInt(id, 10, 64)
					if err != nil {
						t.Fatalf("ids %q: %v", f["ids"], err)
					}
					b.AddInt64(n)
				}
			}
			got, err := b.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("ids %s at %s encode to %x, the page shows %x", f["ids"], f["params"], got, want)
			}
			if math.IsNaN(s.Estimate()) || !slices.Contains([]string{"EMPTY", "EXPLICIT", "SPARSE", "FULL"}, f["type"]) {
				t.Errorf("example of type %q", f["type"])
			}
		})
	}
}
