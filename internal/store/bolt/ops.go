package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
)

// A WAL record's payload, after its LSN, is a uvarint count of operations,
// each: one type byte, the sketch name (uvarint length + bytes), then:
//
//	opPut       uvarint length + a full record (record.go): create or replace
//	opDelete    nothing
//	opAddHashes int64 updated (Unix ns) | uvarint n | n big-endian uint64 hashes
//	opAddItems  int64 updated | uvarint n | n items: kind byte (0 int, 1 text),
//	            8-byte int or uvarint length + text, then uvarint count
//	opMetric    one byte, 0 or 1: the metric flag
//
// All operations of one record apply together or not at all (a record is
// written and checksummed whole), which is what makes POST /v1/events
// all-or-nothing across sketches. Replay applies records above the
// checkpoint LSN to exactly the state at that LSN, so CMS increments count
// once.
type opType byte

const (
	opPut opType = iota + 1
	opDelete
	opAddHashes
	opAddItems
	opMetric
)

type op struct {
	typ     opType
	name    string
	rec     []byte // opPut
	updated time.Time
	hashes  []uint64   // opAddHashes
	items   []cms.Item // opAddItems
	metric  bool       // opMetric
}

func appendName(b []byte, t opType, name string) []byte {
	b = append(b, byte(t))
	b = binary.AppendUvarint(b, uint64(len(name)))
	return append(b, name...)
}

func appendPut(b []byte, name string, st *state) []byte {
	b = appendName(b, opPut, name)
	rec := appendRecord(nil, st)
	b = binary.AppendUvarint(b, uint64(len(rec)))
	return append(b, rec...)
}

func appendDelete(b []byte, name string) []byte { return appendName(b, opDelete, name) }

func appendAddHashes(b []byte, name string, updated time.Time, hs []uint64) []byte {
	b = appendName(b, opAddHashes, name)
	b = binary.BigEndian.AppendUint64(b, uint64(updated.UnixNano()))
	b = binary.AppendUvarint(b, uint64(len(hs)))
	for _, h := range hs {
		b = binary.BigEndian.AppendUint64(b, h)
	}
	return b
}

func appendAddItems(b []byte, name string, updated time.Time, items []cms.Item) []byte {
	b = appendName(b, opAddItems, name)
	b = binary.BigEndian.AppendUint64(b, uint64(updated.UnixNano()))
	b = binary.AppendUvarint(b, uint64(len(items)))
	for _, it := range items {
		if it.ID.IsText() {
			b = append(b, 1)
			b = binary.AppendUvarint(b, uint64(len(it.ID.Text())))
			b = append(b, it.ID.Text()...)
		} else {
			b = append(b, 0)
			b = binary.BigEndian.AppendUint64(b, uint64(it.ID.Int()))
		}
		b = binary.AppendUvarint(b, it.Count)
	}
	return b
}

func appendMetric(b []byte, name string, on bool) []byte {
	b = appendName(b, opMetric, name)
	if on {
		return append(b, 1)
	}
	return append(b, 0)
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

// decodeOps parses a payload body (after the LSN).
func decodeOps(payload []byte) ([]op, error) {
	r := &opReader{b: payload}
	n, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(payload)) {
		return nil, fmt.Errorf("%d operations in %d bytes", n, len(payload))
	}
	ops := make([]op, 0, n)
	for range n {
		o, err := r.op()
		if err != nil {
			return nil, err
		}
		ops = append(ops, o)
	}
	if r.off != len(payload) {
		return nil, fmt.Errorf("%d bytes after the last operation", len(payload)-r.off)
	}
	return ops, nil
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
	case opAddHashes, opAddItems:
		ts, err := r.u64()
		if err != nil {
			return o, err
		}
		o.updated = time.Unix(0, int64(ts)).UTC()
		n, err := r.uvarint()
		if err != nil {
			return o, err
		}
		if n > uint64(len(r.b)-r.off) {
			return o, errOpTruncated
		}
		if o.typ == opAddHashes {
			o.hashes = make([]uint64, n)
			for i := range o.hashes {
				if o.hashes[i], err = r.u64(); err != nil {
					return o, err
				}
			}
			return o, nil
		}
		o.items = make([]cms.Item, n)
		for i := range o.items {
			if o.items[i], err = r.item(); err != nil {
				return o, err
			}
		}
		return o, nil
	}
	return o, fmt.Errorf("unknown operation type %d", o.typ)
}

func (r *opReader) item() (cms.Item, error) {
	kind, err := r.bytes(1)
	if err != nil {
		return cms.Item{}, err
	}
	var id cms.ID
	switch kind[0] {
	case 0:
		v, err := r.u64()
		if err != nil {
			return cms.Item{}, err
		}
		id = cms.IntID(int64(v))
	case 1:
		n, err := r.uvarint()
		if err != nil {
			return cms.Item{}, err
		}
		t, err := r.bytes(n)
		if err != nil {
			return cms.Item{}, err
		}
		id = cms.TextID(string(t))
	default:
		return cms.Item{}, fmt.Errorf("unknown id kind %d", kind[0])
	}
	count, err := r.uvarint()
	return cms.Item{ID: id, Count: count}, err
}
