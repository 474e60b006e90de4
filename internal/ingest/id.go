package ingest

import (
	"encoding/json"
	"strconv"

	"github.com/sketchd/sketchd/internal/murmur"
)

// ID is an id as the client gave it: a JSON integer (Int) or a string
// (Text, when IsText). Two IDs are the same id iff they are ==; the int 7
// and the text "7" are different ids with different hashes.
//
// IDs returned by this package own their Text: it never aliases the body,
// so the body buffer may be reused. All texts of one call share a single
// allocation, so a caller that keeps a few IDs long after the call (a
// heavy-hitter table) should strings.Clone their Text to avoid pinning the
// whole batch.
type ID struct {
	Int    int64
	Text   string
	IsText bool
}

// IntID returns the integer id v.
func IntID(v int64) ID { return ID{Int: v} }

// TextID returns the text id s.
func TextID(s string) ID { return ID{Text: s, IsText: true} }

// Hash returns the 64-bit hash sketches use for the id: postgresql-hll's
// hll_hash_bigint for an integer, hll_hash_text (MurmurHash3 x64_128 of
// the UTF-8 bytes, seed 0, first half) for a text.
func (id ID) Hash() uint64 {
	if id.IsText {
		h, _ := murmur.String(id.Text, 0)
		return h
	}
	h, _ := murmur.Int64(id.Int, 0)
	return h
}

// String returns the integer in decimal, or the text quoted as JSON.
func (id ID) String() string {
	b, _ := id.MarshalJSON()
	return string(b)
}

// MarshalJSON echoes the id back as given: a JSON number or a JSON string.
func (id ID) MarshalJSON() ([]byte, error) {
	if id.IsText {
		return json.Marshal(id.Text)
	}
	return strconv.AppendInt(nil, id.Int, 10), nil
}

// Item is an id with a positive count (1 for ids given without one).
type Item struct {
	ID    ID
	Count int64
}
