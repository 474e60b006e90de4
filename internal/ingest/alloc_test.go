package ingest

import (
	"encoding/binary"
	"strconv"
	"testing"
)

func TestNoAllocations(t *testing.T) {
	ints, texts := benchInts(), benchTexts()
	var octet []byte
	for _, v := range ints {
		octet = binary.BigEndian.AppendUint64(octet, uint64(v))
	}
	mixed := make([]any, benchIDs)
	for i := range mixed {
		mixed[i] = ints[i]
		if i%3 == 0 {
			mixed[i] = texts[i]
		}
	}
	for _, tt := range []struct {
		name  string
		body  []byte
		parse func([]uint64, []byte) ([]uint64, error)
	}{
		{"json ints", jsonBody(t, "ids", ints, false), jsonHashes},
		{"json indented", jsonBody(t, "ids", ints, true), jsonHashes},
		{"json texts", jsonBody(t, "ids", texts, false), jsonHashes},
		{"json mixed", jsonBody(t, "ids", mixed, false), jsonHashes},
		{"json hashes", jsonBody(t, "hashes", ints, false), jsonHashes},
		{"ndjson", lineBody(mixed, func(v any) string { b, _ := jsonMarshal(v); return b }), lineHashes(NDJSON)},
		{"text ints", lineBody(ints, func(v int64) string { return strconv.FormatInt(v, 10) }), lineHashes(TextInts)},
		{"text texts", lineBody(texts, func(s string) string { return s }), lineHashes(TextTexts)},
		{"octet", octet, func(d []uint64, b []byte) ([]uint64, error) { return AppendOctetHashes(d, b, benchIDs) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dst := make([]uint64, 0, benchIDs)
			var err error
			allocs := testing.AllocsPerRun(20, func() {
				dst, err = tt.parse(dst[:0], tt.body)
			})
			if err != nil || len(dst) != benchIDs {
				t.Fatalf("parse: %d ids, %v", len(dst), err)
			}
			if allocs != 0 {
				t.Errorf("allocations per parse of %d ids = %v, want 0", benchIDs, allocs)
			}
		})
	}
}

// Strings with escapes share one scratch buffer per call, never one per id.
func TestEscapedStringsAllocateOncePerCall(t *testing.T) {
	texts := benchTexts()
	for i := range texts {
		texts[i] += "\n\u00e9\""
	}
	body := jsonBody(t, "ids", texts, false)
	dst := make([]uint64, 0, benchIDs)
	var err error
	allocs := testing.AllocsPerRun(20, func() { dst, err = AppendJSONHashes(dst[:0], body, benchIDs) })
	if err != nil || len(dst) != benchIDs {
		t.Fatalf("parse: %d ids, %v", len(dst), err)
	}
	if allocs != 1 {
		t.Errorf("allocations per parse of %d escaped strings = %v, want 1", benchIDs, allocs)
	}
}

func jsonHashes(d []uint64, b []byte) ([]uint64, error) { return AppendJSONHashes(d, b, benchIDs) }

func lineHashes(f LineFormat) func([]uint64, []byte) ([]uint64, error) {
	return func(d []uint64, b []byte) ([]uint64, error) { return AppendLineHashes(d, b, f, benchIDs) }
}

func jsonMarshal(v any) (string, error) {
	if s, ok := v.(string); ok {
		return strconv.Quote(s), nil
	}
	return strconv.FormatInt(v.(int64), 10), nil
}
