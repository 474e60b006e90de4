package sketch

import (
	"bytes"
	"encoding/binary"
)

// original keeps the bytes a sketch was decoded from, as PostgreSQL keeps
// an uploaded value, while they differ from the sketch's own encoding and
// nothing has changed the sketch since: a java-hll FULL sketch that
// postgresql-hll's rules would write as SPARSE, a Java theta sketch (p in
// bytes 12-15, compressed, or an update sketch), a tuple sketch with
// Java's 5-byte summaries. AppendBinary then returns them unchanged, so a
// download (and the store's record, so a restart or another node) gives
// back exactly what was uploaded. The next write (an add of at least one
// id, even one that changes nothing; a merge or union into it) drops
// them, and the sketch is written in its own encoding from then on, as
// PostgreSQL re-encodes a value on its next write.
//
// Wrappers hold a pointer, shared by copies of the wrapper as they share
// the engine sketch; nil means no original is kept.
type original struct{ b []byte }

// keepOriginal returns the original to keep for a sketch decoded from b
// whose own encoding (size bytes, written by enc) is what it would
// otherwise store: nil when that encoding is b itself.
func keepOriginal(b []byte, size int, enc func([]byte) []byte) *original {
	if size == len(b) && bytes.Equal(enc(make([]byte, 0, size)), b) {
		return nil
	}
	return &original{b: bytes.Clone(b)}
}

// written records that a write of n ids reached the sketch (Apply,
// whose delta started at length at): the kept bytes are dropped even when
// the ids changed nothing, as PostgreSQL re-encodes a value on every
// write (hll_union re-packs it), and delta then records that the
// encoding changed with an empty list (uvarint 0), which ApplyDelta
// replays as the same drop.
func (o *original) written(n int, delta []byte, at int) []byte {
	if n == 0 || o.bytes() == nil {
		return delta
	}
	o.drop()
	if len(delta) == at {
		delta = binary.AppendUvarint(delta, 0)
	}
	return delta
}

// bytes returns the kept bytes, or nil.
func (o *original) bytes() []byte {
	if o == nil {
		return nil
	}
	return o.b
}

// drop forgets the kept bytes: the sketch has changed.
func (o *original) drop() {
	if o != nil {
		o.b = nil
	}
}

// clone returns an original of its own for a cloned sketch.
func (o *original) clone() *original {
	if o == nil || o.b == nil {
		return nil
	}
	return &original{b: o.b}
}
