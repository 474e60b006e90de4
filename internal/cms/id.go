package cms

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/sketchd/sketchd/internal/murmur"
)

// ID identifies a counted item: an int64 or a text. The two kinds never
// collide as values (IntID(1) != TextID("1")) although their hashes may.
// The zero ID is IntID(0). IDs are comparable with ==.
type ID struct {
	text   string
	num    int64
	isText bool
}

// IntID returns the id of the integer v, hashed like postgresql-hll's
// hll_hash_bigint(v).
func IntID(v int64) ID { return ID{num: v} }

// TextID returns the id of the text s, hashed over its bytes like
// postgresql-hll's hll_hash_text(s). Adding it fails unless s is valid
// UTF-8 of at most MaxTextLen bytes (see Validate).
func TextID(s string) ID { return ID{text: s, isText: true} }

// IsText reports whether id is a text id.
func (id ID) IsText() bool { return id.isText }

// Int returns the integer of an int id, 0 for a text id.
func (id ID) Int() int64 { return id.num }

// Text returns the text of a text id, "" for an int id.
func (id ID) Text() string { return id.text }

// String formats an int id in decimal and a text id Go-quoted, so the two
// kinds stay distinct in logs and test output.
func (id ID) String() string {
	if id.isText {
		return strconv.Quote(id.text)
	}
	return strconv.FormatInt(id.num, 10)
}

// Validate reports whether id may be added: a text id must be valid UTF-8
// of at most MaxTextLen bytes. The error wraps ErrItem.
func (id ID) Validate() error {
	if err := id.check(); err != nil {
		return fmt.Errorf("cms: %w", err)
	}
	return nil
}

// check is Validate without the package prefix, for callers that add
// their own context.
func (id ID) check() error {
	if id.isText {
		return checkText(len(id.text), utf8.ValidString(id.text))
	}
	return nil
}

// checkText checks a text id of n bytes whose UTF-8 validity is valid.
func checkText(n int, valid bool) error {
	if n > MaxTextLen {
		return fmt.Errorf("text id of %d bytes, more than %d: %w", n, MaxTextLen, ErrItem)
	}
	if !valid {
		return fmt.Errorf("text id is not valid UTF-8: %w", ErrItem)
	}
	return nil
}

// hash returns the 128-bit MurmurHash3 (seed 0) the row indexes derive from.
func (id ID) hash() (h1, h2 uint64) {
	if id.isText {
		return murmur.String(id.text, 0)
	}
	return murmur.Int64(id.num, 0)
}

// less orders ids: int ids before text ids, ints by value, texts bytewise.
// Heavy-hitter ties are broken with it.
func (id ID) less(o ID) bool {
	if id.isText != o.isText {
		return !id.isText
	}
	if id.isText {
		return id.text < o.text
	}
	return id.num < o.num
}

// Item is an id with a count: an addition for AddBatch, or a heavy hitter
// with its estimate from Top.
type Item struct {
	ID    ID
	Count uint64
}
