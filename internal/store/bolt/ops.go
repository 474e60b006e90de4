package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/sketchd/sketchd/internal/idem"
	"github.com/sketchd/sketchd/internal/sketch"
)

// A WAL record's payload, after its LSN, is a uvarint count of operations,
// each: one type byte, the sketch name (uvarint length + bytes), then:
//
//	opPut       uvarint length + a full record (record.go): create or replace
//	opDelete    nothing
//	opAdd       kind tag | int64 updated (Unix ns) | uvarint length + the
//	            kind's delta (sketch.Sketch.Apply)
//	opMetric    one byte, 0 or 1: the metric flag
//	opKey       an idempotency key (keys.go): the "name" is the key's ID as
//	            appendKeyID writes it; then int64 created (Unix ns) | the
//	            32-byte request fingerprint | uvarint length + the answer
//
// Logs written before kinds were registered hold two more, still read:
// opAddHashes and opAddItems, an HLL's and a Count-Min's delta without the
// tag and length (int64 updated, then the delta, which is self-delimiting:
// a uvarint count of 8-byte hashes, or of items as sketch.AppendItems
// writes them).
//
// All operations of one record apply together or not at all (a record is
// written and checksummed whole), which is what makes POST /v1/events
// all-or-nothing across sketches, and keeps an idempotency key with the
// write it guards. Replay applies records above the
// checkpoint LSN to exactly the state at that LSN, so CMS increments count
// once.
type opType byte

const (
	opPut opType = iota + 1
	opDelete
	opAddHashes // legacy: an HLL delta
	opAddItems  // legacy: a Count-Min delta
	opMetric
	opAdd
	opKey
)

// Tags of the kinds the legacy operations stand for.
const (
	tagHLL = 1
	tagCMS = 2
)

type op struct {
	typ     opType
	name    string
	rec     []byte // opPut
	updated time.Time
	tag     byte        // opAdd: the kind
	delta   []byte      // opAdd: the kind's delta
	metric  bool        // opMetric
	key     idem.Record // opKey (its Answer aliases the payload)
}

func appendName(b []byte, t opType, name string) []byte {
	b = append(b, byte(t))
	b = binary.AppendUvarint(b, uint64(len(name)))
	return append(b, name...)
}

func appendPut(b []byte, name string, st *state) []byte {
	b = appendName(b, opPut, name)
	rec := appendRecord(nil, name, st)
	b = binary.AppendUvarint(b, uint64(len(rec)))
	return append(b, rec...)
}

func appendDelete(b []byte, name string) []byte { return appendName(b, opDelete, name) }

func appendAdd(b []byte, name string, tag byte, updated time.Time, delta []byte) []byte {
	b = appendName(b, opAdd, name)
	b = append(b, tag)
	b = binary.BigEndian.AppendUint64(b, uint64(updated.UnixNano()))
	b = binary.AppendUvarint(b, uint64(len(delta)))
	return append(b, delta...)
}

func appendMetric(b []byte, name string, on bool) []byte {
	b = appendName(b, opMetric, name)
	if on {
		return append(b, 1)
	}
	return append(b, 0)
}

// appendKey logs an idempotency key and its record.
func appendKey(b []byte, id idem.ID, rec idem.Record) []byte {
	b = append(b, byte(opKey))
	b = binary.AppendUvarint(b, uint64(len(appendKeyID(nil, id))))
	b = appendKeyID(b, id)
	b = binary.BigEndian.AppendUint64(b, uint64(rec.Created.UnixNano()))
	b = append(b, rec.Fingerprint[:]...)
	b = binary.AppendUvarint(b, uint64(len(rec.Answer)))
	return append(b, rec.Answer...)
}

var errOpTruncated = errors.New("operation truncated")

// opReader decodes the operations of one payload.
type opReader struct {
	b   []byte
	off int
}

func (r *opReader) uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		return 0, errOpTruncated
	}
	r.off += n
	return v, nil
}

