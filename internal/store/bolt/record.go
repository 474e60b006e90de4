package bolt

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/sketchd/sketchd/internal/cms"
	"github.com/sketchd/sketchd/internal/hll"
	"github.com/sketchd/sketchd/internal/sketch"
)

// A record is how a sketch is kept in the sketches bucket (schema version
// 1, see migrations/v1.go): format byte, type byte, flags byte, created
// and updated times as big-endian Unix nanoseconds, then the sketch in its
// own encoding (the HLL storage format, or the CMS format).
const (
	recordFormat    = 1
	recordHeaderLen = 3 + 8 + 8
	typeHLL         = 1
	typeCMS         = 2
	flagMetric      = 1
)

// state is one sketch's full state: what a record holds and what the
// cache keeps decoded.
type state struct {
	typ              sketch.Type
	hll              *hll.Sketch
	cms              *cms.Sketch
	metric           bool
	created, updated time.Time
}

func typeByte(t sketch.Type) byte {
	if t == sketch.TypeCMS {
		return typeCMS
	}
	return typeHLL
}

// appendRecord appends st's record to b.
func appendRecord(b []byte, st *state) []byte {
	var flags byte
	if st.metric {
		flags |= flagMetric
	}
	b = append(b, recordFormat, typeByte(st.typ), flags)
	b = binary.BigEndian.AppendUint64(b, uint64(st.created.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, uint64(st.updated.UnixNano()))
	return appendSketch(b, st)
}

func appendSketch(b []byte, st *state) []byte {
	if st.typ == sketch.TypeCMS {
		b, _ = st.cms.AppendBinary(b)
		return b
	}
	b, _ = st.hll.AppendBinary(b)
	return b
}

// decodeRecord parses a record as strictly as an upload. The returned
// state shares no memory with rec.
func decodeRecord(rec []byte) (*state, error) {
	if len(rec) < recordHeaderLen {
		return nil, fmt.Errorf("record of %d bytes, header needs %d", len(rec), recordHeaderLen)
	}
	if rec[0] != recordFormat {
		return nil, fmt.Errorf("record format %d, want %d", rec[0], recordFormat)
	}
	if rec[2]&^flagMetric != 0 {
		return nil, fmt.Errorf("record flags %#x unknown", rec[2])
	}
	st := &state{
		metric:  rec[2]&flagMetric != 0,
		created: time.Unix(0, int64(binary.BigEndian.Uint64(rec[3:]))).UTC(),
		updated: time.Unix(0, int64(binary.BigEndian.Uint64(rec[11:]))).UTC(),
	}
	if err := st.decodeSketch(rec[1], rec[recordHeaderLen:]); err != nil {
		return nil, err
	}
	return st, nil
}

func (st *state) decodeSketch(typ byte, payload []byte) error {
	var err error
	switch typ {
	case typeHLL:
		st.typ = sketch.TypeHLL
		st.hll, err = hll.Decode(payload)
		if err == nil && st.hll.Representation() == hll.Undefined {
			err = fmt.Errorf("hll sketch is UNDEFINED")
		}
	case typeCMS:
		st.typ = sketch.TypeCMS
		st.cms, err = cms.Decode(append([]byte(nil), payload...))
	default:
		err = fmt.Errorf("record type %d unknown", typ)
	}
	return err
}

// spec returns the sketch's spec.
func (st *state) spec() sketch.Spec {
	sp := sketch.Spec{Type: st.typ, Metric: st.metric}
	if st.typ == sketch.TypeCMS {
		sp.CMS = st.cms.Params()
	} else {
		sp.HLL = st.hll.Params()
	}
	return sp
}

// info describes the state under name.
func (st *state) info(name string) sketch.Info {
	in := sketch.Info{Name: name, Spec: st.spec(), CreatedAt: st.created, UpdatedAt: st.updated}
	if st.typ == sketch.TypeCMS {
		in.Total = int64(st.cms.Total())
		enc, _ := st.cms.MarshalBinary()
		in.SizeBytes = len(enc)
		return in
	}
	in.Representation = st.hll.Representation().String()
	in.Cardinality = st.hll.Estimate()
	in.StdError = st.hll.StdError()
	in.SizeBytes = st.hll.SizeBytes()
	return in
}

// representation is the label the sketch is counted under.
func (st *state) representation() string {
	if st.typ == sketch.TypeCMS {
		return ""
	}
	return st.hll.Representation().String()
}

func (st *state) clone() *state {
	c := *st
	if st.hll != nil {
		c.hll = st.hll.Clone()
	}
	if st.cms != nil {
		c.cms = st.cms.Clone()
	}
	return &c
}

// memory approximates the heap the decoded state holds.
func (st *state) memory() int64 {
	if st.typ == sketch.TypeCMS {
		return int64(st.cms.SizeBytes()) + 128
	}
	return int64(st.hll.MemoryBytes()) + 128
}

// estimate is the value exported for opted-in sketches: the HLL estimate,
// or a CMS's total.
func (st *state) estimate() float64 {
	if st.typ == sketch.TypeCMS {
		return float64(st.cms.Total())
	}
	return st.hll.Estimate()
}