func (r *opReader) bytes(n uint64) ([]byte, error) {
	if n > uint64(len(r.b)-r.off) {
		return nil, errOpTruncated
	}
	out := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return out, nil
}

func (r *opReader) u64() (uint64, error) {
	b, err := r.bytes(8)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(b), nil
}

// decodeOps parses a payload body (after the LSN) and calls fn with each
// operation in order; fn must not keep o or its slices past the call
// (o.rec aliases payload). With fn nil it only checks the payload. It
// allocates at most a small multiple of len(payload) whatever the counts
// in it claim: counts are checked against the bytes left before anything
// is allocated, and operations are decoded one at a time, not into a
// slice sized by the count. Errors: errOpTruncated when a field runs past
// the end; an unknown operation or id kind, or bytes after the last
// operation, are errors naming them.
func decodeOps(payload []byte, fn func(o *op) error) error {
	r := &opReader{b: payload}
	n, err := r.uvarint()
	if err != nil {
		return err
	}
	// The smallest operation is 3 bytes: type, name length, a 1-byte name.
	if n > uint64(len(payload)-r.off)/3 {
		return fmt.Errorf("%d operations in %d bytes", n, len(payload))
	}
	for range n {
		o, err := r.op()
		if err != nil {
			return err
		}
		if fn != nil {
			if err := fn(&o); err != nil {
				return err
			}
		}
	}
	if r.off != len(payload) {
		return fmt.Errorf("%d bytes after the last operation", len(payload)-r.off)
	}
	return nil
}

func (r *opReader) op() (op, error) {
	t, err := r.bytes(1)
	if err != nil {
		return op{}, err
	}
	o := op{typ: opType(t[0])}
	nlen, err := r.uvarint()
	if err != nil {
		return o, err
	}
	if nlen == 0 {
		return o, errors.New("operation without a sketch name")
	}
	name, err := r.bytes(nlen)
	if err != nil {
		return o, err
	}
	o.name = string(name)
	switch o.typ {
	case opPut:
		n, err := r.uvarint()
		if err != nil {
			return o, err
		}
		o.rec, err = r.bytes(n)
		return o, err
	case opDelete:
		return o, nil
	case opMetric:
		b, err := r.bytes(1)
		if err != nil {
			return o, err
		}
		o.metric = b[0] == 1
		return o, nil
	case opAdd:
		tag, err := r.bytes(1)
		if err != nil {
			return o, err
		}
		o.tag = tag[0]
		if o.updated, err = r.time(); err != nil {
			return o, err
		}
		n, err := r.uvarint()
		if err != nil {
			return o, err
		}
		o.delta, err = r.bytes(n)
		return o, err
	case opKey:
		if _, err := decodeKeyID([]byte(o.name)); err != nil {
			return o, err
		}
		if o.key.Created, err = r.time(); err != nil {
			return o, err
		}
		fp, err := r.bytes(32)
		if err != nil {
			return o, err
		}
		copy(o.key.Fingerprint[:], fp)
		n, err := r.uvarint()
		if err != nil {
			return o, err
		}
		o.key.Answer, err = r.bytes(n)
		return o, err
	case opAddHashes, opAddItems:
		if o.updated, err = r.time(); err != nil {
			return o, err
		}
		// The legacy deltas are self-delimiting: find their end.
		start := r.off
		n, err := r.uvarint()
		if err != nil {
			return o, err
		}
		if o.typ == opAddHashes {
			o.tag = tagHLL
			if n > uint64(len(r.b)-r.off)/8 {
				return o, errOpTruncated
			}
			r.off += 8 * int(n)
		} else {
			o.tag = tagCMS
			_, k, err := sketch.ReadItems(r.b[start:])
			if err != nil {
				return o, err
			}
			r.off = start + k
		}
		o.delta = r.b[start:r.off]
		o.typ = opAdd
		return o, nil
	}
	return o, fmt.Errorf("unknown operation type %d", o.typ)
}

func (r *opReader) time() (time.Time, error) {
	ts, err := r.u64()
	return time.Unix(0, int64(ts)).UTC(), err
}
